#!/usr/bin/env bash
# End-to-end test of the echo_server / echo_client examples (registered with
# CTest by tests/examples/CMakeLists.txt). Uses only bash, grep, sed, awk and
# coreutils; every step is bounded, none depends on how fast a connect or a
# HELLO is (the client waits for its connections before its first call), and
# the suite checks that it leaves no process behind.
#
# It also checks the command lines of the three example programs (echo_server,
# echo_client, fault_proxy): --help, --flag=value, one-line usage errors, the
# limits checked at parse time, one line when a program cannot listen,
# echo_client's --fail-on-error and its second SIGINT.
#
# With README.md as a fourth argument it also checks that the lines the
# README quotes from these programs are the lines they print.
#
#   echo_cli_test.sh PATH/TO/echo_server PATH/TO/echo_client PATH/TO/fault_proxy [README.md]
set -euo pipefail

server_bin=${1:?usage: echo_cli_test.sh ECHO_SERVER ECHO_CLIENT FAULT_PROXY}
client_bin=${2:?usage: echo_cli_test.sh ECHO_SERVER ECHO_CLIENT FAULT_PROXY}
proxy_bin=${3:?usage: echo_cli_test.sh ECHO_SERVER ECHO_CLIENT FAULT_PROXY}
readme=${4:-}

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

# Waits up to SECONDS for a line matching the ERE PATTERN in FILE while PID
# runs; true if it came.
wait_for_line() {  # PATTERN FILE PID SECONDS
  local i
  for i in $(seq $(($4 * 10))); do
    grep -Eq -- "$1" "$2" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || break
    sleep 0.1
  done
  grep -Eq -- "$1" "$2" 2>/dev/null
}
# Waits up to SECONDS for PID (a child of this shell) to exit; sets `rc` to its
# exit status, or kills it and sets `rc` to "still running".
wait_exit() {  # PID SECONDS
  local i
  for i in $(seq $(($2 * 10))); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$1" 2>/dev/null; then
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    rc="still running"
    return
  fi
  set +e
  wait "$1"
  rc=$?
  set -e
}

# ---- --help and -h: the usage on stdout, exit status 0 ---------------------------
for prog in "$server_bin" "$client_bin" "$proxy_bin"; do
  name=$(basename "$prog")
  for h in --help -h; do
    set +e
    timeout 10 "$prog" "$h" >"$tmp/help.out" 2>"$tmp/help.err"
    rc=$?
    set -e
    [ "$rc" = 0 ] || fail "$name $h: exit status $rc, expected 0"
    head -n 1 "$tmp/help.out" | grep -q "^usage: $name " || fail "$name $h: stdout does not start with the usage: $(cat "$tmp/help.out")"
    [ -s "$tmp/help.err" ] && fail "$name $h: wrote on stderr: $(cat "$tmp/help.err")"
  done
done
# --version: "<program> (wheelrpc) X.Y.Z" on stdout, exit status 0.
for prog in "$server_bin" "$client_bin" "$proxy_bin"; do
  name=$(basename "$prog")
  set +e
  version=$(timeout 10 "$prog" --version 2>"$tmp/version.err")
  rc=$?
  set -e
  [ "$rc" = 0 ] || fail "$name --version: exit status $rc, expected 0"
  grep -Eqx "$name \(wheelrpc\) [0-9]+\.[0-9]+\.[0-9]+" <<<"$version" || fail "$name --version printed '$version'"
done
# Both say how the heartbeat interval is agreed (the larger proposal wins).
for prog in "$server_bin" "$client_bin"; do
  "$prog" --help | tr -s ' \n' ' ' | grep -q "agrees on the LARGER of" ||
    fail "$(basename "$prog") --help does not say how the heartbeat interval is agreed"
done
# ... and what the exit status says when no call succeeded.
"$client_bin" --help | tr -s ' \n' ' ' | grep -q "1 if no call succeeded" ||
  fail "echo_client --help does not document the exit status of a run in which no call succeeded"
# --help wins over the other words, even bad ones.
set +e
timeout 10 "$client_bin" --concurrency x --help >"$tmp/help.out" 2>&1
rc=$?
set -e
[ "$rc" = 0 ] && head -n 1 "$tmp/help.out" | grep -q "^usage: echo_client " ||
  fail "--concurrency x --help: exit status $rc, expected 0 and the usage: $(cat "$tmp/help.out")"
