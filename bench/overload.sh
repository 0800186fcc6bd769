#!/usr/bin/env bash
# Runs `rpc_bench overload` (a server offered 1x, 2x, 4x its capacity; see
# bench/overload.cc) in four configurations, alternating them for ROUNDS
# rounds, and appends the JSON lines (each with the round and the 1-minute
# load average before it) to a results file whose first line describes the
# machine. bench/overload_table.py turns the file into the table of
# docs/benchmarks.md.
#
#   bench/overload.sh                  # ROUNDS=2 LOADS=1,2,4 DURATION=5 COST_US=100
#   BENCH=path/to/rpc_bench OUT=file.jsonl ROUNDS=3 bench/overload.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
. "$here/machine.sh"
BENCH="${BENCH:-$repo/build/release/bench/rpc_bench}"
ROUNDS="${ROUNDS:-2}"
LOADS="${LOADS:-1,2,4}"
DURATION="${DURATION:-5}"
COST_US="${COST_US:-100}"
OUT="${OUT:-$repo/bench/results/overload-$(date -u +%F).jsonl}"

machine_info "$repo"
machine_line bench=overload rounds="$ROUNDS" cost_us="$COST_US" >> "$OUT"
for round in $(seq 1 "$ROUNDS"); do
  for flags in "" "--no-limiter" "--no-admission" "--no-limiter --no-admission"; do
    load="$(cut -d' ' -f1 /proc/loadavg)"
    # shellcheck disable=SC2086  # flags are words
    "$BENCH" overload --load "$LOADS" --duration "$DURATION" --cost-us "$COST_US" $flags |
      ROUND="$round" LOAD="$load" python3 -c '
import json, os, sys
for line in sys.stdin:
    d = json.loads(line)
    d["round"] = int(os.environ["ROUND"])
    d["loadavg"] = float(os.environ["LOAD"])
    print(json.dumps(d), flush=True)
' | tee -a "$OUT"
  done
done
