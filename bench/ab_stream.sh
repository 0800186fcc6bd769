#!/usr/bin/env bash
# A/B of two rpc_bench builds on the stream workload (`rpc_bench client
# --stream echo`), alternating runs so both see the same machine: each round
# runs A's server and client, then B's, and prints one line per run
# (messages/s, CPU per message of each side).
#
#   bench/ab_stream.sh OLD/rpc_bench NEW/rpc_bench [native|grpc] [STREAMS] [DURATION] [ROUNDS]
#   bench/ab_stream.sh /tmp/old/bench/rpc_bench build/release/bench/rpc_bench grpc 128 4 4
#
# grpc adds --protocol grpc to both clients (a build without that flag on
# its stream client cannot be compared on the gRPC wire). PAYLOAD sets the
# message size in bytes (default 64); MODE the workload (echo, the default,
# or oneway). The JSON lines themselves go to $OUT if set, labelled A and B.
set -euo pipefail
usage="usage: ab_stream.sh A_rpc_bench B_rpc_bench [native|grpc] [STREAMS] [DURATION] [ROUNDS]"
a=${1:?$usage}
b=${2:?$usage}
protocol=${3:-native}; s=${4:-128}; d=${5:-4}; rounds=${6:-3}
payload=${PAYLOAD:-64}; mode=${MODE:-echo}
case $protocol in
  native) protocol_flags=() ;;
  grpc) protocol_flags=(--protocol grpc) ;;
  *) echo "ab_stream.sh: the protocol is native or grpc (got '$protocol')" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
run() {  # binary label
  rm -f "$tmp/port"
  "$1" server --port 0 --port-file "$tmp/port" --lifetime $((d + 30)) &
  server_pid=$!
  for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
  line=$("$1" client --port "$(cat "$tmp/port")" --stream "$mode" --streams "$s" --payload "$payload" --warmup 1 \
    --duration "$d" --server-pid "$server_pid" "${protocol_flags[@]}")
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
  [ -n "${OUT:-}" ] && echo "$line" | sed "s/^{/{\"label\":\"$2\",/" >> "$OUT"
  /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.argv[2])
print("%2s streams=%d messages_per_s=%.0f client_cpu_ns_per_message=%.0f server_cpu_ns_per_message=%.0f" % (
    sys.argv[1], d["streams"], d["messages_per_s"], d["client_cpu_ns_per_message"], d["server_cpu_ns_per_message"]))
' "$2" "$line"
}
for _ in $(seq "$rounds"); do
  run "$a" A
  run "$b" B
done
