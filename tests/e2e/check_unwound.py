#!/usr/bin/env python3
"""Compare a trace with what a job that leaves calls without returning says it did (the counts
files of tests/progs/throwjob.cpp and tests/e2e/torch_job.py):

    {"calls": {SYMBOL: entries}, "unwound": {SYMBOL: entries left by an exception, a forced
     unwind or longjmp}, "unwoundCalls": [[SYMBOL, DEPTH, [ARG, ...]], ...] (optional)}

For each probe whose symbol (or display name) is in "calls": its spans that returned are
calls - unwound (nested correctly: verify_trace.py checks the nesting); each unwound call the
tracer recorded (nested less than the 16 recorded levels) is an event with "unwound": true, and
the others are counted as too deep, once: the probe's "unwound" + "dropsTooDeep" is the job's
unwound, its "unwound" is its number of unwound events, and every call is counted once:
events + each loss (dropsRingFull, dropsTooDeep, dropsNoStack, sampledOut, dropsRateCap,
noReturn) == hits == calls. With --args, the unwound events carry the arguments the job
listed in unwoundCalls for its calls nested less than 16 deep, exactly (as multisets).
spyreStats "unwound" is the sum. Exit 1 with a list of problems.

    check_unwound.py TRACE COUNTS [--return-probe KIND] [--signal N] [--exit-code N]
                     [--args] [--only SYMBOL ...]
"""
import argparse
import gzip
import json
import sys
from collections import Counter

MAX_DEPTH = 16  # SPYRE_MAX_DEPTH: calls nested deeper are counted, not recorded


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
    ap.add_argument("--args", action="store_true",
                    help="compare the unwound events' arguments with the job's unwoundCalls")
    ap.add_argument("--only", action="append", default=[],
                    help="compare only these symbols (repeatable); default: all in the counts")
    a = ap.parse_args()
    d = load(a.trace)
    c = load(a.counts)
    problems = []

    xs = [e for e in d["traceEvents"] if e.get("ph") == "X"]
    returned = Counter(e["name"] for e in xs if not e.get("args", {}).get("unwound"))
    # an unwound call found left only at the end is an instant at its entry; a call still open
    # then, an instant with "noReturn": true
    marked = [e for e in d["traceEvents"] if e.get("ph") in ("X", "i")]
    unwound_ev = Counter(e["name"] for e in marked if e.get("args", {}).get("unwound") is True)
    noret_ev = Counter(e["name"] for e in marked if e.get("args", {}).get("noReturn") is True)
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
        if returned[name] != calls - unwound:
            problems.append(f"{name}: {calls} calls of which {unwound} unwound, so "
                            f"{calls - unwound} returned, but the trace has {returned[name]} "
                            f"spans that returned")
        if p["events"] != returned[name] + unwound_ev[name]:
            problems.append(f"{name}: metadata says {p['events']} events, trace has "
                            f"{returned[name]} spans + {unwound_ev[name]} unwound")
        if p["hits"] != calls:
            problems.append(f"{name}: {calls} calls, {p['hits']} probe hits")
        lost = (p["dropsRingFull"] + p["dropsTooDeep"] + p.get("dropsNoStack", 0) +
                p["sampledOut"] + p["dropsRateCap"] + p["noReturn"])
        if p["events"] + lost != p["hits"]:
            problems.append(f"{name}: {p['events']} events + {lost} lost (each loss) != "
                            f"{p['hits']} hits: a call counted twice or not at all ({p})")
        if "unwound" not in p:
            problems.append(f"{name}: no \"unwound\" in spyreProbes")
        elif (p["unwound"] + p["dropsTooDeep"] != unwound and
              p["unwound"] + p["dropsTooDeep"] + p.get("dropsNoStack", 0) != unwound):
            # calls that got no thread stack, likely because task storage was per-CPU busy
            # (another program of ours holding it was preempted; 3 of 30 cancelled threads'
            # first calls once, ppc64le guest), are neither tracked nor unwound, and counted
            problems.append(f"{name}: job left {unwound} calls unreturned, metadata says "
                            f"unwound {p['unwound']} + too deep {p['dropsTooDeep']}")
        elif p["unwound"] != unwound_ev[name] + p["dropsRingFull"]:
            problems.append(f"{name}: {p['unwound']} unwound, but {unwound_ev[name]} "
                            f"unwound events in the trace")
        if p["noReturn"] != noret_ev[name] and not p["dropsRingFull"]:
            problems.append(f"{name}: {p['noReturn']} with no return, but {noret_ev[name]} "
                            f"noReturn instants in the trace")
        if p["dropsRingFull"]:
            problems.append(f"{name}: {p['dropsRingFull']} dropped with the ring full")
        if a.return_probe and p.get("returnProbe") != a.return_probe:
            problems.append(f"{name}: returnProbe {p.get('returnProbe')!r}, "
                            f"expected {a.return_probe!r}")
    for sym in sorted(want - seen):
        problems.append(f"{sym}: no probe in spyreProbes")

    if a.args:
        # the job's unwound calls the tracer recorded, with their arguments, against the
        # trace's unwound events (each argument value as a number, in the probe's key order)
        names = {p["symbol"]: p["name"] for p in probes}
        job = Counter((names.get(f, f), tuple(args)) for f, depth, args in c["unwoundCalls"]
                      if depth < MAX_DEPTH and (names.get(f, f) in want or f in want))

        def num(v):
            return int(v, 16) if isinstance(v, str) else v
        got = Counter((e["name"], tuple(num(v) for k, v in e["args"].items() if k != "unwound"))
                      for e in marked if e.get("args", {}).get("unwound") is True)
        if job != got:
            miss, extra = job - got, got - job
            problems.append(f"unwound events' arguments differ from the job's: "
                            f"{sum(miss.values())} missing (e.g. {list(miss)[:3]}), "
                            f"{sum(extra.values())} unexpected (e.g. {list(extra)[:3]})")
        elif not job:
            problems.append("--args: the job lists no recorded unwound call")

    st = d.get("spyreStats", {})
    total = sum(p.get("unwound", 0) for p in probes)
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
