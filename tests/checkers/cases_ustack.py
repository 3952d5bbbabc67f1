"""check_ustack.py (ustack.bats): made-up stacks, good, then one break per promise."""
from craft import broken, instant, probe, x

CHECKER = "check_ustack.py"
SJ = "stackjob"
R, L = 4, 2


def f(name, off, lib=SJ):
    return "%s+0x%x (%s)" % (name, off, lib)


LIBC = ["__libc_start_call_main+0x7a (libc.so.6)"]


def stackjob_trace():
    ev = []
    for i in range(R):
        ev.append(x("leaf_mix", i * 10.0, ustack=[f("leaf_mix", 0), f("compute", 0x20),
                                                  f("run_round", 0x30), f("main", 0x40)] + LIBC))
        ev.append(x("dev_alloc", i * 10.0 + 1, ustack=[f("dev_alloc", 0, "libstackrt.so"),
                                                       f("layer_ok", 0x11), f("run_round", 0x35),
                                                       f("main", 0x40)] + LIBC))
    for i in range(L):
        ev.append(x("layer_leaky", 100.0 + i, ustack=[f("layer_leaky", 0), f("run_round", 0x38),
                                                      f("main", 0x40)] + LIBC))
        ev.append(x("dev_alloc", 101.0 + i, ustack=[f("dev_alloc", 0, "libstackrt.so"),
                                                    f("layer_leaky", 0x12), f("run_round", 0x38),
                                                    f("main", 0x40)] + LIBC))
    return {"traceEvents": ev, "spyreStats": {
        "nativeStacks": 2 * R + 2 * L, "nativeStacksUnread": 0, "nativeStacksCallerAdded": R}}


