#!/usr/bin/env python3
"""Compare a trace with what a job that leaves calls without returning says it did (the counts
files of tests/progs/throwjob.cpp and tests/e2e/torch_job.py):

    {"calls": {SYMBOL: entries}, "unwound": {SYMBOL: entries left by an exception, a forced
     unwind or longjmp}}

For each probe whose symbol (or display name) is in "calls": its spans in the trace and its
metadata events are calls - unwound (every call that returned is a span, nested correctly:
verify_trace.py checks the nesting), and its metadata "unwound" is exactly the job's unwound:
calls nested too deep to be recorded (dropsTooDeep, past 16) are still tracked (to 64) and
counted when an exception leaves them; past 64 they are counted in spyreStats.unwoundUntracked,
which --deep adds to the one probe nested that deep. spyreStats "unwound" is the sum. Exit 1 with a list of problems.

    check_unwound.py TRACE COUNTS [--return-probe KIND] [--signal N] [--exit-code N]
                     [--deep NAME] [--only SYMBOL ...]
"""
import argparse
import gzip
import json
import sys
from collections import Counter


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("counts")
    ap.add_argument("--return-probe", help="each compared probe's returnProbe must be this")
    ap.add_argument("--signal", type=int, default=0, help="expected spyreStats.targetSignal")
    ap.add_argument("--exit-code", type=int, help="expected spyreStats.targetExitCode")
    ap.add_argument("--deep", help="the one probe nested past the 64 tracked calls: its "
                    "unwound plus spyreStats.unwoundUntracked is the job's count")
    ap.add_argument("--only", action="append", default=[],
                    help="compare only these symbols (repeatable); default: all in the counts")
    a = ap.parse_args()
    d = load(a.trace)
    c = load(a.counts)
    problems = []
    # calls nested deeper than the tracer tracks (64) are counted without their probe
    untracked = d.get("spyreStats", {}).get("unwoundUntracked", 0)
    if untracked and not a.deep:
        problems.append(f"{untracked} unwound calls too deep to track, and no --deep probe")

    spans = Counter(e["name"] for e in d["traceEvents"] if e.get("ph") == "X")
    probes = d.get("spyreProbes", [])
    want = set(a.only) or set(c["calls"])
    seen = set()
    for p in probes:
        sym = p["symbol"] if p["symbol"] in want else p["name"] if p["name"] in want else None
        if sym is None:
            continue
        seen.add(sym)
        calls, unwound = c["calls"][sym], c.get("unwound", {}).get(sym, 0)
        name = p["name"]
        if spans[name] != calls - unwound:
            problems.append(f"{name}: {calls} calls of which {unwound} unwound, so "
                            f"{calls - unwound} returned, but the trace has {spans[name]} spans")
        if p["events"] != spans[name]:
            problems.append(f"{name}: metadata says {p['events']} events, trace has "
                            f"{spans[name]} spans")
        if p["hits"] != calls:
            problems.append(f"{name}: {calls} calls, {p['hits']} probe hits")
        if "unwound" not in p:
            problems.append(f"{name}: no \"unwound\" in spyreProbes")
        elif (p["unwound"] + (untracked if name == a.deep else 0) != unwound and
              (name == a.deep or p["unwound"] + p.get("dropsNoStack", 0) != unwound)):
            # calls that got no thread stack, likely because task storage was per-CPU busy
            # (another program of ours holding it was preempted; 3 of 30 cancelled threads'
            # first calls once, ppc64le guest), are neither tracked nor unwound, and counted
            problems.append(f"{name}: job left {unwound} calls unreturned, metadata says "
                            f"unwound {p['unwound']} (too deep to record: {p['dropsTooDeep']})")
        if p["dropsTooDeep"] > unwound:
            problems.append(f"{name}: {p['dropsTooDeep']} calls too deep, more than the "
                            f"{unwound} unwound ones (returning calls never nest past 16)")
        if p["dropsRingFull"]:
            problems.append(f"{name}: {p['dropsRingFull']} dropped with the ring full")
        if a.return_probe and p.get("returnProbe") != a.return_probe:
            problems.append(f"{name}: returnProbe {p.get('returnProbe')!r}, "
                            f"expected {a.return_probe!r}")
    for sym in sorted(want - seen):
        problems.append(f"{sym}: no probe in spyreProbes")

    st = d.get("spyreStats", {})
    total = sum(p.get("unwound", 0) for p in probes) + untracked
    if st.get("unwound") != total:
        problems.append(f"spyreStats.unwound is {st.get('unwound')!r}, the probes sum to {total}")
    if st.get("targetSignal") != a.signal:
        problems.append(f"spyreStats.targetSignal is {st.get('targetSignal')!r}, "
                        f"expected {a.signal}")
    if a.exit_code is not None and st.get("targetExitCode") != a.exit_code:
        problems.append(f"spyreStats.targetExitCode is {st.get('targetExitCode')!r}, "
                        f"expected {a.exit_code}")

    for pr in problems:
        print("check_unwound:", pr)
    print(f"check_unwound: {a.trace}: {len(seen)} probes compared, "
          f"unwound {st.get('unwound')!r}, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