# The usage documents what a script relies on.
timeout 10 "$client_bin" --help >"$tmp/help.out" 2>/dev/null || true
for s in --fail-on-error 130 "--flag=V"; do
  grep -q -- "$s" "$tmp/help.out" || fail "echo_client --help does not mention $s"
done

# ---- usage errors: one line naming the problem, "see --help", exit status 2 ------
usage_error() {  # PROGRAM EXPECTED-LINE(ERE) ARGS...
  local prog=$1 expected=$2 rc
  shift 2
  set +e
  timeout 10 "$prog" "$@" >"$tmp/usage.out" 2>"$tmp/usage.err"
  rc=$?
  set -e
  local what
  what="$(basename "$prog") $*"
  [ "$rc" = 2 ] || fail "$what: exit status $rc, expected 2"
  [ -s "$tmp/usage.out" ] && fail "$what: wrote on stdout: $(cat "$tmp/usage.out")"
  [ "$(wc -l <"$tmp/usage.err")" = 1 ] || fail "$what: expected one line on stderr, got: $(cat "$tmp/usage.err")"
  grep -Eq -- "^$expected \(see --help\)\$" "$tmp/usage.err" ||
    fail "$what: expected '$expected (see --help)', got: $(cat "$tmp/usage.err")"
}
usage_error "$client_bin" "echo_client: --concurrency: expected a number, got 'x'" \
  --server 127.0.0.1:7 --calls 1 --concurrency x
usage_error "$client_bin" "echo_client: --concurrency: expected a number, got 'x'" \
  --server=127.0.0.1:7 --calls=1 --concurrency=x
usage_error "$client_bin" "echo_client: --concurrency: expected 1\.\.1000000, got 0" --concurrency 0
usage_error "$client_bin" "echo_client: --retries: expected 0\.\.16, got 17" --retries=17
usage_error "$client_bin" "echo_client: --timeout-ms: missing value" --server 127.0.0.1:7 --timeout-ms
usage_error "$client_bin" "echo_client: --json: takes no value" --json=yes
usage_error "$client_bin" "echo_client: unknown flag '--bogus'" --bogus 1
usage_error "$client_bin" "echo_client: unexpected argument 'stray'" stray
usage_error "$client_bin" "echo_client: --server is required" --calls 1
usage_error "$client_bin" "echo_client: give exactly one of --calls and --duration-s" --server 127.0.0.1:7
usage_error "$client_bin" "echo_client: --idle-timeout-ms must be at least 2 x --heartbeat-ms .*" \
  --server 127.0.0.1:7 --calls 1 --heartbeat-ms 100 --idle-timeout-ms 150
usage_error "$server_bin" "echo_server: --threads: expected 1\.\.256, got 0" --port 0 --threads 0
usage_error "$server_bin" "echo_server: --port: expected 0\.\.65535, got 65536" --port=65536
usage_error "$server_bin" "echo_server: --port: expected 0\.\.65535, got -1" --port -1
usage_error "$server_bin" "echo_server: --host: invalid address 'nowhere'.*" --port 0 --host nowhere
usage_error "$server_bin" "echo_server: --port is required"
usage_error "$server_bin" "echo_server: --fail-percent: expected 0\.\.100, got 101" --port 0 --fail-percent 101
usage_error "$server_bin" "echo_server: --max-connection-age-ms: expected 100\.\.86400000, got 50" --port 0 \
  --max-connection-age-ms 50
usage_error "$proxy_bin" "fault_proxy: --control-port: expected 0\.\.65535, got 70000" \
  --listen 127.0.0.1:0 --upstream 127.0.0.1:7 --control-port 70000
usage_error "$proxy_bin" "fault_proxy: --upstream: '127\.0\.0\.1:99999' is not HOST:PORT.*" \
  --listen=127.0.0.1:0 --upstream=127.0.0.1:99999
usage_error "$proxy_bin" "fault_proxy: --upstream is required" --listen 127.0.0.1:0

# The payload limit is checked at parse time: an echo request's body is the
# method name ("echo", 4 bytes, and its u8 length), the attachment count (u16)
# and the payload, at most ChannelOptions::max_body = 8 MiB: 8388601 bytes of
# payload fit (checked against a server below), one more does not.
usage_error "$client_bin" "echo_client: --payload-bytes: expected 0\.\.8388601, got 9000000; .*8388608 bytes.*" \
  --server 127.0.0.1:7 --calls 1 --payload-bytes 9000000
