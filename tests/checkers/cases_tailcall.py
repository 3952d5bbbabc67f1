"""check_tailcall.py (tailcall.bats): a made-up tailjob trace and record, good, then one break per
promise."""
from craft import broken, by_name, probe, x

CHECKER = "check_tailcall.py"
N = 4
HI = 1 << 40
LAUNCHES = ("tail_launch", "tail_launch_traced", "tail_launch_plt", "tail_launch_chain",
            "tail_launch_cond")


def tail_trace():
    truth, ev, ps = {}, [], []
    for k, name in enumerate(LAUNCHES + ("tail_wait",)):
        calls = 6 * N if name == "tail_wait" else N
        ret, work = [], []
        for i in range(calls):
            op = 1000 * k + i + 1
            size = 100 + i
            if name == "tail_launch_cond" and size % 2 == 0:
                op |= HI
            ts = 1000.0 * k + 10 * i
            ev.append(x(name, ts, 5.0, op=op, bytes=size))
            if name == "tail_launch_traced":
                ev.append(x("tail_submit", ts + 1, 4.0, op=op, bytes=3 * size))
            ret.append(op)
            work.append(4000)
        truth[name] = {"ret": ret, "work_ns": work}
        ps.append(probe(name, tailJumpsFollowed=2 if name == "tail_launch_cond" else 1,
                        tailJumpsNotFollowed=0))
    ev += [x("tail_launch_indirect", 9000.0 + i, 0.5, op=0, bytes=1) for i in range(N)]
    ps += [probe("tail_launch_indirect", tailExits=N, tailJumpsNotFollowed=1,
                 tailNotFollowedReason="a function it jumps to has jumps through a register"),
           probe("tail_release", tailExits=3)]
    out = ("tail exits: tail_launch_indirect: %d calls ended at a tail jump not followed (a "
           "register)\ntail exits: tail_release: 3 calls ended at a tail jump not followed (it "
           "jumps into the C/C++ runtime)\n" % N)
    return {"traceEvents": ev, "spyreProbes": ps}, truth, out


def span(d, name, i):
    return [e for e in d["traceEvents"] if e["name"] == name][i]


