#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""make check-layers: the folders of user/ include each other only downward
(docs/architecture.md, "The dependency rule").

    cmd      the command line, the sessions and modes           (top)
    report   summary, metadata, Prometheus, `list`'s printout
    attach   BPF objects loaded and attached; the ring drained into stream
    stream   ring records decoded into events, devices, memory, statistics
    resolve  probe tables, targets: what to probe and where
    output   trace writer, JSON text, files, rotation
    common   logging, parsing, exit codes, utilities               (bottom)
    offline  beside: check, recover, merge read traces back; may use output and common

A file may include headers of its own folder and of folders below its own. Every include of a
header of user/ names its folder ("stream/consumer.h"). No two modules (a .c and its .h) may
depend on each other, directly or through others. Exit status 1, each problem on a line.

    check-layers.py [ROOT]
"""
import os
import re
import sys

ORDER = ["common", "output", "resolve", "stream", "attach", "report", "cmd"]
RANK = {d: i for i, d in enumerate(ORDER)}
# offline sits beside the path: what it may reach, and who may reach it
BESIDE = {"offline": {"common", "output"}}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def allowed(src, dst):
    if src == dst:
        return True
    if src in BESIDE:
        return dst in BESIDE[src]
    if dst in BESIDE:
        return src == "cmd"
    return RANK[dst] < RANK[src]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    user = os.path.join(root, "user")
    folders = sorted(d for d in os.listdir(user) if os.path.isdir(os.path.join(user, d)))
    problems = []
    for d in folders:
        if d not in RANK and d not in BESIDE:
            problems.append(f"user/{d}/: a folder the layer rule does not place "
                            "(tools/check-layers.py, docs/architecture.md)")
    headers = {}
    for d in folders:
        for f in os.listdir(os.path.join(user, d)):
            if f.endswith(".h"):
                headers.setdefault(f, []).append(d)
    deps = {}	# module "dir/name" -> modules it includes
    for d in folders:
        if d not in RANK and d not in BESIDE:
            continue
        for f in sorted(os.listdir(os.path.join(user, d))):
            if not f.endswith((".c", ".h")):
                continue
            mod = f"{d}/{f[:-2]}"
            path = os.path.join(user, d, f)
            with open(path, encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    inc = m.group(1)
                    where = f"user/{d}/{f}:{n}"
                    if "/" not in inc:
                        if inc in headers:
                            problems.append(f"{where}: \"{inc}\" without its folder: "
                                            f"\"{headers[inc][0]}/{inc}\"")
                        continue	# bpf/ and generated headers (skeletons) are not layers
                    to, name = inc.split("/", 1)
                    if to not in RANK and to not in BESIDE:
                        continue
                    if not os.path.exists(os.path.join(user, to, name)):
                        problems.append(f"{where}: \"{inc}\" does not exist")
                        continue
                    if not allowed(d, to):
                        problems.append(f"{where}: includes {inc}: {d}/ may not reach "
                                        f"{'up ' if to in RANK and d in RANK else ''}"
                                        f"into {to}/")
                    other = f"{to}/{name[:-2]}"
                    if other != mod:
                        deps.setdefault(mod, set()).add(other)
    # cycles between modules (Tarjan's strongly connected components)
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(deps.get(v, ())):
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
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(deps):
        if v not in index:
            visit(v)
    for c in comps:
        problems.append("modules that depend on each other: " + " <-> ".join(c))
    for p in problems:
        print("check-layers:", p)
    if not problems:
        print(f"check-layers: {sum(len(v) for v in deps.values())} includes between modules "
              f"of {len(folders)} folders, all downward, no cycles")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