usage_error "$client_bin" "echo_client: --payload-bytes: expected 0\.\.8388601, got 8388602; .*" \
  --server 127.0.0.1:7 --calls 1 --payload-bytes=8388602

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
usage_error "$client_bin" "echo_client: --server: invalid server endpoint 'not-an-endpoint': .*" \
  --server not-an-endpoint --calls 1
usage_error "$client_bin" "echo_client: give exactly one of --calls and --duration-s" --server "$endpoint"
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
  [ "$(wc -l <"$tmp/usage.err")" = 1 ] || fail "$what: expected one line on stderr, got: $(cat "$tmp/usage.err")"
  grep -q -- "^echo_client: .*$flag.* (see --help)$" "$tmp/usage.err" ||
    fail "$what: the message does not name $flag: $(cat "$tmp/usage.err")"
}
bad_usage "--lb bogus" --lb --lb bogus
bad_usage "--outlier-factor 1" --outlier-factor --outlier-factor 1
bad_usage "--outlier-max-percent 101" --outlier-max-percent --outlier-max-percent 101
bad_usage "--outlier-max-ms below --outlier-base-ms" --outlier-max-ms --outlier-base-ms 5000 --outlier-max-ms 1000
bad_usage "--warmup-s without --duration-s" --warmup-s --warmup-s 1
bad_usage "--retry-budget-ratio 11" --retry-budget-ratio --retry-budget-ratio 11
bad_usage "--retries 99" --retries --retries 99
bad_usage "--hedge-ms without --idempotent" --idempotent --hedge-ms 10

# The --json interval lines of a run (all lines but the last) have exactly the
# documented shape: {"t_ms":T,"ok":N,"errors":{...},"providers_now":P}.
interval_lines_ok() {  # what file
  head -n -1 "$2" | grep -Evq '^\{"t_ms":[0-9]+,"ok":[0-9]+,"errors":\{[^}]*\},"providers_now":[0-9]+\}$' &&
    fail "$1: malformed interval line in: $(head -n -1 "$2")"
  return 0
}

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
# Interval lines, if any (a slow machine), have exactly the documented shape.
if [ "$(wc -l <"$tmp/echo.out")" -gt 1 ]; then
  interval_lines_ok echo "$tmp/echo.out"
fi

# ---- sleep 300 ms with a 30 ms deadline: every call times out on time ------------
set +e
# Five rounds of 30 ms deadlines last at least 150 ms, so a report every
# 50 ms comes at least once before the summary: an interval line to check.
timeout 30 "$client_bin" --server "$endpoint" --method sleep --sleep-ms 300 --timeout-ms 30 \
  --calls 20 --concurrency 4 --report-interval-ms 50 --json >"$tmp/sleep.out" 2>"$tmp/sleep.err"
rc=$?
set -e
last=$(tail -n 1 "$tmp/sleep.out")
echo "sleep: $last"
# No call succeeded: exit status 1 even without --fail-on-error.
[ "$rc" = 1 ] || fail "sleep client exited $rc, expected 1 (no call succeeded): $(cat "$tmp/sleep.err")"
expect_field "$last" calls 20
expect_field "$last" ok 0
expect_field "$last" timeout 20
[ "$(wc -l <"$tmp/sleep.out")" -ge 2 ] || fail "sleep: expected interval lines every 50 ms: $(cat "$tmp/sleep.out")"
interval_lines_ok sleep "$tmp/sleep.out"
expect_field "$last" lost 0
expect_field "$last" completed_twice 0
overrun=$(field "$last" max_overrun_ms)
# Generous, as in the C++ fault tests: a sanitizer build beside other suites
# on a loaded 2-core machine delays handlers (it measured 13 ms there under TSan).
if [ -z "$overrun" ] || ! awk -v v="$overrun" 'BEGIN { exit !(v < 300) }'; then
  fail "sleep: max_overrun_ms is '$overrun', expected < 300"
fi

# ---- the text output names the error precisely ------------------------------------
# (The calls are sent: the client starts them once its connection is ready.)
set +e
timeout 30 "$client_bin" --server "$endpoint" --method sleep --sleep-ms 300 --timeout-ms 30 \
  --calls 3 --concurrency 3 >"$tmp/text.out" 2>&1
