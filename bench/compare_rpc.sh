#!/usr/bin/env bash
# Runs the RPC echo workload on wheelrpc and on the peers (raw Boost.Asio TCP
# echo, gRPC C++; see shared/peers/README.md) back to back on this machine,
# saves every JSON line, and prints the tables and wheelrpc's ratios against
# the goals of shared/bench-spec.md. Runnable from any directory.
#
#   bench/compare_rpc.sh                          # C = 1 16 128, 1 s + 10 s each: about 3-4 minutes
#   DURATION=3 bench/compare_rpc.sh               # shorter windows
#   CONCURRENCY="1 128" bench/compare_rpc.sh      # a subset of concurrencies
#
# Environment (the same knobs as shared/peers/run_rpc.sh, whole seconds):
#   DURATION (measured window, default 10), WARMUP (default 1), PAYLOAD (bytes,
#   default 64), CONCURRENCY (default "1 16 128"), PIN=1 (server on CPU 0,
#   client on CPU 1); OUT (results file, default bench/results/rpc-YYYY-MM-DD.jsonl),
#   PEERS_DIR (default <repo>/../shared/peers), JOBS (parallel build jobs,
#   default 2), BUILD_DIR (default <repo>/build/release) and CMAKE_ARGS (extra
#   configure arguments) to build rpc_bench elsewhere than the release preset's
#   directory (still with the release preset's settings).
# Progress goes to stderr; the report (machine, tables, ratios) to stdout.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
peers="${PEERS_DIR:-$repo/../shared/peers}"
if [ ! -d "$peers" ] || [ ! -f "$peers/run_rpc.sh" ]; then
  echo "compare_rpc.sh: peer benchmarks not found in '$peers'." >&2
  echo "  Expected shared/peers next to the repository (<root>/main and <root>/shared/peers);" >&2
  echo "  set PEERS_DIR=/path/to/shared/peers to point elsewhere." >&2
  exit 1
fi
peers="$(cd "$peers" && pwd)"

DURATION=${DURATION:-10}
WARMUP=${WARMUP:-1}
PAYLOAD=${PAYLOAD:-64}
CONCURRENCY=${CONCURRENCY:-"1 16 128"}
export DURATION WARMUP PAYLOAD CONCURRENCY  # run_rpc.sh reads them too
for v in "$DURATION" "$WARMUP" "$PAYLOAD" $CONCURRENCY; do
  case $v in ''|*[!0-9]*) echo "compare_rpc.sh: DURATION, WARMUP, PAYLOAD and CONCURRENCY take whole numbers" >&2; exit 2 ;; esac
done
out="${OUT:-$repo/bench/results/rpc-$(date +%F).jsonl}"
jobs="${JOBS:-2}"
build_dir="${BUILD_DIR:-$repo/build/release}"
read -r -a cmake_args <<<"${CMAKE_ARGS:-}"

# ---- build -------------------------------------------------------------------
echo "== building wheelrpc rpc_bench (release preset, $build_dir)" >&2
(cd "$repo" && cmake --preset release -B "$build_dir" "${cmake_args[@]}" >&2 &&
   cmake --build "$build_dir" --target rpc_bench -j "$jobs" >&2)
bench="$build_dir/bench/rpc_bench"
[ -x "$bench" ] || { echo "compare_rpc.sh: $bench was not built" >&2; exit 1; }

if [ ! -x "$peers/build/asio_echo" ] || [ ! -x "$peers/build/grpc_echo" ]; then
  echo "== building the peers ($peers/build.sh)" >&2
  "$peers/build.sh" >&2
fi

# ---- run ---------------------------------------------------------------------
# shellcheck source=bench/machine.sh
source "$repo/bench/machine.sh"
machine_info "$repo"

mkdir -p "$(dirname "$out")"
# First line: the machine.
machine_line duration_s="$DURATION" warmup_s="$WARMUP" payload_bytes="$PAYLOAD" concurrency="$CONCURRENCY" > "$out"

# Each line goes to the results file and, as progress, to stderr.
save() { tee -a "$out" >&2; }

n_runs=$(wc -w <<<"$CONCURRENCY")
per_client=$(( WARMUP + DURATION + 20 ))  # the peers' bound on one client run
pin_server=(); pin_client=()
if [ "${PIN:-0}" = 1 ]; then pin_server=(taskset -c 0); pin_client=(taskset -c 1); fi

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# The peers: both systems, every C (run_rpc.sh bounds each run; this bounds the whole).
echo "== peers: raw asio echo and gRPC (C = $CONCURRENCY)" >&2
timeout $(( 2 * n_runs * per_client + 60 )) "$peers/run_rpc.sh" asio grpc | save ||
  echo "FAILED ($?): run_rpc.sh" >&2

# Ours, with the same parameters: one server for all runs; per C, the run with
# 1 s deadlines and the one without, back to back.
echo "== wheelrpc: echo and echo_no_deadline (C = $CONCURRENCY)" >&2
"${pin_server[@]}" "$bench" server --port 0 --port-file "$tmp/port" \
  --lifetime $(( 2 * n_runs * per_client + 10 )) &
server_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || { echo "compare_rpc.sh: rpc_bench server did not start" >&2; exit 1; }
port="$(cat "$tmp/port")"
ours() {
  timeout "$per_client" "${pin_client[@]}" "$bench" client --port "$port" --concurrency "$1" \
    --payload "$PAYLOAD" --warmup "$WARMUP" --duration "$DURATION" --server-pid "$server_pid" "${@:2}" ||
    echo "FAILED ($?): rpc_bench client C=$1 ${*:2}" >&2
}
for C in $CONCURRENCY; do
  ours "$C" | save
  ours "$C" --no-deadline | save
done
kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""

# ---- report ------------------------------------------------------------------
echo "# RPC echo comparison: wheelrpc vs raw Boost.Asio TCP echo vs gRPC C++"
echo
echo "- date: $when"
echo "- machine: ${model:-unknown CPU}, $ncpu CPUs (nproc), kernel $kernel"
echo "- ${PAYLOAD}-byte payload, ${WARMUP} s warm-up + ${DURATION} s measured per run, C = $CONCURRENCY; raw results: $out"
python3 "$peers/to_table.py" < "$out"
python3 "$repo/bench/rpc_ratios.py" "$out"
