#!/usr/bin/env bash
# Runs `rpc_bench conn_scale` (what idle connections with heartbeats cost; see
# bench/conn_scale.cc) for each N, and appends the JSON lines to a results
# file whose first line describes the machine. Runnable from any directory.
#
#   bench/conn_scale.sh                                 # N = 1000 10000, 1 s heartbeat, 20 s window
#   CONNECTIONS=10000 DURATION=60 bench/conn_scale.sh
#   BENCH=/tmp/old/rpc_bench LABEL=before bench/conn_scale.sh   # a binary built elsewhere
#
# Environment: CONNECTIONS (default "1000 10000"), HEARTBEAT_MS (1000),
# DURATION (seconds, 20), BENCH (default: build the release preset's rpc_bench
# and use it), LABEL (added to every line as "label"; default "HEAD <commit>"),
# OUT (default bench/results/conn-scale-YYYY-MM-DD.jsonl; appended to, the
# machine line written only when the file is new).
# Each line also gets "load_avg_1m" (from /proc/loadavg, just before the run):
# on a shared machine, read CPU figures beside it.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONNECTIONS=${CONNECTIONS:-"1000 10000"}
HEARTBEAT_MS=${HEARTBEAT_MS:-1000}
DURATION=${DURATION:-20}
out="${OUT:-$repo/bench/results/conn-scale-$(date -u +%F).jsonl}"

bench="${BENCH:-}"
if [ -z "$bench" ]; then
  echo "== building rpc_bench (release preset)" >&2
  (cd "$repo" && cmake --preset release >&2 && cmake --build --preset release --target rpc_bench >&2)
  bench="$repo/build/release/bench/rpc_bench"
fi
[ -x "$bench" ] || { echo "conn_scale.sh: $bench is not an executable" >&2; exit 1; }

# shellcheck source=bench/machine.sh
source "$repo/bench/machine.sh"
machine_info "$repo"
label="${LABEL:-HEAD $commit}"
mkdir -p "$(dirname "$out")"
[ -s "$out" ] || machine_line heartbeat_ms="$HEARTBEAT_MS" duration_s="$DURATION" > "$out"

for n in $CONNECTIONS; do
  load="$(cut -d' ' -f1 /proc/loadavg)"
  echo "== conn_scale N=$n ($label, load $load)" >&2
  line="$("$bench" conn_scale --connections "$n" --heartbeat-ms "$HEARTBEAT_MS" --duration-s "$DURATION")" ||
    echo "conn_scale.sh: N=$n exited with status $?" >&2
  [ -n "$line" ] || continue
  LINE="$line" LABEL_TEXT="$label" LOAD="$load" WHEN="$(date -u '+%F %T UTC')" python3 -c '
import json, os
d = json.loads(os.environ["LINE"])
d["label"] = os.environ["LABEL_TEXT"]
d["load_avg_1m"] = float(os.environ["LOAD"])
d["date"] = os.environ["WHEN"]
print(json.dumps(d, separators=(",", ":")))
' | tee -a "$out"
done