set -e
# (When the server's own deadline answers at the same instant as the client's,
# the message adds "; the server timed out too" inside the parentheses.)
grep -Eq "timeout \(sent, waiting for the reply(; the server timed out too)?\) after [0-9]+ ms calling 'sleep' on $endpoint" "$tmp/text.out" ||
  fail "text output lacks the timeout message: $(cat "$tmp/text.out")"
# ... with its timeline: where the 30 ms went.
grep -Eq "calling 'sleep' on $endpoint(; the server timed out too)?; timeline: queued 0\.0 ms, sent [0-9.]+(, socket wrote [0-9.]+)?, timer fired [0-9.]+ \([0-9.]+ late\)" "$tmp/text.out" ||
  grep -Eq "calling 'sleep' on $endpoint; timeline: queued 0\.0 ms, sent [0-9.]+" "$tmp/text.out" ||
  fail "the timeout message has no timeline: $(cat "$tmp/text.out")"
# One example message per error code shown, the code's name first.
grep -q '^  an example of each error:$' "$tmp/text.out" || fail "no examples of the errors: $(cat "$tmp/text.out")"
grep -Eq "^    timeout: timeout \(sent" "$tmp/text.out" || fail "no example of the timeout code: $(cat "$tmp/text.out")"
# The heartbeat the connection agreed on: the larger of the two proposals
# (both 15000 ms here).
grep -q "^  heartbeat: 15000 ms agreed (the larger of this client's 15000 ms and the server's)$" "$tmp/text.out" ||
  fail "no agreed heartbeat line: $(cat "$tmp/text.out")"

# ---- the text summary ends with the latency histogram line ------------------------
set +e
timeout 30 "$client_bin" --server "$endpoint" --calls 50 --concurrency 2 >"$tmp/hist.out" 2>&1
set -e
grep -q '^latency histogram (ms):' "$tmp/hist.out" ||
  fail "text output lacks the latency histogram line: $(cat "$tmp/hist.out")"
[ "$(tail -n 1 "$tmp/hist.out" | cut -c1-23)" = "latency histogram (ms):" ] ||
  fail "the latency histogram is not the last line: $(cat "$tmp/hist.out")"

# ---- --admin-port: the client serves its admin pages while it runs -------------------
set +e
timeout 30 "$client_bin" --server "$endpoint" --calls 20 --admin-port 0 >"$tmp/admin.out" 2>&1
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "echo_client --admin-port 0 exited $rc: $(cat "$tmp/admin.out")"
grep -qE '^admin on http://127\.0\.0\.1:[0-9]+$' "$tmp/admin.out" ||
  fail "echo_client --admin-port 0 printed no 'admin on http://127.0.0.1:PORT' line: $(cat "$tmp/admin.out")"

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
  grep -Eq '"providers":\[\{[^]]*\}\],"error_examples":\{[^}]*\},"heartbeat_ms":15000\}$' <<<"$last" ||
    fail "two servers: no providers array, error_examples and heartbeat_ms at the end of: $last"
  # Every count adds up with the others.
  python3 - "$last" <<'PY' || fail "two servers: the summary's counts do not add up: $last"
import json, sys
s = json.loads(sys.argv[1])
problems = []
if s["calls"] != s["ok"] + s["timeout"] + s["failed"] + s["lost"]:
    problems.append("calls != ok + timeout + failed + lost")
if sum(s["errors"].values()) != s["timeout"] + s["failed"]:
    problems.append("errors do not sum to timeout + failed")
if s["attempts"] != sum(p["attempts"] for p in s["providers"]) + s["attempts_unplaced"]:
    problems.append("attempts != providers' attempts + attempts_unplaced")
for p in s["providers"]:
    if p["attempts"] != p["ok"] + p["failures"] + p["cancelled"] + p["in_flight"]:
        problems.append(f"provider {p['peer']}: attempts != ok + failures + cancelled + in_flight")
if set(s["error_examples"]) != set(s["errors"]):
    problems.append("error_examples does not name each error code once")
if problems:
    sys.exit("; ".join(problems))
