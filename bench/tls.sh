#!/usr/bin/env bash
# The cost of TLS: one rpc_bench binary, plaintext (A) and --tls (B) in
# alternating runs (bench/ab_rpc.sh) at each concurrency, so both see the same
# machine; saves the JSON lines (with a machine line first) and prints, per
# concurrency, the medians and the TLS/plaintext ratios as a Markdown table.
#
#   bench/tls.sh                                   # C = 1 16 128, 3 rounds of 5 s each
#   DURATION=10 ROUNDS=5 CONCURRENCY="1 128" bench/tls.sh
#
# Environment: BENCH (default <repo>/build/release/bench/rpc_bench; build it
# with the release preset), DURATION (s, default 5), ROUNDS (default 3),
# CONCURRENCY (default "1 16 128"), OUT (default bench/results/tls-YYYY-MM-DD.jsonl).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bench=${BENCH:-$repo/build/release/bench/rpc_bench}
[ -x "$bench" ] || { echo "tls.sh: $bench not built (cmake --preset release && cmake --build build/release --target rpc_bench)" >&2; exit 1; }
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-"1 16 128"}
out=${OUT:-$repo/bench/results/tls-$(date +%F).jsonl}
certs=$(mktemp -d)
run_out=$(mktemp)
trap 'rm -rf "$certs" "$run_out"' EXIT

# shellcheck source=bench/machine.sh
source "$repo/bench/machine.sh"
machine_info "$repo"
machine_line bench=tls duration_s="$DURATION" rounds="$ROUNDS" >"$run_out"
for c in $CONCURRENCY; do
  echo "== C=$c: A plaintext, B --tls" >&2
  A_FLAGS="" B_FLAGS="--tls $certs" OUT="$run_out" "$repo/bench/ab_rpc.sh" "$bench" "$bench" "$c" "$DURATION" "$ROUNDS" >&2
done
cat "$run_out" >>"$out"
echo "saved to $out" >&2
python3 - "$run_out" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
meta = runs[0]
print(f"machine: {meta['cpu']}, {meta['nproc']} CPUs, {meta['date']}, commit {meta['wheelrpc_commit']}")
print()
print("| C | plaintext calls/s | TLS calls/s | TLS / plaintext | p50 µs plain / TLS | p99 µs plain / TLS | client+server CPU ns/call plain / TLS |")
print("|---|---|---|---|---|---|---|")
def med(rows, key):
    return statistics.median(r[key] for r in rows)
def cpu(r):
    return r["client_cpu_ns_per_call"] + r["server_cpu_ns_per_call"]
for c in sorted({r["concurrency"] for r in runs[1:]}):
    a = [r for r in runs[1:] if r["concurrency"] == c and r["tls"] == "off"]
    b = [r for r in runs[1:] if r["concurrency"] == c and r["tls"] == "on"]
    ra, rb = med(a, "calls_per_s"), med(b, "calls_per_s")
    print(f"| {c} | {ra:.0f} | {rb:.0f} | {rb / ra:.2f} | {med(a, 'p50_us'):.0f} / {med(b, 'p50_us'):.0f} "
          f"| {med(a, 'p99_us'):.0f} / {med(b, 'p99_us'):.0f} "
          f"| {statistics.median(cpu(r) for r in a):.0f} / {statistics.median(cpu(r) for r in b):.0f} |")
PY
