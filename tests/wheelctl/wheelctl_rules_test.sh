#!/usr/bin/env bash
# wheelctl rules against a real etcd (scripts/etcd.sh, in a state directory
# of its own): put of a valid rule (inline and @file), put of an invalid one
# refused with the reason and exit 2 with nothing written, get of every rule
# and of one, delete, and the exit statuses of a missing rule and of etcd
# gone. Exits 77 (skipped) without /usr/bin/etcd.
#
#   wheelctl_rules_test.sh WHEELCTL ETCD_SH CLI_LIB
wheelctl=${1:?usage: wheelctl_rules_test.sh WHEELCTL ETCD_SH CLI_LIB}
etcd_sh=${2:?}
if [ ! -x /usr/bin/etcd ]; then
  echo "SKIP: /usr/bin/etcd not installed"
  exit 77
fi
# shellcheck source=/dev/null
. "${3:?}"
export WHEELRPC_ETCD_STATE_DIR=$tmp/etcd-state
lib_cleanup() { cleanup; }
trap 'bash "$etcd_sh" stop >/dev/null 2>&1 || true; lib_cleanup' EXIT

bash "$etcd_sh" start >"$tmp/etcd.out" 2>&1 || { cat "$tmp/etcd.out" >&2; exit 1; }
etcd=$(sed -n 's/^etcd on //p' "$tmp/etcd.out")
[ -n "$etcd" ] || { echo "FAIL: etcd.sh printed no address: $(cat "$tmp/etcd.out")" >&2; exit 1; }

run 60 "$wheelctl" rules get "$etcd" echo
[ "$rc" = 0 ] || fail "get of no rule: exit $rc: $(cat "$tmp/run.err")"
[ "$(cat "$tmp/run.out")" = "(no rules)" ] || fail "get of no rule: $(cat "$tmp/run.out")"

run 60 "$wheelctl" rules put "$etcd" echo slow '{"methods":{"echo":{"timeout_ms":200}}}'
[ "$rc" = 0 ] || fail "put: exit $rc: $(cat "$tmp/run.err")"
grep -Eq '^put /wheelrpc/echo/rules/slow rev [0-9]+$' "$tmp/run.out" || fail "put: $(cat "$tmp/run.out")"
rev=$(sed -n 's/^put .* rev //p' "$tmp/run.out")

printf '{"scope": {"tags": ["canary"]},\n "service": {"retries": 0}}\n' >"$tmp/canary.json"
run 60 "$wheelctl" rules put "$etcd" echo canary "@$tmp/canary.json"
[ "$rc" = 0 ] || fail "put @file: exit $rc: $(cat "$tmp/run.err")"

run 60 "$wheelctl" rules put "$etcd" echo slow '{"methods":{"echo":{"timeout_ms":0}}}'
[ "$rc" = 2 ] || fail "put of an invalid rule: exit $rc"
[ ! -s "$tmp/run.out" ] || fail "put of an invalid rule printed: $(cat "$tmp/run.out")"
grep -Fxq 'wheelctl rules: rule /wheelrpc/echo/rules/slow refused, nothing written: methods.echo.timeout_ms: 0 is outside 1..86400000' \
  "$tmp/run.err" || fail "put of an invalid rule: $(cat "$tmp/run.err")"
run 60 "$wheelctl" rules put "$etcd" echo other '{"colour":"red"}'
[ "$rc" = 2 ] || fail "put of an unknown field: exit $rc"
grep -Fq 'colour: unknown field' "$tmp/run.err" || fail "put of an unknown field: $(cat "$tmp/run.err")"
run 60 "$wheelctl" rules put "$etcd" echo 'a/b' '{}'
[ "$rc" = 2 ] || fail "put of a bad name: exit $rc"

run 60 "$wheelctl" rules get "$etcd" echo slow
[ "$rc" = 0 ] || fail "get NAME: exit $rc: $(cat "$tmp/run.err")"
[ "$(head -n 1 "$tmp/run.out")" = "/wheelrpc/echo/rules/slow rev $rev" ] ||
  fail "get NAME (the refused put must not have been written): $(cat "$tmp/run.out")"
[ "$(sed -n 2p "$tmp/run.out")" = '{"methods":{"echo":{"timeout_ms":200}}}' ] || fail "get NAME: $(cat "$tmp/run.out")"

run 60 "$wheelctl" rules get "$etcd" echo
[ "$rc" = 0 ] || fail "get: exit $rc"
[ "$(grep -c '^/wheelrpc/echo/rules/' "$tmp/run.out")" = 2 ] || fail "get: $(cat "$tmp/run.out")"
grep -Eq '^/wheelrpc/echo/rules/canary rev [0-9]+$' "$tmp/run.out" || fail "get: $(cat "$tmp/run.out")"
grep -Fxq ' "service": {"retries": 0}}' "$tmp/run.out" || fail "get: the document as stored: $(cat "$tmp/run.out")"
cp "$tmp/run.out" "$tmp/get.out"

run 60 "$wheelctl" rules delete "$etcd" echo slow
[ "$rc" = 0 ] || fail "delete: exit $rc: $(cat "$tmp/run.err")"
[ "$(cat "$tmp/run.out")" = "deleted /wheelrpc/echo/rules/slow" ] || fail "delete: $(cat "$tmp/run.out")"
run 60 "$wheelctl" rules get "$etcd" echo slow
[ "$rc" = 5 ] || fail "get of a deleted rule: exit $rc"
grep -Fxq 'wheelctl rules: no rule /wheelrpc/echo/rules/slow' "$tmp/run.err" || fail "get deleted: $(cat "$tmp/run.err")"
run 60 "$wheelctl" rules delete "$etcd" echo slow
[ "$rc" = 5 ] || fail "delete of a missing rule: exit $rc"

run 60 "$wheelctl" rules frobnicate "$etcd" echo
[ "$rc" = 2 ] || fail "unknown action: exit $rc"
run 60 "$wheelctl" rules put "$etcd" echo slow
[ "$rc" = 2 ] || fail "put without a document: exit $rc"

echo "--- wheelctl rules get (as the docs show it)"
cat "$tmp/get.out"

bash "$etcd_sh" stop >/dev/null 2>&1
run 60 "$wheelctl" rules get "$etcd" echo --timeout-ms 2000
[ "$rc" = 3 ] || fail "etcd gone: exit $rc: $(cat "$tmp/run.err")"
finish wheelctl_rules
