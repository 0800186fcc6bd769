#!/usr/bin/env bash
# End-to-end test of the registry through the examples: a real etcd
# (scripts/etcd.sh, in a state directory of its own), echo_servers that
# register with --registry, and an echo_client that follows them with
# --registry while providers are killed (-9), stopped gracefully (SIGTERM)
# and started mid-run. Also: echo_server against an etcd that is not there,
# with and without --registry-check. Exits 77 (skipped) without /usr/bin/etcd.
#
# Every wait is bounded and waits for an outcome (a line printed, a count
# reached), never for "long enough"; every process it starts is stopped and
# reaped at the end, also when it fails.
#
#   registry_cli_test.sh ECHO_SERVER ECHO_CLIENT ETCD_SH
set -euo pipefail

server_bin=${1:?usage: registry_cli_test.sh ECHO_SERVER ECHO_CLIENT ETCD_SH}
client_bin=${2:?usage: registry_cli_test.sh ECHO_SERVER ECHO_CLIENT ETCD_SH}
etcd_sh=${3:?usage: registry_cli_test.sh ECHO_SERVER ECHO_CLIENT ETCD_SH}

if [ ! -x /usr/bin/etcd ]; then
  echo "SKIP: /usr/bin/etcd not installed"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wheelrpc-registry-cli.XXXXXX")
export WHEELRPC_ETCD_STATE_DIR=$tmp/etcd-state

