#!/usr/bin/env bash
# A/B of two rpc_bench builds (say, before and after a change), alternating
# runs so both see the same machine: each round runs A's server and client,
# then B's, and prints one summary line per run (calls/s, CPU per call).
#
#   bench/ab_rpc.sh OLD/rpc_bench NEW/rpc_bench [C] [DURATION] [ROUNDS]
#   bench/ab_rpc.sh /tmp/old/bench/rpc_bench build/release/bench/rpc_bench 128 4 3
#
# The JSON lines themselves go to $OUT if set. A_FLAGS and B_FLAGS add flags
# to A's and B's server and client (both take them), e.g. metrics off
# against on with one binary:
#   A_FLAGS=--no-metrics bench/ab_rpc.sh build/release/bench/rpc_bench build/release/bench/rpc_bench 128 10 5
# A_CLIENT_FLAGS and B_CLIENT_FLAGS go to the client only, e.g. what
# deadlines cost, alternating:
#   B_CLIENT_FLAGS=--no-deadline bench/ab_rpc.sh build/release/bench/rpc_bench build/release/bench/rpc_bench 128 5 5
# A_SERVER_FLAGS and B_SERVER_FLAGS go to the server only, e.g. what load
# reports, outlier detection and the load-aware policy cost:
#   B_SERVER_FLAGS=--load-reports B_CLIENT_FLAGS="--outlier --load-aware" \
#     bench/ab_rpc.sh build/release/bench/rpc_bench build/release/bench/rpc_bench 128 5 5
# PAYLOAD sets the payload size in bytes (default 64), e.g. the typed echo
# against the untyped one at 4 KiB:
#   PAYLOAD=4096 B_FLAGS=--typed bench/ab_rpc.sh build/release/bench/rpc_bench build/release/bench/rpc_bench 128 5 5
# Any binary with rpc_bench's flags and JSON line can be A or B, such as the
# peers of bench/peers (build/peers/asio_echo and build/peers/grpc_echo, built
# by bench/peers/build.sh).
set -euo pipefail
a=${1:?usage: ab_rpc.sh A_rpc_bench B_rpc_bench [C] [DURATION] [ROUNDS]}
b=${2:?usage: ab_rpc.sh A_rpc_bench B_rpc_bench [C] [DURATION] [ROUNDS]}
c=${3:-128}; d=${4:-4}; rounds=${5:-3}; payload=${PAYLOAD:-64}
tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
run() {  # binary label extra-flags extra-client-flags extra-server-flags
  rm -f "$tmp/port"
  # shellcheck disable=SC2086  # the extra flags are words
  "$1" server --port 0 --port-file "$tmp/port" --lifetime $((d + 30)) $3 $5 &
  server_pid=$!
  for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
  line=$("$1" client --port "$(cat "$tmp/port")" --concurrency "$c" --payload "$payload" --warmup 1 --duration "$d" \
    --server-pid "$server_pid" $3 $4)
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
  [ -n "${OUT:-}" ] && echo "$line" | sed "s/^{/{\"label\":\"$2\",/" >> "$OUT"
  python3 -c '
import json, sys
d = json.loads(sys.argv[2])
cpu = lambda s: s / d["calls"] * 1e9 if d["calls"] and s >= 0 else -1
c, r = d["concurrency"], d["calls_per_s"]
cc, sc = cpu(d["client_cpu_s"]), cpu(d["server_cpu_s"])
print("%2s C=%d calls_per_s=%.0f client_cpu_ns_per_call=%.0f server_cpu_ns_per_call=%.0f" % (sys.argv[1], c, r, cc, sc))
' "$2" "$line"
}
for _ in $(seq "$rounds"); do
  run "$a" A "${A_FLAGS:-}" "${A_CLIENT_FLAGS:-}" "${A_SERVER_FLAGS:-}"
  run "$b" B "${B_FLAGS:-}" "${B_CLIENT_FLAGS:-}" "${B_SERVER_FLAGS:-}"
done
