#!/usr/bin/python3
"""Checks a trace of tests/e2e/pystack_job.py against the job's own record of its calls (its out
file: the line and function of each call site, found with inspect).

    check_pystack.py TRACE OUT --op NAME=OP ... [--sampled] [--spans] [--whole-stack FILE]
                     [--ops N] [--own-pid]

Each --op maps a trace event name to the op the job recorded (aten::add_Tensor=aten::add). Every
event of those names must carry args.python naming one of the job's call sites of that op,
exactly ("FILE:LINE QUALNAME"), and args.pystack must start with it and end at <module> (the main
thread: tid == pid) or Thread._bootstrap (the job's worker thread: another tid). The events per
call site must be the job's calls there (with --sampled: at most, and some).

--spans: the python_function spans (--python) hold every event with a stack: on its thread, for
each frame of its pystack one span named as the PyTorch profiler names it ("FILE(LINE): QUALNAME")
around the event, the frames' spans nested by their "Python parent id"; no python_function span
partly overlaps another X event of its thread; spyreStats.pythonFunctionSpans counts them.

--whole-stack FILE: one stack checked whole, the nested function's call (Model.step.<locals>.inner,
Model.step, main, <module>), each frame a line of FILE (the job's file as it sees it); and every
event of the ops carried its stack, each named (spyreStats.pythonStacks, pythonStacksUnnamed).
--ops N: the events of the ops are N.
--own-pid: only the events of the job's process (OUT's "pid") are checked, some of them an op's:
one job among others the tracer followed (-f, -a).
"""
import argparse
import collections
import json
import sys


def profiler_name(frame):
    """'FILE:LINE QUALNAME' -> 'FILE(LINE): QUALNAME'"""
    loc, func = frame.split(" ", 1)
    f, line = loc.rsplit(":", 1)
    return "%s(%s): %s" % (f, line, func)


def check_spans(d):
    ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
    py = [e for e in ev if e.get("cat") == "python_function"]
    bad = []
    n = d["spyreStats"].get("pythonFunctionSpans")
    if n != len(py) or not py:
        bad.append("pythonFunctionSpans %s, %d python_function spans" % (n, len(py)))
    by_id = {e["args"]["Python id"]: e for e in py}
    eps = 0.0015  # both ends rounded to ns in the file
    inside = lambda a, b: b["ts"] - eps <= a["ts"] and \
        a["ts"] + a["dur"] <= b["ts"] + b["dur"] + eps
    for s in py:
        p = by_id.get(s["args"].get("Python parent id"))
        if "Python parent id" in s["args"] and (not p or not inside(s, p) or
                                                 p["tid"] != s["tid"]):
            bad.append("span %s at %s not inside its parent" % (s["name"], s["ts"]))
    spans = collections.defaultdict(list)
    for s in py:
        spans[(s["pid"], s["tid"], s["name"])].append(s)
    for e in ev:
        stack = e.get("args", {}).get("pystack")
        if not stack or e.get("args", {}).get("unwound"):
            continue
        for f in stack:
            if not any(inside(e, s) for s in spans[(e["pid"], e["tid"], profiler_name(f))]):
                bad.append("%s at %s: no span of %r around it" % (e["name"], e["ts"], f))
                break
    # a python_function span and another event of its thread nest or are apart
    for s in py:
        for e in ev:
            if e is s or e["tid"] != s["tid"] or e["pid"] != s["pid"]:
                continue
            a0, a1, b0, b1 = s["ts"], s["ts"] + s["dur"], e["ts"], e["ts"] + e["dur"]
            if (a0 + eps < b0 < a1 - eps and b1 > a1 + eps) or \
                    (b0 + eps < a0 < b1 - eps and a1 > b1 + eps):
                bad.append("%s [%s, %s] partly overlaps %s [%s, %s]" %
                           (s["name"], a0, a1, e["name"], b0, b1))
                break
    print("python_function spans: %d" % len(py))
    return bad


def check_whole(d, path, names):
    bad = []
    s = next((e["args"]["pystack"] for e in d["traceEvents"]
              if e.get("args", {}).get("python", "").endswith(" Model.step.<locals>.inner")), [])
    print(s)
    if [f.split(" ", 1)[1] for f in s] != ["Model.step.<locals>.inner", "Model.step", "main",
                                           "<module>"] or \
            not all(f.startswith(path + ":") for f in s):
        bad.append("the nested function's stack: %r" % s)
    st = d["spyreStats"]
    n = sum(e.get("ph") == "X" and e.get("name") in names for e in d["traceEvents"])
    if st["pythonStacks"] != n or st["pythonStacksUnnamed"] != 0:
        bad.append("%d events, pythonStacks %s, pythonStacksUnnamed %s" %
                   (n, st["pythonStacks"], st["pythonStacksUnnamed"]))
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--op", action="append", default=[])
    ap.add_argument("--sampled", action="store_true")
    ap.add_argument("--spans", action="store_true")
    ap.add_argument("--whole-stack")
    ap.add_argument("--ops", type=int)
    ap.add_argument("--own-pid", action="store_true")
    a = ap.parse_args()
    d = json.load(open(a.trace))
    job = json.load(open(a.out))
    ops = dict(o.split("=", 1) for o in a.op)
    if a.own_pid:
        d["traceEvents"] = [e for e in d["traceEvents"] if e.get("pid") == job["pid"]]
        if not any(e.get("name") in ops for e in d["traceEvents"]):
            sys.exit("check_pystack: no event of the ops from the job's pid %s" % job["pid"])
    want = collections.Counter()
    for line, c in job["calls"].items():
        if c["op"] not in ops.values():
            continue
        want[(c["op"], "%s:%s %s" % (job["file"], line, c["func"]))] += c["count"]
    got = collections.Counter()
    bad = []
    for e in d["traceEvents"]:
        if e.get("ph") != "X" or e.get("name") not in ops:
            continue
        args = e.get("args", {})
        py, stack = args.get("python"), args.get("pystack")
        op = ops[e["name"]]
        if (op, py) not in want:
            bad.append("%s at ts %s: python %r is no call site of %s" % (e["name"], e["ts"], py, op))
        elif (not stack or stack[0] != py or
              not stack[-1].endswith(" <module>" if e["tid"] == e["pid"] else
                                     " Thread._bootstrap")):
            bad.append("%s at ts %s tid %s: pystack %r" % (e["name"], e["ts"], e["tid"], stack))
        got[(op, py)] += 1
    for k, n in want.items():
        if (not a.sampled and got[k] != n) or got[k] > n:
            bad.append("%s from %s: %d events, the job made %d calls" % (k[0], k[1], got[k], n))
    if a.sampled and not sum(got.values()):
        bad.append("no event sampled")
    if a.spans:
        bad += check_spans(d)
    if a.whole_stack:
        bad += check_whole(d, a.whole_stack, set(ops))
    n = sum(e.get("ph") == "X" and e.get("name") in ops for e in d["traceEvents"])
    if a.ops is not None and n != a.ops:
        bad.append("%d events of the ops, want %d" % (n, a.ops))
    for b in bad[:20]:
        print(b, file=sys.stderr)
    print("%d events checked, %d call sites, %d problems" % (sum(got.values()), len(want), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
