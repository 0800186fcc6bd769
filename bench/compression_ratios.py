#!/usr/bin/env python3
"""The compression figures of a bench/compare_compression.sh file, as
Markdown: the codecs (ratio, MB/s), the cost of the plumbing on 64-byte
loopback calls, calls/s over the slow link per algorithm against none, and
the two goals, met or not.

    python3 bench/compression_ratios.py bench/results/compression-2026-11-27.jsonl
    ... | python3 bench/compression_ratios.py            # JSON lines on stdin

Ratios between configurations are the median over rounds of the ratio
within each round (the two runs of a pair were measured back to back on the
same machine state), beside the ratio of the medians. Standard library only.
"""
import json
import statistics
import sys

from ratio_common import num, print_table, read_rows

LOOPBACK_COST_GOAL = 0.03  # 1 - zstd / none calls/s at 64 B (nothing compressed) <= goal
LINK_SPEEDUP_GOAL = 2.5    # zstd / none calls/s at 64 KiB on the slow link >= goal
NONE = "identity"


def load(lines):
    rows = []
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if isinstance(r, dict):
            rows.append(r)
    return rows


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def cpu_per_call(r, side):
    v = r.get(side + "_cpu_ns_per_call")
    return v if v is not None and v >= 0 else None


def codec_table(rows):
    codec = [r for r in rows if r.get("workload") == "codec"]
    if not codec:
        return
    print("\n**Codecs** (one thread; MB/s of uncompressed bytes per CPU second)\n")
    print("| content | payload | compression | ratio | compress MB/s | decompress MB/s "
          "| compress µs | decompress µs | check |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in sorted(codec, key=lambda r: (r["content"], r["payload_bytes"])):
        print(f"| {r['content']} | {r['payload_bytes']} | {r['compression']} | {r['ratio']:.2f} "
              f"| {num(r['compress_mb_per_s'])} | {num(r['decompress_mb_per_s'])} "
              f"| {r['compress_us']:.1f} | {r['decompress_us']:.1f} | {r['check']} |")


def by_config(runs):
    """{compression: {round: row}} of echo runs."""
    out = {}
    for r in runs:
        out.setdefault(r["compression"], {})[r.get("round", 0)] = r
    return out


def paired(a, b):
    """Median over rounds of b/a calls/s, and the ratio of the medians."""
    per_round = [b[k]["calls_per_s"] / a[k]["calls_per_s"] for k in a if k in b and a[k]["calls_per_s"]]
    ma = med(r["calls_per_s"] for r in a.values())
    mb = med(r["calls_per_s"] for r in b.values())
    return med(per_round), (mb / ma if ma and mb is not None else None), per_round


def errors(*configs):
    return sum(r.get("errors", 0) for c in configs for r in c.values())


def verdict(met, x, *configs):
    if x is None:
        return "no data"
    if errors(*configs):
        return "errors"
    return "**yes**" if met else "NO"


def echo_rows(title, configs, order, ref, base=None):
    """One table: a row per configuration, medians, and its ratio to `ref`
    (or to `base`, runs of another table)."""
    print(f"\n**{title}**\n")
    print("| compression | rounds | calls/s each round | load each round | calls/s (median) | vs none (median of rounds) "
          "| vs none (of medians) | p50 µs | p99 µs | wire B/call | ratio | client CPU ns/call "
          "| server CPU ns/call | errors |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    base = base if base is not None else configs.get(ref)
    for name in order:
        c = configs.get(name)
        if not c:
            continue
        rs = [c[k] for k in sorted(c)]
        x_round, x_med, _ = paired(base, c) if base and c is not base else (None, None, None)
        load = ", ".join(f"{r['loadavg']:.1f}" if "loadavg" in r else "-" for r in rs)
        print(f"| {name} | {len(rs)} | {', '.join(num(r['calls_per_s']) for r in rs)} | {load} "
              f"| {num(med(r['calls_per_s'] for r in rs))} "
              f"| {'-' if x_round is None else f'{x_round:.3f}×'} | {'-' if x_med is None else f'{x_med:.3f}×'} "
              f"| {num(med(r['p50_us'] for r in rs))} | {num(med(r['p99_us'] for r in rs))} "
              f"| {num(med(r.get('wire_bytes_per_call') for r in rs))} | {num(med(r.get('ratio') for r in rs))} "
              f"| {num(med(cpu_per_call(r, 'client') for r in rs))} | {num(med(cpu_per_call(r, 'server') for r in rs))} "
              f"| {sum(r.get('errors', 0) for r in rs)} |")


def main():
    rows = read_rows(load, __doc__)
    if rows is None:
        return 2
    codec_table(rows)

    echo = [r for r in rows if r.get("workload") == "echo" and "compression" in r]
    goals = []

    loop = by_config(r for r in echo if not r.get("link_kbps") and r["payload_bytes"] == 64)
    if loop:
        echo_rows("Loopback, 64-byte payloads (below the 1024-byte threshold: nothing is compressed)",
                  loop, [NONE] + sorted(k for k in loop if k != NONE), NONE)
        for name in sorted(k for k in loop if k != NONE):
            x_round, x_med, _ = paired(loop.get(NONE, {}), loop[name])
            cost = None if x_round is None else 1 - x_round
            goals.append((f"64 B loopback, --compression {name}: cost in calls/s",
                          num(med(r["calls_per_s"] for r in loop[name].values()), "/s"),
                          f"none {num(med(r['calls_per_s'] for r in loop.get(NONE, {}).values()), '/s')}",
                          "-" if cost is None else
                          f"1 - {name}/none = {cost * 100:+.1f} % (of medians {(1 - x_med) * 100:+.1f} %)",
                          f"≤ {LOOPBACK_COST_GOAL * 100:.0f} %",
                          verdict(cost is not None and cost <= LOOPBACK_COST_GOAL, cost, loop[name],
                                  loop.get(NONE, {}))))

    link = [r for r in echo if r.get("link_kbps")]
    for content in sorted({r["content"] for r in link}):
        for size in sorted({r["payload_bytes"] for r in link if r["content"] == content}):
            sub = [r for r in link if r["content"] == content and r["payload_bytes"] == size]
            kbps = sub[0]["link_kbps"]
            configs = by_config(sub)
            order = [NONE] + sorted(k for k in configs if k != NONE)
            echo_rows(f"A {kbps / 1000:g} MB/s link each way (FaultProxy bandwidth toxic), {size}-byte "
                      f"{content} payloads", configs, order, NONE)
            for r in [configs[k][sorted(configs[k])[0]] for k in order if k in configs]:
                wire = r.get("wire_bytes_per_call")
                if wire and wire > 0:  # both directions carry half of a call's payload bytes
                    print(f"- {r['compression']}: the link allows at most "
                          f"{kbps * 1000 / (wire / 2):,.0f} calls/s of payload bytes alone")
            free = by_config(r for r in echo if not r.get("link_kbps") and r["content"] == content
                             and r["payload_bytes"] == size)
            if free:
                echo_rows(f"The same {size}-byte {content} calls without the link (plain loopback): what the "
                          f"codecs' CPU allows here, the ceiling of the table above; \"vs none\" is against none "
                          f"over the link", free, sorted(free), None, base=configs.get(NONE))
            for name in order:
                if not name.startswith("zstd") or name not in configs or NONE not in configs:
                    continue
                if name in free:
                    x_round, x_med, _ = paired(configs[NONE], free[name])
                    goals.append((f"{size} B {content}, {name} without the link (its CPU ceiling) vs none "
                                  f"over the link", num(med(r["calls_per_s"] for r in free[name].values()), "/s"),
                                  f"none {num(med(r['calls_per_s'] for r in configs[NONE].values()), '/s')}",
                                  "-" if x_round is None else f"{x_round:.2f}× (of medians {x_med:.2f}×)",
                                  "(info)", "-"))
                x_round, x_med, _ = paired(configs[NONE], configs[name])
                goals.append((f"{size} B {content} over {kbps / 1000:g} MB/s, {name} vs none: calls/s",
                              num(med(r["calls_per_s"] for r in configs[name].values()), "/s"),
                              f"none {num(med(r['calls_per_s'] for r in configs[NONE].values()), '/s')}",
                              "-" if x_round is None else f"{x_round:.2f}× (of medians {x_med:.2f}×)",
                              f"≥ {LINK_SPEEDUP_GOAL:g}×",
                              verdict(x_round is not None and x_round >= LINK_SPEEDUP_GOAL, x_round,
                                      configs[name], configs[NONE])))

    if goals:
        print_table("Compression goals", goals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
