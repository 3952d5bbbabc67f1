#!/usr/bin/env python3
"""Checks what `spyre-bpftrace merge` wrote (tests/e2e/merge.bats) against its inputs:

  kineto OURS KINETO MERGED PID   our trace of the mock job onto a Kineto trace of the same run
      (make_trace.py kineto): moved by spyreMerged.shiftNs (our realtime base less Kineto's), the
      same shift for every span (order kept to the ns), all our spans inside Kineto's
      ProfilerStep (2 ms of clock slack), over 100 of them; Kineto's base and devices kept; our
      device moved off Kineto's device 0 onto pid 1 and named "Spyre 0 (spyre-bpftrace)"
  clash R1 R2   two ranks' own traces share over 50 arrow ids and over 50 correlations (the case
      the merge must untangle)
  offsets OURS OTHER MERGED   our correlations moved just past the other's, our arrow ids just past
      its arrow ids (not past its correlations); every id below 2^53
  ranks MERGED R1 R2 R3 PID1 PID2 PID3   three ranks merged two at a time: 300 arrows, one start
      and one finish per id, 100 leaving each rank (as in its own trace), each rank's arrows ending
      on one device pid of its own, 300 correlations all distinct, the three devices named
      apart (the two moved ones name their rank)
  legacy MERGED OURS JOB OP ...   onto a legacy PyTorch profiler export (tests/e2e/
      torch_profiled.py's JOB record): the fit's pid, thread pair and zero time (between the
      job's stamps), every one of our spans kept and inside the profiler's span of its op on
      its thread (1 us: the export's precision), over 95% of ours voted, under 4000 considered,
      2 linear and addmm and 1 mse_loss per iteration, none on a track of its own
  python MERGED OURS   a --python trace merged keeps all its python_function spans
      (spyreStats.pythonFunctionSpans, over 0), the training loop's frames among them
  big TOOL BIG KINETO OUT COUNT   runs TOOL merge BIG KINETO -o OUT: exit 0, the output says it
      wrote every event (COUNT less the sample's 4 track names, plus Kineto's 21), over 500,000,
      in a max RSS under an eighth of 2.2 GB

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse
import collections
import json
import resource
import subprocess
import sys

from checklib import load, need, spans


def ns(us):
    return round(us * 1000)


def corrs(d):
    return [e["args"]["correlation"] for e in d["traceEvents"]
            if "correlation" in e.get("args", {})]


def flow_ids(d, phases="sf"):
    return [e["id"] for e in d["traceEvents"] if e["ph"] in phases]


def kineto(a):
    t, k, m = load(a.ours), load(a.kineto), load(a.merged)
    pid = a.pid
    mg = m["spyreMerged"]
    need(mg["shiftNs"] == t["spyreTracer"]["realtimeBaseNs"] - k["baseTimeNanoseconds"],
         "shiftNs, want our realtime base less Kineto's", mg)
    need(m["baseTimeNanoseconds"] == k["baseTimeNanoseconds"], "baseTimeNanoseconds, want Kineto's",
         m["baseTimeNanoseconds"])
    need(m["deviceProperties"] == k["deviceProperties"], "deviceProperties, want Kineto's",
         m["deviceProperties"])
    ev = m["traceEvents"]
    step = next(e for e in ev if e["name"] == "ProfilerStep#1")
    lo, hi = ns(step["ts"]), ns(step["ts"] + step["dur"])
    # merge writes Kineto's events first, then ours
    ours = [e for e in ev[len(k["traceEvents"]):] if e["ph"] == "X" and e["pid"] == pid]
    need(len(ours) > 100, "our spans, want over 100", len(ours))
    # the phase ran between the two clock reads: so do all our calls (2 ms for clock noise)
    slack = 2_000_000
    bad = [e for e in ours if ns(e["ts"]) < lo - slack or ns(e["ts"] + e["dur"]) > hi + slack]
    need(not bad, "our spans outside the ProfilerStep", lo, hi, bad[:3])
    # relative order is kept exactly: each span moved by the same number of ns
    orig = sorted(ns(e["ts"]) for e in spans(t) if e["pid"] == pid)
    moved = sorted(ns(e["ts"]) for e in ours)
    shifts = collections.Counter(b - a for a, b in zip(orig, moved))
    need(len(orig) == len(moved) and shifts == {mg["shiftNs"]: len(orig)},
         "spans moved by other than shiftNs", dict(shifts))
    # our device moved off Kineto's device 0; Kineto's kernel stayed
    dev = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy")]
    need({e["pid"] for e in dev} == {0, 1}, "device pids, want 0 and 1", {e["pid"] for e in dev})
    need([e["name"] for e in dev if e["pid"] == 0] == ["Kernel"], "device 0, want Kineto's kernel",
         [e["name"] for e in dev if e["pid"] == 0][:5])
    names = {e["pid"]: e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "process_name"}
    need(names.get(pid) == "python3", "the job's process name", names)
    need(names.get(1) == "Spyre 0 (spyre-bpftrace)", "our device's process name", names)


def clash(a):
    r1, r2 = load(a.r1), load(a.r2)
    # both tracers numbered their launches and arrows from the same base: the ids collide
    shared = set(flow_ids(r1, "s")) & set(flow_ids(r2, "s"))
    need(len(shared) > 50, "arrow ids both ranks use, want over 50", len(shared))
    shared = set(corrs(r1)) & set(corrs(r2))
    need(len(shared) > 50, "correlations both ranks use, want over 50", len(shared))


def offsets(a):
    ours, other, m = load(a.ours), load(a.other), load(a.merged)
    mg = m["spyreMerged"]
    need(mg["correlationOffset"] == max(corrs(other)) + 1 - min(corrs(ours)),
         "correlationOffset, want just past the other's correlations", mg, max(corrs(other)))
    need(mg["flowIdOffset"] == max(flow_ids(other)) + 1 - min(flow_ids(ours)),
         "flowIdOffset, want just past the other's arrow ids", mg, max(flow_ids(other)))
    top = max(corrs(m) + flow_ids(m))
    need(top < 2**53, "an id not exact as a double", top)


def ranks(a):
    m = load(a.merged)["traceEvents"]
    rs = [load(f)["traceEvents"] for f in a.rank]
    pids = a.pid
    s = [e for e in m if e["ph"] == "s"]
    f = [e for e in m if e["ph"] == "f"]
    need(len(s) == len(f) == 300, "arrow starts and finishes, want 300 each", len(s), len(f))
    sid, fid = {e["id"] for e in s}, {e["id"] for e in f}
    need(len(sid) == len(fid) == 300, "arrow ids, want 300 distinct", len(sid), len(fid))
    need(sid == fid, "ids of starts and finishes differ", len(sid ^ fid))
    need(max(sid) < 2**53, "an arrow id not exact as a double", max(sid))
    n = collections.Counter(e["pid"] for e in s)
    need(n == {p: 100 for p in pids}, "arrows per rank, want 100", dict(n))
    need(all(sum(e["ph"] == "s" for e in r) == 100 for r in rs), "a rank's own trace, 100 arrows",
         [sum(e["ph"] == "s" for e in r) for r in rs])
    # the device pid each rank's arrows end on, by id
    end = {e["id"]: e["pid"] for e in f}
    dev = {p: {end[e["id"]] for e in s if e["pid"] == p} for p in pids}
    print("device pids", dev)
    need(all(len(d) == 1 for d in dev.values()) and len(set.union(*dev.values())) == 3,
         "a device pid per rank, want one each, three in all", dev)
    c = [e["args"]["correlation"] for e in m if e["ph"] == "X" and e["pid"] in pids
         and "correlation" in e.get("args", {})]
    need(len(c) == len(set(c)) == 300, "launch correlations, want 300 distinct", len(c),
         len(set(c)))
    # the three device processes are told apart by name: a moved one names its rank
    dname = {e["pid"]: e["args"]["name"] for e in m if e["ph"] == "M" and
             e["name"] == "process_name" and e["pid"] in set.union(*dev.values())}
    print("device names", dname)
    need(len(set(dname.values())) == 3 and sum("rank" in v for v in dname.values()) == 2,
         "device names, want 3 apart, 2 naming their rank", dname)


def legacy(a):
    m, ours, job = load(a.merged), load(a.ours), load(a.job)
    ops = {"aten::" + o for o in a.op}
    info = m["spyreMerged"]
    fit = info["legacyProfiler"]
    print(json.dumps(info))
    need(info["kinetoTimestamps"] == "legacy", "kinetoTimestamps", info["kinetoTimestamps"])
    # the profiler's "CPU functions" are the job, its thread 1 the job's training thread
    need(fit["pid"] == job["pid"], "the fit's pid, want the job's", fit)
    need(fit["threads"] == [{"from": 1, "to": job["tid"]}], "the fit's threads", fit)
    # its ts 0 lies after the job's stamp and before enabling returned (~0.5 ms here)
    need(job["profilerStartNs"] <= fit["zeroNs"] <= job["profilerEnabledNs"] + 1000,
         "the fit's zero, want between the job's stamps", fit, job)
    ev = m["traceEvents"]
    mine = [e for e in ev if e["ph"] == "X" and e.get("cat") == "privateuse1_runtime"]
    theirs = [e for e in ev if e["ph"] == "X" and e.get("cat") != "privateuse1_runtime" and
              e["name"] in ops]
    n_ours = len(spans(ours))
    need(len(mine) == n_ours > 0, "our spans in the merged trace, want all", len(mine), n_ours)
    # the profiler's spans of those ops voted for the fit (25 iterations stay under the 4000
    # that vote), and every op of ours holds the profiler's span of the same op (same thread)
    need(fit["consideredOps"] < 4000, "consideredOps, want under 4000", fit)
    need(fit["fittedOps"] >= 0.95 * n_ours, "fittedOps, want 95% of ours", fit, n_ours)
    by_name = collections.defaultdict(list)
    for e in theirs:
        by_name[e["name"], e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
    inside = 0
    # judged to the legacy export's precision: its ts and dur are whole us, so its span of an op
    # can start up to 1 us before the op did; an op shorter than that (aten::t, ~1 us) then
    # begins a few ns inside the profiler's span (1 of ~450 ops in ~1 run of 10, old builds too)
    for e in mine:
        lo, hi = e["ts"], e["ts"] + e["dur"]
        ok = any(lo <= s + 1 and t <= hi + 1 for s, t in by_name[e["name"], e["tid"]])
        inside += ok
        if not ok:
            print("not inside:", e, min(by_name[e["name"], e["tid"]],
                                        key=lambda st: abs(st[0] - lo), default=None))
    need(inside == len(mine), "our ops holding the profiler's span of it, want all", inside,
         len(mine))
    # per iteration as the model implies: two Linear layers -> two aten::linear and aten::addmm
    iters = job["iters"]
    count = collections.Counter(e["name"] for e in mine)
    need(count["aten::linear"] == count["aten::addmm"] == 2 * iters,
         "linear and addmm, want 2 per iteration", dict(count))
    need(count["aten::mse_loss"] == iters, "mse_loss, want 1 per iteration", dict(count))
    # nothing of ours had to go to a track of its own
    need(info["nesting"]["ownTracks"] == 0, "spans on a track of their own", info)


def python(a):
    m, ours = load(a.merged), load(a.ours)
    py = lambda d: [e for e in spans(d) if e.get("cat") == "python_function"]
    n = ours["spyreStats"]["pythonFunctionSpans"]
    print("python_function spans: ours %d, merged %d" % (n, len(py(m))))
    # every one of ours in the merged trace, each frame of the training loop among them
    need(n > 0 and len(py(ours)) == n == len(py(m)),
         "python_function spans: stats', ours, merged", n, len(py(ours)), len(py(m)))
    need(any("torch_profiled.py(" in e["name"] for e in py(m)), "no training loop frame",
         [e["name"] for e in py(m)][:5])


def big(a):
    size = 2_200_000_000   # past 2 GiB, which merge refused to load
    out = subprocess.run([a.tool, "merge", a.big, a.kineto, "-o", a.out],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    n = int(open(a.count).read())
    print(out.stdout, "max RSS %.0f MB for %.0f MB" % (rss / 1e6, size / 1e6))
    need(out.returncode == 0, "merge's exit status", out.returncode)
    need(n > 500_000, "events in the big trace, want over 500,000", n)
    # every event of both: ours less the 4 track names the Kineto sample names itself
    need("(21 Kineto + %d spyre-bpftrace events)" % (n - 4) in out.stdout,
         "merge wrote other than every event", n, out.stdout)
    need(rss < size / 8, "max RSS, want under an eighth of the trace", rss)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("kineto")
    for f in ("ours", "kineto", "merged"):
        c.add_argument(f)
    c.add_argument("pid", type=int)
    c.set_defaults(fn=kineto)
    c = sub.add_parser("clash")
    c.add_argument("r1")
    c.add_argument("r2")
    c.set_defaults(fn=clash)
    c = sub.add_parser("offsets")
    for f in ("ours", "other", "merged"):
        c.add_argument(f)
    c.set_defaults(fn=offsets)
    c = sub.add_parser("ranks")
    c.add_argument("merged")
    c.add_argument("rank", nargs=3)
    c.add_argument("pid", nargs=3, type=int)
    c.set_defaults(fn=ranks)
    c = sub.add_parser("legacy")
    for f in ("merged", "ours", "job"):
        c.add_argument(f)
    c.add_argument("op", nargs="+")
    c.set_defaults(fn=legacy)
    c = sub.add_parser("python")
    c.add_argument("merged")
    c.add_argument("ours")
    c.set_defaults(fn=python)
    c = sub.add_parser("big")
    for f in ("tool", "big", "kineto", "out", "count"):
        c.add_argument(f)
    c.set_defaults(fn=big)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
