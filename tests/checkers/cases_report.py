"""check_report.py (report.bats): a small trace and the report of it, then one break per
promise."""
import json
import os
import subprocess
import sys
import tempfile

from craft import broken, meta, x

CHECKER = "check_report.py"
HERE = os.path.dirname(os.path.abspath(__file__))
ALLOC = "spyre::SpyreAllocator::allocate"


def tables_cases():
    ev = [x("step", 0.0, 10.0), x("aiuMalloc", 1.0, 1.0), x("aiuMalloc", 3.0, 2.0),
          x("aiuMalloc", 6.0, 3.0), x("k", 2.0, 5.0, pid=0, tid=7, cat="kernel"),
          x("Memcpy (HtoD)", 1.0, 2.0, pid=0, tid=7, cat="gpu_memcpy", bytes=100),
          x("Memcpy (HtoD)", 4.0, 2.0, pid=0, tid=7, cat="gpu_memcpy", bytes=50)]
    led = {"peak": 4096, "peakTs": 1.5, "current": 0, "allocs": 2, "frees": 2}
    t = {"traceEvents": ev, "spyreMemory": {"processes": [{"devices": [{"allocated": led}]}]}}
    row = lambda n, c, tot, p50=None, p99=None, **kw: dict(
        {"name": n, "count": c, "totalNs": tot}, **({"p50Ns": p50, "p99Ns": p99} if p50 else {}),
        **kw)
    r = {"files": [{
        "host": [row("step", 1, 10000, 10000, 10000), row("aiuMalloc", 3, 6000, 2000, 3000)],
        "kernels": [row("k", 1, 5000, 5000, 5000)],
        "copies": [row("Memcpy (HtoD)", 2, 4000, bytes=150)],
        "memory": [{"peakBytes": 4096, "peakTs": 1.5, "endBytes": 0, "allocs": 2, "frees": 2,
                    "peakTid": 100, "peakIn": "aiuMalloc"}]}]}
    c = {"calls": {ALLOC: 2}}
    argv = ["tables", "@r", "@t", "@c"]
    f = lambda rr: {"r": rr, "t": t, "c": c}
    host = lambda fn: (lambda d: fn(d["files"][0]["host"][1]))
    mem = lambda **kw: (lambda d: d["files"][0]["memory"][0].update(**kw))
    yield "tables", argv, f(r), None
    yield "tables: a function left out", argv, f(broken(
        r, lambda d: d["files"][0]["host"].pop())), "host rows other than"
    yield "tables: a call uncounted", argv, f(broken(r, host(lambda h: h.update(count=2)))), \
        "aiuMalloc count or total"
    yield "tables: p99 not the nearest rank", argv, f(broken(
        r, host(lambda h: h.update(p99Ns=2900)))), "aiuMalloc p50 or p99"
    yield "tables: a kernel's total", argv, f(broken(
        r, lambda d: d["files"][0]["kernels"][0].update(totalNs=5001))), "k count or total"
    yield "tables: a copy's bytes", argv, f(broken(
        r, lambda d: d["files"][0]["copies"][0].update(bytes=100))), "Memcpy (HtoD) bytes"
    yield "tables: the peak's time", argv, f(broken(r, mem(peakTs=1.6))), "memory peak"
    yield "tables: an alloc more than the job's", argv, {
        "r": broken(r, mem(allocs=3)), "t": broken(t, lambda d: d["spyreMemory"]["processes"][0][
            "devices"][0]["allocated"].update(allocs=3)), "c": c}, "memory allocs"
    yield "tables: a free lost", argv, f(broken(r, mem(frees=1))), "memory frees"
    yield "tables: peakIn the outer span", argv, f(broken(r, mem(peakIn="step"))), "peakIn"

    ev = [meta("thread_name", "main", 100, 100), meta("thread_name", "worker", 100, 101),
          x("a", 0.0, 1.0), x("a", 2.0, 1.0, tid=101), x("b", 4.0, 2.0, tid=101),
          x("k", 0.0, 9.0, pid=0, tid=7, cat="kernel")]
    t2 = {"traceEvents": ev}
    rr = {"files": [{"host": [
        {"pid": 100, "tid": 100, "name": "a", "count": 1, "totalNs": 1000, "thread": "main"},
        {"pid": 100, "tid": 101, "name": "a", "count": 1, "totalNs": 1000, "thread": "worker"},
        {"pid": 100, "tid": 101, "name": "b", "count": 1, "totalNs": 2000, "thread": "worker"}]}]}
    argv = ["by-thread", "@r", "@t"]
    yield "by-thread", argv, {"r": rr, "t": t2}, None
    yield "by-thread: threads merged", argv, {"r": broken(
        rr, lambda d: d["files"][0]["host"].pop(1)), "t": t2}, "rows other than"
    yield "by-thread: a total", argv, {"r": broken(
        rr, lambda d: d["files"][0]["host"][2].update(totalNs=1000)), "t": t2}, "count or total"
    yield "by-thread: a thread misnamed", argv, {"r": broken(
        rr, lambda d: d["files"][0]["host"][1].update(thread="main")), "t": t2}, "thread name"
    one = {"traceEvents": [x("a", 0.0, 1.0)]}
    yield "by-thread: one thread", argv, {"r": {"files": [{"host": [
        {"pid": 100, "tid": 100, "name": "a", "count": 1, "totalNs": 1000, "thread": ""}]}]},
        "t": one}, "threads apart"