def cases():
    yield from hostile_cases()
    t = stackjob_trace()
    c = {"rounds": R, "leaked": [{"addr": "0x1000", "bytes": 8}] * L}
    log = "native stacks: %d calls carried one (%d with their caller added)\n" % (2 * R + 2 * L, R)
    argv = ["chains", "@t", "@c", "@log", "--caller-added", "exact"]
    fs = lambda tt, lg=log: {"t": tt, "c": c, "log": lg}
    yield "chains", argv, fs(t), None
    yield "chains: at least", argv[:-1] + ["at-least"], fs(broken(
        t, lambda d: d["spyreStats"].update(nativeStacksCallerAdded=R + 3)),
        log.replace("(%d with" % R, "(%d with" % (R + 3))), None
    yield "chains: a caller added more than exact", argv, fs(broken(
        t, lambda d: d["spyreStats"].update(nativeStacksCallerAdded=R + 3)),
        log.replace("(%d with" % R, "(%d with" % (R + 3))), "nativeStacksCallerAdded"
    yield "chains: a frame unreadable", argv, fs(broken(
        t, lambda d: d["traceEvents"][0]["args"]["ustack"].__setitem__(1, "compute"))), \
        "a frame not FUNCTION+0xOFFSET"
    yield "chains: a stack cut before main", argv, fs(broken(
        t, lambda d: d["traceEvents"][0]["args"].update(ustack=[f("leaf_mix", 0)]))), \
        "not reaching main"
    yield "chains: the function not at its entry", argv, fs(broken(
        t, lambda d: d["traceEvents"][0]["args"]["ustack"].__setitem__(0, f("leaf_mix", 4)))), \
        "want the function at +0x0"
    yield "chains: a caller from another file", argv, fs(broken(
        t, lambda d: d["traceEvents"][2]["args"]["ustack"].__setitem__(
            1, f("compute", 0x20, "libm.so")))), "not in stackjob"

    def skipped(d):
        del d["traceEvents"][0]["args"]["ustack"][1]
    yield "chains: the frameless leaf's caller missed", argv, fs(broken(t, skipped)), \
        "a chain no call of the job makes"
    yield "chains: a call lost", argv, fs(broken(t, lambda d: d["traceEvents"].pop())), \
        "chains, want the job's calls"
    yield "chains: a stack unread", argv, fs(broken(
        t, lambda d: d["spyreStats"].update(nativeStacksUnread=1))), "nativeStacks, want"
    yield "chains: the log says otherwise", argv, fs(t, log.replace("12 calls", "11 calls")), \
        "the log's native stacks line"

    argv = ["prefixes", "@t", str(R), str(L)]
    pre = broken(t, lambda d: d.update(traceEvents=[e for e in d["traceEvents"]
                                                    if e["name"] != "layer_leaky"]))
    yield "prefixes", argv, {"t": pre}, None
    yield "prefixes: a path lost a stack", argv, {"t": broken(
        pre, lambda d: d["traceEvents"][0]["args"].pop("ustack"))}, "stacks' first functions"

    leak_stack = [f("dev_alloc", 0, "libstackrt.so"), f("layer_leaky", 0x12),
                  f("run_round", 0x38), f("main", 0x40)]
    ok_stack = [f("dev_alloc", 0, "libstackrt.so"), f("layer_ok", 0x11), f("run_round", 0x35)]
    leaked = [{"addr": hex(0x1000 * (i + 1)), "bytes": 64} for i in range(5)]
    mem = [{"ph": "i", "name": "[memory]", "pid": 100, "tid": 100, "ts": float(i),
            "args": {"Addr": 0x1000 * (i + 1), "Bytes": 64, "ustack": leak_stack}}
           for i in range(5)]
    mem += [{"ph": "i", "name": "[memory]", "pid": 100, "tid": 100, "ts": 10.0 + i,
             "args": {"Addr": 0x9000 + i, "Bytes": 32, "ustack": ok_stack}} for i in range(3)]
    mem += [{"ph": "i", "name": "[memory]", "pid": 100, "tid": 100, "ts": 20.0 + i,
             "args": {"Addr": 0x9000 + i, "Bytes": -32}} for i in range(3)]
    lt = {"traceEvents": mem, "spyreMemory": {"processes": [{
        "liveBlocks": [dict(b, ustack=leak_stack) for b in leaked],
        "liveGroups": [{"count": 5, "bytes": 320, "ustack": leak_stack}]}]}}
    lc = {"rounds": 3, "leaked": leaked}
    argv = ["leaks", "@t", "@c"]
    yield "leaks", argv, {"t": lt, "c": lc}, None
    yield "leaks: a leak not live", argv, {"t": broken(
        lt, lambda d: d["spyreMemory"]["processes"][0]["liveBlocks"].pop()), "c": lc}, \
        "the job's 5 leaks"
    yield "leaks: a group from layer_ok", argv, {"t": broken(
        lt, lambda d: d["spyreMemory"]["processes"][0]["liveGroups"][0].update(
            ustack=ok_stack)), "c": lc}, "not from dev_alloc <- layer_leaky"
    yield "leaks: an allocation event lost", argv, {"t": broken(
        lt, lambda d: d["traceEvents"].pop(6)), "c": lc}, "allocation events"
    yield "leaks: a leaked block's event from layer_ok", argv, {"t": broken(
        lt, lambda d: d["traceEvents"][2]["args"].update(ustack=ok_stack)), "c": lc}, \
        "an allocation event's caller"
    yield "leaks: a free with a stack", argv, {"t": broken(
        lt, lambda d: d["traceEvents"][-1]["args"].update(ustack=ok_stack)), "c": lc}, \
        "a free's event with a stack"

    inner = "spyreAllocate(unsigned long, flex::AllocationDirective const&)"
    outer = "spyreAllocate(unsigned long)"
    c0 = "spyre::SpyreAllocator::allocate+0x4 (_C.so)"
    run = "(anonymous namespace)::run_iteration+0x%x (mock-spyre-job)"
    ev = []
    for i in range(40):
        ev.append(x(outer, i * 10.0, ustack=[c0, run % (0x100 if i % 2 else 0x180)]))
        ev.append(x(inner, i * 10.0 + 1, ustack=[c0, "spyre::SpyreAllocator::allocate+0x30 "
                                                     "(_C.so)"]))
    ev.append(x("aiuMalloc", 500.0))
    mt = {"traceEvents": ev, "spyreStats": {"nativeStacks": 80, "nativeStacksUnread": 0},
          "spyreProbes": [probe(outer, events=40), probe(inner, events=40),
                          probe("aiuMalloc", events=1, ustackLost=1)]}
    mc = {"calls": {"spyre::SpyreAllocator::allocate": 40}}
    instant_with_stack = instant("queryHit", 600.0, ustack=["query+0x0 (libflex.so)"])
    argv = ["mock", "@t", "@c"]
    yield "mock", argv, {"t": mt, "c": mc}, None
    yield "mock: the allocator past its entry", argv, {"t": broken(
        mt, lambda d: d["traceEvents"][0]["args"]["ustack"].__setitem__(
            0, "spyre::SpyreAllocator::allocate+0x8 (_C.so)")), "c": mc}, \
        "want the allocator at its entry"
    yield "mock: the inner's caller", argv, {"t": broken(
        mt, lambda d: d["traceEvents"][1]["args"]["ustack"].__setitem__(1, run % 0x100)),
        "c": mc}, "want the outer"
    yield "mock: the outer's caller", argv, {"t": broken(
        mt, lambda d: d["traceEvents"][0]["args"]["ustack"].pop()), "c": mc}, \
        "want run_iteration"
    yield "mock: one call site", argv, {"t": broken(
        mt, lambda d: [e["args"]["ustack"].__setitem__(1, run % 0x180)
                       for e in d["traceEvents"] if e["name"] == outer]), "c": mc}, \
        "call sites, want 2"

    def site_heavy(d):
        d["traceEvents"][2]["args"]["ustack"][1] = run % 0x180
    yield "mock: a site over half the calls", argv, {"t": broken(mt, site_heavy), "c": mc}, \
        "a call site over half"

    def inner_as_outer(d):
        d["traceEvents"][1]["name"] = outer
        d["traceEvents"][1]["args"].pop("ustack")
    yield "mock: a call counted twice", argv, {"t": broken(mt, inner_as_outer), "c": mc}, \
        "with a site or counted lost"

    def uncounted(d):
        d["traceEvents"][0]["args"].pop("ustack")
        d["spyreStats"]["nativeStacks"] = 79
    yield "mock: a stack lost uncounted", argv, {"t": broken(mt, uncounted), "c": mc}, \
        "spans with a stack + lost"
    yield "mock: nativeStacks off", argv, {"t": broken(
        mt, lambda d: d["spyreStats"].update(nativeStacks=81)), "c": mc}, "nativeStacks, want"

    def lossy(d):
        p = d["spyreProbes"][2]
        p.update(events=4, ustackLost=4)
    yield "mock: over 3 % lost", argv, {"t": broken(mt, lossy), "c": mc}, "under 3 % lost"

    def missing_uncounted(d):
        # the totals balance (an instant's stack counted in place of the allocate's), the
        # allocate without one is counted nowhere
        d["traceEvents"][0]["args"].pop("ustack")
        d["traceEvents"][-1]["args"]["ustack"] = ["aiuMalloc+0x0 (libflex.so)"]
        d["traceEvents"].append(dict(instant_with_stack))
        d["spyreProbes"][2]["ustackLost"] = 0
        d["spyreStats"]["nativeStacks"] = 81
    yield "mock: an allocate's stack missing, another's counted", argv, {"t": broken(
        mt, missing_uncounted), "c": mc}, "uncounted"

    mm = [x("aten::mm", float(i), ustack=["at::_ops::mm::call+0x0 (libtorch_cpu.so.1.13.0)",
                                          "THPVariable_mm+0x99 (libtorch_python.so)"])
          for i in range(40)]
    al = [x("c10::alloc_cpu", 50.0, ustack=["c10::alloc_cpu+0x0 (libc10.so.1.13.0)",
                                            "at::detail::empty_cpu+0x10 (libtorch_cpu.so)"])]
    tt = {"traceEvents": mm + al}
    yield "torch", ["torch", "@t"], {"t": tt}, None
    yield "torch: a call lost", ["torch", "@t"], {"t": broken(
        tt, lambda d: d["traceEvents"].pop(0))}, "want 40"
    yield "torch: a caller not the binding", ["torch", "@t"], {"t": broken(
        tt, lambda d: d["traceEvents"][3]["args"]["ustack"].__setitem__(
            1, "PyObject_Call+0x1 (libpython3.so)"))}, "libtorch_python"
    yield "torch: no empty_cpu", ["torch", "@t"], {"t": broken(
        tt, lambda d: d["traceEvents"][-1]["args"]["ustack"].pop())}, "empty_cpu"

    launch = lambda ts, st=True: x("spyreStreamLaunch", ts, **(
        {"ustack": ["spyre::SpyreStream::launch+0x0 (_C.so)",
                    "run+0x10 (mock-spyre-job)"]} if st else {}))
    ft = {"traceEvents": [launch(1.0), launch(2.0), launch(3.0, False)],
          "spyreProbes": [probe("spyreStreamLaunch", ustackLost=1)],
          "spyreStats": {"nativeStacksUnread": 0}}
    yield "fleet", ["fleet", "@t", "100"], {"t": ft}, None
    yield "fleet: another process", ["fleet", "@t", "101"], {"t": ft}, "want the launch"
    yield "fleet: a caller outside the job", ["fleet", "@t", "100"], {"t": broken(
        ft, lambda d: d["traceEvents"][0]["args"]["ustack"].__setitem__(1, "x+0x1 (libc.so)"))}, \
        "want the launch and its caller"
    yield "fleet: a stack lost uncounted", ["fleet", "@t", "100"], {"t": broken(
        ft, lambda d: d["spyreProbes"][0].update(ustackLost=0))}, "uncounted"


