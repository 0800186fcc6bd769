#!/usr/bin/env bash
# Governance end to end (docs/governance.md, "A five-minute walkthrough"):
# a real etcd (scripts/etcd.sh, a state directory of its own), three
# echo_servers registered as "echo" (the third tagged canary), echo_client
# following the service and its rules, wheelctl writing the rules:
#   1. untagged calls are shared by the two untagged servers, never the canary;
#   2. a runtime override gives "sleep" 200 ms: calls time out at it, and the
#      message names the rule's key and revision; wheelctl explain names it too;
#   3. weight 0 on one server: it gets no call, and no call fails;
#   4. calls tagged canary all go to the canary server.
# With WALKTHROUGH_OUT=FILE it also writes each command and its output there
# (the walkthrough in docs/governance.md comes from such a run). Exits 77
# (skipped) without /usr/bin/etcd.
#
#   governance_test.sh ECHO_SERVER ECHO_CLIENT WHEELCTL ETCD_SH CLI_LIB
server_bin=${1:?usage: governance_test.sh ECHO_SERVER ECHO_CLIENT WHEELCTL ETCD_SH CLI_LIB}
client_bin=${2:?}
wheelctl=${3:?}
etcd_sh=${4:?}
if [ ! -x /usr/bin/etcd ]; then
  echo "SKIP: /usr/bin/etcd not installed"
  exit 77
fi
# shellcheck source=/dev/null
. "${5:?}"
export WHEELRPC_ETCD_STATE_DIR=$tmp/etcd-state
trap 'bash "$etcd_sh" stop >/dev/null 2>&1 || true; cleanup' EXIT
out=${WALKTHROUGH_OUT:-/dev/null}
: >"$out"
# Runs a command as run() does and writes it, with its output, to $out.
shown() {  # SECONDS PROGRAM ARGS...
  local seconds=$1
  shift
  run "$seconds" "$@"
  {
    printf '$ %s' "$(basename "$1")"
    shift
    local a
    for a in "$@"; do
      if [[ $a =~ ^[A-Za-z0-9_./:,=@+-]+$ ]]; then printf ' %s' "$a"; else printf " '%s'" "$a"; fi
    done | sed "s|$etcd|\$ETCD|g"
    printf '\n'
    sed "s|$etcd|\$ETCD|g" "$tmp/run.out"
    sed "s|$etcd|\$ETCD|g" "$tmp/run.err"
  } >>"$out"
}
# The ok calls of provider ADDR in the JSON summary LINE.
ok_of() {  # LINE ADDR
  json "$1" "sum(p['ok'] for p in d['providers'] if p['peer'] == '$2')"
}

bash "$etcd_sh" start >"$tmp/etcd.out" 2>&1 || { cat "$tmp/etcd.out" >&2; exit 1; }
etcd=$(sed -n 's/^etcd on //p' "$tmp/etcd.out")
[ -n "$etcd" ] || { echo "FAIL: etcd.sh printed no address: $(cat "$tmp/etcd.out")" >&2; exit 1; }

start_server s1 "$server_bin" --port 0 --registry "$etcd" --service echo
start_server s2 "$server_bin" --port 0 --registry "$etcd" --service echo
start_server s3 "$server_bin" --port 0 --registry "$etcd" --service echo --tag canary
for s in s1 s2 s3; do
  server_line "$s" '^registered echo at ' >/dev/null || fail "$s did not register: $(cat "$tmp/$s.err")"
done
shown 60 "$wheelctl" registry "$etcd" echo

# 1. Untagged calls: the two untagged servers, never the canary.
shown 60 "$client_bin" --registry "$etcd" --service echo --calls 200 --json
[ "$rc" = 0 ] || fail "untagged calls: exit $rc: $(cat "$tmp/run.err")"
expect_json "untagged calls" "$last" 'd["ok"]' 200
[ "$(ok_of "$last" "$s3_addr")" = 0 ] || fail "the canary got untagged calls: $last"
[ "$(ok_of "$last" "$s1_addr")" -gt 0 ] && [ "$(ok_of "$last" "$s2_addr")" -gt 0 ] ||
  fail "untagged calls did not reach both untagged servers: $last"

