#!/usr/bin/env bash
# Compression: what the codecs cost and save, what the compression plumbing
# costs a call that is not compressed, and what compression buys on a slow
# link. Saves every JSON line and prints the tables and the two goals
# (bench/compression_ratios.py). Runnable from any directory.
#
#   bench/compare_compression.sh                      # about 11 minutes with the defaults
#   ROUNDS=5 DURATION=5 bench/compare_compression.sh
#
# Three parts, one rpc_bench binary:
#   1. codec: `rpc_bench codec --duration CODEC_DURATION` (the default list
#      of algorithms and levels on json and proto payloads of 4 and 64 KiB).
#   2. loopback, 64-byte payloads (--content fill, as compare_rpc.sh), C =
#      CONCURRENCY: without --compression, and with --compression zstd (the
#      default threshold of 1024 bytes: nothing is compressed, so the
#      difference is what the plumbing costs).
#   3. a 10 MB/s link: the client's in-process FaultProxy with a bandwidth
#      toxic of LINK_KBPS KB/s each way (--via-proxy-kbps), 64 KiB payloads
#      of each CONTENTS, without compression and with each of ALGS; and the
#      same compressed calls on plain loopback, without the link: how many
#      calls/s the codecs' CPU allows at all here, the ceiling of part 3.
# Parts 2 and 3 run ROUNDS rounds; a round runs every configuration once,
# each on a fresh server (as bench/ab_rpc.sh), in an order rotated by one
# from round to round so no configuration always runs first.
#
# Environment (whole seconds unless said): ROUNDS (default 3), DURATION
#   (measured window, default 10), WARMUP (default 1), CEILING=0 (skip the
#   runs without the link in part 3), CONCURRENCY (default
#   16, compare_rpc.sh's middle figure), LINK_KBPS (default 10000),
#   LINK_PAYLOAD (bytes, default 65536), CONTENTS (default "json proto"),
#   ALGS (default "zstd lz4 gzip"), CODEC_DURATION (seconds per codec loop,
#   may be fractional, default 1); OUT (results file, default
#   bench/results/compression-YYYY-MM-DD.jsonl), BENCH (an rpc_bench binary to
#   run as it is), else JOBS (default 2) and BUILD_DIR (default
#   <repo>/build/release) to build it with the release preset.
# Progress goes to stderr; the report to stdout.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-1}
CONCURRENCY=${CONCURRENCY:-16}
LINK_KBPS=${LINK_KBPS:-10000}
LINK_PAYLOAD=${LINK_PAYLOAD:-65536}
CONTENTS=${CONTENTS:-"json proto"}
ALGS=${ALGS:-"zstd lz4 gzip"}
CODEC_DURATION=${CODEC_DURATION:-1}
for v in "$ROUNDS" "$DURATION" "$WARMUP" "$CONCURRENCY" "$LINK_KBPS" "$LINK_PAYLOAD"; do
  case $v in '' | *[!0-9]*)
    echo "compare_compression.sh: ROUNDS, DURATION, WARMUP, CONCURRENCY, LINK_KBPS and LINK_PAYLOAD take whole numbers" >&2
    exit 2
    ;;
  esac
done
out="${OUT:-$repo/bench/results/compression-$(date +%F).jsonl}"
jobs="${JOBS:-2}"
build_dir="${BUILD_DIR:-$repo/build/release}"

if [ -n "${BENCH:-}" ]; then
  bench="$BENCH"
else
  echo "== building rpc_bench (release preset, $build_dir)" >&2
  (cd "$repo" && cmake --preset release -B "$build_dir" >&2 && cmake --build "$build_dir" --target rpc_bench -j "$jobs" >&2)
  bench="$build_dir/bench/rpc_bench"
fi
[ -x "$bench" ] || { echo "compare_compression.sh: $bench was not built" >&2; exit 1; }

