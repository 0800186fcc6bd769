#!/usr/bin/env bash
# wheelctl registry against a real etcd (scripts/etcd.sh, in a state
# directory of its own) with echo_servers registered in it: the table of
# every service and of one, with each key's lease; --watch printing a new
# provider and a new service as they register and a provider that leaves,
# ended by SIGTERM (exit 0); etcd not there: exit 3 within the timeout.
# Exits 77 (skipped) without /usr/bin/etcd.
#
#   wheelctl_registry_test.sh WHEELCTL ECHO_SERVER ETCD_SH CLI_LIB
wheelctl=${1:?usage: wheelctl_registry_test.sh WHEELCTL ECHO_SERVER ETCD_SH CLI_LIB}
server_bin=${2:?}
etcd_sh=${3:?}
if [ ! -x /usr/bin/etcd ]; then
  echo "SKIP: /usr/bin/etcd not installed"
  exit 77
fi
# shellcheck source=/dev/null
. "${4:?}"
export WHEELRPC_ETCD_STATE_DIR=$tmp/etcd-state
lib_cleanup() { cleanup; }
trap 'bash "$etcd_sh" stop >/dev/null 2>&1 || true; lib_cleanup' EXIT

bash "$etcd_sh" start >"$tmp/etcd.out" 2>&1 || { cat "$tmp/etcd.out" >&2; exit 1; }
etcd=$(sed -n 's/^etcd on //p' "$tmp/etcd.out")
[ -n "$etcd" ] || { echo "FAIL: etcd.sh printed no address: $(cat "$tmp/etcd.out")" >&2; exit 1; }

start_server a1 "$server_bin" --port 0 --registry "$etcd" --service alpha
server_line a1 '^registered alpha at ' >/dev/null || fail "alpha did not register: $(cat "$tmp/a1.err")"

run 60 "$wheelctl" registry "$etcd"
[ "$rc" = 0 ] || fail "registry: exit $rc: $(cat "$tmp/run.err")"
head -n 1 "$tmp/run.out" | grep -Eq '^SERVICE +ENDPOINT +WEIGHT +VERSION +ZONE +TAGS +LEASE$' ||
  fail "registry header: $(cat "$tmp/run.out")"
grep -Eq "^alpha +$a1_addr +100 .* [0-9a-f]+ \([0-9]+/[0-9]+ s\)\$" "$tmp/run.out" || fail "registry row: $(cat "$tmp/run.out")"

run 60 "$wheelctl" registry "$etcd" nobody
[ "$rc" = 0 ] || fail "registry of an empty service: exit $rc"
grep -q "^(no providers)$" "$tmp/run.out" || fail "registry of an empty service: $(cat "$tmp/run.out")"

"$wheelctl" registry "$etcd" --watch >"$tmp/watch.out" 2>"$tmp/watch.err" &
watch_pid=$!
started_pids+=("$watch_pid")
wait_for() {  # FILE REGEX
  local i
  for i in $(seq 600); do
    grep -Eq -- "$2" "$1" && return 0
    sleep 0.1
  done
  return 1
}
wait_for "$tmp/watch.out" "^alpha +$a1_addr " || fail "--watch: no first table: $(cat "$tmp/watch.out" "$tmp/watch.err")"
start_server a2 "$server_bin" --port 0 --registry "$etcd" --service alpha
wait_for "$tmp/watch.out" 'Z alpha: 2 providers$' || fail "--watch: second provider not seen: $(cat "$tmp/watch.out")"
wait_for "$tmp/watch.out" "^alpha +$a2_addr " || fail "--watch: no row of the second provider: $(cat "$tmp/watch.out")"
start_server b1 "$server_bin" --port 0 --registry "$etcd" --service beta
wait_for "$tmp/watch.out" 'Z beta: 1 provider$' || fail "--watch: new service not seen: $(cat "$tmp/watch.out")"
stop_server a2
wait_for "$tmp/watch.out" 'Z alpha: 1 provider$' || fail "--watch: provider leaving not seen: $(cat "$tmp/watch.out")"
kill -TERM "$watch_pid"
set +e
wait "$watch_pid"
watch_rc=$?
set -e
[ "$watch_rc" = 0 ] || fail "--watch ended by SIGTERM: exit $watch_rc: $(cat "$tmp/watch.err")"

stop_server a1
stop_server b1
bash "$etcd_sh" stop >/dev/null 2>&1
run 60 "$wheelctl" registry "$etcd" --timeout-ms 2000
[ "$rc" = 3 ] || fail "etcd gone: exit $rc: $(cat "$tmp/run.err")"
finish wheelctl_registry
