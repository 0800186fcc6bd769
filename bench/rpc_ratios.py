#!/usr/bin/env python3
"""Compares wheelrpc's RPC echo results with the peers measured in the same run.

    python3 bench/rpc_ratios.py bench/results/rpc-2026-11-22.jsonl
    ... | python3 bench/rpc_ratios.py            # JSON lines on stdin

Reads the JSON lines printed by bench/rpc_bench and by the peers of
bench/peers (asio_echo, grpc_echo), as bench/compare_rpc.sh saves them
(non-JSON lines are ignored; when a result appears twice the last one wins) and
prints one Markdown table: each of the project's RPC goals (the constants
below), wheelrpc's figure, the reference it is compared with, the ratio and
whether the goal is met, followed by informational ratios at every concurrency
measured.
Standard library only.
"""
import json
import sys

from ratio_common import num, print_table, read_rows

OURS = "wheelrpc"
ASIO = "boost_asio_tcp_echo"
GRPC = "grpc_cpp"
SHORT = {ASIO: "raw asio", GRPC: "grpc"}

C1_VS_ASIO_GOAL = 0.9      # echo C=1: ours / raw asio calls_per_s >= goal
C128_VS_GRPC_GOAL = 15.0   # echo C=128: ours / grpc >= goal
C128_VS_ASIO_GOAL = 0.5    # echo C=128: ours / raw asio >= goal
DEADLINE_COST_GOAL = 0.05  # 1 - echo / echo_no_deadline <= goal


def load(lines):
    """Returns {(system, workload, concurrency): row} for echo-like rows."""
    rows = {}
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if not isinstance(r, dict) or "system" not in r:
            continue
        if r.get("workload") not in ("echo", "echo_no_deadline"):
            continue
        rows[(r["system"], r["workload"], r.get("concurrency"))] = r
    return rows


def rate(r):
    return None if r is None else r.get("calls_per_s")




def verdict(met, *rs):
    if any(r is None or not r.get("calls_per_s") for r in rs):
        return "no data"
    if any(r.get("errors", 0) for r in rs):
        return "errors"
    return "**yes**" if met else "NO"


def vs_peer(rows, c, peer, goal):
    """One row: ours vs `peer` at concurrency c; goal None = informational."""
    ours = rows.get((OURS, "echo", c))
    ref = rows.get((peer, "echo", c))
    x = None
    if rate(ours) and rate(ref):
        x = rate(ours) / rate(ref)
    return (f"echo C={c} calls/s vs {SHORT[peer]}", num(rate(ours), "/s"),
            f"{SHORT[peer]} {num(rate(ref), '/s')}",
            "-" if x is None else f"ours/peer = {x:.2f}×",
            "(info)" if goal is None else f"≥ {goal:g}×",
            "-" if goal is None else verdict(x is not None and x >= goal, ours, ref))


def deadline_cost(rows, c):
    with_dl = rows.get((OURS, "echo", c))
    without = rows.get((OURS, "echo_no_deadline", c))
    cost = None
    if rate(with_dl) and rate(without):
        cost = 1.0 - rate(with_dl) / rate(without)
    note = ""
    if without is not None and without.get("deadline_ms") == 0:
        note = " (no_deadline = CallOptions::kNoDeadline)"
    return (f"echo C={c} deadline cost{note}", num(rate(with_dl), "/s"),
            f"no_deadline {num(rate(without), '/s')}",
            "-" if cost is None else f"1 - echo/no_deadline = {cost * 100:+.1f} %",
            f"≤ {DEADLINE_COST_GOAL * 100:.0f} %",
            verdict(cost is not None and cost <= DEADLINE_COST_GOAL, with_dl, without))


def main():
    rows = read_rows(load, __doc__)
    if rows is None:
        return 2

    out = [vs_peer(rows, 1, ASIO, C1_VS_ASIO_GOAL),
           vs_peer(rows, 128, GRPC, C128_VS_GRPC_GOAL),
           vs_peer(rows, 128, ASIO, C128_VS_ASIO_GOAL)]
    concurrencies = sorted({c for (s, _, c) in rows if s == OURS and isinstance(c, int)})
    for c in concurrencies or [1, 16, 128]:
        out.append(deadline_cost(rows, c))
    # Every other pairing, for context.
    goals = {(1, ASIO), (128, GRPC), (128, ASIO)}
    for c in concurrencies:
        for peer in (ASIO, GRPC):
            if (c, peer) not in goals and (peer, "echo", c) in rows:
                out.append(vs_peer(rows, c, peer, None))

    print_table("wheelrpc RPC echo vs goals", out)

    bad = [r for r in rows.values() if r.get("errors")]
    if bad:
        print("\nRuns with failed calls:")
        for r in bad:
            print(f"- {r['system']} {r['workload']} C={r.get('concurrency')}: {r['errors']} errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
