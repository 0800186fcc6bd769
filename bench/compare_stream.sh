#!/usr/bin/env bash
# Runs the stream workload on wheelrpc (`rpc_bench client --stream MODE`)
# and on gRPC C++ bidi streaming (bench/peers' grpc_stream) on this machine,
# saves every JSON line, and prints the tables and wheelrpc's ratios against
# the streams' goals (bench/stream_ratios.py). Runnable from any directory.
#
#   bench/compare_stream.sh                   # 1 s + 5 s per run: about 3 minutes
#   DURATION=10 bench/compare_stream.sh       # longer windows
#
# What one run measures, for both systems:
#   echo and oneway, at 64 B and 4 KiB, on 1 and 128 streams, each
#   configuration gRPC then wheelrpc back to back (one server of each kept
#   up for all of them);
#   wheelrpc's unary echo at C = 1 (rpc_bench's echo workload, 64 B, against
#   the same server), right after its stream echo at 1 stream and 64 B, for
#   the p99 of a stream against a call;
#   idle with 1000 streams, each system against a server of its own started
#   for that run (a server that served streams before reuses their memory).
# Every server listens on port 0 of 127.0.0.1 and writes its port to a file;
# the script records each one's pid, stops it by that pid when done with it,
# and the EXIT trap kills exactly the pids still recorded. --lifetime bounds
# each server should the script die anyway. The load average is recorded
# before and after (in the machine line and the report): the machines are
# shared, and figures from a loaded one say so.
#
# Environment (whole numbers): DURATION (measured seconds per run, default
#   5), WARMUP (default 1), STREAMS (default "1 128"), PAYLOADS (bytes,
#   default "64 4096"), IDLE_STREAMS (default 1000), PIN=1 (servers on CPU
#   0, clients on CPU 1); OUT (results file, default
#   bench/results/stream-YYYY-MM-DD.jsonl), JOBS (parallel build jobs,
#   default 2), BUILD_DIR (default <repo>/build/release) and CMAKE_ARGS
#   (extra configure arguments), or BENCH (an rpc_bench binary to run as it
#   is: nothing of wheelrpc is built). The peers are built by
#   bench/peers/build.sh into build/peers (it installs their Debian packages
#   if missing, and rebuilds only what changed).
# Progress goes to stderr; the report (machine, tables, ratios) to stdout.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
peers="$repo/build/peers"

DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
STREAMS=${STREAMS:-"1 128"}
PAYLOADS=${PAYLOADS:-"64 4096"}
IDLE_STREAMS=${IDLE_STREAMS:-1000}
for v in "$DURATION" "$WARMUP" "$IDLE_STREAMS" $STREAMS $PAYLOADS; do
  case $v in ''|*[!0-9]*) echo "compare_stream.sh: DURATION, WARMUP, STREAMS, PAYLOADS and IDLE_STREAMS take whole numbers" >&2; exit 2 ;; esac
done
out="${OUT:-$repo/bench/results/stream-$(date +%F).jsonl}"
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
[ -x "$bench" ] || { echo "compare_stream.sh: $bench was not built" >&2; exit 1; }

echo "== building the peers (bench/peers/build.sh, $peers)" >&2
JOBS="$jobs" "$repo/bench/peers/build.sh" >&2
grpc="$peers/grpc_stream"
[ -x "$grpc" ] || { echo "compare_stream.sh: $grpc was not built" >&2; exit 1; }

# ---- run ---------------------------------------------------------------------
# shellcheck source=bench/machine.sh
source "$repo/bench/machine.sh"
machine_info "$repo"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"

mkdir -p "$(dirname "$out")"
machine_line duration_s="$DURATION" warmup_s="$WARMUP" streams="$STREAMS" payloads="$PAYLOADS" \
  idle_streams="$IDLE_STREAMS" loadavg_before="$load_before" > "$out"

# Each line goes to the results file and, as progress, to stderr.
save() { tee -a "$out" >&2; }

per_client=$(( WARMUP + DURATION + 30 ))  # the bound on one client run (opening and draining included)
n_streams=$(wc -w <<<"$STREAMS"); n_payloads=$(wc -w <<<"$PAYLOADS")
lifetime=$(( (2 * n_streams * n_payloads + 1) * per_client + 60 ))  # every run a long-lived server serves
pin_server=(); pin_client=()
if [ "${PIN:-0}" = 1 ]; then pin_server=(taskset -c 0); pin_client=(taskset -c 1); fi

