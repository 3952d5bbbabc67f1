#!/usr/bin/env python3
"""Check a spyre-bpftrace trace against the rules users' tools rely on, and against the truth
the mock job reports (its per-function call counts). Exit 1 with a list of problems."""
import argparse
import gzip
import json
import sys
from collections import Counter, defaultdict


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def check_structure(d, problems):
    if not isinstance(d, dict):
        problems.append("trace is not a JSON object")
        return
    for key in ("traceEvents", "deviceProperties", "baseTimeNanoseconds", "schemaVersion"):
        if key not in d:
            problems.append(f"missing top-level key {key}")
    if len(d.get("deviceProperties", [])) != 1:
        problems.append("deviceProperties must have exactly one entry")
    if not isinstance(d.get("baseTimeNanoseconds"), int):
        problems.append("baseTimeNanoseconds is not an integer")
    for i, e in enumerate(d.get("traceEvents", [])):
        if "ts" not in e:
            problems.append(f"event {i} ({e.get('name')}) has no ts")
        for k in ("pid", "tid"):
            if not isinstance(e.get(k), int) or e[k] < 0:
                problems.append(f"event {i} has a bad {k}: {e.get(k)!r}")
        if e.get("ph") == "X":
            if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
                problems.append(f"event {i} ({e.get('name')}) has a bad dur {e.get('dur')!r}")


def check_nesting(d, problems):
    """X events on one thread must nest: a child lies inside its parent, siblings don't cross."""
    by_tid = defaultdict(list)
    for e in d["traceEvents"]:
        if e.get("ph") == "X":
            # ns integers: the writer prints exactly three decimals
            ts = round(e["ts"] * 1000)
            by_tid[(e["pid"], e["tid"])].append((ts, -round(e["dur"] * 1000), e["name"]))
    for key, evs in by_tid.items():
        evs.sort()
        stack = []
        for ts, negdur, name in evs:
            end = ts - negdur
            while stack and stack[-1][0] <= ts:
                stack.pop()
            if stack and end > stack[-1][0]:
                problems.append(f"pid/tid {key}: {name} at {ts} ns overlaps "
                                f"{stack[-1][1]} (ends {stack[-1][0]})")
                if len(problems) > 20:
                    return
            stack.append((end, name))


def check_metadata(d, problems, job_pid):
    names = {}
    procs = {}
    for e in d["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        if e.get("ph") == "M" and e.get("name") == "process_name":
            procs[e["pid"]] = e["args"]["name"]
    tids = {(e["pid"], e["tid"]) for e in d["traceEvents"] if e.get("ph") == "X"}
    for t in sorted(tids):
        if t not in names:
            problems.append(f"no thread_name for pid/tid {t}")
        elif names[t].startswith("thread "):
            problems.append(f"thread {t} has no real name: {names[t]!r}")
    if job_pid is not None and procs.get(job_pid) != "mock-spyre-job":
        problems.append(f"process_name of {job_pid} is {procs.get(job_pid)!r}")


# Probes whose events end device spans instead of becoming host spans (dev=complete instants).
DEVICE_ONLY = ("aiuDmaCallback",)


def check_counts(d, counts, problems, allow_drops):
    probes = d.get("spyreProbes", [])
    host = [e for e in d["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") != "kernel" and e.get("cat") != "gpu_memcpy"]
    # calls that returned; those an exception left are events with "unwound": true (spans, or
    # instants at their entry when found left only at the end), those still open at the end
    # instants with "noReturn": true
    by_name = Counter(e["name"] for e in host if not e.get("args", {}).get("unwound"))
    marked = [e for e in d["traceEvents"] if e.get("ph") in ("X", "i")]
    unwound_ev = Counter(e["name"] for e in marked if e.get("args", {}).get("unwound") is True)
    noret_ev = Counter(e["name"] for e in marked if e.get("args", {}).get("noReturn") is True)
    drops = d.get("spyreStats", {}).get("drops")
    if drops is None:
        problems.append("spyreStats.drops missing")
        return
    if drops and not allow_drops:
        problems.append(f"{drops} events dropped")
    checked = 0
    for p in probes:
        sym = p["symbol"]
        if sym not in counts["calls"]:
            continue
        calls = counts["calls"][sym]
        # calls left by an exception never return: no span that returned. Each is unwound
        # once the thread is seen above it again (an unwound event); one a thread never came
        # back above counts as a call with no return. No other call leaves so: none unwound,
        # none without a return where none threw
        thrown = counts.get("thrown", {}).get(sym, 0)
        left = p.get("unwound", 0) + p.get("noReturn", 0)
        if left != thrown:
            problems.append(f"{p['name']}: {thrown} calls threw, metadata says "
                            f"{p.get('unwound')} unwound + {p.get('noReturn')} without a "
                            f"return")
        if p.get("unwound", 0) != unwound_ev[p["name"]] + p["dropsRingFull"] and not drops:
            problems.append(f"{p['name']}: {p.get('unwound')} unwound, the trace has "
                            f"{unwound_ev[p['name']]} unwound events")
        if p.get("noReturn", 0) != noret_ev[p["name"]] and not drops:
            problems.append(f"{p['name']}: {p.get('noReturn')} with no return, the trace has "
                            f"{noret_ev[p['name']]} noReturn instants")
        got = by_name.get(p["name"], 0)
        if (p["events"] != got + unwound_ev[p["name"]] and
                p["name"] not in DEVICE_ONLY):
            problems.append(f"{p['name']}: metadata says {p['events']} events, trace has {got}"
                            f" + {unwound_ev[p['name']]} unwound")
        if p["name"] in DEVICE_ONLY:
            got = p["events"]  # completions end device spans, counted in metadata
        # each call counted once (issue 23): a span that returned, an unwound event, or one
        # loss of one kind, whichever kinds the run allowed (drops are refused above unless
        # --allow-drops), so spans + each loss == the job's calls, exactly
        lost = (p["dropsRingFull"] + p["dropsTooDeep"] + p.get("dropsNoStack", 0) +
                p.get("sampledOut", 0) + p.get("dropsRateCap", 0) + p.get("noReturn", 0))
        if got + unwound_ev[p["name"]] + lost != calls:
            problems.append(f"{sym} ({p['name']}): job made {calls} calls, trace has {got}"
                            f" + {unwound_ev[p['name']]} unwound, +{lost} lost")
        checked += 1
    if checked < 5:
        problems.append(f"only {checked} probes could be compared with the job's counts")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--counts", help="the mock job's counts file for the traced phase")
    ap.add_argument("--pid", type=int, help="the traced job's pid")
    ap.add_argument("--allow-drops", action="store_true")
    ap.add_argument("--extra", action="append", default=[], metavar="SYMBOL=N",
                    help="calls made outside the counted phase (e.g. setup in launch mode)")
    a = ap.parse_args()
    problems = []
    d = load(a.trace)
    check_structure(d, problems)
    if not problems:
        check_nesting(d, problems)
        check_metadata(d, problems, a.pid)
        if a.counts:
            with open(a.counts) as f:
                counts = json.load(f)
            for x in a.extra:
                sym, n = x.rsplit("=", 1)
                counts["calls"][sym] = counts["calls"].get(sym, 0) + int(n)
            check_counts(d, counts, problems, a.allow_drops)
    for p in problems:
        print("verify_trace:", p)
    n = sum(1 for e in d.get("traceEvents", []) if e.get("ph") == "X")
    print(f"verify_trace: {a.trace}: {n} X events, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
