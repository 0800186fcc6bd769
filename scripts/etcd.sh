#!/usr/bin/env bash
# A local single-node etcd for trying the registry by hand and for scripts:
# Debian's /usr/bin/etcd (apt-get install etcd-server) on free loopback ports,
# with a temporary data directory, in the background.
#
#   scripts/etcd.sh start    # starts it (or finds it running), waits until it is
#                            # healthy, prints "etcd on etcd://127.0.0.1:PORT"
#   scripts/etcd.sh status   # prints the same line, or exits 1 if it does not run
#   scripts/etcd.sh stop     # SIGTERM, SIGKILL after 10 s; removes its data directory
#
# Its state (pid, ports, data directory, log) is kept in
# $WHEELRPC_ETCD_STATE_DIR (default ${XDG_RUNTIME_DIR:-/tmp}/wheelrpc-etcd-$USER);
# give each concurrent user of the script its own. Other settings:
#   WHEELRPC_ETCD_BIN            the etcd binary (default /usr/bin/etcd)
#   WHEELRPC_ETCD_START_TIMEOUT  seconds to wait for health (default 30)
#
# The line "etcd on etcd://127.0.0.1:PORT" is what other scripts read: keep it.
set -euo pipefail

prog=etcd.sh
etcd_bin=${WHEELRPC_ETCD_BIN:-/usr/bin/etcd}
user=${USER:-$(id -un 2>/dev/null || id -u)}
state_dir=${WHEELRPC_ETCD_STATE_DIR:-${XDG_RUNTIME_DIR:-/tmp}/wheelrpc-etcd-$user}
state_file=$state_dir/state
start_timeout=${WHEELRPC_ETCD_START_TIMEOUT:-30}
stop_timeout=10

die() { echo "$prog: $*" >&2; exit 1; }

usage() {
  echo "usage: $prog start|stop|status" >&2
  exit 2
}

# Two distinct free TCP ports on 127.0.0.1, "CLIENT PEER". Both sockets are
# held at once so the ports differ; another process may still take one before
# etcd binds it, which start() handles by retrying on new ports.
free_ports() {
  if command -v python3 >/dev/null 2>&1; then
    python3 - <<'EOF'
import socket
a, b = socket.socket(), socket.socket()
a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])
EOF
    return
  fi
  # No python3: probe random high ports with bash's /dev/tcp (a refused
  # connect means nothing listens there).
  local found=() port
  while [ ${#found[@]} -lt 2 ]; do
    port=$((20000 + RANDOM % 40000))
    [ ${#found[@]} -eq 1 ] && [ "${found[0]}" = "$port" ] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then found+=("$port"); fi
  done
  echo "${found[0]} ${found[1]}"
}

# Loads the state file into PID, CLIENT_PORT, PEER_PORT, DATA_DIR, LOG.
# Returns 1 if there is none.
load_state() {
  [ -f "$state_file" ] || return 1
  PID= CLIENT_PORT= PEER_PORT= DATA_DIR= LOG=
  local key value
  while IFS='=' read -r key value; do
    case $key in
      PID) PID=$value ;;
      CLIENT_PORT) CLIENT_PORT=$value ;;
      PEER_PORT) PEER_PORT=$value ;;
      DATA_DIR) DATA_DIR=$value ;;
      LOG) LOG=$value ;;
    esac
  done <"$state_file"
  [ -n "$PID" ] && [ -n "$CLIENT_PORT" ]
}

# True if process $1 exists and is not a zombie (an etcd whose parent died is
# reaped by init, which in a container may never do it).
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# True if $PID is alive and is the etcd this state file started (a reused pid
# belongs to someone else and must never be signalled).
ours_running() {
  [ -n "${PID:-}" ] && alive "$PID" || return 1
  local cmdline
  cmdline=$(tr '\0' ' ' <"/proc/$PID/cmdline" 2>/dev/null) || return 1
  case $cmdline in
    *"--data-dir $DATA_DIR "*) return 0 ;;
    *) return 1 ;;
  esac
}

healthy() {
  curl -s --max-time 2 "http://127.0.0.1:$1/health" 2>/dev/null | grep -q '"health": *"true"'
}

endpoint_line() { echo "etcd on etcd://127.0.0.1:$CLIENT_PORT"; }

