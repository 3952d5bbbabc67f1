#!/usr/bin/python3
"""Compare the statistics IBM's aiu-trace-analyzer (acelyzer) computes on a trace of ours with
the ones `spyre-bpftrace report --json` computes on the same trace.

    compare.py --analyzer DIR --report REPORT.json --trace TRACE [--python PY] [--work DIR]
               [--mutate KIND]

DIR is an importable copy of the analyzer (a checkout, or tests/e2e/py311_fstrings.py's copy for
Python 3.11); PY a python3 with numpy and pandas. REPORT.json is `report --json TRACE`. Prints one
line a comparison ("ok" or "FAIL", the name, both numbers, the difference, the tolerance), then
what acelyzer warned about; exit 0 when every comparison holds, 1 when one does not, 2 on an
error. --mutate changes the trace acelyzer reads (not the one report read) in one way, to show
that the comparisons it should break fail (tests/analyzer/stats.bats):
  kernel-dur     the first kernel span 1 us longer
  kernel-drop    the first kernel span removed
  kernel-scale   every span of the first kernel's name 5 % longer
  kernel-early   the first kernel span moved 2 ms before the device's first work
  copy-drop      the first host-to-device copy removed
  copy-bw        the first device-to-host copy's "memory bandwidth (GB/s)" x100
  cmpt-skew      in the copy of the kernel profile's run (below), the first kernel's TS4 and TS5
                 1 us late: acelyzer's clock conversion makes its span longer

What acelyzer computes, and on which events (its src/aiu_trace_analyzer/pipeline/):
- stats.py, the kernel profile (OUT_summary.csv: per pid and kernel calls, total, mean, median,
  min, max, stdev, and each kernel's share of the pid's kernel time; OUT_active.csv: per pid the
  kernels' summed time over the time from the first kernel's start to the last one's end) takes
  only events named "... Cmpt Exec" (Flex's compute events; it also reads their args TS1..TS5).
  Kineto-layout kernels (ours, torch-spyre's) are named by the kernel, so on our trace both files
  are empty. To compare it anyway acelyzer gets, in a second run, a copy in which each kernel
  span's name ends in " Cmpt Exec" and has device timestamps TS1..TS5 that its clock
  conversion maps back onto the same span (TS1 = TS2 = TS3 = start, TS4 = TS5 = end, in cycles of
  1 ns at --freq 1000): "spans kept" checks that its output has every kernel span at the same
  ts and dur, to the ns, so both sides compute on the same durations.
- categorize.py classes device spans (COMPUTE_EXEC, DATA_IN, DATA_OUT) and draws a TransferBW
  counter track from each copy's args."memory bandwidth (GB/s)" (a number our writer puts
  there: acelyzer shows it, it does not compute it).
- Not comparable on our traces: its iteration detection, power, bandwidth counters (dma.py:
  " DmaI"/" DmaO" events with args.Bytes), collective bandwidth (mp_calc_bw*.py: SenRdma events)
  and stats_v2 (--build_coll_event) need Flex's events or a compiler log; overlap.py resolves
  overlapping slices (0 on our traces) and computes no figure report has.
"""
import argparse
import collections
import copy
import json
import os
import re
import subprocess
import sys

CMPT = " Cmpt Exec"
# acelyzer's classes of device spans, and report's copy rows they are
DIRECTION = {"DATA_IN": "Memcpy (HtoD)", "DATA_OUT": "Memcpy (DtoH)"}


class Compare:
    def __init__(self):
        self.lines = []
        self.failed = []

    def check(self, name, ok, ours, theirs, unit, tol, left="report"):
        diff = theirs - ours if isinstance(ours, (int, float)) and \
            isinstance(theirs, (int, float)) else "-"
        if isinstance(diff, float):
            diff = round(diff, 6)
        word = "ok  " if ok else "FAIL"
        self.lines.append(f"{word} {name}: {left} {ours} {unit}, acelyzer {theirs} {unit}, "
                          f"diff {diff}, {tol}")
        if not ok:
            self.failed.append(name)

    def exact(self, name, ours, theirs, unit="", left="report"):
        self.check(name, ours == theirs, ours, theirs, unit, "exact", left)

    def within(self, name, ours, theirs, tol, unit=""):
        self.check(name, abs(theirs - ours) <= tol, ours, theirs, unit, f"tolerance {tol} {unit}")


