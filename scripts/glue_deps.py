#!/usr/bin/env python3
"""Which glue file uses which, from the built objects, and the cycles.

The glue (src/pg_*.c) is meant to call one way: entry points use shared
pieces, never the reverse (docs/design.md, "Layers").  This reads `nm` of
the objects PGXS built (src/pg_*.o): a file uses another when one of its
undefined global symbols (a function or a variable) is defined there.
src/hbird.c is left out: it is the module's entry (it calls every
component's init) and the error mapping every file calls, both ends at
once by design.

    python3 scripts/glue_deps.py            # edges, then the cycles
    python3 scripts/glue_deps.py --tap      # one TAP line: ok / not ok
    python3 scripts/glue_deps.py --symbols  # each edge with its symbols

Exit status 1 when a cycle is found (or an object is missing), else 0.
"""
import glob
import os
import subprocess
import sys


class NotBuilt(Exception):
    pass


def symbols(obj):
    """(defined globals, undefined) of one object file."""
    out = subprocess.run(["nm", "-g", obj], check=True,
                         capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] not in ("U", "w", "v"):
            defined.add(parts[2])
    return defined, undefined


def graph(src_dir):
    """{file: {used file: sorted symbols}} over src/pg_*.o."""
    objs = sorted(glob.glob(os.path.join(src_dir, "pg_*.o")))
    srcs = sorted(glob.glob(os.path.join(src_dir, "pg_*.c")))
    missing = [s for s in srcs if not os.path.exists(s[:-2] + ".o")]
    if missing:
        raise NotBuilt("not built (run make first): " + ", ".join(missing))
    owner, uses = {}, {}
    for o in objs:
        name = os.path.basename(o)[:-2] + ".c"
        defined, undefined = symbols(o)
        for s in defined:
            owner[s] = name
        uses[name] = undefined
    edges = {}
    for name, undefined in uses.items():
        edges[name] = {}
        for s in undefined:
            to = owner.get(s)
            if to and to != name:
                edges[name].setdefault(to, []).append(s)
        for to in edges[name]:
            edges[name][to].sort()
    return edges


def cycles(edges):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
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

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    args = sys.argv[1:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        edges = graph(os.path.join(root, "src"))
    except (NotBuilt, OSError, subprocess.CalledProcessError) as e:
        if "--tap" in args:
            print("not ok - glue has no cycles: %s" % e)
        else:
            print(e, file=sys.stderr)
        return 1
    found = cycles(edges)
    if "--tap" in args:
        if found:
            print("not ok - glue has no cycles: " +
                  "; ".join(" <-> ".join(c) for c in found))
        else:
            print("ok - glue has no cycles")
        return 1 if found else 0
    for a in sorted(edges):
        for b in sorted(edges[a]):
            line = "%s -> %s" % (a, b)
            if "--symbols" in args:
                line += ": " + " ".join(edges[a][b])
            print(line)
    for c in found:
        inner = [(a, b) for a in c for b in sorted(edges[a]) if b in c]
        print("cycle: " + ", ".join(
            "%s -> %s (%s)" % (a, b, " ".join(edges[a][b])) for a, b in inner))
    if not found:
        print("no cycles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
