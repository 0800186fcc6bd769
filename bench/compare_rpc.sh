#!/usr/bin/env bash
# Runs the RPC echo workload on wheelrpc and on its peers (bench/peers: a raw
# Boost.Asio TCP echo and gRPC C++) back to back on this machine, saves every
# JSON line, and prints the tables and wheelrpc's ratios against the
# project's goals (bench/rpc_ratios.py). Runnable from any directory.
#
#   bench/compare_rpc.sh                          # C = 1 16 128, 1 s + 10 s each: about 3-4 minutes
#   DURATION=3 bench/compare_rpc.sh               # shorter windows
#   CONCURRENCY="1 128" bench/compare_rpc.sh      # a subset of concurrencies
#
# Every system runs the same way: one server process (port 0 on 127.0.0.1),
# then its client at every C with the same flags (wheelrpc's twice per C:
# with 1 s deadlines and with --no-deadline), then the server is stopped.
# The peers are built by bench/peers/build.sh into build/peers (it installs
# their Debian packages if missing, and rebuilds only what changed).
#
# Environment (whole seconds): DURATION (measured window, default 10),
#   WARMUP (default 1), PAYLOAD (bytes, default 64), CONCURRENCY (default
#   "1 16 128"), PIN=1 (servers on CPU 0, clients on CPU 1); OUT (results
#   file, default bench/results/rpc-YYYY-MM-DD.jsonl), JOBS (parallel build
#   jobs, default 2), BUILD_DIR (default <repo>/build/release) and CMAKE_ARGS
#   (extra configure arguments) to build rpc_bench elsewhere than the release
#   preset's directory (still with the release preset's settings), or BENCH
#   (an rpc_bench binary to run as it is: nothing of wheelrpc is built).
# Progress goes to stderr; the report (machine, tables, ratios) to stdout.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
peers="$repo/build/peers"

DURATION=${DURATION:-10}
WARMUP=${WARMUP:-1}
PAYLOAD=${PAYLOAD:-64}
CONCURRENCY=${CONCURRENCY:-"1 16 128"}
for v in "$DURATION" "$WARMUP" "$PAYLOAD" $CONCURRENCY; do
  case $v in ''|*[!0-9]*) echo "compare_rpc.sh: DURATION, WARMUP, PAYLOAD and CONCURRENCY take whole numbers" >&2; exit 2 ;; esac
done
out="${OUT:-$repo/bench/results/rpc-$(date +%F).jsonl}"
jobs="${JOBS:-2}"
build_dir="${BUILD_DIR:-$repo/build/release}"
read -r -a cmake_args <<<"${CMAKE_ARGS:-}"

# ---- build -------------------------------------------------------------------
if [ -n "${BENCH:-}" ]; then
  bench="$BENCH"
else
  echo "== building wheelrpc rpc_bench (release preset, $build_dir)" >&2
  (cd "$repo" && cmake --preset release -B "$build_dir" "${cmake_args[@]}" >&2 &&
     cmake --build "$build_dir" --target rpc_bench -j "$jobs" >&2)
  bench="$build_dir/bench/rpc_bench"
fi
[ -x "$bench" ] || { echo "compare_rpc.sh: $bench was not built" >&2; exit 1; }

echo "== building the peers (bench/peers/build.sh, $peers)" >&2
JOBS="$jobs" "$repo/bench/peers/build.sh" >&2
for bin in asio_echo grpc_echo; do
  [ -x "$peers/$bin" ] || { echo "compare_rpc.sh: $peers/$bin was not built" >&2; exit 1; }
done

# ---- run ---------------------------------------------------------------------
# shellcheck source=bench/machine.sh
source "$repo/bench/machine.sh"
machine_info "$repo"

mkdir -p "$(dirname "$out")"
# First line: the machine.
machine_line duration_s="$DURATION" warmup_s="$WARMUP" payload_bytes="$PAYLOAD" concurrency="$CONCURRENCY" > "$out"

# Each line goes to the results file and, as progress, to stderr.
save() { tee -a "$out" >&2; }

per_client=$(( WARMUP + DURATION + 20 ))  # the bound on one client run
pin_server=(); pin_client=()
if [ "${PIN:-0}" = 1 ]; then pin_server=(taskset -c 0); pin_client=(taskset -c 1); fi

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# start_server BIN RUNS: BIN's server on a free port ($port); --lifetime (a
# bound on RUNS client runs) makes it exit by itself should this script die.
start_server() {
  rm -f "$tmp/port"
  "${pin_server[@]}" "$1" server --port 0 --port-file "$tmp/port" --lifetime $(( $2 * per_client + 10 )) &
  server_pid=$!
  for _ in $(seq 100); do  # up to 10 s; give up at once if the server died
    if [ -s "$tmp/port" ] || ! kill -0 "$server_pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  [ -s "$tmp/port" ] || { echo "compare_rpc.sh: $1 server did not start" >&2; exit 1; }
  port="$(cat "$tmp/port")"
}
stop_server() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}
# client BIN C [FLAGS...]: one closed-loop run against the running server.
client() {
  timeout "$per_client" "${pin_client[@]}" "$1" client --port "$port" --concurrency "$2" \
    --payload "$PAYLOAD" --warmup "$WARMUP" --duration "$DURATION" --server-pid "$server_pid" "${@:3}" ||
    echo "FAILED ($?): $(basename "$1") client C=$2 ${*:3}" >&2
}

n_runs=$(wc -w <<<"$CONCURRENCY")
# The peers first, each with its own server, every C.
for bin in asio_echo grpc_echo; do
  echo "== peer $bin (C = $CONCURRENCY)" >&2
  start_server "$peers/$bin" "$n_runs"
  for C in $CONCURRENCY; do client "$peers/$bin" "$C" | save; done
  stop_server
done

# Ours, with the same parameters: one server for all runs; per C, the run with
# 1 s deadlines and the one without, back to back.
echo "== wheelrpc: echo and echo_no_deadline (C = $CONCURRENCY)" >&2
start_server "$bench" $(( 2 * n_runs ))
for C in $CONCURRENCY; do
  client "$bench" "$C" | save
  client "$bench" "$C" --no-deadline | save
done
stop_server

# ---- report ------------------------------------------------------------------
echo "# RPC echo comparison: wheelrpc vs raw Boost.Asio TCP echo vs gRPC C++"
echo
echo "- date: $when"
echo "- machine: ${model:-unknown CPU}, $ncpu CPUs (nproc), kernel $kernel"
echo "- ${PAYLOAD}-byte payload, ${WARMUP} s warm-up + ${DURATION} s measured per run, C = $CONCURRENCY; raw results: $out"
python3 "$repo/bench/tables.py" "$out"
python3 "$repo/bench/rpc_ratios.py" "$out"