def load(path):
    with open(path) as f:
        return json.load(f)


def us_to_ns(us):
    return round(us * 1000)


def mutate(trace, kind):
    """Change the trace acelyzer reads in one way (see --mutate); returns what was done."""
    ev = trace["traceEvents"]
    kernels = [i for i, e in enumerate(ev) if e.get("ph") == "X" and e.get("cat") == "kernel"]
    first = ev[kernels[0]]
    if kind == "kernel-dur":
        first["dur"] = round(first["dur"] + 1.0, 3)
        return f"kernel {first['name']}: one span 1 us longer"
    if kind == "kernel-drop":
        del ev[kernels[0]]
        return f"kernel {first['name']}: one span removed"
    if kind == "kernel-scale":
        for i in kernels:
            if ev[i]["name"] == first["name"]:
                ev[i]["dur"] = round(ev[i]["dur"] * 1.05, 3)
        return f"kernel {first['name']}: every span 5 % longer"
    if kind == "kernel-early":
        dev = [e["ts"] for e in ev if e.get("ph") == "X" and e["pid"] == first["pid"] and
               e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
        first["ts"] = round(min(dev) - 2000.0, 3)
        return f"kernel {first['name']}: one span moved 2 ms before its device's first work"
    copies = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "gpu_memcpy"]
    if kind == "copy-drop":
        c = next(e for e in copies if e["name"] == DIRECTION["DATA_IN"])
        ev.remove(c)
        return f"{c['name']}: one copy removed"
    if kind == "copy-bw":
        c = next(e for e in copies if e["name"] == DIRECTION["DATA_OUT"])
        c["args"]["memory bandwidth (GB/s)"] *= 100
        return f"{c['name']}: one copy's bandwidth x100"
    if kind == "cmpt-skew":
        return f"kernel {first['name']}: TS4 and TS5 of one span 1 us late"
    raise SystemExit(f"compare.py: unknown --mutate {kind}")


