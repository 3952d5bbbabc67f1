"""check_merge.py (merge.bats): one good input per subcommand, then one break per promise."""
from craft import broken, meta, x

CHECKER = "check_merge.py"
P = 100


def kineto_cases():
    base_k, real_ours = 10**18, 10**18 + 5000       # ours 5 us after Kineto's base
    ours = {"spyreTracer": {"realtimeBaseNs": real_ours},
            "traceEvents": [x("aiuMalloc", i * 2.0, 1.0) for i in range(101)]}
    k = {"baseTimeNanoseconds": base_k, "deviceProperties": [{"id": 0, "name": "IBM Spyre"}],
         "traceEvents": [meta("process_name", "python3", P),
                         x("ProfilerStep#1", 0.0, 1000.0, cat="user_annotation"),
                         x("Kernel", 4.0, 3.0, pid=0, tid=7, cat="kernel")]}
    moved = [dict(e, ts=e["ts"] + 5.0) for e in ours["traceEvents"]]
    m = {"baseTimeNanoseconds": base_k, "deviceProperties": k["deviceProperties"],
         "spyreMerged": {"shiftNs": 5000},
         "traceEvents": k["traceEvents"] + moved +
         [x("copy", 20.0, 1.0, pid=1, tid=3, cat="gpu_memcpy"),
          meta("process_name", "Spyre 0 (spyre-bpftrace)", 1)]}
    n = len(k["traceEvents"])
    files = lambda mm: {"t": ours, "k": k, "m": mm}
    argv = ["kineto", "@t", "@k", "@m", str(P)]
    yield "kineto", argv, files(m), None
    yield "kineto: shift not the clocks' difference", argv, files(broken(
        m, lambda d: d["spyreMerged"].update(shiftNs=5001))), "shiftNs"
    yield "kineto: our base kept", argv, files(broken(
        m, lambda d: d.update(baseTimeNanoseconds=real_ours))), "baseTimeNanoseconds"
    yield "kineto: Kineto's devices lost", argv, files(broken(
        m, lambda d: d.update(deviceProperties=[]))), "deviceProperties"
    yield "kineto: spans lost", argv, files(broken(
        m, lambda d: d.update(traceEvents=d["traceEvents"][:n + 100]))), "want over 100"

    def outside(d):
        d["traceEvents"][n + 50]["ts"] = 3100.0
    yield "kineto: a span past the step", argv, files(broken(m, outside)), \
        "outside the ProfilerStep"

    def one_moved(d):
        d["traceEvents"][n + 50]["ts"] += 0.001
    yield "kineto: a span moved 1 ns more", argv, files(broken(m, one_moved)), \
        "moved by other than shiftNs"

    def dev0(d):
        d["traceEvents"][-2]["pid"] = 0
    yield "kineto: our device on Kineto's", argv, files(broken(m, dev0)), "device pids"

    def renamed(d):
        d["traceEvents"][-1]["args"]["name"] = "Spyre 0"
    yield "kineto: our device named as Kineto's", argv, files(broken(m, renamed)), \
        "our device's process name"

    def job_name(d):
        d["traceEvents"][0]["args"]["name"] = "mock"
    yield "kineto: the job's name lost", argv, files(broken(m, job_name)), \
        "the job's process name"


def flows(pid, ids, corr0=None, dev=None):
    """A launch per id with its arrow; corr0: their correlations from it (ids by default)."""
    ev = []
    for k, i in enumerate(ids):
        c = i if corr0 is None else corr0 + k
        ev += [x("aiuLaunchComputeStream", k * 10.0, 2.0, pid=pid, correlation=c),
               {"ph": "s", "id": i, "pid": pid, "tid": pid, "ts": k * 10.0, "cat": "ac2g"},
               {"ph": "f", "id": i, "pid": dev if dev is not None else 0, "tid": 7,
                "ts": k * 10.0 + 4, "cat": "ac2g", "bp": "e"}]
    return ev


def clash_cases():
    r1 = {"traceEvents": flows(P, range(1, 61))}
    r2 = {"traceEvents": flows(P + 1, range(1, 61))}
    argv = ["clash", "@a", "@b"]
    yield "clash", argv, {"a": r1, "b": r2}, None
    yield "clash: arrow ids apart", argv, {"a": r1, "b": {"traceEvents": flows(
        P + 1, range(1, 61), 1)[:0] + flows(P + 1, range(100, 160), 1)}}, "arrow ids both"
    yield "clash: correlations apart", argv, {"a": r1, "b": {"traceEvents": flows(
        P + 1, range(1, 61), 100)}}, "correlations both"