def hostile_cases():
    g = "getpid+0x0 (libc.so.6)"
    t = {"traceEvents": [x("getpid", float(i), pid=100 + i % 2, ustack=[g, "main+0x9 (m)"])
                         for i in range(6)] + [x("open", 9.0, ustack=["open+0x0 (x)"])]}
    yield "first-frames", ["first-frames", "@t", g], {"t": t}, None
    yield "first-frames --pid", ["first-frames", "@t", g, "--pid", "101"], {"t": t}, None
    yield "first-frames: named from the forged file", ["first-frames", "@t", g], {"t": broken(
        t, lambda d: d["traceEvents"][2]["args"]["ustack"].__setitem__(
            0, "libc.so.6+0xd54e0"))}, "want 'getpid+0x0 (libc.so.6)' alone"
    yield "first-frames --pid: another process's forged", ["first-frames", "@t", g, "--pid",
                                                            "101"], {"t": broken(
        t, lambda d: d["traceEvents"][2]["args"]["ustack"].__setitem__(
            0, "libc.so.6+0xd54e0"))}, None
    yield "first-frames: none", ["first-frames", "@t", g, "--pid", "7"], {"t": t}, "alone"
    yield "first-frames: an empty stack", ["first-frames", "@t", g], {"t": broken(
        t, lambda d: d["traceEvents"][0]["args"].update(ustack=[]))}, "alone"

    a_, b_ = "swap_a+0x10 (libswapa.so)", "swap_b+0x10 (libswapb.so)"
    calls = [a_] * 50 + [a_] * 20 + [b_] * 1200
    t = {"traceEvents": [x("getpid", float(i), ustack=["getpid+0x0 (libc.so.6)", c])
                         for i, c in enumerate(calls)]}
    yield "swap", ["swap", "@t"], {"t": t}, None
    yield "swap: no call of swap_a", ["swap", "@t"], {
        "t": {"traceEvents": t["traceEvents"][70:]}}, "want swap_a's and swap_b's"

    def cached(d):
        for e in d["traceEvents"][100:150]:
            e["args"]["ustack"][1] = a_      # after swap_b's first, swap_a's name again
    yield "swap: swap_a's name back after swap_b's", ["swap", "@t"], \
        {"t": broken(t, cached)}, "swap_a after swap_b"

    def forever(d):
        for e in d["traceEvents"][70:]:
            e["args"]["ustack"][1] = "swap_b+0x10 (libswapa.so)"
    yield "swap: named from the old file", ["swap", "@t"], {"t": broken(t, forever)}, \
        "the last 1,000 callers"
