#!/usr/bin/env python3
"""The rooms of rpc/src and what each may include (docs/architecture.md).

    scripts/check_layers.py              # prints each broken rule; exit 1 if any
    scripts/check_layers.py --graph      # also prints the rooms and their includes
    scripts/check_layers.py --src DIR --doc FILE   # another tree and map (its tests)

Checks, over every `#include "..."` line under rpc/src:
  - a file includes only files of the rooms its room may use (ROOMS below);
  - no header the room is kept from (FORBIDDEN below: the stream engine and
    the engines never see the native frame);
  - no two files include each other, directly or in a circle (a header and its
    .cc count as one file), and no two rooms do;
  - no file has more than MAX_LINES lines;
  - every file is named (by its file name) in docs/architecture.md or in its
    room's README.md, so the map keeps up with the tree.
Standard library only; runs under any python3.
"""
import os
import re
import sys

# room: the rooms it may include besides its own. '' is rpc/src itself (the
# public classes' bodies and the wire factory): it may include anything.
ROOMS = {
    "base": [],
    "stream": ["base"],
    "interceptors": ["base"],
    "wire": ["stream", "base"],
    "wire/native": ["wire", "stream", "base"],
    "wire/grpc": ["wire", "stream", "base"],
    "client": ["wire", "stream", "interceptors", "base"],
    "server": ["wire", "stream", "interceptors", "base"],
    "": None,
}
# room: headers outside rpc/src it may not include (a wire's vocabulary: the
# native frame, HTTP/2).
FORBIDDEN = {
    "base": ["wheelrpc/transport/frame.h", "nghttp2/nghttp2.h"],
    "stream": ["wheelrpc/transport/frame.h", "nghttp2/nghttp2.h"],
    "interceptors": ["wheelrpc/transport/frame.h", "nghttp2/nghttp2.h"],
    "wire": ["nghttp2/nghttp2.h"],
    "wire/native": ["nghttp2/nghttp2.h"],
    "client": ["nghttp2/nghttp2.h"],
    "server": ["nghttp2/nghttp2.h"],
}
MAX_LINES = 600
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SRC = os.path.join(ROOT, "rpc", "src")
DOC = os.path.join(ROOT, "docs", "architecture.md")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.M)


def room_of(path):
    d = os.path.dirname(path)
    return d.replace(os.sep, "/")


def unit_of(path):
    return os.path.splitext(path)[0]


def main():
    args = sys.argv[1:]
    graph = "--graph" in args
    src = os.path.normpath(args[args.index("--src") + 1] if "--src" in args else SRC)
    doc = os.path.normpath(args[args.index("--doc") + 1] if "--doc" in args else DOC)
    maps = {}  # room: the text that names its files (the architecture page and the room's README)
    with open(doc, encoding="utf-8") as fh:
        doc_text = fh.read()
    files = []
    for dirpath, _, names in os.walk(src):
        for n in names:
            if n.endswith((".h", ".cc")):
                files.append(os.path.relpath(os.path.join(dirpath, n), src).replace(os.sep, "/"))
    files.sort()
    known = set(files)
    problems = []
    unit_edges = {}
    room_edges = {}
    for f in files:
        room = room_of(f)
        if room not in ROOMS:
            problems.append(f"{f}: in '{room}', which is not a room (scripts/check_layers.py ROOMS)")
            continue
        with open(os.path.join(src, f), encoding="utf-8") as fh:
            text = fh.read()
        lines = text.count("\n")
        if lines > MAX_LINES:
            problems.append(f"{f}: {lines} lines (at most {MAX_LINES})")
        if room not in maps:
            readme = os.path.join(src, room, "README.md")
            maps[room] = doc_text
            if os.path.exists(readme):
                with open(readme, encoding="utf-8") as fh:
                    maps[room] += fh.read()
        if not re.search(r"(?<![\w.])" + re.escape(os.path.basename(f)) + r"(?![\w])", maps[room]):
            problems.append(f"{f}: named neither in {os.path.basename(doc)} nor in {room or '.'}/README.md")
        for kind, inc in INCLUDE.findall(text):
            if kind == "<":
                if inc in FORBIDDEN.get(room, []):
                    problems.append(f"{f}: includes <{inc}>, which room '{room or '.'}' may not use")
                continue
            if inc not in known:
                problems.append(f"{f}: includes \"{inc}\", not a path under rpc/src (write it from rpc/src)")
                continue
            to = room_of(inc)
            allowed = ROOMS[room]
            if to != room and allowed is not None and to not in allowed:
                problems.append(f"{f}: includes {inc}: room '{room or '.'}' may not use room '{to or '.'}'")
            if unit_of(inc) != unit_of(f):
                unit_edges.setdefault(unit_of(f), set()).add(unit_of(inc))
            if to != room:
                room_edges.setdefault(room, set()).add(to)
    for kind, edges in (("files", unit_edges), ("rooms", room_edges)):
        for cycle in cycles(edges):
            shown = [c or "." for c in cycle]
            problems.append(f"{kind} include each other: {' -> '.join(shown + [shown[0]])}")
    if graph:
        for room in sorted(room_edges):
            print(f"{room or '.'} -> {', '.join(sorted(r or '.' for r in room_edges[room]))}")
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problem(s) in rpc/src", file=sys.stderr)
        return 1
    print(f"check_layers: {len(files)} files in {len(ROOMS)} rooms, every include allowed, no circles")
    return 0


def cycles(edges):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    nodes = set(edges) | {t for ts in edges.values() for t in ts}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    sys.exit(main())
