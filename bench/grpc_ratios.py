#!/usr/bin/env python3
"""The gRPC wire's figures of a bench/compare_grpc.sh file, as Markdown:
the medians of each client -> server pairing, then the three goals
(wheelrpc beside gRPC C++ on bench/peers/echo.proto), met or not.

    python3 bench/grpc_ratios.py bench/results/grpc-2026-11-27.jsonl
    ... | python3 bench/grpc_ratios.py            # JSON lines on stdin

Pairings (field "pair"): grpc_grpc (gRPC C++ client -> gRPC C++ server),
grpc_wheelrpc (gRPC C++ client -> wheelrpc server), wheelrpc_grpc
(wheelrpc client on the gRPC wire -> gRPC C++ server), wheelrpc_wheelrpc
(both wheelrpc, gRPC wire), native (both wheelrpc, native protocol).
A ratio is the median over rounds of the ratio within each round (the runs
of a round were measured back to back), with the ratio of the medians
beside it; the verdict goes by the former. Standard library only.
"""
import json
import statistics
import sys

from ratio_common import num, print_table, read_rows

SERVER_CPU_GOAL = 1 / 3   # (a) wheelrpc / gRPC C++ server CPU per call, both called by gRPC C++'s client: <= goal
CLIENT_CPU_GOAL = 1 / 2   # (b) wheelrpc / gRPC C++ client CPU per call, both calling gRPC C++'s server: <= goal
THROUGHPUT_GOAL = 5.0     # (c) wheelrpc <-> wheelrpc (gRPC wire) / gRPC C++ <-> gRPC C++ calls/s: >= goal

PAIRS = [
    ("grpc_grpc", "gRPC C++ → gRPC C++"),
    ("grpc_wheelrpc", "gRPC C++ → wheelrpc (gRPC wire)"),
    ("wheelrpc_grpc", "wheelrpc (gRPC wire) → gRPC C++"),
    ("wheelrpc_wheelrpc", "wheelrpc → wheelrpc (gRPC wire)"),
    ("native", "wheelrpc → wheelrpc (native)"),
]


def load(lines):
    """Echo rows that carry a pairing (the machine and meta lines are skipped)."""
    rows = []
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if isinstance(r, dict) and "pair" in r and "calls_per_s" in r:
            rows.append(r)
    return rows


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def field(r, name):
    """A figure of a run; None when unknown (negative) or the run had errors."""
    if r is None or r.get("errors"):
        return None
    v = r.get(name)
    return v if v is not None and v >= 0 else None


def by_round(rows):
    """{round: {pair: row}}; a pairing run twice in a round: the last wins."""
    rounds = {}
    for r in rows:
        rounds.setdefault(r.get("round", 0), {})[r["pair"]] = r
    return rounds


def medians_table(rows):
    print("\n**Medians per pairing** (C = {}; CPU per call: user + sys of all threads of each process)\n".format(
        ", ".join(sorted({str(r.get("concurrency")) for r in rows}))))
    print("| client → server | runs | calls/s | p50 µs | p99 µs | client CPU ns/call | server CPU ns/call "
          "| server threads | errors |")
    print("|---|---|---|---|---|---|---|---|---|")
    for pair, label in PAIRS:
        runs = [r for r in rows if r["pair"] == pair]
        if not runs:
            continue
        ok = [r for r in runs if not r.get("errors")]
        print(f"| {label} | {len(runs)} | {num(med(field(r, 'calls_per_s') for r in ok))} "
              f"| {num(med(field(r, 'p50_us') for r in ok))} | {num(med(field(r, 'p99_us') for r in ok))} "
              f"| {num(med(field(r, 'client_cpu_ns_per_call') for r in ok))} "
              f"| {num(med(field(r, 'server_cpu_ns_per_call') for r in ok))} "
              f"| {num(med(r.get('server_threads') for r in runs))} | {sum(r.get('errors', 0) for r in runs)} |")


def ratio(rounds, ours, ref, name):
    """(median of per-round ratios, ratio of medians, rounds used, our median, the reference's median)."""
    per_round = []
    for pairs in rounds.values():
        a, b = field(pairs.get(ours), name), field(pairs.get(ref), name)
        if a is not None and b:
            per_round.append(a / b)
    a_med = med(field(p.get(ours), name) for p in rounds.values())
    b_med = med(field(p.get(ref), name) for p in rounds.values())
    of_medians = a_med / b_med if a_med is not None and b_med else None
    return med(per_round), of_medians, len(per_round), a_med, b_med


def goal_row(rounds, figure, ours, ref, name, unit, ref_label, goal, at_most):
    r, of_medians, n, a, b = ratio(rounds, ours, ref, name)
    if goal is None:
        goal_text, met = "(info)", "-"
    else:
        goal_text = (f"≤ {goal:.2g}×" if at_most else f"≥ {goal:g}×")
        met = "no data" if r is None else ("**yes**" if (r <= goal if at_most else r >= goal) else "NO")
    ratio_text = "-" if r is None else f"{r:.3f}× (medians: {of_medians:.3f}×; {n} rounds)"
    return (figure, num(a, unit), f"{ref_label} {num(b, unit)}", ratio_text, goal_text, met)


def main():
    rows = read_rows(load, __doc__)
    if rows is None:
        return 2
    if not rows:
        print("no compare_grpc.sh lines", file=sys.stderr)
        return 1
    medians_table(rows)
    rounds = by_round(rows)
    out = [
        goal_row(rounds, "(a) server CPU per call, called by gRPC C++'s client", "grpc_wheelrpc", "grpc_grpc",
                 "server_cpu_ns_per_call", " ns", "gRPC C++ server", SERVER_CPU_GOAL, True),
        goal_row(rounds, "(b) client CPU per call (gRPC wire), calling gRPC C++'s server", "wheelrpc_grpc",
                 "grpc_grpc", "client_cpu_ns_per_call", " ns", "gRPC C++ client", CLIENT_CPU_GOAL, True),
        goal_row(rounds, "(c) calls/s, wheelrpc ↔ wheelrpc on the gRPC wire", "wheelrpc_wheelrpc", "grpc_grpc",
                 "calls_per_s", "/s", "gRPC C++ ↔ gRPC C++", THROUGHPUT_GOAL, False),
        goal_row(rounds, "calls/s, wheelrpc ↔ wheelrpc native", "native", "grpc_grpc", "calls_per_s", "/s",
                 "gRPC C++ ↔ gRPC C++", None, False),
        goal_row(rounds, "calls/s, gRPC wire / native (wheelrpc ↔ wheelrpc)", "wheelrpc_wheelrpc", "native",
                 "calls_per_s", "/s", "native", None, False),
        goal_row(rounds, "server CPU per call, gRPC wire / native (wheelrpc ↔ wheelrpc)", "wheelrpc_wheelrpc",
                 "native", "server_cpu_ns_per_call", " ns", "native", None, True),
        goal_row(rounds, "client CPU per call, gRPC wire / native (wheelrpc ↔ wheelrpc)", "wheelrpc_wheelrpc",
                 "native", "client_cpu_ns_per_call", " ns", "native", None, True),
    ]
    print_table("wheelrpc on the gRPC wire vs goals", out)

    bad = [r for r in rows if r.get("errors")]
    if bad:
        print("\nRuns with failed calls (left out of the medians and ratios):")
        for r in bad:
            print(f"- round {r.get('round')} {r['pair']}: {r['errors']} errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
