#!/usr/bin/env bash
# RPC demo: starts examples/echo_server on a free port, runs examples/echo_client
# against it twice -- 2 s of echo calls (8 in flight), then 5 calls that sleep
# 200 ms on the server with a 50 ms deadline, to show timeouts and their
# messages -- and stops the server with SIGTERM. Builds nothing: build first,
# e.g. `cmake --preset release && cmake --build --preset release --target echo_server echo_client`.
#
#   scripts/echo_demo.sh [BUILD_DIR]      # default build/release; takes < 10 s
#
# Exits non-zero if a step fails: the server does not start or stop cleanly, or
# a client exits with an unexpected status (it exits 1 when a call is lost or
# completes twice, when no call succeeded -- as in the sleep step, by design --
# and, in the echo step, run with --fail-on-error, when any call fails).
set -euo pipefail
cd "$(dirname "$0")/.."

build="${1:-build/release}"
server_bin="$build/examples/echo_server"
client_bin="$build/examples/echo_client"
for b in "$server_bin" "$client_bin"; do
  [ -x "$b" ] || { echo "echo_demo.sh: $b not found; build the echo_server and echo_client targets first" >&2; exit 1; }
done

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill -KILL "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }

step "starting echo_server on a free port"
"$server_bin" --port 0 >"$tmp/server.out" 2>"$tmp/server.err" &
server_pid=$!
endpoint=""
for _ in $(seq 100); do  # up to 10 s for the first line
  line=$(head -n 1 "$tmp/server.out" 2>/dev/null || true)
  case $line in
    "listening on "*) endpoint=${line#listening on }; break ;;
  esac
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$endpoint" ]; then
  echo "echo_demo.sh: echo_server did not report its port within 10 s" >&2
  cat "$tmp/server.err" >&2
  exit 1
fi
echo "echo_server says: listening on $endpoint"

step "echo for 2 s, 8 calls in flight (every call should succeed)"
timeout 20 "$client_bin" --server "$endpoint" --duration-s 2 --concurrency 8 --fail-on-error

step "sleep 200 ms on the server with a 50 ms deadline, 5 calls at once (every call should time out)"
# No call succeeds, so the client exits 1 by design; any other status is a failure.
sleep_status=0
timeout 20 "$client_bin" --server "$endpoint" --method sleep --sleep-ms 200 --timeout-ms 50 \
  --calls 5 --concurrency 5 || sleep_status=$?
if [ "$sleep_status" != 1 ]; then
  echo "echo_demo.sh: the sleep step's client exited with status $sleep_status, expected 1 (no call succeeded)" >&2
  exit 1
fi

step "stopping echo_server (SIGTERM)"
kill -TERM "$server_pid"
status=0
for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$server_pid" 2>/dev/null; then
  echo "echo_demo.sh: echo_server did not exit within 5 s of SIGTERM" >&2
  exit 1
fi
wait "$server_pid" || status=$?
server_pid=""
cat "$tmp/server.err"
if [ "$status" != 0 ]; then
  echo "echo_demo.sh: echo_server exited with status $status" >&2
  exit 1
fi
echo
echo "done."
