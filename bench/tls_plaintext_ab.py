#!/usr/bin/env python3
"""Medians of a plaintext before/after A/B file (bench/ab_rpc.sh lines with
"label", split into segments by {"meta": "note"} lines; within a segment whose
note says "order swapped", label B is the base). Prints, per segment group and
concurrency: rounds, calls/s base/branch, client and server CPU ns per call.

    bench/tls_plaintext_ab.py bench/results/tls-plaintext-ab-2026-11-23.jsonl
"""
import json
import statistics
import sys


def main(path):
    rows, swapped, segment = [], False, 0
    for line in open(path):
        d = json.loads(line)
        if d.get("meta") == "note":
            segment += 1
            swapped = "swapped" in d.get("text", "")
            continue
        if "workload" not in d:
            continue
        base = (d["label"] == "B") if swapped else (d["label"] == "A")
        rows.append((segment, "base" if base else "branch", d))
    for name, keep in (("first segment", lambda s: s == 0), ("later segments", lambda s: s >= 1)):
        for c in sorted({d["concurrency"] for _, _, d in rows}):
            sel = [(w, d) for s, w, d in rows if d["concurrency"] == c and keep(s)]
            b = [d for w, d in sel if w == "base"]
            n = [d for w, d in sel if w == "branch"]
            if not b or not n:
                continue
            med = lambda xs, k: statistics.median(x[k] for x in xs)
            print(f"{name}: C={c} rounds={len(b)} calls/s {med(b, 'calls_per_s'):.0f} / {med(n, 'calls_per_s'):.0f}"
                  f" client ns/call {med(b, 'client_cpu_ns_per_call'):.0f} / {med(n, 'client_cpu_ns_per_call'):.0f}"
                  f" server ns/call {med(b, 'server_cpu_ns_per_call'):.0f} / {med(n, 'server_cpu_ns_per_call'):.0f}")


if __name__ == "__main__":
    main(sys.argv[1])
