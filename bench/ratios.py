#!/usr/bin/env python3
"""Compares wheelrpc's timer results with the peers measured in the same run.

    python3 bench/ratios.py bench/results/timer-2026-11-22.jsonl
    ... | python3 bench/ratios.py            # JSON lines on stdin

Reads the JSON lines printed by bench/timer_bench and by the peers of
bench/peers (asio_timer_bench, NettyTimerBench), as bench/compare_timer.sh
saves them (non-JSON lines are ignored; when a result appears twice the last
one wins) and prints one Markdown table: each of the project's timer goals (the
constants below), wheelrpc's figure, the reference it is compared with, the
ratio and whether the goal is met.
Standard library only.
"""
import json
import sys

from ratio_common import num, print_table, read_rows

OURS = "wheelrpc"
ASIO = "boost_asio_steady_timer"
NETTY = "netty_hashedwheeltimer"
PEERS = (ASIO, NETTY)
SHORT = {ASIO: "asio", NETTY: "netty"}

CHURN_GOAL = {10_000: 8.0, 1_000_000: 5.0}  # better peer's cpu_ns_per_pair / ours >= goal
BYTES_GOAL = 48.0                            # bytes_per_pending <= goal
P99_GOAL_MS = 1.1                            # accuracy p99 lateness <= goal
IDLE_CTXSW_GOAL = 5                          # idle voluntary context switches <= goal
MT_GOAL = 1.0                                # churn_mt throughput / churn throughput >= goal


def load(lines):
    """Returns {(system, workload, key): row}; key is `pending` or `tick_ms`."""
    rows = {}
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if not isinstance(r, dict) or "workload" not in r or "system" not in r:
            continue
        key = r.get("pending") if r["workload"] in ("churn", "churn_mt") else r.get("tick_ms")
        rows[(r["system"], r["workload"], key)] = r
    return rows


def find(rows, system, workload, key=None):
    """The row for (system, workload[, key]); with key None, the first match."""
    if key is not None:
        return rows.get((system, workload, key))
    for (s, w, _), r in rows.items():
        if s == system and w == workload:
            return r
    return None


def ok(r):
    return r is not None and r.get("check") == "ok"




def ratio(x):
    return "-" if x is None else f"{x:.1f}×"


def verdict(met, *rs):
    if any(r is None for r in rs):
        return "no data"
    if any(not ok(r) for r in rs):
        return "check FAILED"
    return "**yes**" if met else "NO"


def main():
    rows = read_rows(load, __doc__)
    if rows is None:
        return 2

    out = []  # (figure, wheelrpc, reference, ratio, goal, met)

    # churn: CPU per schedule+cancel pair (whole process) vs the better peer.
    for p, goal in CHURN_GOAL.items():
        ours = find(rows, OURS, "churn", p)
        peers = [r for r in (find(rows, s, "churn", p) for s in PEERS) if ok(r)]
        best = min(peers, key=lambda r: r["cpu_ns_per_pair"], default=None)
        x = None
        if ours and best and ours.get("cpu_ns_per_pair"):
            x = best["cpu_ns_per_pair"] / ours["cpu_ns_per_pair"]
        out.append((f"churn P={p:,} cpu_ns_per_pair",
                    num(ours and ours.get("cpu_ns_per_pair"), " ns"),
                    f"{SHORT[best['system']]} {num(best['cpu_ns_per_pair'], ' ns')}" if best else "-",
                    f"peer/ours = {ratio(x)}", f"≥ {goal:.0f}×",
                    verdict(x is not None and x >= goal, ours, best)))

    # churn: memory per pending timeout (RSS, timer records + 16-byte handles).
    for p in sorted(CHURN_GOAL, reverse=True):
        ours = find(rows, OURS, "churn", p)
        refs = [r for r in (find(rows, s, "churn", p) for s in PEERS) if r]
        ref = ", ".join(f"{SHORT[r['system']]} {num(r.get('bytes_per_pending'), ' B')}"
                        for r in refs) or "-"
        v = ours and ours.get("bytes_per_pending")
        goal_applies = p == 1_000_000  # at 10k the RSS delta is mostly noise
        out.append((f"churn P={p:,} bytes_per_pending", num(v, " B"), ref, "-",
                    f"≤ {BYTES_GOAL:.0f} B" if goal_applies else "(info)",
                    verdict(v is not None and v <= BYTES_GOAL, ours) if goal_applies else "-"))

    # churn_mt vs churn: aggregate throughput of 2 producers vs 1, same P.
    for p in CHURN_GOAL:
        single = find(rows, OURS, "churn", p)
        multi = find(rows, OURS, "churn_mt", p)
        x = None
        if single and multi and multi.get("ns_per_pair"):
            x = single["ns_per_pair"] / multi["ns_per_pair"]
        out.append((f"churn_mt P={p:,} throughput vs churn",
                    num(multi and multi.get("ns_per_pair"), " ns/pair"),
                    f"churn {num(single and single.get('ns_per_pair'), ' ns/pair')}",
                    f"mt/single = {ratio(x)}", f"≥ {MT_GOAL:.1f}×",
                    verdict(x is not None and x >= MT_GOAL, single, multi)))

    # accuracy: p99 lateness, never early, CPU vs Netty's.
    ours = find(rows, OURS, "accuracy")
    netty = find(rows, NETTY, "accuracy")
    asio = find(rows, ASIO, "accuracy")
    p99 = ours and ours.get("p99_late_ms")
    out.append(("accuracy p99_late_ms", num(p99, " ms"),
                f"netty {num(netty and netty.get('p99_late_ms'), ' ms')}, "
                f"asio {num(asio and asio.get('p99_late_ms'), ' ms')}",
                "-", f"≤ {P99_GOAL_MS} ms", verdict(p99 is not None and p99 <= P99_GOAL_MS, ours)))
    mn = ours and ours.get("min_late_ms")
    out.append(("accuracy min_late_ms", num(mn, " ms"), "-", "-", "≥ 0 (never early)",
                verdict(mn is not None and mn >= 0, ours)))
    x = None
    if ours and netty and ours.get("cpu_s"):
        x = netty["cpu_s"] / ours["cpu_s"]
    out.append(("accuracy cpu_s", num(ours and ours.get("cpu_s"), " s"),
                f"netty {num(netty and netty.get('cpu_s'), ' s')}, "
                f"asio {num(asio and asio.get('cpu_s'), ' s')}",
                f"netty/ours = {ratio(x)}", "≤ Netty's (≥ 1.0×)",
                verdict(x is not None and x >= 1.0, ours, netty)))

    # idle: voluntary context switches of the whole process.
    ours = find(rows, OURS, "idle")
    refs = [(f"netty {r.get('tick_ms')} ms" if s == NETTY else "asio", r)
            for (s, w, _), r in rows.items() if w == "idle" and s in PEERS]
    v = ours and ours.get("vol_ctxsw")
    out.append((f"idle {num(ours and ours.get('seconds'), ' s')} vol_ctxsw", num(v),
                ", ".join(f"{name} {num(r.get('vol_ctxsw'))}" for name, r in refs) or "-",
                "-", f"≤ {IDLE_CTXSW_GOAL}",
                verdict(v is not None and v <= IDLE_CTXSW_GOAL, ours)))

    print_table("wheelrpc vs goals", out)

    failed = [r for r in rows.values() if "check" in r and r["check"] != "ok"]
    if failed:
        print("\nFailed checks:")
        for r in failed:
            print(f"- {r['system']} {r['workload']} "
                  f"{r.get('pending', r.get('tick_ms', ''))}: {r.get('check')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
