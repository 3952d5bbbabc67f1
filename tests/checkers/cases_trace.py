"""check_trace.py (trace.bats): good, then one break per promise."""
from craft import broken, instant, probe, x

CHECKER = "check_trace.py"
SYNC, ALLOC, QUERY = ("flex::RuntimeStream::synchronize", "flex::FlexAllocator::allocate",
                      "flex::RuntimeStream::query")


def cases():
    yield from launch_cases()
    yield from more_cases()
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


def more_cases():
    A, B = "/d/a/libf.so", "/d/b/libf.so"
    t = {"traceEvents": [x("fixture_c_entry", float(i), args={"file": A if i < 3 else B})
                         for i in range(8)],
         "spyreProbes": [probe("fixture_c_entry", library=A, events=3),
                         probe("fixture_c_entry", library=B, events=5)]}
    out = ("      count     total ms    mean µs     p50 µs     p99 µs  function\n"
           "          3        0.050       16.6        5.4       39.2  fixture_c_entry [%s]\n"
           "          5        0.200       40.0       40.0       50.0  fixture_c_entry [%s]\n"
           % (A, B))
    argv = ["files", "@t", "@o", "fixture_c_entry", A + "=3", B + "=5"]
    yield "files", argv, {"t": t, "o": out}, None
    yield "files: a copy renamed", argv, {"t": broken(
        t, lambda d: d["spyreProbes"][1].update(name="fixture_c_entry (b)")), "o": out}, \
        "renamed or sharing"
    yield "files: one probe for both", argv, {"t": broken(
        t, lambda d: d["spyreProbes"].pop()), "o": out}, "one per file"
    yield "files: a file's events", argv, {"t": broken(
        t, lambda d: d["spyreProbes"][0].update(events=4)), "o": out}, "events of " + A
    yield "files: a span without its file", argv, {"t": broken(
        t, lambda d: d["traceEvents"][0]["args"].pop("file")), "o": out}, "spans by file"
    one_row = out.split("\n", 1)[0] + "\n  8  0.300  37.0  35.0  50.0  fixture_c_entry\n"
    yield "files: one summary row for both", argv, {"t": t, "o": one_row}, "summary rows"
    yield "files: renamed in the summary", argv, {"t": t, "o": out + "renamed: x\n"}, \
        "renamed a function"

    t = {"traceEvents": [], "spyreStats": {"drops": 0},
         "spyreProbes": [probe("aten::mm", "at::_ops::mm::call", hits=30),
                         probe("aten::add", "at::_ops::add_Tensor::call", hits=9)]}
    argv = ["hits", "@t", "at::_ops::mm::call", "30"]
    yield "hits", argv, {"t": t}, None
    yield "hits: a failed call unseen", ["hits", "@t", "at::_ops::mm::call", "31"], {"t": t}, \
        "want one probe with 31"
    yield "hits: a drop", argv, {"t": broken(t, lambda d: d["spyreStats"].update(drops=1))}, \
        "drops"

    syms = ["at::_ops::op%d::call" % i for i in range(30)] + ["c10::alloc_cpu"]
    t = {"traceEvents": [], "spyreProbes": [probe(s.split("::")[-2], s) for s in syms]}
    argv = ["table", "@t", "20", "c10::alloc_cpu", "at::_ops::op3::call"]
    yield "table", argv, {"t": t}, None
    yield "table: a line unresolved", ["table", "@t", "20", "c10::free_cpu"], {"t": t}, \
        "no probe of c10::free_cpu"
    yield "table: too few ops", ["table", "@t", "30", "c10::alloc_cpu"], {"t": t}, "want over 30"
