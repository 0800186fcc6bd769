# Helpers of the example programs' shell tests (sourced, not run): a
# temporary directory, servers started on port 0 and found by their
# "listening on" line, clients run with a bound, JSON fields read with
# python3, and a cleanup that kills, by pid, every process the test started.
#
#   . "$(dirname "$0")/cli_lib.sh"
#   start_server srv "$server_bin" --port 0          # pid in srv_pid, "ip:port" in srv_addr
#   run 30 "$client_bin" --server "$srv_addr" ...    # status in rc, output in $tmp/run.out and run.err
#   finish                                           # checks nothing is left, exits 0 or 1
#
# Every wait is bounded; nothing sleeps in the hope that something happened.
set -euo pipefail

tmp=$(mktemp -d)
started_pids=()  # every process start_server started, killed (by pid) on exit

cleanup() {
  local pid
  for pid in "${started_pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${started_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP  # so that the EXIT trap runs

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# Starts PROGRAM ARGS... in the background (its output in $tmp/NAME.out and
# NAME.err) and waits, at most 60 s, for its first line "listening on
# IP:PORT": the pid in NAME_pid, the address in NAME_addr, every further line
# (e.g. "admin on http://...") readable in $tmp/NAME.out. A program that
# prints something else or exits first ends the test.
start_server() {  # NAME PROGRAM ARGS...
  local name=$1 line="" i
  shift
  : >"$tmp/$name.out"  # there before the program opens it
  : >"$tmp/$name.err"
  "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  local pid=$!
  started_pids+=("$pid")
  printf -v "${name}_pid" '%s' "$pid"
  for i in $(seq 600); do
    line=$(head -n 1 "$tmp/$name.out" 2>/dev/null || true)
    [ -n "$line" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  case $line in
    "listening on "*) printf -v "${name}_addr" '%s' "${line#listening on }" ;;
    *)
      echo "FAIL: $(basename "$1") did not start: first line '$line'; stderr: $(cat "$tmp/$name.err")" >&2
      exit 1
      ;;
  esac
}

# Waits, at most 60 s, for a line matching the ERE PATTERN in $tmp/NAME.out
# (a server's later lines); prints the first such line.
server_line() {  # NAME PATTERN
  local i pid_var="${1}_pid"
  for i in $(seq 600); do
    grep -Em1 -- "$2" "$tmp/$1.out" && return 0
    kill -0 "${!pid_var}" 2>/dev/null || break
    sleep 0.1
  done
  grep -Em1 -- "$2" "$tmp/$1.out"
}

# Stops the server NAME with SIGTERM and waits (at most 30 s) for it; its
# exit status in rc ("still running" if it had to be killed).
stop_server() {  # NAME
  local pid_var="${1}_pid" i
  local pid=${!pid_var}
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 300); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rc="still running"
    return
  fi
  set +e
  wait "$pid"
  rc=$?
  set -e
}

# Runs PROGRAM ARGS... in the foreground for at most SECONDS (timeout(1)
# kills it then: rc 124): its status in rc, its stdout in $tmp/run.out, its
# stderr in $tmp/run.err, its last line of stdout in `last`.
run() {  # SECONDS PROGRAM ARGS...
  local seconds=$1
  shift
  set +e
  timeout "$seconds" "$@" >"$tmp/run.out" 2>"$tmp/run.err"
  rc=$?
  set -e
  last=$(tail -n 1 "$tmp/run.out")
}

# Expects the last run to have been a usage error: exit status 2, nothing on
# stdout, and one line on stderr matching the ERE "^EXPECTED \(see --help\)$".
expect_usage_error() {  # WHAT EXPECTED
  [ "$rc" = 2 ] || fail "$1: exit status $rc, expected 2"
  [ -s "$tmp/run.out" ] && fail "$1: wrote on stdout: $(cat "$tmp/run.out")"
  [ "$(wc -l <"$tmp/run.err")" = 1 ] || fail "$1: expected one line on stderr, got: $(cat "$tmp/run.err")"
  grep -Eq -- "^$2 \(see --help\)\$" "$tmp/run.err" ||
    fail "$1: expected '$2 (see --help)' on stderr, got: $(cat "$tmp/run.err")"
}

# The value of the Python expression EXPR on `d`, the JSON object LINE
# (e.g. 'd["errors"]' or 'd["ok"]'), printed as JSON; nothing (and status 1)
# when LINE is not JSON or EXPR fails on it.
json() {  # LINE EXPR
  python3 -c '
import json, sys
try:
    d = json.loads(sys.argv[1])
    print(json.dumps(eval(sys.argv[2], {}, {"d": d}), separators=(",", ":")))
except Exception:
    sys.exit(1)
' "$1" "$2"
}
# Fails the test unless EXPR on the JSON object LINE is VALUE (as json() prints it).
expect_json() {  # WHAT LINE EXPR VALUE
  local v
  v=$(json "$2" "$3") || v="(none)"
  [ "$v" = "$4" ] || fail "$1: expected $3 = $4, got $v in: $2"
}

# The body of http://127.0.0.1:PORT/PATH (python3's urllib, 10 s at most).
http_get() {  # URL
  python3 -c '
import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode(), end="")
' "$1"
}

# The value of the Prometheus sample NAME{LABELS} in METRICS (the text of a
# /metrics page), or 0 when it has none.
metric() {  # METRICS NAME LABELS
  local v
  v=$(awk -v key="$2{$3}" '$1 == key { print $2; exit }' <<<"$1")
  printf '%s' "${v:-0}"
}

# Checks that no process the test started still runs, and exits 0 when no
# check failed, 1 otherwise (saying how many failed).
finish() {  # WHAT
  local pid
  for pid in "${started_pids[@]}"; do
    kill -0 "$pid" 2>/dev/null && fail "process $pid, started by the test, still runs at its end"
  done
  if [ "$failures" -gt 0 ]; then
    echo "$1: $failures check(s) failed" >&2
    exit 1
  fi
  echo "$1: all checks passed"
  exit 0
}