def small_cases():
    t = {"spyreProbes": [{"name": "a"}], "spyreStats": {"events": 3},
         "spyreMemory": {"processes": []}, "traceEvents": []}
    s = {k: v for k, v in t.items() if k != "traceEvents"}
    argv = ["summary-json", "@s", "@t"]
    yield "summary-json", argv, {"s": s, "t": t}, None
    yield "summary-json: the ledger left out", argv, {"s": broken(
        s, lambda d: d.pop("spyreMemory")), "t": t}, "summary keys"
    yield "summary-json: another figure", argv, {"s": broken(
        s, lambda d: d["spyreStats"].update(events=4)), "t": t}, "other than the trace's"

    f = {"files": [{"file": "/d/dir/a.json", "host": [1], "health": {"spyreTrace": True}},
                   {"file": "/d/dir/b.json.gz", "host": [1], "health": {"spyreTrace": True}},
                   {"file": "/f/kineto-sample.json", "kernels": [{"name": "k"}],
                    "health": {"spyreTrace": False}}]}
    yield "files", ["files", "@r"], {"r": f}, None
    yield "files: out of order", ["files", "@r"], {"r": broken(
        f, lambda d: d["files"].reverse())}, "files or their order"
    yield "files: gzip read otherwise", ["files", "@r"], {"r": broken(
        f, lambda d: d["files"][1].update(host=[]))}, "plain and gzip"
    yield "files: Kineto's as ours", ["files", "@r"], {"r": broken(
        f, lambda d: d["files"][2]["health"].update(spyreTrace=True))}, "Kineto's file"

    m = {"files": [{"host": [{"name": "aiuScheduleWait"}, {"name": "aten::linear"}],
                    "kernels": [{"name": "Spyre compute"}, {"name": "linear_fwd_8x64x64"}]}]}
    yield "merged", ["merged", "@r"], {"r": m}, None
    yield "merged: Kineto's ops lost", ["merged", "@r"], {"r": broken(
        m, lambda d: d["files"][0]["host"].pop())}, "host rows"
    yield "merged: our kernels lost", ["merged", "@r"], {"r": broken(
        m, lambda d: d["files"][0]["kernels"].pop(0))}, "kernels"


def idle_cases():
    # the known answer of make_trace.py idle's trace (report.bats runs the tool on it)
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, os.path.join(HERE, "..", "e2e", "make_trace.py"),
                        "idle", d + "/t.json"], check=True)
        names = {e["name"] for e in json.load(open(d + "/t.json"))["traceEvents"]}
    f = {"files": [{"devices": [{"idle": {"ns": 300000, "queuedNs": 170000, "waitingNs": 50000,
                                          "hostBoundNs": 80000}}],
                    "hostBound": {"ns": 80000, "functions": [
                        {"name": "torch/nn/modules/module.py(1750): step", "ns": 55000},
                        {"name": "aiuLaunchComputeStream", "ns": 30000},
                        {"name": "aiuMalloc", "ns": 3000}],
                        "pythonLines": [{"name": "train.py:42 step", "ns": 20000},
                                        {"name": "train.py:57 step", "ns": 10000}]}}]}
    assert {x["name"] for x in f["files"][0]["hostBound"]["functions"]} <= names
    argv = ["idle", "@r"]
    yield "idle", argv, {"r": f}, None
    yield "idle: waiting counted queued", argv, {"r": broken(
        f, lambda d: d["files"][0]["devices"][0]["idle"].update(queuedNs=220000,
                                                                waitingNs=0))}, "idle"
    yield "idle: host-bound total", argv, {"r": broken(
        f, lambda d: d["files"][0]["hostBound"].update(ns=79000))}, "host-bound"
    yield "idle: the nested call twice", argv, {"r": broken(
        f, lambda d: d["files"][0]["hostBound"]["functions"][2].update(ns=6000))}, \
        "host-bound functions"
    yield "idle: lines out of order", argv, {"r": broken(
        f, lambda d: d["files"][0]["hostBound"]["pythonLines"].reverse())}, \
        "host-bound Python lines"


def cases():
    for f in (tables_cases, small_cases, idle_cases, health_cases):
        yield from f()


def health_cases():
    s = {"events": 900, "probeHits": 1000, "dropsRingFull": 90, "dropsTooDeep": 5,
         "dropsNoStack": 5, "recordsUnreadable": 0, "deviceOverflow": 2, "unwound": 1,
         "drops": 100}
    h = dict(s, dropped=102)
    argv = ["health", "@r", "@t"]
    f = lambda hh, ss=s: {"r": {"files": [{"health": hh}]}, "t": {"spyreStats": ss}}
    yield "health", argv, f(h), None
    yield "health: a fact of its own", argv, f(dict(h, probeHits=999)), "other than the trace's"
    yield "health: a loss left out of dropped", argv, f(dict(h, dropped=100)), \
        "the losses summed"
    bad = dict(s, drops=95)
    yield "health: the trace's drops not its losses", argv, f(dict(bad, dropped=102), bad), \
        "ring full + too deep"
    none = dict(s, dropsRingFull=0, drops=10)
    yield "health: nothing dropped", argv, f(dict(none, dropped=12), none), "ring full"
