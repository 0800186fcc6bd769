#!/usr/bin/env bash
# gRPC's interop cases between interop_server and interop_client
# (examples/interop/, docs/grpc_interop.md), over the client's protocol
# (--protocol, passed through; native by default): every case plaintext,
# then every case over TLS with the build's test certificates (the name
# verified: foo.test.google.fr). Each server is started on port 0 and its
# "listening on" line read through a FIFO (no polling); it is stopped by its
# pid with SIGTERM and must exit 0 (a graceful stop); the EXIT trap kills
# whatever is left, so no process outlives the script.
#
#   native_interop_test.sh PATH/TO/interop_server PATH/TO/interop_client [CLIENT FLAGS...]
set -euo pipefail

server_bin=${1:?usage: native_interop_test.sh INTEROP_SERVER INTEROP_CLIENT [CLIENT FLAGS...]}
client_bin=${2:?usage: native_interop_test.sh INTEROP_SERVER INTEROP_CLIENT [CLIENT FLAGS...]}
shift 2
client_flags=("$@")

tmp=$(mktemp -d)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP  # so that the EXIT trap runs

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# Starts interop_server with FLAGS; sets server_pid and port. Its stdout is a
# FIFO this shell holds open (fd server_fd) for as long as the server runs.
start_server() {  # NAME FLAGS...
  local name=$1 line
  shift
  mkfifo "$tmp/$name.out"
  "$server_bin" --port=0 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  server_pid=$!
  pids+=("$server_pid")
  exec {server_fd}<"$tmp/$name.out"  # opens once the server has it open for writing
  if ! read -r -t 60 -u "$server_fd" line; then
    echo "FAIL: $name: no 'listening on' line within 60 s; stderr:" >&2
    cat "$tmp/$name.err" >&2
    exit 1
  fi
  if [[ ! $line =~ ^listening\ on\ 127\.0\.0\.1:([0-9]+)$ ]]; then
    echo "FAIL: $name: first line '$line', expected 'listening on 127.0.0.1:PORT'" >&2
    exit 1
  fi
  port=${BASH_REMATCH[1]}
}

# Runs every case against the server on `port`; checks 18 PASS lines, no FAIL, exit 0.
run_client() {  # NAME FLAGS...
  local name=$1 rc
  shift
  set +e
  "$client_bin" --server_host=127.0.0.1 --server_port="$port" --test_case=all "${client_flags[@]}" "$@" \
    >"$tmp/$name.client" 2>"$tmp/$name.client.err"
  rc=$?
  set -e
  cat "$tmp/$name.client"
  local passed
  passed=$(grep -c '^PASS ' "$tmp/$name.client" || true)
  [ "$rc" = 0 ] || fail "$name: interop_client exited $rc: $(cat "$tmp/$name.client.err")"
  [ "$passed" = 18 ] || fail "$name: $passed cases passed, expected 18"
  if grep -q '^FAIL ' "$tmp/$name.client"; then fail "$name: $(grep '^FAIL ' "$tmp/$name.client")"; fi
}

# A graceful stop: SIGTERM, and the server exits 0.
stop_server() {  # PID NAME
  local rc
  kill -TERM "$1"
  set +e
  wait "$1"
  rc=$?
  set -e
  [ "$rc" = 0 ] || fail "$2: interop_server exited $rc after SIGTERM, expected 0: $(cat "$tmp/$2.err")"
}

# Plaintext.
start_server plain
run_client plain
stop_server "$server_pid" plain

# TLS: the server's default certificate, verified against the build's test CA
# under the name gRPC's interop clients use. Skipped when the build made no
# certificates (WHEELRPC_INTEROP_TLS=0: no openssl tool).
if [ "${WHEELRPC_INTEROP_TLS:-1}" != 0 ]; then
  start_server tls --use_tls=true
  run_client tls --use_tls=true --server_host_override=foo.test.google.fr
  stop_server "$server_pid" tls
else
  echo "native_interop: no test certificates in this build: TLS skipped"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "native_interop: all cases passed"