def as_flex_compute(trace, skew=0):
    """The copy acelyzer's kernel profile reads: kernel spans as Flex compute events (the first
    one's end skew ns late)."""
    t = copy.deepcopy(trace)
    for e in t["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            e["name"] += CMPT
            start, end = us_to_ns(e["ts"]), us_to_ns(e["ts"]) + us_to_ns(e["dur"]) + skew
            skew = 0
            ts = {"TS1": start, "TS2": start, "TS3": start, "TS4": end, "TS5": end}
            e.setdefault("args", {}).update({k: str(v) for k, v in ts.items()})
    return t


def acelyzer(a, src, out, *opts):
    """Run the analyzer on src, output out (its csv files beside it); its log's problem lines."""
    env = dict(os.environ, PYTHONPATH=os.path.join(a.analyzer, "src"))
    p = subprocess.run([a.python, os.path.join(a.analyzer, "bin", "acelyzer.py"), "-i", src,
                        "-o", out, *opts], cwd=os.path.dirname(out), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = re.sub(r"\x1b\[[0-9;]*m", "", p.stdout)
    with open(out + ".log", "w") as f:
        f.write(log)
    if p.returncode != 0 or "Return code= 0" not in log:
        sys.stderr.write(log)
        raise SystemExit(f"compare.py: acelyzer failed on {src} (exit {p.returncode})")
    return [line.strip() for line in log.splitlines()
            if re.search(r"WARN|ERROR|Traceback", line) and " INFO " not in line]


def read_tsv(path):
    """acelyzer's stats files: tab-separated, a header line, fields padded with blanks."""
    with open(path) as f:
        rows = [[c.strip() for c in line.rstrip("\n").split("\t")] for line in f]
    head, body = rows[0], rows[1:]
    return [dict(zip(head, r)) for r in body if len(r) == len(head)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--analyzer", required=True)
    ap.add_argument("--python", default="python3")
    ap.add_argument("--report", required=True)
    ap.add_argument("--trace", required=True)
    ap.add_argument("--work", default=None)
    ap.add_argument("--mutate", default=None)
    a = ap.parse_args()
    work = os.path.abspath(a.work or os.path.dirname(os.path.abspath(a.trace)))
    os.makedirs(work, exist_ok=True)

    rep = load(a.report)["files"][0]
    trace = load(a.trace)
    if a.mutate:
        print("mutated:", mutate(trace, a.mutate))
    plain = os.path.join(work, "ana-plain.json")
    with open(plain + ".in", "w") as f:
        json.dump(trace, f)
    flex = os.path.join(work, "ana-cmpt.json")
    with open(flex + ".in", "w") as f:
        json.dump(as_flex_compute(trace, 1000 if a.mutate == "cmpt-skew" else 0), f)

    warn_plain = acelyzer(a, plain + ".in", plain)
    warn_flex = acelyzer(a, flex + ".in", flex, "--freq", "1000:1100")
    c = Compare()

    # --- the plain trace: acelyzer's classes of device spans and its TransferBW track -----------
    out = load(plain)["traceEvents"]
    cls = collections.Counter((e["pid"], e["args"]["class"]) for e in out
                              if e.get("ph") == "X" and "class" in e.get("args", {}))
    copies = {r["name"]: r for r in rep["copies"]}
    for klass, direction in DIRECTION.items():
        n = sum(v for (pid, k), v in cls.items() if k == klass)
        c.exact(f"copies.count[{direction}]", copies.get(direction, {}).get("count", 0), n)
        # the copies' bandwidth acelyzer shows, over their time: sum(bw * dur) / sum(dur) is
        # bytes over time, report's GB/s. Both rounded to 3 decimals (each copy's by our writer):
        # 0.0015 GB/s
        sp = [e for e in out if e.get("ph") == "X" and e.get("args", {}).get("class") == klass]
        if sp and direction in copies:
            bw = sum(e["args"]["memory bandwidth (GB/s)"] * e["dur"] for e in sp) / \
                sum(e["dur"] for e in sp)
            c.within(f"copies.gbps[{direction}]", copies[direction]["gbPerSec"], round(bw, 4),
                     0.0015, "GB/s")
    nbw = sum(1 for e in out if e.get("ph") == "C" and e["name"] == "TransferBW" and
              e["args"].get("GB/s", 0) > 0)
    c.exact("copies.transferBW", sum(r["count"] for r in rep["copies"]), nbw, "counters")
    for d in rep["devices"]:
        n = sum(cls[d["pid"], k] for k in ("COMPUTE_EXEC", "DATA_IN", "DATA_OUT"))
        c.exact(f"device.spans[{d['pid']}]", d["spans"], n, "spans")

    # --- the kernel profile, on the copy with kernels as Flex compute events -----------------
    key = lambda e: (e["pid"], e["tid"], us_to_ns(e["ts"]), us_to_ns(e["dur"]))
    want = collections.Counter(key(e) + (e["name"] + CMPT,) for e in trace["traceEvents"]
                               if e.get("ph") == "X" and e.get("cat") == "kernel")
    got = collections.Counter(key(e) + (e["args"].get("orig_name", e["name"]),)
                              for e in load(flex)["traceEvents"]
                              if e.get("ph") == "X" and e.get("cat") == "kernel")
    c.exact("spans kept", sum(want.values()), sum((want & got).values()), "kernel spans",
            "the trace")

    prof = collections.defaultdict(dict)   # kernel -> pid -> row
    for r in read_tsv(flex[:-len(".json")] + "_summary.csv"):
        prof[r["Name"][:-len(CMPT)]][int(r["pid"])] = r
    kernels = {r["name"]: r for r in rep["kernels"]}
    for name in sorted(set(kernels) | set(prof)):
        ours, rows = kernels.get(name, {}), list(prof.get(name, {}).values())
        calls = sum(int(r["Calls"]) for r in rows)
        c.exact(f"kernels.count[{name}]", ours.get("count", 0), calls)
        # acelyzer prints microseconds to 3 decimals: ns, as our trace has them; its sum is
        # of floats: 1 ns
        c.within(f"kernels.total[{name}]", ours.get("totalNs", 0),
                 us_to_ns(sum(float(r["Total Time"]) for r in rows)), 1, "ns")
        if not rows or not ours:
            continue
        # its mean rounded to the ns, ours to 0.1 ns (over its pids: weighted by calls)
        mean = sum(float(r["Mean"]) * int(r["Calls"]) for r in rows) / calls
        c.within(f"kernels.mean[{name}]", ours["meanNs"], round(mean * 1000, 1), 1, "ns")
        if len(rows) == 1:
            # Different definitions: report's p50 is the nearest rank (the lower of the two
            # middle durations when there are an even number of them), acelyzer's the median
            # (the mean of those two). Equal for an odd count; else acelyzer's is not below
            # ours and above it by half the gap between the two (0.2 % at most here, 400 spans): 1 %
            med = us_to_ns(float(rows[0]["Median"]))
            n = int(rows[0]["Calls"])
            tol = 1 if n % 2 else ours["p50Ns"] // 100
            c.check(f"kernels.median[{name}]", ours["p50Ns"] - 1 <= med <= ours["p50Ns"] + tol + 1,
                    ours["p50Ns"], med, "ns",
                    "the same (odd count)" if n % 2 else "not below p50, above by 1 % at most")
    # each kernel's share of its pid's kernel time (acelyzer's "Time" column, %, 2 decimals):
    # report has each kernel's total; the share is that over their sum, one device only
    if len(rep["devices"]) == 1:
        alltotal = sum(r["totalNs"] for r in rep["kernels"])
        for name, rows in sorted(prof.items()):
            if name in kernels and len(rows) == 1:
                share = 100.0 * kernels[name]["totalNs"] / alltotal
                c.within(f"kernels.share[{name}]", round(share, 4),
                         float(next(iter(rows.values()))["Time"]), 0.006, "%")

    # per device (pid): acelyzer's kernel time is the sum of its kernels' durations. report's
    # busy time of each stream is the union of its spans, which on a stream run one at a time:
    # their sum (the streams are the tracks holding the trace's kernels)
    ktracks = {(e["pid"], e["tid"]) for e in trace["traceEvents"]
               if e.get("ph") == "X" and e.get("cat") == "kernel"}
    active = {int(r["pid"]): r for r in read_tsv(flex[:-len(".json")] + "_active.csv")}
    for d in rep["devices"]:
        r = active.get(d["pid"])
        if r is None:
            continue
        busy = sum(t["busyNs"] for t in d["tracks"] if (d["pid"], t["tid"]) in ktracks)
        c.within(f"device.kernelTime[{d['pid']}]", busy, us_to_ns(float(r["Total Kernel Time"])),
                 1, "ns")
        # acelyzer's elapsed time is from the first kernel's start to the last one's end,
        # report's span of the device from its first work to its last, copies too: acelyzer's is
        # never longer, and shorter by the copy before the first kernel and the one after the
        # last (0.07 % of 215 ms here): 1 %
        el = us_to_ns(float(r["Elapsed Time"]))
        c.check(f"device.elapsed[{d['pid']}]", d["spanNs"] - d["spanNs"] // 100 <= el <=
                d["spanNs"] + 1, d["spanNs"], el, "ns", "not above, below by 1 % at most")
        # acelyzer's "active percentage", the first over the second: sums the streams' kernel
        # time, so concurrent streams count twice (not report's device busy %, a union).
        # Ours from report's figures: the same, with report's longer span: 1 % of it at most
        ours = round(100.0 * busy / d["spanNs"], 3)
        act = float(r["Active percentage"])
        c.check(f"device.active[{d['pid']}]", ours - 0.01 <= act <= ours * 1.01 + 0.01,
                ours, act, "%", "not below, above by 1 % of it at most")

    print("\n".join(c.lines))
    for what, warns in (("trace", warn_plain), ("kernels as Flex compute events", warn_flex)):
        for w in warns:
            print(f"acelyzer warned ({what}): {w}")
    if c.failed:
        print(f"{len(c.failed)} of {len(c.lines)} comparisons failed: " + ", ".join(c.failed))
        return 1
    print(f"all {len(c.lines)} comparisons hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
