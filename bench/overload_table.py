#!/usr/bin/env python3
"""Prints the markdown table of docs/benchmarks.md ("Overload") from the JSON
lines bench/overload.sh saved: one row per run and load factor, with goodput
as a fraction of the same configuration's 1x goodput in the same round.

    bench/overload_table.py bench/results/overload-DATE.jsonl
"""
import json
import sys


def main(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    runs = [r for r in rows if r.get("workload") == "overload"]
    base = {}
    for r in runs:
        if r["load_factor"] == 1:
            base[(r.get("round"), r["limiter"], r["admission"])] = r["goodput_per_s"]
    print("| round | limiter | admission | load | offered/s | goodput/s | vs 1x | p99 of successes | "
          "shed | timeouts | refused | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        b = base.get((r.get("round"), r["limiter"], r["admission"]))
        ratio = f'{r["goodput_per_s"] / b:.0%}' if b else "-"
        print(f'| {r.get("round", "-")} | {r["limiter"]} | {r["admission"]} | {r["load_factor"]:g}x '
              f'| {r["offered_per_s"]:,.0f} | {r["goodput_per_s"]:,.0f} | {ratio} '
              f'| {r["p99_us"] / 1000:.1f} ms | {r["shed"]:,} | {r["timeouts"]:,} | {r.get("refused", 0):,} '
              f'| {r.get("loadavg", "-")} |')


if __name__ == "__main__":
    main(sys.argv[1])