def offsets_cases():
    ours = {"traceEvents": flows(P, range(1, 11))}
    other = {"traceEvents": flows(P + 1, range(1, 11), 1)}
    m = {"spyreMerged": {"correlationOffset": 10, "flowIdOffset": 10},
         "traceEvents": other["traceEvents"] + flows(P, range(11, 21))}
    argv = ["offsets", "@o", "@r", "@m"]
    files = lambda mm: {"o": ours, "r": other, "m": mm}
    yield "offsets", argv, files(m), None
    yield "offsets: correlations past the other's arrow ids", argv, files(broken(
        m, lambda d: d["spyreMerged"].update(correlationOffset=20))), "correlationOffset"
    yield "offsets: arrow ids not moved", argv, files(broken(
        m, lambda d: d["spyreMerged"].update(flowIdOffset=0))), "flowIdOffset"

    def huge(d):
        d["traceEvents"][-1]["id"] = 2**53
    yield "offsets: an id past 2^53", argv, files(broken(m, huge)), "not exact as a double"


def ranks_cases():
    pids = [P, P + 1, P + 2]
    ev, rs = [], {}
    for r, p in enumerate(pids):
        ev += flows(p, range(r * 100 + 1, r * 100 + 101), dev=r if r == 0 else 1000 + r)
        rs["r%d" % r] = {"traceEvents": flows(p, range(1, 101))}
    ev += [meta("process_name", "Spyre 0", 0), meta("process_name", "Spyre 0 (rank 1)", 1001),
           meta("process_name", "Spyre 0 (rank 2)", 1002)]
    m = {"traceEvents": ev}
    argv = ["ranks", "@m", "@r0", "@r1", "@r2"] + [str(p) for p in pids]
    files = lambda mm: dict(rs, m=mm)
    yield "ranks", argv, files(m), None

    def drop(d):
        d["traceEvents"] = [e for e in d["traceEvents"] if not (e["ph"] == "f" and e["id"] == 5)]
    yield "ranks: a finish lost", argv, files(broken(m, drop)), "want 300 each"

    def dup(d):
        for e in d["traceEvents"]:
            if e["ph"] in "sf" and e["id"] == 150:
                e["id"] = 149
    yield "ranks: two arrows on one id", argv, files(broken(m, dup)), "want 300 distinct"

    def other_rank(d):
        next(e for e in d["traceEvents"] if e["ph"] == "f" and e["id"] == 7)["pid"] = 1001
    yield "ranks: an arrow onto another rank's device", argv, files(broken(m, other_rank)), \
        "a device pid per rank"

    def moved_pid(d):
        next(e for e in d["traceEvents"] if e["ph"] == "s" and e["id"] == 7)["pid"] = P + 1
    yield "ranks: an arrow leaving from another rank", argv, files(broken(m, moved_pid)), \
        "arrows per rank"

    def corr(d):
        d["traceEvents"][0]["args"]["correlation"] = 101
    yield "ranks: a correlation shared", argv, files(broken(m, corr)), "launch correlations"

    def name(d):
        d["traceEvents"][-1]["args"]["name"] = "Spyre 0"
    yield "ranks: two devices named alike", argv, files(broken(m, name)), "device names"


