#!/usr/bin/env python3
"""Prints the markdown table of docs/benchmarks.md ("Overload") from the JSON
lines bench/overload.sh saved: one row per run and load factor (batches, one per run of the script, lettered A, B, ...), with goodput
as a fraction of the same configuration's 1x goodput in the same round, and
of the capacity measured at the start of the run (rpc_bench overload's
"1x"). Where the run recorded the handler threads' CPU (handler_cpu_s),
"useful handler CPU" is the share of it spent on calls that succeeded in
time: goodput x duration x cost / handler CPU.

    bench/overload_table.py bench/results/overload-DATE.jsonl
"""
import json
import statistics
import sys


def useful_cpu(r):
    """The share of the handler threads' CPU spent on calls that succeeded in time."""
    hcpu = r.get("handler_cpu_s")
    return f'{r["goodput_per_s"] * r["duration_s"] * r["cost_us"] / 1e6 / hcpu:.0%}' if hcpu else "-"


def summary(runs):
    """Medians over the rounds, per configuration and load."""
    groups = {}
    for r in runs:
        groups.setdefault((r.get("cost_us"), r["limiter"], r["admission"], r["load_factor"]), []).append(r)
    print("| cost | limiter | admission | load | rounds | goodput/s (median) | vs capacity (median) | "
          "p99 of successes (median) | goodput vs 1x, each round | useful handler CPU, each round |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (cost, lim, adm, load), rs in groups.items():
        ones = {x.get("round"): x["goodput_per_s"] for x in groups.get((cost, lim, adm, 1.0), [])}
        vs1 = ", ".join(f'{x["goodput_per_s"] / ones[x.get("round")]:.0%}' if ones.get(x.get("round")) else "-"
                        for x in rs)
        good = statistics.median(x["goodput_per_s"] for x in rs)
        cap = statistics.median(x["goodput_per_s"] / x["capacity_per_s"] for x in rs)
        p99s = [x["p99_us"] / 1000 for x in rs if x["goodput_per_s"] > 0]
        p99 = f"{statistics.median(p99s):.1f} ms" if p99s else "-"
        useful = ", ".join(useful_cpu(x) for x in rs)
        print(f"| {cost} µs | {lim} | {adm} | {load:g}x | {len(rs)} | {good:,.0f} | {cap:.0%} | {p99} | {vs1} "
              f"| {useful} |")
    print()


def main(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    # Each bench/overload.sh run starts with a machine line: a batch, lettered A, B, ...
    runs, batch = [], 0
    for r in rows:
        if r.get("meta") == "machine":
            batch += 1
        elif r.get("workload") == "overload":
            r["round"] = f'{chr(ord("A") + max(batch, 1) - 1)}{r.get("round", "")}'
            runs.append(r)
    summary(runs)
    base = {}
    for r in runs:
        if r["load_factor"] == 1:
            base[(r.get("cost_us"), r.get("round"), r["limiter"], r["admission"])] = r["goodput_per_s"]
    print("| cost | batch, round | limiter | admission | load | offered/s | goodput/s | vs 1x | vs capacity | "
          "p99 of successes | shed | timeouts | refused | handler CPU | useful handler CPU | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        b = base.get((r.get("cost_us"), r.get("round"), r["limiter"], r["admission"]))
        ratio = f'{r["goodput_per_s"] / b:.0%}' if b else "-"
        of_cap = f'{r["goodput_per_s"] / r["capacity_per_s"]:.0%}' if r.get("capacity_per_s") else "-"
        p99 = f'{r["p99_us"] / 1000:.1f} ms' if r["goodput_per_s"] > 0 else "-"
        hcpu = r.get("handler_cpu_s")
        useful = useful_cpu(r)
        hcpu_text = f"{hcpu:.2f} s" if hcpu is not None else "-"
        print(f'| {r.get("cost_us", "-")} µs | {r.get("round", "-")} | {r["limiter"]} | {r["admission"]} '
              f'| {r["load_factor"]:g}x | {r["offered_per_s"]:,.0f} | {r["goodput_per_s"]:,.0f} | {ratio} | {of_cap} '
              f'| {p99} | {r["shed"]:,} | {r["timeouts"]:,} | {r.get("refused", 0):,} | {hcpu_text} | {useful} '
              f'| {r.get("loadavg", "-")} |')


if __name__ == "__main__":
    main(sys.argv[1])
