"""What bench/ratios.py and bench/rpc_ratios.py share: reading the JSON lines,
formatting numbers and printing the goals table. Standard library only."""
import sys


def read_rows(load, doc):
    """Rows from the file named on the command line, or from stdin, parsed by
    `load`; None (after printing `doc`) on a usage error."""
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help")):
        print(doc.strip(), file=sys.stderr)
        return None
    if len(sys.argv) == 2:
        with open(sys.argv[1], encoding="utf-8") as f:
            return load(f)
    return load(sys.stdin)


def num(v, unit=""):
    if v is None:
        return "-"
    if isinstance(v, float):
        s = f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"
    else:
        s = f"{v:,}"
    return s + unit


def print_table(title, rows):
    """The goals table: (figure, wheelrpc, reference, ratio, goal, met) rows."""
    print(f"\n**{title}** (peers measured in the same run)\n")
    print("| figure | wheelrpc | reference | ratio | goal | met |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