list_children() {
  kids=()
  local stat line ppid
  for stat in /proc/[0-9]*/stat; do
    { read -r line <"$stat"; } 2>/dev/null || continue
    read -r _ ppid _ <<<"${line##*) }"
    if [ "$ppid" = "$$" ]; then kids+=("${stat//[^0-9]/}"); fi
  done
}
cleanup() {
  local pid
  list_children
  for pid in "${kids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${kids[@]}"; do wait "$pid" 2>/dev/null || true; done
  bash "$etcd_sh" stop >/dev/null 2>&1 || true
  rm -rf -- "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# Waits (up to $3 tenths of a second) until FILE has a line matching REGEX.
wait_line() {  # FILE REGEX TENTHS
  for _ in $(seq "${3:-300}"); do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# The providers_now of the client's latest interval line.
providers_now() {
  grep -o '"providers_now":[0-9]*' "$tmp/client.out" 2>/dev/null | tail -n 1 | cut -d: -f2
}
wait_providers() {  # N TENTHS
  for _ in $(seq "${2:-300}"); do
    [ "$(providers_now)" = "$1" ] && return 0
    sleep 0.1
  done
  return 1
}

etcd_line=$(bash "$etcd_sh" start) || { echo "FAIL: scripts/etcd.sh start: $etcd_line" >&2; exit 1; }
url=${etcd_line#etcd on }
echo "etcd: $url"

start_server() {  # NAME [extra flags]
  local name=$1
  shift
  "$server_bin" --port 0 --registry "$url" --service cli-echo --lease-ttl-s 2 --heartbeat-ms 500 \
    --unregister-grace-ms 800 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  eval "${name}_pid=$!"
  wait_line "$tmp/$name.out" '^registered cli-echo at 127\.0\.0\.1:[0-9]+$' 300 ||
    fail "$name: no 'registered' line: $(cat "$tmp/$name.out" "$tmp/$name.err")"
  eval "${name}_at=\$(sed -n 's/^listening on //p' \"$tmp/$name.out\")"
}

# A service nobody registered: known at once from the first read, so the
# client does not wait out its 10 s connect wait, and says so plainly (not
# as "keeping the last 0 ... (empty protection)": nothing was ever known).
empty_status=0
"$client_bin" --registry "$url" --service nobody-here --calls 1 --timeout-ms 200 >"$tmp/empty.out" 2>&1 ||
  empty_status=$?
[ "$empty_status" -eq 1 ] || fail "a service without providers: exit $empty_status, not 1: $(cat "$tmp/empty.out")"
grep -Eq "^echo_client: no server ready after [0-9]+ ms: service 'nobody-here' has no providers registered in etcd at ${url#etcd://}\$" \
  "$tmp/empty.out" || fail "a service without providers: unclear message: $(cat "$tmp/empty.out")"
waited=$(sed -n 's/^echo_client: no server ready after \([0-9]*\) ms: .*/\1/p' "$tmp/empty.out" | head -n 1)
[ -n "$waited" ] && [ "$waited" -lt 9000 ] || fail "a service without providers: waited '${waited}' ms"
if grep -q "keeping the last 0" "$tmp/empty.out"; then
  fail "a service without providers: alarms about empty protection: $(cat "$tmp/empty.out")"
fi

start_server s1
start_server s2
start_server s3
echo "servers: $s1_at $s2_at $s3_at"

"$client_bin" --registry "$url" --service cli-echo --duration-s 300 --concurrency 4 --retries 2 --method sleep --sleep-ms 2 \
  --timeout-ms 3000 --heartbeat-ms 500 --json --report-interval-ms 100 >"$tmp/client.out" 2>"$tmp/client.err" &
client_pid=$!
wait_providers 3 300 || fail "the client never saw 3 providers (latest: $(providers_now))"

# kill -9: the lease expires (TTL 2 s), etcd deletes the key, the client drops it.
kill -KILL "$s1_pid"
wait "$s1_pid" 2>/dev/null || true
t0=$(date +%s%N)
wait_providers 2 300 || fail "s1 killed: the client still lists $(providers_now) providers"
t1=$(date +%s%N)
removal_ms=$(((t1 - t0) / 1000000))
echo "kill -9 -> removed from the client's set: $removal_ms ms (lease TTL 2 s)"
# Within TTL + 1 s by etcd's clock (bench/registry_bench measures it: about
# 2.5 s); 8 s leaves room for a loaded machine and this script's polling.
[ "$removal_ms" -le 8000 ] || fail "the killed provider was dropped after $removal_ms ms, not within TTL + 1 s (+5 s)"

# SIGTERM: unregistered first, serves through its grace, drains, exits 0.
kill -TERM "$s2_pid"
wait_providers 1 300 || fail "s2 stopped: the client still lists $(providers_now) providers"
s2_status=0
wait "$s2_pid" || s2_status=$?
[ "$s2_status" -eq 0 ] || fail "s2 exited $s2_status after SIGTERM: $(cat "$tmp/s2.err")"
grep -q 'registry: registrations=1 unregistrations=1 ' "$tmp/s2.err" ||
  fail "s2 did not unregister on SIGTERM: $(cat "$tmp/s2.err")"

# A provider that starts mid-run gets calls.
start_server s4
wait_providers 2 300 || fail "s4 started: the client lists $(providers_now) providers"
s4_before=$(grep -o '"ok":[0-9]*' "$tmp/client.out" | tail -n 1 | cut -d: -f2)
for _ in $(seq 100); do
  now=$(grep -o '"ok":[0-9]*' "$tmp/client.out" | tail -n 1 | cut -d: -f2)
  [ "$((now - s4_before))" -ge 200 ] && break
  sleep 0.1
done

kill -INT "$client_pid"
client_status=0
wait "$client_pid" || client_status=$?
[ "$client_status" -eq 0 ] || fail "echo_client exited $client_status: $(cat "$tmp/client.err")"
summary=$(tail -n 1 "$tmp/client.out")
for key in '"lost":0' '"completed_twice":0' '"failed":0' '"timeout":0'; do
  grep -qF "$key" <<<"$summary" || fail "summary lacks $key: $summary"
done
for at in "$s1_at" "$s2_at" "$s3_at" "$s4_at"; do
  grep -qF "\"peer\":\"$at\"" <<<"$summary" || fail "summary's providers lack $at: $summary"
done
# s4 got calls: its entry has attempts > 0.
s4_attempts=$(grep -o "\"peer\":\"$s4_at\",\"attempts\":[0-9]*" <<<"$summary" | sed 's/.*://')
[ "${s4_attempts:-0}" -gt 0 ] || fail "s4 got no call: $summary"

kill -TERM "$s3_pid" "$s4_pid"
wait "$s3_pid" || fail "s3 did not exit 0"
wait "$s4_pid" || fail "s4 did not exit 0"

# etcd not there: without --registry-check the server serves and says so;
# with it, listen fails clearly.
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$server_bin" --port 0 --registry "etcd://127.0.0.1:$dead" --service cli-echo >"$tmp/d1.out" 2>"$tmp/d1.err" &
d1_pid=$!
wait_line "$tmp/d1.out" '^listening on ' 300 || fail "no check: no 'listening on' line: $(cat "$tmp/d1.err")"
wait_line "$tmp/d1.out" '^registration pending: ' 300 || fail "no 'registration pending' line: $(cat "$tmp/d1.out")"
kill -TERM "$d1_pid"
wait "$d1_pid" || fail "the server without etcd did not exit 0 on SIGTERM"

# etcd refuses at once, so the check fails at its first failure ("failed:
# ... refused", where waiting out the 5 s would say "not confirmed within"),
# and the message says that the registration failed, not the listen.
check_status=0
"$server_bin" --port 0 --registry "etcd://127.0.0.1:$dead" --service cli-echo --registry-check \
  >"$tmp/d2.out" 2>"$tmp/d2.err" || check_status=$?
[ "$check_status" -eq 1 ] || fail "--registry-check without etcd: exit $check_status, not 1"
grep -q "^echo_server: listened on 127.0.0.1:[0-9]*, but registration failed: registration of 'cli-echo' at 127.0.0.1:[0-9]* failed: .*etcd at 127.0.0.1:$dead refused the connection" "$tmp/d2.err" ||
  fail "--registry-check without etcd: unclear error: $(cat "$tmp/d2.err")"
if grep -q 'cannot listen' "$tmp/d2.err"; then fail "--registry-check without etcd: blames the listen: $(cat "$tmp/d2.err")"; fi

if [ "$failures" -gt 0 ]; then
  echo "$failures failure(s)" >&2
  for f in "$tmp"/*.out "$tmp"/*.err; do echo "== $f"; tail -n 5 "$f"; done >&2
  exit 1
fi
echo "registry_cli: ok"