# 2. A runtime override: 200 ms for "sleep", calls of 1 s time out at it.
shown 60 "$wheelctl" rules put "$etcd" echo 10-slow '{"methods": {"sleep": {"timeout_ms": 200, "retries": 0}}}'
[ "$rc" = 0 ] || fail "rules put: exit $rc: $(cat "$tmp/run.err")"
rev=$(sed -n 's/^put .* rev //p' "$tmp/run.out")
shown 60 "$client_bin" --registry "$etcd" --service echo --method sleep --sleep-ms 1000 --calls 4 --concurrency 2
grep -Eq "^4 calls in .*0 ok, 4 timed out" "$tmp/run.out" || fail "the override's timeout: $(cat "$tmp/run.out")"
grep -Fq "; timeout 200 ms (runtime override /wheelrpc/echo/rules/10-slow rev $rev); timeline:" "$tmp/run.out" ||
  fail "the message does not name the rule: $(cat "$tmp/run.out")"
# The caller's own --timeout-ms beats the rule.
shown 60 "$client_bin" --registry "$etcd" --service echo --method sleep --sleep-ms 300 --calls 2 --timeout-ms 2000
grep -Eq "^2 calls in .*2 ok" "$tmp/run.out" || fail "the caller's own timeout: $(cat "$tmp/run.out")"

# ... and wheelctl explain, through a client's admin port while it runs.
"$client_bin" --registry "$etcd" --service echo --method sleep --sleep-ms 50 --duration-s 30 --admin-port 0 \
  >"$tmp/c.out" 2>"$tmp/c.err" &
c_pid=$!
started_pids+=("$c_pid")
admin=""
for i in $(seq 600); do
  admin=$(sed -n 's|^admin on http://||p' "$tmp/c.out" | head -n 1)
  [ -n "$admin" ] && break
  kill -0 "$c_pid" 2>/dev/null || break
  sleep 0.1
done
[ -n "$admin" ] || fail "echo_client printed no admin address: $(cat "$tmp/c.out" "$tmp/c.err")"
if [ -n "$admin" ]; then
  # The client may not have read the rules yet when it prints its address.
  for i in $(seq 100); do
    run 30 "$wheelctl" explain "$admin" sleep
    grep -Eq '^  timeout_ms +200 ' "$tmp/run.out" && break
    sleep 0.1
  done
  shown 30 "$wheelctl" explain "$admin" sleep
  [ "$rc" = 0 ] || fail "explain: exit $rc: $(cat "$tmp/run.err")"
  grep -Eq "^  timeout_ms +200 +runtime override +runtime override /wheelrpc/echo/rules/10-slow rev $rev; beats built-in default 1000\$" \
    "$tmp/run.out" || fail "explain: $(cat "$tmp/run.out")"
  grep -Eq '^  retries +0 +runtime override ' "$tmp/run.out" || fail "explain retries: $(cat "$tmp/run.out")"
fi
kill -TERM "$c_pid" 2>/dev/null || true
wait "$c_pid" 2>/dev/null || true

# 3. Weight 0 drains s2 without a failed call.
shown 60 "$wheelctl" rules put "$etcd" echo 20-drain "{\"providers\": {\"$s2_addr\": {\"weight\": 0}}}"
[ "$rc" = 0 ] || fail "rules put drain: exit $rc: $(cat "$tmp/run.err")"
shown 60 "$client_bin" --registry "$etcd" --service echo --calls 200 --json
expect_json "drained" "$last" 'd["ok"]' 200
expect_json "drained" "$last" 'd["failed"]' 0
[ "$(ok_of "$last" "$s2_addr")" = 0 ] || fail "the drained server got calls: $last"
[ "$(ok_of "$last" "$s1_addr")" = 200 ] || fail "the other untagged server did not get every call: $last"

# 4. The canary's traffic goes to the canary.
shown 60 "$client_bin" --registry "$etcd" --service echo --calls 200 --tag canary --json
expect_json "canary calls" "$last" 'd["ok"]' 200
[ "$(ok_of "$last" "$s3_addr")" = 200 ] || fail "canary calls went elsewhere: $last"

shown 60 "$wheelctl" rules get "$etcd" echo
for s in s1 s2 s3; do stop_server "$s"; done
finish "governance"
