#!/usr/bin/env bash
# Runs the timer workloads on wheelrpc and on its peers (bench/peers: Netty's
# HashedWheelTimer and Boost.Asio's steady_timer) back to back on this
# machine, saves every JSON line, and prints the tables and wheelrpc's ratios
# against the project's goals (bench/ratios.py). Runnable from any directory.
#
#   bench/compare_timer.sh                     # everything, about 2-3 minutes
#   bench/compare_timer.sh churn idle          # a subset of: churn churn_mt accuracy idle
#   K=500000 bench/compare_timer.sh churn      # fewer churn iterations
#
# Per workload and parameter set: Asio, Netty, then ours, with the same
# arguments, each run bounded to 60 s. The peers are built by
# bench/peers/build.sh into build/peers (it installs their Debian packages if
# missing, and rebuilds only what changed).
#
# Environment: K (churn iterations, default 2000000), OUT (results file, default
# bench/results/timer-YYYY-MM-DD.jsonl), JOBS (parallel build jobs, default 2),
# BENCH (a timer_bench binary to run as it is: nothing of wheelrpc is built).
# Progress goes to stderr; the report (machine, tables, ratios) to stdout.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
peers="$repo/build/peers"

K=${K:-2000000}
case $K in ''|*[!0-9]*|0) echo "compare_timer.sh: K takes a whole number >= 1" >&2; exit 2 ;; esac
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
if [ -n "${BENCH:-}" ]; then
  bench="$BENCH"
else
  echo "== building wheelrpc timer_bench (release preset)" >&2
  (cd "$repo" && cmake --preset release >&2 &&
     cmake --build --preset release --target timer_bench -j "$jobs" >&2)
  bench="$repo/build/release/bench/timer_bench"
fi
[ -x "$bench" ] || { echo "compare_timer.sh: $bench was not built" >&2; exit 1; }

echo "== building the peers (bench/peers/build.sh, $peers)" >&2
JOBS="$jobs" "$repo/bench/peers/build.sh" >&2
if [ ! -x "$peers/asio_timer_bench" ] || [ ! -f "$peers/java/NettyTimerBench.class" ]; then
  echo "compare_timer.sh: the timer peers were not built in $peers" >&2
  exit 1
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
# Every single run is bounded.
bounded() { timeout 60 "$@" || echo "FAILED ($?): $(basename "$1") ${*:2}" >&2; }
ours() { bounded "$bench" "$@"; }
asio() { bounded "$peers/asio_timer_bench" "$@"; }
netty() { bounded "$repo/bench/peers/netty_timer_bench.sh" "$@"; }

# Per workload: the peers, then ours with the same parameters, back to back.
for w in "${workloads[@]}"; do
  echo "== $w" >&2
  case $w in
    churn)
      for P in 10000 1000000; do
        asio churn "$P" "$K" | save
        netty churn "$P" "$K" | save
        ours churn "$P" "$K" | save
      done ;;
    churn_mt)  # ours only; compared with our own churn at the same P
      for P in 10000 1000000; do ours churn_mt "$P" "$K" | save; done ;;
    accuracy)
      asio accuracy 100000 | save
      netty accuracy 100000 | save
      ours accuracy 100000 | save ;;
    idle)  # Netty at its 1 ms tick (as ours) and at 100 ms
      asio idle 5 | save
      netty idle 1 5 | save
      netty idle 100 5 | save
      ours idle 5 | save ;;
  esac
done

# ---- report ------------------------------------------------------------------
echo "# Timer comparison: wheelrpc vs Netty HashedWheelTimer vs Boost.Asio steady_timer"
echo
echo "- date: $when"
echo "- machine: ${model:-unknown CPU}, $ncpu CPUs (nproc), kernel $kernel"
echo "- churn iterations K = $K; raw results: $out"
python3 "$repo/bench/tables.py" "$out"
python3 "$repo/bench/ratios.py" "$out"