def cases():
    t, truth, out = tail_trace()
    argv = ["spans", "@t", "@d", str(N), "@o"]
    f = lambda tt, oo=out: {"t": tt, "d": truth, "o": oo}
    yield "spans", argv, f(t), None
    yield "spans: a call missed", argv, f(broken(
        t, lambda d: d["traceEvents"].remove(span(d, "tail_launch_plt", 1)))), \
        "tail_launch_plt: spans"
    yield "spans: ended at the jump", argv, f(broken(
        t, lambda d: by_name(d, "tail_launch").update(tailExits=1))), "ended at a jump"
    yield "spans: one jump of the cond not followed", argv, f(broken(
        t, lambda d: by_name(d, "tail_launch_cond").update(tailJumpsFollowed=1))), \
        "jumps followed, want 2"
    yield "spans: the callee's value", argv, f(broken(
        t, lambda d: span(d, "tail_launch_chain", 2)["args"].update(op=7))), "return values"
    yield "spans: shorter than the callee's work", argv, f(broken(
        t, lambda d: span(d, "tail_wait", 3).update(dur=3.9))), "shorter than the callee"

    def branch(d):
        e = span(d, "tail_launch_cond", 0)     # size 100: the jmp's, an id with HI
        e["args"]["op"] &= ~HI
    yield "spans: the cond's branch id", argv, {"t": broken(t, branch), "d": broken(
        truth, lambda tr: tr["tail_launch_cond"]["ret"].__setitem__(
            0, tr["tail_launch_cond"]["ret"][0] & ~HI)), "o": out}, "calls by the jmp"
    yield "spans: the indirect jump followed", argv, f(broken(
        t, lambda d: by_name(d, "tail_launch_indirect").update(tailExits=0))), \
        "tail_launch_indirect: spans"
    yield "spans: the indirect jump's reason", argv, f(broken(
        t, lambda d: by_name(d, "tail_launch_indirect").update(tailNotFollowedReason="?"))), \
        "for the register"
    yield "spans: the summary silent", argv, f(t, out.split("\n", 1)[1]), \
        "the summary's tail exits of tail_launch_indirect"
    yield "spans: a third tail exit", argv, f(t, out + "tail exits: tail_x: 1 calls\n"), \
        "want 2"
    yield "spans: free's without its reason", argv, f(t, out.replace("C/C++ runtime", "?")), \
        "tail_release"
    yield "spans: the callee past its caller", argv, f(broken(
        t, lambda d: span(d, "tail_submit", 1).update(dur=4.5))), "not inside its caller"
    yield "spans: the callee's size", argv, f(broken(
        t, lambda d: span(d, "tail_submit", 1)["args"].update(bytes=1))), "tail_submit's size"

    ev = []
    for k, name in enumerate(LAUNCHES):
        for i in range(N):
            c = 100 * k + i
            ev += [x(name, float(c), correlation=c),
                   x("k", float(c) + 0.5, pid=0, tid=1, cat="kernel", correlation=c)]
    dt = {"traceEvents": ev}
    argv = ["device", "@t", str(N)]
    yield "device", argv, {"t": dt}, None
    yield "device: a span lost", argv, {"t": broken(dt, lambda d: d["traceEvents"].pop())}, \
        "device spans, want one per launch"
    yield "device: a correlation", argv, {"t": broken(
        dt, lambda d: d["traceEvents"][1]["args"].update(correlation=999))}, "differ"

    argv = ["launch", "@t", "@d"]
    yield "launch", argv, {"t": t, "d": truth}, None
    yield "launch: out of order", argv, {"t": broken(
        t, lambda d: span(d, "tail_launch", 0).update(ts=35.0)), "d": truth}, "tail_launch:"

    rets = [0x1000 * (i + 1) for i in range(N)]
    sizes = [64 * (i + 1) for i in range(N)]
    mem = []
    for i, (r, b) in enumerate(zip(rets, sizes)):
        mem += [x("tail_alloc", 10.0 * i, 1.0, bytes=b, ptr=hex(r)),
                {"ph": "i", "name": "[memory]", "pid": 100, "tid": 100, "ts": 10.0 * i + 1,
                 "args": {"Addr": r, "Bytes": b}},
                x("tail_free", 10.0 * i + 2, 1.0, ptr=hex(r)),
                {"ph": "i", "name": "[memory]", "pid": 100, "tid": 100, "ts": 10.0 * i + 3,
                 "args": {"Addr": r, "Bytes": -b}}]
    al = {"allocs": N, "frees": N, "failedAllocs": 0, "freesMissed": 0, "unknownFrees": 0,
          "bytesAllocated": sum(sizes), "bytesFreed": sum(sizes), "current": 0}
    at = {"traceEvents": mem, "spyreMemory": {"allocsWithoutPointer": 0, "nestedAllocs": 0,
                                             "processes": [{"pid": 100, "liveBlocks": [],
                                                            "devices": [{"device": 0,
                                                                         "allocated": al}]}]},
          "spyreProbes": [probe("tail_alloc", hits=N, events=N, tailJumpsFollowed=1),
                          probe("tail_free", hits=N, events=N, tailJumpsFollowed=1)]}
    ad = {"tail_alloc": {"ret": rets, "bytes": sizes}}
    argv = ["alloc", "@t", "@d", str(N), "100"]
    led = lambda d: d["spyreMemory"]["processes"][0]["devices"][0]["allocated"]
    yield "alloc", argv, {"t": at, "d": ad}, None
    yield "alloc: an allocation without its pointer", argv, {"t": broken(
        at, lambda d: d["spyreMemory"].update(allocsWithoutPointer=1)), "d": ad}, \
        "without a pointer"
    yield "alloc: a failed allocation", argv, {"t": broken(
        at, lambda d: led(d).update(failedAllocs=1)), "d": ad}, "the ledger"
    yield "alloc: a block live", argv, {"t": broken(
        at, lambda d: d["spyreMemory"]["processes"][0]["liveBlocks"].append({})), "d": ad}, \
        "live blocks"
    yield "alloc: the pointer at the jump (0)", argv, {"t": broken(
        at, lambda d: d["traceEvents"][4]["args"].update(ptr="0x0")), "d": ad}, \
        "tail_alloc's pointers"
    yield "alloc: a free of another block", argv, {"t": broken(
        at, lambda d: d["traceEvents"][3]["args"].update(Addr=0x9999)), "d": ad}, \
        "booked and freed"
    yield "alloc: the free's jump not followed", argv, {"t": broken(
        at, lambda d: by_name(d, "tail_free").update(tailJumpsFollowed=0, tailExits=N)),
        "d": ad}, "tail_free: its jump followed"
