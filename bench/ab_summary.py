#!/usr/bin/env python3
"""Summarizes an A/B file written by bench/ab_rpc.sh (OUT=...): per label,
the calls/s of each round, their median and mean, and the CPU per call
medians; then B against A as ratios.

    bench/ab_summary.py bench/results/metrics-ab-2026-11-23.jsonl
"""
import json
import statistics
import sys


def per_call(r, side):
    """CPU ns per call of one side; peers' lines carry only the CPU seconds."""
    key = side + "_cpu_ns_per_call"
    if key in r:
        return r[key]
    return r[side + "_cpu_s"] / r["calls"] * 1e9 if r["calls"] else float("nan")


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    by = {}
    for r in rows:
        by.setdefault(r["label"], []).append(r)
    if set(by) != {"A", "B"}:
        sys.exit("expected rows labelled A and B, got %s" % sorted(by))
    med = {}
    for label in ("A", "B"):
        rs = by[label]
        rate = [r["calls_per_s"] for r in rs]
        med[label] = (statistics.median(rate), statistics.mean(rate))
        cpu_c = statistics.median(per_call(r, "client") for r in rs)
        cpu_s = statistics.median(per_call(r, "server") for r in rs)
        print("%s (%d rounds, C=%d): calls/s %s; median %.0f, mean %.0f; CPU per call (median) client %.0f ns, server %.0f ns"
              % (label, len(rs), rs[0]["concurrency"], ", ".join("%.0f" % x for x in rate), med[label][0],
                 med[label][1], cpu_c, cpu_s))
    print("B/A calls/s: median %.3f, mean %.3f" % (med["B"][0] / med["A"][0], med["B"][1] / med["A"][1]))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: ab_summary.py FILE.jsonl")
    main(sys.argv[1])
