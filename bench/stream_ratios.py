#!/usr/bin/env python3
"""Compares wheelrpc's streams with gRPC C++'s bidi streams measured in the same run.

    python3 bench/stream_ratios.py bench/results/stream-2026-11-26.jsonl
    ... | python3 bench/stream_ratios.py            # JSON lines on stdin

Reads the JSON lines bench/compare_stream.sh saves: `rpc_bench client
--stream MODE` (system "wheelrpc") and bench/peers' `grpc_stream client
--mode MODE` (system "grpc_cpp"), workload "stream", plus rpc_bench's unary
echo at C = 1 (workload "echo"); non-JSON lines are ignored, and when a
result appears twice the last one wins. Prints one Markdown table: each of
the streams' goals (the constants below), wheelrpc's figure, the reference it
is compared with, the ratio and whether the goal is met; then, for context,
the ratio of every other configuration measured. Standard library only.
"""
import json
import sys

from ratio_common import num, print_table, read_rows

OURS = "wheelrpc"
GRPC = "grpc_cpp"

RATE_VS_GRPC_GOAL = 10.0   # messages/s at 64 B on 128 streams (echo and oneway): ours / grpc >= goal
P99_VS_UNARY_GOAL = 1.2    # stream echo p99 at 1 stream / unary echo p99 at C = 1 <= goal
IDLE_BYTES_GOAL = 1024     # RSS per idle open stream, each side: <= goal
GOAL_PAYLOAD, GOAL_STREAMS = 64, 128


def load(lines):
    """{("stream", system, mode, streams, payload): row} and {("unary", system, c, payload): row}."""
    rows = {}
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if not isinstance(r, dict) or "system" not in r:
            continue
        if r.get("workload") == "stream":
            rows[("stream", r["system"], r.get("mode"), r.get("streams"), r.get("payload_bytes"))] = r
        elif r.get("workload") == "echo":
            rows[("unary", r["system"], r.get("concurrency"), r.get("payload_bytes"))] = r
    return rows


def failed(r):
    return r.get("errors", 0) or r.get("check", "ok") != "ok"


def verdict(met, *rs):
    if any(r is None for r in rs):
        return "no data"
    if any(failed(r) for r in rs):
        return "errors"
    return "**yes**" if met else "NO"


def rate_row(rows, mode, streams, payload, goal):
    ours = rows.get(("stream", OURS, mode, streams, payload))
    ref = rows.get(("stream", GRPC, mode, streams, payload))
    a = ours and ours.get("messages_per_s")
    b = ref and ref.get("messages_per_s")
    x = a / b if a and b else None
    return (f"{mode} {payload} B, {streams} stream{'s' if streams != 1 else ''}: messages/s",
            num(a, "/s"), f"grpc {num(b, '/s')}",
            "-" if x is None else f"ours/grpc = {x:.2f}×",
            "(info)" if goal is None else f"≥ {goal:g}×",
            "-" if goal is None else verdict(x is not None and x >= goal, ours, ref))


def p99_row(rows):
    stream = rows.get(("stream", OURS, "echo", 1, GOAL_PAYLOAD))
    unary = rows.get(("unary", OURS, 1, GOAL_PAYLOAD))
    a = stream and stream.get("p99_us")
    b = unary and unary.get("p99_us")
    x = a / b if a and b else None
    return (f"echo {GOAL_PAYLOAD} B: stream p99 at 1 stream vs unary p99 at C=1", num(a, " µs"),
            f"unary {num(b, ' µs')}", "-" if x is None else f"stream/unary = {x:.2f}×",
            f"≤ {P99_VS_UNARY_GOAL:g}×",
            verdict(x is not None and x <= P99_VS_UNARY_GOAL, stream, unary))


def idle_rows(rows):
    out = []
    keys = sorted({k[3:] for k in rows if k[0] == "stream" and k[2] == "idle"})
    for streams, payload in keys:
        ours = rows.get(("stream", OURS, "idle", streams, payload))
        ref = rows.get(("stream", GRPC, "idle", streams, payload))
        for side in ("client", "server"):
            field = f"{side}_rss_bytes_per_stream"
            a = ours and ours.get(field)
            b = ref and ref.get(field)
            valid = a is not None and a >= 0
            out.append((f"idle, {streams} streams: {side} bytes per open stream", num(a, " B"),
                        f"grpc {num(b, ' B')}" + (f" (ours/grpc = {a / b:.2f}×)" if valid and b else ""),
                        f"ours/goal = {a / IDLE_BYTES_GOAL:.2f}×" if valid else "-", f"≤ {IDLE_BYTES_GOAL} B",
                        verdict(valid and a <= IDLE_BYTES_GOAL, ours)))
    return out


def main():
    rows = read_rows(load, __doc__)
    if rows is None:
        return 2
    out = [rate_row(rows, "echo", GOAL_STREAMS, GOAL_PAYLOAD, RATE_VS_GRPC_GOAL),
           rate_row(rows, "oneway", GOAL_STREAMS, GOAL_PAYLOAD, RATE_VS_GRPC_GOAL),
           p99_row(rows)]
    out += idle_rows(rows)
    # Every other configuration, for context.
    configs = sorted({k[2:] for k in rows if k[0] == "stream" and k[1] == OURS and k[2] != "idle"})
    for mode, streams, payload in configs:
        if (streams, payload) != (GOAL_STREAMS, GOAL_PAYLOAD):
            out.append(rate_row(rows, mode, streams, payload, None))
    for mode, streams, payload in configs:
        if mode != "echo":
            continue
        ours = rows.get(("stream", OURS, mode, streams, payload))
        ref = rows.get(("stream", GRPC, mode, streams, payload))
        a = ours and ours.get("p99_us")
        b = ref and ref.get("p99_us")
        out.append((f"echo {payload} B, {streams} stream{'s' if streams != 1 else ''}: p99", num(a, " µs"),
                    f"grpc {num(b, ' µs')}", f"grpc/ours = {b / a:.2f}×" if a and b else "-", "(info)", "-"))
    print_table("wheelrpc streams vs goals", out)

    bad = [r for r in rows.values() if failed(r)]
    if bad:
        print("\nRuns that failed (errors, or a self-check not ok):")
        for r in bad:
            what = r.get("mode") or f"C={r.get('concurrency')}"
            print(f"- {r['system']} {r['workload']} {what} streams={r.get('streams', '-')}: "
                  f"{r.get('errors', 0)} errors, check {r.get('check', '-')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
