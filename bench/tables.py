#!/usr/bin/env python3
"""Prints benchmark JSON lines as Markdown tables, one table per workload,
rows in the order they came: wheelrpc's benches and the peers of bench/peers
print the same fields, so their results land side by side.

    python3 bench/tables.py bench/results/rpc-2026-11-23c.jsonl
    ... | python3 bench/tables.py            # JSON lines on stdin

Lines that are not JSON objects with a "workload" (the machine line the
compare scripts write first, progress text) are skipped. A field a row lacks
prints as "-". Standard library only.
"""
import json
import sys

# The columns of each workload's table; any other workload gets every field
# of its first row.
_CHURN = ["system", "pending", "iterations", "tick_ms", "ns_per_pair", "pairs_per_s",
          "cpu_ns_per_pair", "bytes_per_pending", "heap_bytes_per_pending",
          "cancelled", "fired", "check"]
_ECHO = ["system", "concurrency", "calls_per_s", "p50_us", "p99_us", "p999_us", "max_us",
         "errors", "client_cpu_s", "server_cpu_s", "server_threads"]
COLUMNS = {
    "churn": _CHURN,
    "churn_mt": ["system", "threads"] + [c for c in _CHURN[1:] if c != "heap_bytes_per_pending"],
    "accuracy": ["system", "tick_ms", "timeouts", "fired", "p50_late_ms", "p99_late_ms",
                 "p999_late_ms", "max_late_ms", "cpu_s", "check"],
    "idle": ["system", "tick_ms", "seconds", "cpu_s", "vol_ctxsw", "timer_thread_cpu_s",
             "timer_thread_vol_ctxsw", "check"],
    "echo": _ECHO,
    "echo_no_deadline": _ECHO + ["deadline_ms"],
    "stream": ["system", "mode", "streams", "payload_bytes", "messages_per_s", "p50_us", "p99_us", "errors",
               "client_cpu_s", "server_cpu_s", "client_rss_bytes_per_stream", "server_rss_bytes_per_stream",
               "check"],
}


def cell(v):
    """A value as a table cell: thousands separators, 3 significant digits
    below 1000, "-" when absent."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"
    return str(v).replace("|", "\\|")


def tables(lines):
    """{workload: [row, ...]} of the result lines, workloads in first-seen order."""
    by_workload = {}
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and "workload" in row:
            by_workload.setdefault(row["workload"], []).append(row)
    return by_workload


def main():
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help")):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if len(sys.argv) == 2:
        with open(sys.argv[1], encoding="utf-8") as f:
            by_workload = tables(f)
    else:
        by_workload = tables(sys.stdin)
    for workload, rows in by_workload.items():
        columns = COLUMNS.get(workload, list(rows[0]))
        print(f"\n**{workload}**\n")
        print("| " + " | ".join(columns) + " |")
        print("|" + "---|" * len(columns))
        for row in rows:
            print("| " + " | ".join(cell(row.get(c)) for c in columns) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
