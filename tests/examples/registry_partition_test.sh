#!/usr/bin/env bash
# A partition, not a crash. Two network namespaces made by this test, joined
# by a veth pair with private addresses that exist only inside them:
#   side A: etcd, provider P1 and echo_client (following the service);
#   side B: provider P2.
# Taking B's link down leaves P2 alive but cut off: its lease expires, etcd
# drops its key and the client stops using it. When the link comes back, P2
# notices its lease is gone, registers again under a new one by itself
# ("registered ..." a second time), and the client uses it again (proved by
# stopping P1 and seeing calls still succeed).
#
# Needs root and `ip netns`; exits 77 (skipped) without them or without
# /usr/bin/etcd. Every namespace, link and process it made is removed at the
# end, also when it fails. Bounded waits on outcomes only.
#
#   registry_partition_test.sh ECHO_SERVER ECHO_CLIENT
set -euo pipefail

server_bin=${1:?usage: registry_partition_test.sh ECHO_SERVER ECHO_CLIENT}
client_bin=${2:?usage: registry_partition_test.sh ECHO_SERVER ECHO_CLIENT}

skip() { echo "SKIP: $*"; exit 77; }
[ -x /usr/bin/etcd ] || skip "/usr/bin/etcd not installed"
[ "$(id -u)" -eq 0 ] || skip "needs root for ip netns"
command -v ip >/dev/null 2>&1 || skip "no ip (iproute2)"
command -v curl >/dev/null 2>&1 || skip "no curl"

id=$$
ns_a=wrpc-$id-a
ns_b=wrpc-$id-b
veth_a=wra$id
veth_b=wrb$id
net=$((id % 200 + 20))
addr_a=10.231.$net.1
addr_b=10.231.$net.2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wheelrpc-partition.XXXXXX")
pids=()

cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  # Anything else still inside our namespaces.
  for ns in "$ns_a" "$ns_b"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
  done
  ip netns del "$ns_a" 2>/dev/null || true  # takes the veth pair with it
  ip netns del "$ns_b" 2>/dev/null || true
  ip link del "$veth_a" 2>/dev/null || true
  rm -rf -- "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

ip netns add "$ns_a" 2>/dev/null || skip "ip netns add is not permitted here"
ip netns add "$ns_b"
ip link add "$veth_a" type veth peer name "$veth_b"
ip link set "$veth_a" netns "$ns_a"
ip link set "$veth_b" netns "$ns_b"
ip -n "$ns_a" addr add "$addr_a/30" dev "$veth_a"
ip -n "$ns_b" addr add "$addr_b/30" dev "$veth_b"
for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
ip -n "$ns_a" link set "$veth_a" up
ip -n "$ns_b" link set "$veth_b" up

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
wait_line() {  # FILE REGEX TENTHS [MIN_COUNT]
  for _ in $(seq "${3:-300}"); do
    [ "$(grep -cE "$2" "$1" 2>/dev/null || true)" -ge "${4:-1}" ] && return 0
    sleep 0.1
  done
  return 1
}
providers_now() { grep -o '"providers_now":[0-9]*' "$tmp/client.out" 2>/dev/null | tail -n 1 | cut -d: -f2; }
ok_now() { grep -o '"ok":[0-9]*' "$tmp/client.out" 2>/dev/null | tail -n 1 | cut -d: -f2; }
wait_providers() {  # N TENTHS
  for _ in $(seq "${2:-300}"); do
    [ "$(providers_now)" = "$1" ] && return 0
    sleep 0.1
  done
  return 1
}

# etcd on side A (its own namespace: fixed ports are free there).
ip netns exec "$ns_a" /usr/bin/etcd --name part --data-dir "$tmp/etcd" \
  --listen-client-urls "http://$addr_a:2379" --advertise-client-urls "http://$addr_a:2379" \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster part=http://127.0.0.1:2380 >"$tmp/etcd.log" 2>&1 &
pids+=($!)
healthy=0
for _ in $(seq 300); do
  if ip netns exec "$ns_a" curl -s --max-time 2 "http://$addr_a:2379/health" 2>/dev/null | grep -q '"health": *"true"'; then
    healthy=1
    break
  fi
  sleep 0.1