# Removes what a stopped etcd left: its data directory, log and state file.
clean_state() {
  if [ -n "${DATA_DIR:-}" ]; then rm -rf -- "$DATA_DIR"; fi
  if [ -n "${LOG:-}" ]; then rm -f -- "$LOG"; fi
  rm -f -- "$state_file"
  rmdir -- "$state_dir" 2>/dev/null || true
}

# Stops $PID: SIGTERM, then SIGKILL after stop_timeout seconds.
kill_ours() {
  ours_running || return 0
  kill -TERM "$PID" 2>/dev/null || true
  local i
  for ((i = 0; i < stop_timeout * 10; i++)); do
    alive "$PID" || return 0
    sleep 0.1
  done
  echo "$prog: etcd (pid $PID) ignored SIGTERM for ${stop_timeout} s; sending SIGKILL" >&2
  kill -KILL "$PID" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    alive "$PID" || return 0
    sleep 0.1
  done
  die "etcd (pid $PID) is still alive after SIGKILL"
}

# One attempt on fresh ports; returns 1 if etcd exited before it was healthy
# (a port taken in between), dies if it neither exits nor becomes healthy.
try_start() {
  read -r CLIENT_PORT PEER_PORT < <(free_ports)
  DATA_DIR=$(mktemp -d "${TMPDIR:-/tmp}/wheelrpc-etcd-data.XXXXXX")
  LOG=$state_dir/etcd.log
  local client_url=http://127.0.0.1:$CLIENT_PORT peer_url=http://127.0.0.1:$PEER_PORT
  # setsid: etcd outlives this script and the terminal's signals; every fd is
  # redirected so no caller waits on a pipe etcd holds.
  setsid "$etcd_bin" --name wheelrpc --data-dir "$DATA_DIR" \
    --listen-client-urls "$client_url" --advertise-client-urls "$client_url" \
    --listen-peer-urls "$peer_url" --initial-advertise-peer-urls "$peer_url" \
    --initial-cluster "wheelrpc=$peer_url" --initial-cluster-state new \
    --initial-cluster-token "wheelrpc-$$" \
    </dev/null >"$LOG" 2>&1 &
  PID=$!
  printf 'PID=%s\nCLIENT_PORT=%s\nPEER_PORT=%s\nDATA_DIR=%s\nLOG=%s\n' \
    "$PID" "$CLIENT_PORT" "$PEER_PORT" "$DATA_DIR" "$LOG" >"$state_file"
  local deadline=$((SECONDS + start_timeout))
  while [ $SECONDS -lt $deadline ]; do
    if healthy "$CLIENT_PORT"; then return 0; fi
    if ! alive "$PID"; then
      echo "$prog: etcd exited while starting on ports $CLIENT_PORT/$PEER_PORT; its log ends:" >&2
      tail -n 5 "$LOG" >&2 || true
      rm -rf -- "$DATA_DIR"
      rm -f -- "$state_file"
      return 1
    fi
    sleep 0.1
  done
  echo "$prog: etcd (pid $PID) not healthy on 127.0.0.1:$CLIENT_PORT within ${start_timeout} s; its log ends:" >&2
  tail -n 20 "$LOG" >&2 || true
  kill_ours
  clean_state
  exit 1
}

cmd_start() {
  if [ ! -x "$etcd_bin" ]; then
    die "$etcd_bin not found; install it with: sudo apt-get install etcd-server"
  fi
  command -v curl >/dev/null 2>&1 || die "curl not found; install it with: sudo apt-get install curl"
  mkdir -p -- "$state_dir"
  chmod 700 "$state_dir" 2>/dev/null || true
  if load_state; then
    if ours_running; then
      if healthy "$CLIENT_PORT"; then
        endpoint_line
        return 0
      fi
      die "etcd (pid $PID) runs on 127.0.0.1:$CLIENT_PORT but is not healthy; try '$prog stop' first"
    fi
    clean_state  # left by an etcd that died
    mkdir -p -- "$state_dir"
  fi
  local attempt
  for attempt in 1 2 3; do
    if try_start; then
      endpoint_line
      return 0
    fi
  done
  die "etcd did not start after 3 attempts"
}

cmd_stop() {
  if ! load_state; then
    echo "$prog: etcd not running (no state in $state_dir)"
    return 0
  fi
  kill_ours
  clean_state
  echo "$prog: etcd stopped"
}

cmd_status() {
  if load_state && ours_running; then
    endpoint_line
    return 0
  fi
  echo "$prog: etcd not running" >&2
  exit 1
}

[ $# -eq 1 ] || usage
case $1 in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) usage ;;
esac
