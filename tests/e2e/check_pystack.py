#!/usr/bin/python3
"""Checks a trace of tests/e2e/pystack_job.py against the job's own record of its calls (its out
file: the line and function of each call site, found with inspect).

    check_pystack.py TRACE OUT --op NAME=OP ... [--sampled]

Each --op maps a trace event name to the op the job recorded (aten::add_Tensor=aten::add). Every
event of those names must carry args.python naming one of the job's call sites of that op,
exactly ("FILE:LINE QUALNAME"), and args.pystack must start with it and end at <module> (the main
thread: tid == pid) or Thread._bootstrap (the job's worker thread: another tid). The events per
call site must be the job's calls there (with --sampled: at most, and some).
"""
import argparse
import collections
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--op", action="append", default=[])
    ap.add_argument("--sampled", action="store_true")
    a = ap.parse_args()
    d = json.load(open(a.trace))
    job = json.load(open(a.out))
    ops = dict(o.split("=", 1) for o in a.op)
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
    for b in bad[:20]:
        print(b, file=sys.stderr)
    print("%d events checked, %d call sites, %d problems" % (sum(got.values()), len(want), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