# shellcheck source=bench/machine.sh
source "$repo/bench/machine.sh"
machine_info "$repo"
mkdir -p "$(dirname "$out")"
machine_line bench=compression rounds="$ROUNDS" duration_s="$DURATION" warmup_s="$WARMUP" \
  concurrency="$CONCURRENCY" link_kbps="$LINK_KBPS" link_payload_bytes="$LINK_PAYLOAD" \
  codec_duration_s="$CODEC_DURATION" loadavg_before="$(cut -d' ' -f1-3 /proc/loadavg)" >"$out"
save() { tee -a "$out" >&2; }

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
per_client=$((WARMUP + DURATION + 30))

# run ROUND CLIENT_FLAGS...: a fresh server, one client run; its line, with
# the round and the 1-minute load average as the run ended, to the results
# file. (These VMs do not report steal time: when the host is busy, the
# time the vCPU waits counts as CPU time of whatever it was running, so the
# load beside a figure says how much to trust it.)
run() {
  local round=$1 line
  shift
  rm -f "$tmp/port"
  "$bench" server --port 0 --port-file "$tmp/port" --lifetime $((per_client + 10)) &
  server_pid=$!
  for _ in $(seq 100); do
    if [ -s "$tmp/port" ] || ! kill -0 "$server_pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  [ -s "$tmp/port" ] || { echo "compare_compression.sh: the server did not start" >&2; exit 1; }
  if line=$(timeout "$per_client" "$bench" client --port "$(cat "$tmp/port")" --concurrency "$CONCURRENCY" \
    --warmup "$WARMUP" --duration "$DURATION" --server-pid "$server_pid" "$@"); then :; else
    echo "FAILED ($?): client $*" >&2
  fi
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  [ -n "$line" ] && echo "$line" | sed "s/^{/{\"round\":$round,\"loadavg\":$(cut -d' ' -f1 /proc/loadavg),/" | save
  return 0
}

# rotate N WORDS...: the words, starting from the (N mod count)-th.
rotate() {
  local n=$1
  shift
  local words=("$@") i
  for ((i = 0; i < ${#words[@]}; i++)); do echo "${words[$(((i + n) % ${#words[@]}))]}"; done
}

echo "== 1. codec (rpc_bench codec --duration $CODEC_DURATION)" >&2
"$bench" codec --duration "$CODEC_DURATION" | save

echo "== 2. loopback, 64 B, C = $CONCURRENCY: none and --compression zstd, $ROUNDS rounds" >&2
for round in $(seq "$ROUNDS"); do
  for alg in $(rotate "$round" none zstd); do
    if [ "$alg" = none ]; then run "$round" --payload 64; else run "$round" --payload 64 --compression "$alg"; fi
  done
done

echo "== 3. a ${LINK_KBPS} KB/s link, ${LINK_PAYLOAD} B, C = $CONCURRENCY: none and $ALGS on $CONTENTS," \
  "and $ALGS without the link, $ROUNDS rounds" >&2
configs=(none)
for alg in $ALGS; do
  configs+=("$alg")
  [ "${CEILING:-1}" = 0 ] || configs+=("$alg/nolink")
done
for round in $(seq "$ROUNDS"); do
  for content in $CONTENTS; do
    for config in $(rotate "$round" "${configs[@]}"); do
      alg=${config%/nolink}
      flags=(--payload "$LINK_PAYLOAD" --content "$content")
      [ "$config" != "$alg" ] || flags+=(--via-proxy-kbps "$LINK_KBPS")
      [ "$alg" = none ] || flags+=(--compression "$alg")
      run "$round" "${flags[@]}"
    done
  done
done

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "{\"meta\":\"load_after\",\"loadavg\":\"$load_after\"}" >>"$out"
echo "# Compression"
echo
echo "- date: $when; commit $commit"
echo "- machine: ${model:-unknown CPU}, $ncpu CPUs (nproc), kernel $kernel"
echo "- load average (1, 5, 15 min) before: $(head -1 "$out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["loadavg_before"])'), after: $load_after"
echo "- ${WARMUP} s warm-up + ${DURATION} s per run, C = $CONCURRENCY, $ROUNDS rounds; raw results: $out"
python3 "$repo/bench/compression_ratios.py" "$out"
