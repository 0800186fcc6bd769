#!/usr/bin/env python3
"""The comparison of bench/callgrind_guard.sh: instructions per unit
(callgrind's Ir) measured now against the figures checked in
(bench/callgrind_baseline.json).

  callgrind_guard.py compare BASELINE MEASURED    # exit 1 if a figure grew too much
  callgrind_guard.py update BASELINE MEASURED BUILD COMMIT
  callgrind_guard.py --self-test                  # the comparison on made-up figures

MEASURED is a JSON object {figure: Ir per unit, ...}. BASELINE is
{"build": ..., "commit": ..., "date": ..., "tolerance_pct": 3,
 "figures": {figure: {"ir_per_unit": N, "unit": ..., "what": ...,
                      "tolerance_pct": optional, overrides the default}}}.
A figure fails when it is more than its tolerance above the baseline; a
figure that shrank is reported (update the baseline to keep the gain), never
a failure. Every figure is printed either way.
"""
import datetime
import json
import sys

DEFAULT_TOLERANCE_PCT = 3.0

# What each figure is, written into the baseline by `update`.
FIGURES = {
    "call_engine": ("call", "the client's call engine: ClientCore::on_reply inclusive, with the completion "
                    "and the next call's start_call in rpc_bench's closed loop (untyped echo, C = 16, 20000 calls)"),
    "typed_call": ("call", "the typed client, whole per-call work: the generated stub, protobuf, the call "
                           "engine, the transport and the bench's loop, the reactor's waiting left out "
                           "(--typed, C = 16, 20000 calls)"),
    "stream_message": ("message", "a stream message in the client, native wire "
                                  "(bench/callgrind_per_message.sh native 16 2)"),
    "heartbeat": ("heartbeat", "an idle connection's heartbeat in the client: everything the process runs "
                               "in conn_scale's window / heartbeats sent in it (200 connections, 200 ms)"),
}


def compare(baseline, measured, out=sys.stdout):
    """Prints one line per figure; returns the failures' lines."""
    default = float(baseline.get("tolerance_pct", DEFAULT_TOLERANCE_PCT))
    figures = baseline.get("figures", {})
    failures = []
    for name in sorted(set(figures) | set(measured)):
        base = figures.get(name, {}).get("ir_per_unit")
        new = measured.get(name)
        unit = figures.get(name, {}).get("unit") or FIGURES.get(name, ("unit",))[0]
        if new is None:
            line = f"{name}: in the baseline ({base:.1f} Ir/{unit}) but not measured"
            failures.append(line)
        elif base is None:
            line = f"{name}: {new:.1f} Ir/{unit}, no baseline (run with --update to record it)"
        else:
            tol = float(figures[name].get("tolerance_pct", default))
            pct = (new - base) / base * 100
            line = f"{name}: {new:.1f} Ir/{unit}, baseline {base:.1f}, {pct:+.2f} % (limit +{tol:g} %)"
            if pct > tol:
                line = f"FAIL {line}"
                failures.append(line)
            elif pct < -tol:
                line += "  (faster: update the baseline to keep the gain)"
        print(f"callgrind_guard: {line}", file=out)
    return failures


def updated(baseline, measured, build, commit, today=None):
    """The baseline with the measured figures in (tolerances kept)."""
    figures = {}
    for name, value in measured.items():
        old = baseline.get("figures", {}).get(name, {})
        unit, what = FIGURES.get(name, (old.get("unit", "unit"), old.get("what", "")))
        entry = {"ir_per_unit": round(float(value), 1), "unit": unit, "what": what}
        if "tolerance_pct" in old:
            entry["tolerance_pct"] = old["tolerance_pct"]
        if "note" in old:
            entry["note"] = old["note"]
        figures[name] = entry
    return {
        "build": build,
        "commit": commit,
        "date": today or datetime.date.today().isoformat(),
        "tolerance_pct": baseline.get("tolerance_pct", DEFAULT_TOLERANCE_PCT),
        "figures": figures,
    }


def self_test():
    import io
    base = {"tolerance_pct": 3, "figures": {
        "a": {"ir_per_unit": 1000.0, "unit": "call"},
        "b": {"ir_per_unit": 2000.0, "unit": "call"},
        "c": {"ir_per_unit": 100.0, "unit": "heartbeat", "tolerance_pct": 10}}}
    sink = io.StringIO()
    assert compare(base, {"a": 1029.9, "b": 1500, "c": 109}, sink) == [], sink.getvalue()
    assert "faster" in sink.getvalue()
    fails = compare(base, {"a": 1031, "b": 2000, "c": 111}, io.StringIO())
    assert len(fails) == 2 and "a: 1031.0 Ir/call, baseline 1000.0, +3.10 %" in fails[0], fails
    assert "c: 111.0" in fails[1], fails
    fails = compare(base, {"a": 1000, "b": 2000}, io.StringIO())  # c missing
    assert len(fails) == 1 and "not measured" in fails[0], fails
    new = updated(base, {"a": 900.04, "b": 2100, "c": 120}, "clang -O1", "abc", "2026-01-01")
    assert new["figures"]["a"]["ir_per_unit"] == 900.0 and new["figures"]["c"]["tolerance_pct"] == 10
    assert new["commit"] == "abc" and new["date"] == "2026-01-01" and new["tolerance_pct"] == 3
    assert compare(new, {"a": 900, "b": 2100, "c": 120}, io.StringIO()) == []
    print("callgrind_guard.py: self-test passed")


def main(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(argv) == 4 and argv[1] == "compare":
        with open(argv[2]) as f:
            baseline = json.load(f)
        with open(argv[3]) as f:
            measured = json.load(f)
        failures = compare(baseline, measured)
        if failures:
            print(f"callgrind_guard: {len(failures)} figure(s) grew more than allowed:", file=sys.stderr)
            for line in failures:
                print(f"  {line}", file=sys.stderr)
            print("callgrind_guard: if the cost is accepted, record it: bench/callgrind_guard.sh --update",
                  file=sys.stderr)
            return 1
        return 0
    if len(argv) == 6 and argv[1] == "update":
        try:
            with open(argv[2]) as f:
                baseline = json.load(f)
        except FileNotFoundError:
            baseline = {}
        with open(argv[3]) as f:
            measured = json.load(f)
        with open(argv[2], "w") as f:
            json.dump(updated(baseline, measured, argv[4], argv[5]), f, indent=2)
            f.write("\n")
        print(f"callgrind_guard: {argv[2]} updated")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