done
[ "$healthy" -eq 1 ] || { echo "FAIL: etcd not healthy: $(tail -n 5 "$tmp/etcd.log")" >&2; exit 1; }
url=etcd://$addr_a:2379

common=(--port 7001 --registry "$url" --service part-echo --lease-ttl-s 2 --heartbeat-ms 500 --unregister-grace-ms 500)
ip netns exec "$ns_a" "$server_bin" --host "$addr_a" "${common[@]}" >"$tmp/p1.out" 2>"$tmp/p1.err" &
p1_pid=$!
pids+=("$p1_pid")
ip netns exec "$ns_b" "$server_bin" --host "$addr_b" "${common[@]}" >"$tmp/p2.out" 2>"$tmp/p2.err" &
p2_pid=$!
pids+=("$p2_pid")
wait_line "$tmp/p1.out" "^registered part-echo at $addr_a:7001$" 300 || fail "P1 not registered: $(cat "$tmp/p1.out")"
wait_line "$tmp/p2.out" "^registered part-echo at $addr_b:7001$" 300 || fail "P2 not registered: $(cat "$tmp/p2.out")"

ip netns exec "$ns_a" "$client_bin" --registry "$url" --service part-echo --duration-s 300 --concurrency 2 --method sleep --sleep-ms 2 \
  --retries 2 --timeout-ms 1000 --heartbeat-ms 500 --json --report-interval-ms 100 \
  >"$tmp/client.out" 2>"$tmp/client.err" &
client_pid=$!
pids+=("$client_pid")
wait_providers 2 300 || fail "the client never saw both providers (latest: $(providers_now))"

# The partition: P2 stays alive, its link goes down.
ip -n "$ns_b" link set "$veth_b" down
kill -0 "$p2_pid" || fail "P2 died"
wait_providers 1 300 || fail "partitioned P2 never left the client's set (latest: $(providers_now))"
wait_line "$tmp/p2.out" '^registration pending: ' 300 || fail "P2 never reported its registration pending"
kill -0 "$p2_pid" || fail "P2 died during the partition"

# The link comes back: P2 re-registers by itself, under a new lease.
ip -n "$ns_b" link set "$veth_b" up
wait_line "$tmp/p2.out" "^registered part-echo at $addr_b:7001$" 300 2 ||
  fail "P2 did not register again after the partition: $(cat "$tmp/p2.out")"
wait_providers 2 300 || fail "P2 never came back into the client's set (latest: $(providers_now))"

# With P1 gone, every call goes to P2: the client uses it again.
kill -TERM "$p1_pid"
wait "$p1_pid" || fail "P1 did not exit 0 on SIGTERM"
wait_providers 1 300 || fail "P1 stopped: the client still lists $(providers_now)"
before=$(ok_now)
for _ in $(seq 300); do
  [ "$(($(ok_now) - before))" -ge 100 ] && break
  sleep 0.1
done
[ "$(($(ok_now) - before))" -ge 100 ] || fail "no calls succeed on P2 after the partition healed"

kill -INT "$client_pid"
wait "$client_pid" || fail "echo_client did not exit 0"
grep -qF '"lost":0' <(tail -n 1 "$tmp/client.out") || fail "calls were lost: $(tail -n 1 "$tmp/client.out")"
grep -qF '"completed_twice":0' <(tail -n 1 "$tmp/client.out") || fail "calls completed twice"
kill -TERM "$p2_pid"
wait "$p2_pid" || fail "P2 did not exit 0 on SIGTERM"
# Its first lease expired during the partition: a second one was granted.
grep -qE 'registry: .*lease_grants=([2-9]|[1-9][0-9])' "$tmp/p2.err" ||
  fail "P2 did not get a new lease: $(grep 'registry:' "$tmp/p2.err")"

if [ "$failures" -gt 0 ]; then
  for f in "$tmp"/*.out "$tmp"/*.err; do echo "== $f"; tail -n 8 "$f"; done >&2
  exit 1
fi
echo "registry_partition: ok"
