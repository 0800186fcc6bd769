#!/usr/bin/env bash
# End-to-end test of the echo_server / echo_client examples (registered with
# CTest by tests/examples/CMakeLists.txt). Uses only bash, grep, sed, awk and
# coreutils; every step is bounded.
#
#   echo_cli_test.sh PATH/TO/echo_server PATH/TO/echo_client
set -euo pipefail

server_bin=${1:?usage: echo_cli_test.sh ECHO_SERVER ECHO_CLIENT}
client_bin=${2:?usage: echo_cli_test.sh ECHO_SERVER ECHO_CLIENT}

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill -KILL "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# A top-level numeric JSON field of a one-line object (the "errors" object,
# whose keys may repeat top-level names, is removed first).
field() { sed -e 's/"errors":{[^}]*}//' -e "s/.*\"$2\":\\(-\\{0,1\\}[0-9.][0-9.]*\\).*/\\1/p" -n <<<"$1"; }
expect_field() {  # LINE NAME VALUE
  local v
  v=$(field "$1" "$2")
  [ "$v" = "$3" ] || fail "expected \"$2\":$3, got '${v}' in: $1"
}

# ---- server start and its first line ------------------------------------------
timeout 60 "$server_bin" --port 0 >"$tmp/server.out" 2>"$tmp/server.err" &
server_pid=$!
first=""
for _ in $(seq 100); do  # up to 10 s
  first=$(head -n 1 "$tmp/server.out" 2>/dev/null || true)
  [ -n "$first" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if ! grep -Eq '^listening on 127\.0\.0\.1:[1-9][0-9]*$' <<<"$first"; then
  echo "FAIL: server's first line is '$first', expected 'listening on 127.0.0.1:PORT'" >&2
  cat "$tmp/server.err" >&2
  exit 1
fi
endpoint=${first#listening on }
echo "server: $first"

# ---- bad flags: exit status 2 ---------------------------------------------------
set +e
timeout 10 "$client_bin" --server not-an-endpoint --calls 1 >/dev/null 2>"$tmp/bad.err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "invalid endpoint: exit status $rc, expected 2"
grep -q "not-an-endpoint" "$tmp/bad.err" || fail "invalid endpoint: the message does not name it: $(cat "$tmp/bad.err")"
set +e
timeout 10 "$client_bin" --server "$endpoint" >/dev/null 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || fail "missing --calls/--duration-s: exit status $rc, expected 2"

# ---- echo: 200 calls, 4 in flight ------------------------------------------------
set +e
timeout 30 "$client_bin" --server "$endpoint" --calls 200 --concurrency 4 --json >"$tmp/echo.out" 2>"$tmp/echo.err"
rc=$?
set -e
last=$(tail -n 1 "$tmp/echo.out")
echo "echo: $last"
[ "$rc" = 0 ] || fail "echo client exited $rc: $(cat "$tmp/echo.err")"
expect_field "$last" calls 200
expect_field "$last" ok 200
expect_field "$last" lost 0
expect_field "$last" completed_twice 0
grep -q '"errors":{}' <<<"$last" || fail "echo: expected no errors in: $last"
# Interval lines, if any, have exactly the documented shape.
if [ "$(wc -l <"$tmp/echo.out")" -gt 1 ]; then
  head -n -1 "$tmp/echo.out" | grep -Evq '^\{"t_ms":[0-9]+,"ok":[0-9]+,"errors":\{[^}]*\}\}$' &&
    fail "echo: malformed interval line in: $(head -n -1 "$tmp/echo.out")"
fi

# ---- sleep 300 ms with a 30 ms deadline: every call times out on time ------------
set +e
timeout 30 "$client_bin" --server "$endpoint" --method sleep --sleep-ms 300 --timeout-ms 30 \
  --calls 20 --concurrency 4 --json >"$tmp/sleep.out" 2>"$tmp/sleep.err"
rc=$?
set -e
last=$(tail -n 1 "$tmp/sleep.out")
echo "sleep: $last"
[ "$rc" = 0 ] || fail "sleep client exited $rc: $(cat "$tmp/sleep.err")"
expect_field "$last" calls 20
expect_field "$last" ok 0
expect_field "$last" timeout 20
expect_field "$last" lost 0
expect_field "$last" completed_twice 0
overrun=$(field "$last" max_overrun_ms)
if [ -z "$overrun" ] || ! awk -v v="$overrun" 'BEGIN { exit !(v < 50) }'; then
  fail "sleep: max_overrun_ms is '$overrun', expected < 50"
fi

# ---- the text output names the error precisely ------------------------------------
set +e
timeout 30 "$client_bin" --server "$endpoint" --method sleep --sleep-ms 300 --timeout-ms 30 \
  --calls 3 --concurrency 3 >"$tmp/text.out" 2>&1
set -e
grep -Eq "timeout \(sent, waiting for the reply\) after [0-9]+ ms calling 'sleep' on $endpoint" "$tmp/text.out" ||
  fail "text output lacks the timeout message: $(cat "$tmp/text.out")"

# ---- SIGTERM: the server exits 0 within 5 s ----------------------------------------
kill -TERM "$server_pid"
for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$server_pid" 2>/dev/null; then
  fail "server still running 5 s after SIGTERM"
else
  set +e
  wait "$server_pid"
  rc=$?
  set -e
  server_pid=""
  [ "$rc" = 0 ] || fail "server exited $rc after SIGTERM: $(cat "$tmp/server.err")"
  grep -q "stopped" "$tmp/server.err" || fail "server printed no summary: $(cat "$tmp/server.err")"
fi

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all checks passed"
