#!/usr/bin/python3
"""Draws the benchmark results as PNG charts for docs/benchmarks.md.

    bench/plot.py [--out DIR] [FILES...]

FILES are JSON-lines result files (default: bench/results/*.jsonl); DIR is
where the charts go (default: docs/img). It writes

  rpc-calls-per-s.png  echo calls/s by concurrency, one line per system
  rpc-p99.png          echo p99 latency (us) by concurrency, the same systems
  timer-lateness.png   the timers' lateness quantiles (workload "accuracy"),
                       grouped bars on a log axis

The RPC charts come from the newest file (its "meta" line's date, else the
date in its name) with unlabelled echo results of at least two systems, the
timer chart from the newest file with accuracy results; each is titled with
its source file and date. A chart whose data is absent is skipped with a
message on stderr. Exit status: 0, 1 if no chart could be made, 2 on a bad
argument. Needs Debian's python3-matplotlib (scripts/install_deps.sh).
"""
import argparse
import glob
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

HERE = os.path.dirname(os.path.abspath(__file__))
RPC_SYSTEMS = ["wheelrpc", "grpc_cpp", "boost_asio_tcp_echo", "brpc"]
TIMER_SYSTEMS = ["wheelrpc", "netty_hashedwheeltimer", "boost_asio_steady_timer"]
QUANTILES = [("p50", "p50_late_ms"), ("p99", "p99_late_ms"),
             ("p99.9", "p999_late_ms"), ("max", "max_late_ms")]


class Results:
    """One file: its rows (result objects) and its date."""

    def __init__(self, path):
        self.path = path
        self.rows = []
        self.date = None
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue  # not a result line
                if not isinstance(r, dict):
                    continue
                if "meta" in r:
                    self.date = self.date or r.get("date")
                else:
                    self.rows.append(r)
        if self.date is None:
            m = re.search(r"\d{4}-\d{2}-\d{2}", os.path.basename(path))
            self.date = m.group(0) if m else ""

    def title(self, what):
        return f"{what}\n{os.path.basename(self.path)}, {self.date}"

    def echo(self):
        """{system: {concurrency: row}} of the unlabelled echo rows (the last
        of two rows for the same point wins); compare_grpc.sh's rows, each a
        client -> server pairing ("pair"), are not one system's figures."""
        out = {}
        for r in self.rows:
            if (r.get("workload") == "echo" and "label" not in r and "pair" not in r and "system" in r
                    and isinstance(r.get("concurrency"), int)):
                out.setdefault(r["system"], {})[r["concurrency"]] = r
        return out

    def accuracy(self):
        """{system: row} of the timer accuracy rows."""
        return {r["system"]: r for r in self.rows
                if r.get("workload") == "accuracy" and "system" in r
                and any(k in r for _, k in QUANTILES)}


def ordered(systems, known):
    return [s for s in known if s in systems] + sorted(s for s in systems if s not in known)


def save(fig, out_dir, name):
    path = os.path.normpath(os.path.join(out_dir, name))
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    print(path)


def plot_rpc(res, out_dir, field, name, ylabel, what):
    echo = res.echo()
    fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    concurrencies = set()
    for system in ordered(echo, RPC_SYSTEMS):
        points = sorted((c, r[field]) for c, r in echo[system].items() if field in r)
        if not points:
            continue
        concurrencies.update(c for c, _ in points)
        ax.plot([c for c, _ in points], [v for _, v in points], marker="o", label=system)
    if not concurrencies:
        plt.close(fig)
        print(f"plot.py: {name}: no echo {field} in {res.path}, skipped", file=sys.stderr)
        return False
    ax.set_xscale("log")
    ax.set_xticks(sorted(concurrencies), [str(c) for c in sorted(concurrencies)])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel("concurrency (calls in flight)")
    ax.set_ylabel(ylabel)
    payloads = {r.get("payload_bytes") for rows in echo.values() for r in rows.values()}
    if len(payloads) == 1 and None not in payloads:
        what += f" ({payloads.pop()}-byte payload)"
    ax.set_title(res.title(what), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    save(fig, out_dir, name)
    return True


def plot_timer(res, out_dir, name="timer-lateness.png"):
    acc = res.accuracy()
    systems = ordered(acc, TIMER_SYSTEMS)
    fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    width = 0.8 / len(systems)
    for i, system in enumerate(systems):
        r = acc[system]
        label = system + (f" ({r['tick_ms']} ms tick)" if "tick_ms" in r else "")
        xs = [q + (i - (len(systems) - 1) / 2) * width for q in range(len(QUANTILES))]
        ax.bar(xs, [r.get(k, 0) for _, k in QUANTILES], width, label=label)
    ax.set_xticks(range(len(QUANTILES)), [q for q, _ in QUANTILES])
    ax.set_yscale("log")
    ax.set_xlabel("quantile of lateness (when it ran − when it was due)")
    ax.set_ylabel("lateness (ms, log)")
    n = max(r.get("timeouts", 0) for r in acc.values())
    what = f"Timer lateness, {n:,} timeouts" if n else "Timer lateness"
    ax.set_title(res.title(what), fontsize=10)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend()
    save(fig, out_dir, name)
    return True


def newest(results, has):
    found = [r for r in results if has(r)]
    return max(found, key=lambda r: (r.date, r.path)) if found else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "docs", "img"),
                    help="directory for the PNGs (default: docs/img)")
    ap.add_argument("files", nargs="*", help="result files (default: bench/results/*.jsonl)")
    args = ap.parse_args()
    files = args.files or sorted(glob.glob(os.path.join(HERE, "results", "*.jsonl")))
    for f in files:
        if not os.path.isfile(f):
            ap.error(f"no such file: {f}")  # exits 2
    if not files:
        ap.error("no result files")
    os.makedirs(args.out, exist_ok=True)
    results = [Results(f) for f in files]

    made = 0
    rpc = newest(results, lambda r: len(r.echo()) >= 2 or (len(files) == 1 and r.echo()))
    if rpc is None:
        print("plot.py: no echo results of two systems, RPC charts skipped", file=sys.stderr)
    else:
        made += plot_rpc(rpc, args.out, "calls_per_s", "rpc-calls-per-s.png", "calls/s (log)",
                         "RPC echo: calls/s by concurrency")
        made += plot_rpc(rpc, args.out, "p99_us", "rpc-p99.png", "p99 latency (µs, log)",
                         "RPC echo: p99 latency by concurrency")
    timer = newest(results, lambda r: bool(r.accuracy()))
    if timer is None:
        print("plot.py: no timer accuracy results, timer-lateness.png skipped", file=sys.stderr)
    else:
        made += plot_timer(timer, args.out)
    return 0 if made else 1


if __name__ == "__main__":
    sys.exit(main())
