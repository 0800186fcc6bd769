#!/usr/bin/env bash
# Runs the timer workloads on wheelrpc and on the peers (Netty HashedWheelTimer,
# Boost.Asio steady_timer; see shared/peers/README.md) back to back on this
# machine, saves every JSON line, and prints the tables and wheelrpc's ratios
# against the goals of shared/bench-spec.md. Runnable from any directory.
#
#   bench/compare_timer.sh                     # everything, about 2-3 minutes
#   bench/compare_timer.sh churn idle          # a subset of: churn churn_mt accuracy idle
#   K=500000 bench/compare_timer.sh churn      # fewer churn iterations
#
# Environment: K (churn iterations, default 2000000), OUT (results file, default
# bench/results/timer-YYYY-MM-DD.jsonl), PEERS_DIR (default <repo>/../shared/peers),
# JOBS (parallel build jobs, default 2).
# Progress goes to stderr; the report (machine, tables, ratios) to stdout.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
peers="${PEERS_DIR:-$repo/../shared/peers}"
if [ ! -d "$peers" ] || [ ! -f "$peers/run_timer.sh" ]; then
  echo "compare_timer.sh: peer benchmarks not found in '$peers'." >&2
  echo "  Expected shared/peers next to the repository (<root>/main and <root>/shared/peers);" >&2
  echo "  set PEERS_DIR=/path/to/shared/peers to point elsewhere." >&2
  exit 1
fi
peers="$(cd "$peers" && pwd)"

K=${K:-2000000}
export K  # run_timer.sh reads it too
out="${OUT:-$repo/bench/results/timer-$(date +%F).jsonl}"
jobs="${JOBS:-2}"

workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(churn churn_mt accuracy idle)
for w in "${workloads[@]}"; do
  case $w in
    churn|churn_mt|accuracy|idle) ;;
    *) echo "unknown workload: $w (churn|churn_mt|accuracy|idle)" >&2; exit 2 ;;
  esac
done

# ---- build -------------------------------------------------------------------
echo "== building wheelrpc timer_bench (release preset)" >&2
(cd "$repo" && cmake --preset release >&2 &&
   cmake --build --preset release --target timer_bench -j "$jobs" >&2)
bench="$repo/build/release/bench/timer_bench"
[ -x "$bench" ] || { echo "compare_timer.sh: $bench was not built" >&2; exit 1; }

if [ ! -x "$peers/build/asio_timer_bench" ] || [ ! -f "$peers/build/java/NettyTimerBench.class" ]; then
  echo "== building the peers ($peers/build.sh)" >&2
  "$peers/build.sh" >&2
fi

# ---- run ---------------------------------------------------------------------
# shellcheck source=bench/machine.sh
source "$repo/bench/machine.sh"
machine_info "$repo"

mkdir -p "$(dirname "$out")"
# First line: the machine.
machine_line K="$K" > "$out"

# Each line goes to the results file and, as progress, to stderr.
save() { tee -a "$out" >&2; }
# Every single run of ours is bounded, like the peers' runs inside run_timer.sh.
ours() { timeout 60 "$bench" "$@" || echo "FAILED ($?): timer_bench $*" >&2; }
peer() { "$peers/run_timer.sh" "$1" || echo "FAILED ($?): run_timer.sh $1" >&2; }

# Per workload: the peers, then ours with the same parameters, back to back.
for w in "${workloads[@]}"; do
  echo "== $w" >&2
  case $w in
    churn)
      peer churn | save
      for P in 10000 1000000; do ours churn "$P" "$K" | save; done ;;
    churn_mt)  # ours only; compared with our own churn at the same P
      for P in 10000 1000000; do ours churn_mt "$P" "$K" | save; done ;;
    accuracy)
      peer accuracy | save
      ours accuracy 100000 | save ;;
    idle)
      peer idle | save
      ours idle 5 | save ;;
  esac
done

# ---- report ------------------------------------------------------------------
echo "# Timer comparison: wheelrpc vs Netty HashedWheelTimer vs Boost.Asio steady_timer"
echo
echo "- date: $when"
echo "- machine: ${model:-unknown CPU}, $ncpu CPUs (nproc), kernel $kernel"
echo "- churn iterations K = $K; raw results: $out"
python3 "$peers/to_table.py" < "$out"
python3 "$repo/bench/ratios.py" "$out"
