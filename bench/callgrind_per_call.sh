#!/usr/bin/env bash
# Instructions per call inside the client's call engine, counted by
# callgrind: only inside ClientCore::start_call and ClientCore::on_reply
# (inclusive), so the event loop's waiting, which varies from run to run,
# is left out. Repeatable to a fraction of a percent where calls/s on a
# shared 2-core machine spread by 20 % from round to round: the way to see a
# change of a few instructions per call. Needs valgrind.
#
#   bench/callgrind_per_call.sh RPC_BENCH [C] [DURATION]
#   bench/callgrind_per_call.sh build/release/bench/rpc_bench 128 3
#   # -> calls 77090 Ir 187987916 Ir/call 2438.6
#
# The server runs natively; only the client runs under callgrind.
# CLIENT_FLAGS adds flags to the client, e.g. what --compression costs a
# call too small to be compressed:
#   CLIENT_FLAGS="--compression zstd" bench/callgrind_per_call.sh build/release/bench/rpc_bench 16 3
# SERVER_FLAGS adds flags to the server. WHOLE=1 counts the whole client
# process instead (its start, event loop and timer included; at C = 128 the
# loop never waits), e.g. what outlier detection and the load-aware policy
# cost a client of a server that sends load reports:
#   WHOLE=1 SERVER_FLAGS=--load-reports CLIENT_FLAGS="--outlier --load-aware" \
#     bench/callgrind_per_call.sh build/release/bench/rpc_bench 128 3
set -euo pipefail
bin=${1:?usage: callgrind_per_call.sh RPC_BENCH [C] [DURATION]}
c=${2:-128}
d=${3:-3}
command -v valgrind >/dev/null || { echo "callgrind_per_call.sh: valgrind is not installed" >&2; exit 1; }
tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
# shellcheck disable=SC2086  # SERVER_FLAGS are words
"$bin" server --port 0 --port-file "$tmp/port" --lifetime $((d + 120)) ${SERVER_FLAGS:-} &
server_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
collect=(--collect-atstart=no '--toggle-collect=wheelrpc::rpc::detail::ClientCore::start_call*'
  '--toggle-collect=wheelrpc::rpc::detail::ClientCore::on_reply*')
[ "${WHOLE:-0}" = 1 ] && collect=()
# shellcheck disable=SC2086  # CLIENT_FLAGS are words
line=$(valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "${collect[@]}" \
  "$bin" client --port "$(cat "$tmp/port")" --concurrency "$c" --payload 64 --warmup 0 --duration "$d" \
  ${CLIENT_FLAGS:-} 2>"$tmp/vg")
calls=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["calls"])' "$line")
ir=$(awk '/^summary:/ { print $2; exit }' "$tmp/cg")
python3 -c 'import sys; c, i = map(int, sys.argv[1:]); print(f"calls {c} Ir {i} Ir/call {i / c:.1f}")' "$calls" "$ir"
