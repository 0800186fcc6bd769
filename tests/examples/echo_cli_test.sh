#!/usr/bin/env bash
# End-to-end test of the echo_server / echo_client examples (registered with
# CTest by tests/examples/CMakeLists.txt). Uses only bash, grep, sed, awk and
# coreutils; every step is bounded, none depends on how fast a connect or a
# HELLO is (the client waits for its connections before its first call), and
# the suite checks that it leaves no process behind.
#
#   echo_cli_test.sh PATH/TO/echo_server PATH/TO/echo_client
set -euo pipefail

server_bin=${1:?usage: echo_cli_test.sh ECHO_SERVER ECHO_CLIENT}
client_bin=${2:?usage: echo_cli_test.sh ECHO_SERVER ECHO_CLIENT}

tmp=$(mktemp -d)
server_pid=""
server2_pid=""

# The pids of this shell's children, in the array `kids`, read from /proc (no
# procps needed; no subshell, which would be a child itself).
list_children() {
  kids=()
  local stat line ppid
  for stat in /proc/[0-9]*/stat; do
    { read -r line <"$stat"; } 2>/dev/null || continue
    read -r _ ppid _ <<<"${line##*) }"  # the fields after "(command name) "
    if [ "$ppid" = "$$" ]; then kids+=("${stat//[^0-9]/}"); fi
  done
}
# Kills every child of this shell (the servers, anything else) and reaps it.
stop_children() {
  local pid
  list_children
  for pid in "${kids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${kids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
cleanup() {
  stop_children
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP  # so that the EXIT trap runs

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# A top-level numeric JSON field of a one-line object (the "errors" object and
# the "providers" array, whose keys may repeat top-level names, are removed first).
field() {
  sed -e 's/"errors":{[^}]*}//' -e 's/"providers":\[[^]]*\]//' \
      -e "s/.*\"$2\":\\(-\\{0,1\\}[0-9.][0-9.]*\\).*/\\1/p" -n <<<"$1"
}
expect_field() {  # LINE NAME VALUE
  local v
  v=$(field "$1" "$2")
  [ "$v" = "$3" ] || fail "expected \"$2\":$3, got '${v}' in: $1"
}

# The first line a server printed to FILE, waiting up to 30 s while PID runs.
first_line() {  # FILE PID
  local line=""
  for _ in $(seq 300); do
    line=$(head -n 1 "$1" 2>/dev/null || true)
    [ -n "$line" ] && break
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  printf '%s' "$line"
}

# ---- server start and its first line ------------------------------------------
# Started directly, not under timeout(1): $! is the server itself, so the
# steps below signal the server, and the EXIT trap stops it whatever happens.
"$server_bin" --port 0 >"$tmp/server.out" 2>"$tmp/server.err" &
server_pid=$!
first=$(first_line "$tmp/server.out" "$server_pid")
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
# Bad values of the retry / load-balancing flags, and hedging a call that is
# not idempotent: usage errors, and the problem (the first line, before the
# usage text) names the flag.
bad_usage() {  # DESCRIPTION FLAG-IN-MESSAGE ARGS...
  local what=$1 flag=$2 rc
  shift 2
  set +e
  timeout 10 "$client_bin" --server "$endpoint" --calls 1 "$@" >/dev/null 2>"$tmp/usage.err"
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "$what: exit status $rc, expected 2"
  head -n 1 "$tmp/usage.err" | grep -q -- "^echo_client: .*$flag" ||
    fail "$what: the message does not name $flag: $(head -n 1 "$tmp/usage.err")"
}
bad_usage "--lb bogus" --lb --lb bogus
bad_usage "--retries 99" --retries --retries 99
bad_usage "--hedge-ms without --idempotent" --idempotent --hedge-ms 10

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
# (The calls are sent: the client starts them once its connection is ready.)
set +e
timeout 30 "$client_bin" --server "$endpoint" --method sleep --sleep-ms 300 --timeout-ms 30 \
  --calls 3 --concurrency 3 >"$tmp/text.out" 2>&1
set -e
grep -Eq "timeout \(sent, waiting for the reply\) after [0-9]+ ms calling 'sleep' on $endpoint" "$tmp/text.out" ||
  fail "text output lacks the timeout message: $(cat "$tmp/text.out")"

# ---- two servers: least_active, a retry, hedging --------------------------------
"$server_bin" --port 0 >"$tmp/server2.out" 2>"$tmp/server2.err" &
server2_pid=$!
second=$(first_line "$tmp/server2.out" "$server2_pid")
if ! grep -Eq '^listening on 127\.0\.0\.1:[1-9][0-9]*$' <<<"$second"; then
  fail "second server's first line is '$second': $(cat "$tmp/server2.err")"
else
  endpoint2=${second#listening on }
  echo "server 2: $second"
  # The number after "attempts" in the providers entry of PEER.
  provider_attempts() { grep -o "{\"peer\":\"$2\",\"attempts\":[0-9]*" <<<"$1" | sed 's/.*://'; }

  # Echo for 1 s (the client starts once both connections are ready).
  set +e
  timeout 30 "$client_bin" --server "$endpoint,$endpoint2" --lb least_active --retries 1 --idempotent \
    --hedge-ms 50 --duration-s 1 --concurrency 4 --json >"$tmp/two.out" 2>"$tmp/two.err"
  rc=$?
  set -e
  last=$(tail -n 1 "$tmp/two.out")
  echo "two servers: $last"
  [ "$rc" = 0 ] || fail "two servers: client exited $rc: $(cat "$tmp/two.err")"
  calls=$(field "$last" calls)
  [ -n "$calls" ] && [ "$calls" -gt 0 ] || fail "two servers: no calls in: $last"
  expect_field "$last" ok "$calls"
  expect_field "$last" lost 0
  expect_field "$last" completed_twice 0
  grep -q '"errors":{}' <<<"$last" || fail "two servers: expected no errors in: $last"
  for f in attempts retries hedges budget_refusals; do
    [ -n "$(field "$last" $f)" ] || fail "two servers: no numeric \"$f\" in: $last"
  done
  attempts=$(field "$last" attempts)
  [ -n "$attempts" ] && [ "$attempts" -ge "$calls" ] || fail "two servers: $attempts attempts for $calls calls"
  grep -q '"lb":"least_active"' <<<"$last" || fail "two servers: no \"lb\":\"least_active\" in: $last"
  grep -Eq '"providers":\[\{[^]]*\}\]\}$' <<<"$last" || fail "two servers: no providers array at the end of: $last"
  for ep in "$endpoint" "$endpoint2"; do
    n=$(provider_attempts "$last" "$ep")
    [ -n "$n" ] && [ "$n" -gt 0 ] || fail "two servers: provider $ep got '${n}' attempts in: $last"
  done

  # Calls that sleep 100 ms with a 20 ms hedge delay: each gets a backup
  # attempt on the other server, and every call still succeeds exactly once.
  set +e
  timeout 30 "$client_bin" --server "$endpoint,$endpoint2" --lb p2c --retries 1 --idempotent --hedge-ms 20 \
    --method sleep --sleep-ms 100 --calls 12 --concurrency 4 --json >"$tmp/hedge.out" 2>"$tmp/hedge.err"
  rc=$?
  set -e
  last=$(tail -n 1 "$tmp/hedge.out")
  echo "hedged: $last"
  [ "$rc" = 0 ] || fail "hedged: client exited $rc: $(cat "$tmp/hedge.err")"
  expect_field "$last" calls 12
  expect_field "$last" ok 12
  expect_field "$last" lost 0
  expect_field "$last" completed_twice 0
  hedges=$(field "$last" hedges)
  [ -n "$hedges" ] && [ "$hedges" -gt 0 ] || fail "hedged: expected hedges > 0 in: $last"
  grep -q '"lb":"p2c"' <<<"$last" || fail "hedged: no \"lb\":\"p2c\" in: $last"

  # The text summary: the attempt counters and a line per provider.
  set +e
  timeout 30 "$client_bin" --server "$endpoint,$endpoint2" --calls 20 --concurrency 2 >"$tmp/two.txt" 2>&1
  set -e
  grep -Eq '^  attempts: [0-9]+ \([0-9]+ retries, [0-9]+ hedges, [0-9]+ budget refusals\), lb round_robin$' \
    "$tmp/two.txt" || fail "text output lacks the attempts line: $(cat "$tmp/two.txt")"
  for ep in "$endpoint" "$endpoint2"; do
    grep -Eq "^  provider $ep: [0-9]+ attempts, [0-9]+ failed$" "$tmp/two.txt" ||
      fail "text output lacks the line of provider $ep: $(cat "$tmp/two.txt")"
  done

  kill -KILL "$server2_pid" 2>/dev/null || true
  wait "$server2_pid" 2>/dev/null || true
  server2_pid=""
fi

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

# ---- nothing left behind: the steps above stopped every server they started ----
list_children
[ ${#kids[@]} -eq 0 ] || fail "processes still running after the last step: ${kids[*]}"
stop_children
list_children
[ ${#kids[@]} -eq 0 ] || fail "processes still running after the cleanup: ${kids[*]}"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all checks passed"