PY
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
    grep -Eq "^  provider $ep: [0-9]+ attempts: [0-9]+ ok, [0-9]+ failed, [0-9]+ cancelled$" "$tmp/two.txt" ||
      fail "text output lacks the line of provider $ep: $(cat "$tmp/two.txt")"
  done

  kill -KILL "$server2_pid" 2>/dev/null || true
  wait "$server2_pid" 2>/dev/null || true
  server2_pid=""
fi

# ---- the largest payload that fits the body limit is accepted, and echoed -------
set +e
timeout 60 "$client_bin" --server "$endpoint" --payload-bytes 8388601 --calls 2 --timeout-ms 30000 \
  --fail-on-error --json >"$tmp/big.out" 2>"$tmp/big.err"
rc=$?
set -e
last=$(tail -n 1 "$tmp/big.out")
echo "largest payload: $last"
[ "$rc" = 0 ] || fail "largest payload: client exited $rc: $(cat "$tmp/big.err")"
expect_field "$last" ok 2

# ---- --flag=value, for every flag of the three programs ------------------------
"$server_bin" --port=0 --host=127.0.0.1 --threads=2 --heartbeat-ms=1000 --idle-timeout-ms=3000 \
  >"$tmp/eq_server.out" 2>"$tmp/eq_server.err" &
eq_server_pid=$!
eq_first=$(first_line "$tmp/eq_server.out" "$eq_server_pid")
"$proxy_bin" --listen=127.0.0.1:0 --upstream="${eq_first#listening on }" --control-port=0 \
  >"$tmp/proxy.out" 2>"$tmp/proxy.err" &
proxy_pid=$!
if ! grep -Eq '^listening on 127\.0\.0\.1:[1-9][0-9]*$' <<<"$eq_first"; then
  fail "server with --flag=value: first line '$eq_first': $(cat "$tmp/eq_server.err")"
elif ! wait_for_line '^control on 127\.0\.0\.1:[1-9][0-9]*$' "$tmp/proxy.out" "$proxy_pid" 30; then
  fail "proxy with --flag=value did not start: $(cat "$tmp/proxy.out" "$tmp/proxy.err")"
else
  proxy_endpoint=$(sed -n 's/^listening on //p' "$tmp/proxy.out")
  set +e
  timeout 60 "$client_bin" --server="$proxy_endpoint" --calls=6 --concurrency=2 --timeout-ms=20000 \
    --payload-bytes=100 --method=echo --sleep-ms=0 --report-interval-ms=500 --json --heartbeat-ms=1000 \
    --idle-timeout-ms=3000 --retries=1 --idempotent --lb=p2c --hedge-ms=15000 --fail-on-error \
    >"$tmp/eq.out" 2>"$tmp/eq.err"
  rc=$?
  set -e
  last=$(tail -n 1 "$tmp/eq.out")
  echo "--flag=value: $last"
  [ "$rc" = 0 ] || fail "--flag=value: client exited $rc: $(cat "$tmp/eq.err")"
  expect_field "$last" calls 6
  expect_field "$last" ok 6
  expect_field "$last" concurrency 2
  expect_field "$last" timeout_ms 20000
  grep -q '"lb":"p2c"' <<<"$last" || fail "--flag=value: no \"lb\":\"p2c\" in: $last"
  set +e
  timeout 60 "$client_bin" --server="$proxy_endpoint" --duration-s=0.2 --method=sleep --sleep-ms=1 --json \
    >"$tmp/eq2.out" 2>"$tmp/eq2.err"
  rc=$?
  set -e
  last=$(tail -n 1 "$tmp/eq2.out")
  [ "$rc" = 0 ] || fail "--duration-s=: client exited $rc: $(cat "$tmp/eq2.err")"
  grep -q '"method":"sleep"' <<<"$last" || fail "--method=sleep: not in: $last"
fi
for pid in "$proxy_pid" "$eq_server_pid"; do
  kill -TERM "$pid" 2>/dev/null || true
  wait_exit "$pid" 30
  [ "$rc" = 0 ] || fail "server/proxy with --flag=value: exit status $rc after SIGTERM"
done

