"""check_trace.py (trace.bats): good, then one break per promise."""
from craft import broken, instant, x

CHECKER = "check_trace.py"
SYNC, ALLOC, QUERY = ("flex::RuntimeStream::synchronize", "flex::FlexAllocator::allocate",
                      "flex::RuntimeStream::query")


def cases():
    yield from launch_cases()
    t = {"traceEvents": [x("aiuInitializeRuntime", 0.0), x("aiuGetNumDevices", 2.0)]}
    argv = ["has", "@t", "aiuInitializeRuntime", "aiuGetNumDevices"]
    yield "has", argv, {"t": t}, None
    yield "has: the first call missed", argv, {"t": broken(
        t, lambda d: d["traceEvents"].pop(0))}, "no span of aiuInitializeRuntime"

    counts = {"calls": {SYNC: 3, ALLOC: 2, QUERY: 4}, "checksum": 7, "mismatches": 0,
              "queriesTrue": 1}
    t = {"traceEvents": [x("mySync", i * 1.0) for i in range(3)] +
         [x("myAlloc", 5.0 + i) for i in range(2)] + [x("Kernel", 1.0, cat="kernel", pid=0)]}
    argv = ["probe-counts", "@t", "@c", "mySync=" + SYNC, "myAlloc=" + ALLOC]
    yield "probe-counts", argv, {"t": t, "c": counts}, None
    yield "probe-counts: a default probe traced too", argv, {"t": broken(
        t, lambda d: d["traceEvents"].append(x("aiuMalloc", 9.0))), "c": counts}, \
        "runtime span names"
    yield "probe-counts: a call missed", argv, {"t": broken(
        t, lambda d: d["traceEvents"].pop(0)), "c": counts}, "mySync spans"
    yield "probe-counts: a probe with no span", ["probe-counts", "@t", "@c", "mySync=" + SYNC,
                                           "myAlloc=" + ALLOC], {"t": broken(
        t, lambda d: d["traceEvents"].__delitem__(slice(3, 5))),
        "c": broken(counts, lambda c: c["calls"].update({ALLOC: 0}))}, "runtime span names"

    t = {"traceEvents": [instant("queryHit", i * 1.0) for i in range(4)]}
    argv = ["instants", "@t", "@c", "queryHit", QUERY]
    yield "instants", argv, {"t": t, "c": counts}, None

    def process_scoped(d):
        d["traceEvents"][1]["s"] = "p"
    yield "instants: one process-scoped", argv, {"t": broken(t, process_scoped), "c": counts}, \
        "thread-scoped instants"

    def with_dur(d):
        d["traceEvents"][2]["dur"] = 1.0
    yield "instants: one with a dur", argv, {"t": broken(t, with_dur), "c": counts}, \
        "thread-scoped instants"
    yield "instants: none", argv, {"t": {"traceEvents": []}, "c": counts}, \
        "thread-scoped instants"
    yield "instants: a call missed", argv, {"t": broken(
        t, lambda d: d["traceEvents"].pop()), "c": counts}, "want the job's calls"

    ej = {"calls": {"ej_rip": 2, "ej_arg": 1}, "checksum": 9, "mismatches": 0}
    t = {"traceEvents": [x("ej_rip", 0.0), x("ej_rip", 2.0), x("ej_arg", 4.0)],
         "spyreStats": {"entriesDoneByBpf": 0}}
    argv = ["entries", "@t", "@c", "@u"]
    yield "entries", argv, {"t": t, "c": ej, "u": ej}, None
    yield "entries: another checksum", argv, {"t": t, "c": ej, "u": dict(ej, checksum=8)}, \
        "checksum or mismatches"
    yield "entries: a mismatch", argv, {"t": t, "c": dict(ej, mismatches=1), "u": ej}, \
        "checksum or mismatches"
    yield "entries: a call missed", argv, {"t": broken(
        t, lambda d: d["traceEvents"].pop()), "c": ej, "u": ej}, "spans per function"
    yield "entries: one done by BPF", argv, {"t": broken(
        t, lambda d: d["spyreStats"].update(entriesDoneByBpf=1)), "c": ej, "u": ej}, \
        "entries done by BPF"

    t = {"traceEvents": [x("aiuStreamQuery", i * 1.0, done=(i == 3)) for i in range(4)]}
    argv = ["query-done", "@t", "@c"]
    yield "query-done", argv, {"t": t, "c": counts}, None
    yield "query-done: a call missed", argv, {"t": broken(
        t, lambda d: d["traceEvents"].pop(0)), "c": counts}, "the job's query calls"
    yield "query-done: a done not a bool", argv, {"t": broken(
        t, lambda d: d["traceEvents"][0]["args"].update(done=1)), "c": counts}, "not a bool"
    yield "query-done: a true too many", argv, {"t": broken(
        t, lambda d: d["traceEvents"][0]["args"].update(done=True)), "c": counts}, \
        "want the job's queriesTrue"


def launch_cases():
    t = {"traceEvents": [x("tj_leaf", float(i)) for i in range(20)] +
         [x("tj_catch", 30.0 + i) for i in range(20)] + [instant("tj_leaf", 99.0)]}
    c = {"calls": {"tj_leaf": 20, "tj_catch": 20, "tj_level": 3}}
    argv = ["calls", "@t", "@c", "20", "tj_leaf", "tj_catch"]
    yield "calls", argv, {"t": t, "c": c}, None
    yield "calls: a call without its span", argv, {"t": broken(
        t, lambda d: d["traceEvents"].pop(0)), "c": c}, "tj_leaf: the job's calls and spans"
    yield "calls: the job made other than N", argv, {"t": t, "c": broken(
        c, lambda d: d["calls"].update(tj_catch=21))}, "tj_catch"

    base = {"traceEvents": [instant("Py_GetVersion", float(i)) for i in range(3)]}
    more = {"traceEvents": [instant("Py_GetVersion", float(i)) for i in range(20)]}
    argv = ["more", "@b", "@t", "Py_GetVersion", "17"]
    yield "more", argv, {"b": base, "t": more}, None
    yield "more: a call lost", argv, {"b": base, "t": broken(
        more, lambda d: d["traceEvents"].pop())}, "want 17"
