#!/usr/bin/env python3
"""The files of one run written in parts (--max-size, --switch-output), held together.

usage: check_parts.py MAX_SIZE COUNTS FILE...   (FILE in order; COUNTS: the job's counts, or -)

Each file under MAX_SIZE and linked to its neighbours by its spyreFile metadata; each call of
each probe in exactly one file (the files' events of a probe add up to the run's count, the
run's count and its losses to the job's calls); each file's memory counters start where the
file before left them (the ledger's state, not zero).
"""
import json
import os
import sys


def main():
    max_size, counts, files = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    calls = json.load(open(counts))["calls"] if counts != "-" else {}
    traces = []
    for i, f in enumerate(files):
        size = os.path.getsize(f)
        assert size <= max_size, (f, size, max_size)
        d = json.load(open(f))
        meta = d["spyreFile"]
        assert meta["index"] == i, (f, meta)
        assert meta["last"] == (i == len(files) - 1), (f, meta)
        assert meta["maxSize"] == max_size, meta
        assert meta.get("previous") == (files[i - 1] if i else None), (f, meta)
        assert meta.get("next") == (files[i + 1] if i + 1 < len(files) else None), (f, meta)
        if i + 1 < len(files):
            assert meta["endedBy"] == "max-size", meta
        traces.append(d)
    last = traces[-1]
    for p in last["spyreProbes"]:
        if p.get("type") in ("unwind", "catch"):
            continue
        n = sum(1 for d in traces for e in d["traceEvents"]
                if e.get("ph") in ("X", "i") and e.get("name") == p["name"])
        # a completion callback's events are the device spans it ends, not its own
        if not (n == 0 and p.get("type") == "instant"):
            assert n == p["events"], (p["name"], n, p["events"])
        lost = (p["dropsRingFull"] + p["dropsTooDeep"] + p["dropsNoStack"] + p["sampledOut"] +
                p["dropsRateCap"] + p["noReturn"])
        assert p["events"] + lost == p["hits"], p
        if p["symbol"] in calls:
            assert p["hits"] == calls[p["symbol"]], (p, calls[p["symbol"]])
    carried = 0
    for prev, d in zip(traces, traces[1:]):
        before = {}
        for e in prev["traceEvents"]:
            if e.get("ph") == "C":
                before[(e["pid"], e["name"])] = e["args"]
        seen = set()
        for e in d["traceEvents"]:
            k = (e.get("pid"), e.get("name"))
            if e.get("ph") != "C" or k in seen:
                continue
            seen.add(k)
            if k in before:
                assert e["args"] == before[k], (k, e["args"], before[k])
                carried += 1
    print("%d files, %d probes' calls each in one file, %d memory counters carried over"
          % (len(files), len(last["spyreProbes"]), carried))


main()