# ---- cannot listen: said once, on one line, exit status 1 ------------------------
port=${endpoint##*:}
cannot_listen() {  # WHAT ARGS...
  local what=$1 rc
  shift
  set +e
  timeout 30 "$@" >"$tmp/listen.out" 2>"$tmp/listen.err"
  rc=$?
  set -e
  [ "$rc" = 1 ] || fail "$what: exit status $rc, expected 1"
  [ "$(cat "$tmp/listen.out" "$tmp/listen.err" | grep -c 'in use')" = 1 ] ||
    fail "$what: expected 'in use' once, got: $(cat "$tmp/listen.out" "$tmp/listen.err")"
  [ "$(wc -l <"$tmp/listen.err")" = 1 ] || fail "$what: expected one line on stderr, got: $(cat "$tmp/listen.err")"
}
cannot_listen "echo_server on a port in use" "$server_bin" --port "$port"
grep -Eq "^echo_server: cannot listen on $endpoint: Address already in use$" "$tmp/listen.err" ||
  fail "echo_server on a port in use: not the line README.md quotes: $(cat "$tmp/listen.err")"
cannot_listen "fault_proxy on a port in use" "$proxy_bin" --listen "$endpoint" --upstream "$endpoint"
cannot_listen "fault_proxy's control API on a port in use" "$proxy_bin" --listen 127.0.0.1:0 --upstream "$endpoint" \
  --control-port "$port"

# ---- --fail-on-error: exit 1 if a call failed (0 without it) ---------------------
# A port nothing listens on: a server's, once it was killed. Both clients wait
# for a connection at most 10 s (none comes), then their calls fail; they run
# side by side.
"$server_bin" --port 0 >"$tmp/dead.out" 2>"$tmp/dead.err" &
dead_pid=$!
dead=$(first_line "$tmp/dead.out" "$dead_pid")
kill -KILL "$dead_pid" 2>/dev/null || true
wait "$dead_pid" 2>/dev/null || true
dead=${dead#listening on }
if [ -z "$dead" ]; then
  fail "no port for the refused-port case: $(cat "$tmp/dead.err")"
else
  "$client_bin" --server "$dead" --calls 2 --timeout-ms 500 --fail-on-error >"$tmp/refused1.out" 2>&1 &
  refused1_pid=$!
  "$client_bin" --server "$dead" --calls 2 --timeout-ms 500 >"$tmp/refused0.out" 2>&1 &
  refused0_pid=$!
  wait_exit "$refused1_pid" 60
  [ "$rc" = 1 ] || fail "--fail-on-error against a refused port: exit status $rc, expected 1: $(cat "$tmp/refused1.out")"
  wait_exit "$refused0_pid" 60
  # No call succeeded: a failed run even without --fail-on-error.
  [ "$rc" = 1 ] || fail "refused port without --fail-on-error: exit status $rc, expected 1 (no call succeeded): $(cat "$tmp/refused0.out")"
fi
# ---- answers known at once end the connect wait at once, and say why -----------
# A name that does not resolve and an etcd that refuses: known in
# milliseconds, so the wait ends long before its 10 s bound (the line says how
# long it waited), with the reason; the calls then fail (exit 1: none succeeded).
not_ready_ms() { sed -n 's/^echo_client: no server ready after \([0-9]*\) ms: .*/\1/p' "$1" | head -n 1; }
"$client_bin" --server no-such-host.invalid:1 --calls 2 --timeout-ms 200 >"$tmp/nohost.out" 2>&1 &
nohost_pid=$!
dead_etcd=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$client_bin" --registry "etcd://127.0.0.1:$dead_etcd" --service echo --calls 2 --timeout-ms 200 \
  >"$tmp/noetcd.out" 2>&1 &
noetcd_pid=$!
wait_exit "$nohost_pid" 60
[ "$rc" = 1 ] || fail "unresolvable host: exit status $rc, expected 1: $(cat "$tmp/nohost.out")"
grep -Eq "^echo_client: no server ready after [0-9]+ ms: dns:no-such-host\.invalid:1: host name 'no-such-host\.invalid' does not resolve: " \
  "$tmp/nohost.out" || fail "unresolvable host: the reason is not said: $(cat "$tmp/nohost.out")"
waited=$(not_ready_ms "$tmp/nohost.out")
[ -n "$waited" ] && [ "$waited" -lt 9000 ] || fail "unresolvable host: waited '${waited}' ms for an answer known at once"
wait_exit "$noetcd_pid" 60
[ "$rc" = 1 ] || fail "refusing etcd: exit status $rc, expected 1: $(cat "$tmp/noetcd.out")"
grep -Eq "^echo_client: no server ready after [0-9]+ ms: etcd service 'echo': read of /wheelrpc/echo/providers/ failed: etcd at 127\.0\.0\.1:$dead_etcd refused the connection" \
  "$tmp/noetcd.out" || fail "refusing etcd: the reason is not said (once): $(cat "$tmp/noetcd.out")"
if grep -q "etcd service 'echo': etcd service 'echo'" "$tmp/noetcd.out"; then
  fail "refusing etcd: a doubled prefix: $(cat "$tmp/noetcd.out")"
fi
waited=$(not_ready_ms "$tmp/noetcd.out")
[ -n "$waited" ] && [ "$waited" -lt 9000 ] || fail "refusing etcd: waited '${waited}' ms for an answer known at once"
# Nothing was ever known: no alarm about keeping "the last 0" providers.
if grep -q "keeping the last 0" "$tmp/noetcd.out" "$tmp/nohost.out"; then
  fail "a client that never had a provider talks of keeping the last 0"
fi

# Calls that time out are failed calls too.
set +e
timeout 30 "$client_bin" --server "$endpoint" --method sleep --sleep-ms 300 --timeout-ms 30 --calls 2 \
  --fail-on-error --json >"$tmp/fail.out" 2>"$tmp/fail.err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "--fail-on-error with timeouts: exit status $rc, expected 1"
expect_field "$(tail -n 1 "$tmp/fail.out")" timeout 2

# ---- SIGINT: the first waits for the calls in flight, a second exits at once ----
# Started directly: $! is the client itself, the process the signals are for.
# The client waits for the calls of 300 ms, prints the summary and exits 0.
"$client_bin" --server "$endpoint" --method sleep --sleep-ms 300 --timeout-ms 60000 --calls 1000000 \
  --concurrency 2 --report-interval-ms 100 >"$tmp/int1.out" 2>"$tmp/int1.err" &
int_pid=$!
if ! wait_for_line ' 2 in flight' "$tmp/int1.out" "$int_pid" 60; then
  fail "SIGINT: no calls in flight: $(cat "$tmp/int1.out" "$tmp/int1.err")"
else
  kill -INT "$int_pid"
  wait_exit "$int_pid" 60
  [ "$rc" = 0 ] || fail "one SIGINT: exit status $rc, expected 0: $(cat "$tmp/int1.err")"
  grep -q "interrupted, waiting for the calls in flight" "$tmp/int1.err" || fail "one SIGINT: no message: $(cat "$tmp/int1.err")"
  grep -Eq '^[0-9]+ calls in .*, 0 lost, 0 completed twice$' "$tmp/int1.out" ||
    fail "one SIGINT: no summary: $(cat "$tmp/int1.out")"
fi
# Calls that sleep 60 s: after the second SIGINT the client does not wait for
# them; it exits 130 (128 + SIGINT) at once (within 30 s, well before 60 s).
"$client_bin" --server "$endpoint" --method sleep --sleep-ms 60000 --timeout-ms 120000 --calls 2 \
  --concurrency 2 --report-interval-ms 100 >"$tmp/int2.out" 2>"$tmp/int2.err" &
int_pid=$!
if ! wait_for_line ' 2 in flight' "$tmp/int2.out" "$int_pid" 60; then
  fail "second SIGINT: no calls in flight: $(cat "$tmp/int2.out" "$tmp/int2.err")"
else
  kill -INT "$int_pid"
  # The second only once the first was handled (two pending SIGINTs are one).
  if ! wait_for_line 'interrupted, waiting' "$tmp/int2.err" "$int_pid" 60; then
    fail "second SIGINT: the first was not reported: $(cat "$tmp/int2.err")"
  fi
  kill -INT "$int_pid" 2>/dev/null || true
  wait_exit "$int_pid" 30
  [ "$rc" = 130 ] || fail "second SIGINT: exit status $rc, expected 130: $(cat "$tmp/int2.err")"
fi

# ---- bad input: an HTTP request on the port is logged with its peer and counted -----
# (The exit summary below counts it by reason.)
# In a subshell: the server may close the connection before the last bytes
# are written, and the SIGPIPE that follows must not end this script.
(trap '' PIPE; printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' >"/dev/tcp/${endpoint%:*}/${endpoint##*:}") 2>/dev/null || true
wait_for_line 'peer=127\.0\.0\.1:[0-9]+ closed for bad input \(bad_magic\): bad magic 0x4745' \
  "$tmp/server.err" "$server_pid" 30 || fail "bad input: no warning naming the peer and the reason: $(cat "$tmp/server.err")"

# ---- SIGTERM: a graceful shutdown; the call in flight finishes, the server exits 0 --
# A call of 1 s is in flight when the server gets SIGTERM: it still succeeds
# (--fail-on-error), and the server exits 0 once it was answered.
"$client_bin" --server "$endpoint" --method sleep --sleep-ms 1000 --timeout-ms 60000 --calls 1 --concurrency 1 \
  --retries 0 --report-interval-ms 100 --fail-on-error >"$tmp/term.out" 2>"$tmp/term.err" &
term_pid=$!
if ! wait_for_line ' 1 in flight' "$tmp/term.out" "$term_pid" 60; then
  fail "SIGTERM: no call in flight: $(cat "$tmp/term.out" "$tmp/term.err")"
fi
kill -TERM "$server_pid"
wait_exit "$term_pid" 60
[ "$rc" = 0 ] || fail "the call in flight at SIGTERM did not succeed: exit status $rc: $(cat "$tmp/term.out" "$tmp/term.err")"
for _ in $(seq 300); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$server_pid" 2>/dev/null; then
  fail "server still running 30 s after SIGTERM"
else
  set +e
  wait "$server_pid"
  rc=$?
  set -e
  server_pid=""
  [ "$rc" = 0 ] || fail "server exited $rc after SIGTERM: $(cat "$tmp/server.err")"
  grep -q "stopped" "$tmp/server.err" || fail "server printed no summary: $(cat "$tmp/server.err")"
  grep -Eq '^echo_server: closed for bad input: [1-9][0-9]* \(bad_magic=[1-9][0-9]* bad_version=0 oversize_frame=0 malformed_frame=0 no_hello=0 hello_timeout=0\)$' \
    "$tmp/server.err" || fail "server's summary does not count the bad input: $(cat "$tmp/server.err")"
  grep -q "shutting down" "$tmp/server.err" || fail "server did not shut down gracefully: $(cat "$tmp/server.err")"
  if grep -q "did not drain" "$tmp/server.err"; then
    fail "server: something still held its io_context after the shutdown: $(cat "$tmp/server.err")"
  fi
fi

# ---- the lines README.md quotes are the lines the programs print ----------------
# Each quoted line is checked in two places: the README still has a line of
# that shape, and the program printed one (above, or here).
if [ -n "$readme" ]; then
  readme_quotes() {  # REGEX WHAT
    grep -Eq "$1" "$readme" || fail "README.md no longer quotes $2 as the programs print it (pattern: $1)"
  }
  readme_quotes "^timeout \(sent, waiting for the reply\) after [0-9]+ ms calling 'sleep' on 127\.0\.0\.1:[0-9]+; timeline: queued 0\.0 ms, sent [0-9.]+, (socket wrote [0-9.]+, )?timer fired [0-9.]+ \([0-9.]+ late\)(, completed [0-9.]+)?\$" \
    "the demo's timeout line"
  readme_quotes "^# slow -> timeout \(sent, waiting for the reply\) after [0-9]+ ms calling 'slow' on 127\.0\.0\.1:[0-9]+; timeline: queued 0\.0 ms, .*\$" \
    "hello_coro's timeout line"
  readme_quotes "^echo_server: cannot listen on 127\.0\.0\.1:[0-9]+: Address already in use\$" "the listen error"
  set +e
  usage_line=$(timeout 10 "$client_bin" --server 127.0.0.1:7 --calls 1 --concurrency x 2>&1 >/dev/null)
  set -e
  grep -qxF -- "$usage_line" "$readme" || fail "README.md's usage error is not the line echo_client prints: $usage_line"
  re_not_ready="^echo_client: no server ready after [0-9]+ ms: cannot connect to 127\.0\.0\.1:[0-9]+: Connection refused\$"
  readme_quotes "$re_not_ready" "the no-server-ready line"
  if [ -f "$tmp/refused0.out" ]; then
    grep -Eq "$re_not_ready" "$tmp/refused0.out" ||
      fail "echo_client against a refused port: no 'no server ready' line: $(cat "$tmp/refused0.out")"
  fi
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