def legacy_cases():
    T = 101
    ops = ["aten::linear"] * 4 + ["aten::addmm"] * 4 + ["aten::mse_loss"] * 2
    mine = [x(o, i * 10.0 + 1.5, 2.0, tid=T) for i, o in enumerate(ops)]
    theirs = [x(o, i * 10.0 + 1.0, 3.0, tid=T, cat="cpu_op") for i, o in enumerate(ops)]
    job = {"pid": P, "tid": T, "profilerStartNs": 100, "profilerEnabledNs": 200, "iters": 2}
    m = {"spyreMerged": {"kinetoTimestamps": "legacy", "nesting": {"ownTracks": 0},
                         "legacyProfiler": {"pid": P, "threads": [{"from": 1, "to": T}],
                                            "zeroNs": 150, "consideredOps": 10,
                                            "fittedOps": 10}},
         "traceEvents": theirs + mine}
    ours = {"traceEvents": mine}
    argv = ["legacy", "@m", "@o", "@j", "linear", "addmm", "mse_loss"]
    files = lambda mm, oo=ours: {"m": mm, "o": oo, "j": job}
    fit = lambda **kw: (lambda d: d["spyreMerged"]["legacyProfiler"].update(**kw))
    yield "legacy", argv, files(m), None
    yield "legacy: not a legacy export", argv, files(broken(
        m, lambda d: d["spyreMerged"].update(kinetoTimestamps="kineto"))), "kinetoTimestamps"
    yield "legacy: another pid", argv, files(broken(m, fit(pid=P + 1))), "the fit's pid"
    yield "legacy: threads unpaired", argv, files(broken(m, fit(threads=[]))), \
        "the fit's threads"
    yield "legacy: zero after enabling returned", argv, files(broken(m, fit(zeroNs=1201))), \
        "the fit's zero"
    yield "legacy: a span of ours lost", argv, files(broken(
        m, lambda d: d["traceEvents"].pop())), "our spans in the merged trace"
    yield "legacy: too many considered", argv, files(broken(m, fit(consideredOps=4000))), \
        "consideredOps"
    yield "legacy: too few fitted", argv, files(broken(m, fit(fittedOps=9))), "fittedOps"

    def apart(d):
        d["traceEvents"][3]["ts"] += 5
    yield "legacy: an op outside the profiler's", argv, files(broken(m, apart)), \
        "holding the profiler's span"

    def fewer(d):
        d["traceEvents"] = [e for e in d["traceEvents"] if e["ts"] < 30 or e["ts"] > 40]
    yield "legacy: a linear layer short", argv, files(broken(m, fewer), broken(ours, fewer)), \
        "linear and addmm"
    relu = lambda d: [e.update(name="aten::relu") for e in d["traceEvents"]
                      if e["name"] == "aten::mse_loss" and e["ts"] > 90]
    yield "legacy: a loss short", argv + ["relu"], files(broken(m, relu), broken(ours, relu)), \
        "mse_loss, want 1 per iteration"
    yield "legacy: a span on a track of its own", argv, files(broken(
        m, lambda d: d["spyreMerged"]["nesting"].update(ownTracks=1))), "a track of their own"


def python_cases():
    py = [x("torch_profiled.py(30): train", 0.0, 10.0, cat="python_function"),
          x("torch_profiled.py(10): <module>", 0.0, 20.0, cat="python_function")]
    ours = {"spyreStats": {"pythonFunctionSpans": 2}, "traceEvents": py + [x("aten::mm", 1.0)]}
    m = {"traceEvents": list(py)}
    argv = ["python", "@m", "@o"]
    yield "python", argv, {"m": m, "o": ours}, None
    yield "python: a span lost", argv, {"m": {"traceEvents": py[:1]}, "o": ours}, \
        "python_function spans"
    yield "python: none counted", argv, {"m": {"traceEvents": []}, "o": {
        "spyreStats": {"pythonFunctionSpans": 0}, "traceEvents": []}}, "python_function spans"
    other = [dict(e, name="other.py(1): f") for e in py]
    yield "python: no training loop frame", argv, {"m": {"traceEvents": other}, "o": dict(
        ours, traceEvents=other)}, "no training loop frame"


def big_cases():
    tool = lambda n, rc=0: ("#!/bin/sh\necho 'wrote m.json (21 Kineto + %d spyre-bpftrace "
                            "events)'\nexit %d\n" % (n, rc))
    argv = ["big", "@tool", "@big", "@k", "@out", "@count"]
    files = lambda t, c="600004": {"tool": t, "big": "", "k": "", "out": "", "count": c}
    yield "big", argv, files(tool(600000)), None
    yield "big: merge failed", argv, files(tool(600000, 3)), "merge's exit status"
    yield "big: an event lost", argv, files(tool(599999)), "other than every event"
    yield "big: too small a trace", argv, files(tool(400000), "400004"), "over 500,000"


def cases():
    for f in (kineto_cases, clash_cases, offsets_cases, ranks_cases, legacy_cases,
              python_cases, big_cases):
        yield from f()