tmp=$(mktemp -d)
declare -A pid=() port=()
cleanup() {
  local name
  for name in "${!pid[@]}"; do
    kill "${pid[$name]}" 2>/dev/null || true
    wait "${pid[$name]}" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

# start_server NAME BIN LIFETIME [FLAGS...]: BIN's server on a free port;
# its pid and port in pid[NAME] and port[NAME].
start_server() {
  local name=$1 bin=$2 secs=$3
  rm -f "$tmp/$name.port"
  "${pin_server[@]}" "$bin" server --port 0 --port-file "$tmp/$name.port" --lifetime "$secs" "${@:4}" &
  pid[$name]=$!
  for _ in $(seq 100); do  # up to 10 s; give up at once if the server died
    if [ -s "$tmp/$name.port" ] || ! kill -0 "${pid[$name]}" 2>/dev/null; then break; fi
    sleep 0.1
  done
  [ -s "$tmp/$name.port" ] || { echo "compare_stream.sh: $bin server did not start" >&2; exit 1; }
  port[$name]="$(cat "$tmp/$name.port")"
}
stop_server() {
  kill "${pid[$1]}" 2>/dev/null || true
  wait "${pid[$1]}" 2>/dev/null || true
  unset "pid[$1]"
}
# run NAME WHAT CMD...: one client run (bounded), its line saved; a failure is reported and the run goes on.
run() {
  local what=$2
  timeout "$per_client" "${pin_client[@]}" "${@:3}" --port "${port[$1]}" --server-pid "${pid[$1]}" | save ||
    echo "FAILED: $what" >&2
}
grpc_client() {  # SERVER MODE STREAMS PAYLOAD
  run "$1" "grpc_stream $2 S=$3 ${4} B" "$grpc" client --mode "$2" --streams "$3" --payload "$4" \
    --warmup "$WARMUP" --duration "$DURATION"
}
ours_client() {  # SERVER MODE STREAMS PAYLOAD
  run "$1" "rpc_bench --stream $2 S=$3 ${4} B" "$bench" client --stream "$2" --streams "$3" --payload "$4" \
    --warmup "$WARMUP" --duration "$DURATION"
}

echo "== echo and oneway (payloads $PAYLOADS, streams $STREAMS): gRPC then wheelrpc per configuration" >&2
start_server grpc "$grpc" "$lifetime"
start_server ours "$bench" "$lifetime"
for mode in echo oneway; do
  for payload in $PAYLOADS; do
    for s in $STREAMS; do
      grpc_client grpc "$mode" "$s" "$payload"
      ours_client ours "$mode" "$s" "$payload"
      if [ "$mode" = echo ] && [ "$s" = 1 ] && [ "$payload" = 64 ]; then
        run ours "rpc_bench unary echo C=1" "$bench" client --concurrency 1 --payload 64 \
          --warmup "$WARMUP" --duration "$DURATION"
      fi
    done
  done
done
stop_server grpc
stop_server ours

echo "== idle: $IDLE_STREAMS streams, a fresh server for each system" >&2
start_server grpc "$grpc" "$(( per_client + 30 ))"
grpc_client grpc idle "$IDLE_STREAMS" 64
stop_server grpc
start_server ours "$bench" "$(( per_client + 30 ))"
ours_client ours idle "$IDLE_STREAMS" 64
stop_server ours
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
printf '{"meta": "end", "loadavg_after": "%s"}\n' "$load_after" >> "$out"

# ---- report ------------------------------------------------------------------
echo "# Streams: wheelrpc against gRPC C++ bidi streaming"
echo
echo "- date: $when (wheelrpc at $commit)"
echo "- machine: ${model:-unknown CPU}, $ncpu CPUs (nproc), kernel $kernel"
echo "- load average (1, 5, 15 min): $load_before before, $load_after after"
echo "- ${WARMUP} s warm-up + ${DURATION} s measured per run; payloads $PAYLOADS B; streams $STREAMS;" \
  "idle: $IDLE_STREAMS streams; raw results: $out"
python3 "$repo/bench/tables.py" "$out"
python3 "$repo/bench/stream_ratios.py" "$out"
