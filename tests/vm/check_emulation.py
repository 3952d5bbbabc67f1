#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""check_emulation.py TRACE --want bpf|kernel-single-step [--entries] [--reason-has TEXT]

Who performed the probed instructions of a guest's trace (docs/user-guide.md, "Returns done by
BPF"), read from the tracer's own metadata: spyreStats.returnsDoneBy is WANT; --entries: the
entry program did some probes' mov/lea too (entriesDoneByBpf > 0); --reason-has: the reason
given contains TEXT. Exit 0 when all hold, else a message naming what did not."""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--want", required=True, choices=("bpf", "kernel-single-step"))
    ap.add_argument("--entries", action="store_true")
    ap.add_argument("--reason-has", default="")
    a = ap.parse_args()
    s = json.load(open(a.trace))["spyreStats"]
    by, why = s.get("returnsDoneBy"), s.get("returnsDoneByReason", "")
    bad = []
    if by != a.want:
        bad.append("returns done by %s, not %s (%s)" % (by, a.want, why))
    if a.reason_has and a.reason_has not in why:
        bad.append("reason %r lacks %r" % (why, a.reason_has))
    n = s.get("entriesDoneByBpf", 0)
    if a.entries and not n > 0:
        bad.append("no entry done by BPF (entriesDoneByBpf %s)" % n)
    if not a.entries and a.want != "bpf" and n:
        bad.append("%d entries done by BPF where returns were not" % n)
    if bad:
        sys.exit("%s: %s" % (a.trace, "; ".join(bad)))


if __name__ == "__main__":
    main()
