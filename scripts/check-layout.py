#!/usr/bin/env python3
"""The source layout's rules (issue 50 item 6), checked by `make lint`: no C source or header
under src/ over 700 lines, and no include circle of more than two files among src/'s headers
and sources (a circle means two modules that cannot be read or tested apart)."""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LIMIT = 700
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main():
    files = {}
    for d, _, names in os.walk(os.path.join(ROOT, "src")):
        for n in names:
            if n.endswith((".c", ".h", ".cc")):
                files[os.path.relpath(os.path.join(d, n), ROOT)] = os.path.join(d, n)
    bad = []
    by_base = {}
    for rel in files:
        by_base.setdefault(os.path.basename(rel), []).append(rel)
    graph = {}
    for rel, path in files.items():
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.count("\n")
        if lines > LIMIT:
            bad.append(f"{rel}: {lines} lines (at most {LIMIT}: split it by what it owns)")
        deps = set()
        for inc in INC.findall(text):
            near = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
            if near in files:
                deps.add(near)
            else:  # found through an include directory: the one header of that name
                deps.update(by_base.get(os.path.basename(inc), []))
        graph[rel] = deps - {rel}
    # a circle: a strongly connected component of more than two files (Tarjan, iterative)
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 2:
                    comps.append(sorted(comp))
    for c in comps:
        bad.append("include circle of %d files: %s" % (len(c), " ".join(c)))
    for b in bad:
        print("check-layout: " + b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
