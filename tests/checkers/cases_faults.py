"""check_faults.py (faults.bats): one good input per subcommand, then one break per promise."""
from craft import broken, by_name, instant, meta, named, probe, trace, x

CHECKER = "check_faults.py"
PARENT, CHILD = 100, 200
ALLOC_DIR = "spyreAllocate(unsigned long, flex::AllocationDirective const&)"


def fork_cases():
    good = trace([x("aiuGetNumDevices", i * 10) for i in range(40)],
                 [probe("aiuGetNumDevices", hits=40, events=40)])
    argv = ["fork", "@t", str(PARENT), str(CHILD)]
    yield "fork", argv, {"t": good}, None

    def child_span(d):
        d["traceEvents"][3]["pid"] = CHILD
    yield "fork: the child's call traced", argv, {"t": broken(good, child_span)}, \
        "a span not of the parent"
    yield "fork: an event of the child's tid", argv, {"t": broken(
        good, lambda d: d["traceEvents"].append(meta("thread_name", "c", PARENT, CHILD)))}, \
        "an event of the child"
    yield "fork: a call missing", argv, {"t": broken(good, lambda d: d["traceEvents"].pop())}, \
        "want the parent's 40"
    yield "fork: an unmatched return", argv, {"t": broken(
        good, lambda d: by_name(d, "aiuGetNumDevices").update(unmatchedReturns=1))}, \
        "aiuGetNumDevices probe"
    yield "fork: a drop", argv, {"t": broken(good, lambda d: d["spyreStats"].update(drops=1))}, \
        "drops"
    both = trace([x("aiuGetNumDevices", i) for i in range(40)] +
                 [x("aiuGetNumDevices", i, pid=CHILD) for i in range(25)])
    yield "fork --follow", argv + ["--follow"], {"t": both}, None
    yield "fork --follow: the child's call missing", argv + ["--follow"], \
        {"t": broken(both, lambda d: d["traceEvents"].pop())}, "want parent 40 child 25"


def forkdev_cases():
    ev = []
    for pid, c0 in ((PARENT, 1), (CHILD, 1000)):
        for r in range(30):
            for k, n in enumerate(("aiuDataTransferHtoD", "aiuLaunchComputeStream",
                                   "aiuDataTransferDtoH")):
                ev.append(x(n, r * 10 + k, pid=pid, correlation=c0 + r * 3 + k))
    good = trace(ev)
    argv = ["forkdev", "@t", str(PARENT), str(CHILD)]
    yield "forkdev", argv, {"t": good}, None

    def shared(d):
        d["traceEvents"][-1]["args"]["correlation"] = 1
    yield "forkdev: a correlation shared by parent and child", argv, \
        {"t": broken(good, shared)}, "correlations shared"

    def reused(d):
        d["traceEvents"][1]["args"]["correlation"] = 1
    yield "forkdev: a correlation used twice", argv, {"t": broken(good, reused)}, \
        "want 90 each"


def runtime_cases():
    good = trace([x("aiuGetNumDevices", i) for i in range(11)] +
                 [x("aiuMalloc", 20 + i, tid=101) for i in range(6)] +
                 [x("other", 40, cat="kernel", pid=PARENT)])
    argv = ["runtime", "@t", "--pid", str(PARENT), "aiuGetNumDevices=11", "aiuMalloc=6"]
    yield "runtime", argv, {"t": good}, None
    yield "runtime: a call more", argv, {"t": broken(
        good, lambda d: d["traceEvents"].append(x("aiuMalloc", 50)))}, "runtime calls"
    yield "runtime: another process's span", argv, {"t": broken(
        good, lambda d: d["traceEvents"].append(x("other", 60, cat="kernel", pid=0)))}, \
        "span pids, want only 100"


def late_threads_cases():
    ev = [meta("thread_name", "late-%d" % i, PARENT, 101 + i) for i in range(3)]
    ev += [meta("thread_name", "main", PARENT, PARENT)]
    for i in range(3):
        for f in (ALLOC_DIR, "aiuMalloc", "spyreFree", "aiuGetNumDevices"):
            ev += [x(f, k, tid=101 + i) for k in range(20)]
    good = trace(ev)
    argv = ["late-threads", "@t", str(PARENT)]
    yield "late-threads", argv, {"t": good}, None
    yield "late-threads: a call on the main thread", argv, {"t": broken(
        good, lambda d: d["traceEvents"].append(x("aiuMalloc", 99)))}, "want 3 late ones"

    def rename(d):
        d["traceEvents"][1]["args"]["name"] = "worker"
    yield "late-threads: a thread misnamed", argv, {"t": broken(good, rename)}, "thread names"
    yield "late-threads: a call missing", argv, {"t": broken(
        good, lambda d: d["traceEvents"].pop())}, "want 20"


def renamed_cases():
    ev = [meta("thread_name", "mock-spyre-job", PARENT, PARENT),
          x("aiuShutdownRuntime", 100)]
    for i in range(8):
        t = 101 + i
        ev += [meta("thread_name", "mock-spyre-job", PARENT, t, 0), x("aiuMalloc", 1, tid=t),
               meta("thread_name", "renamed-%d" % i, PARENT, t, 5)]
    good = trace(ev)
    argv = ["renamed", "@t", str(PARENT), "--threads", "8"]
    yield "renamed", argv, {"t": good}, None

    def first_name_kept(d):
        d["traceEvents"][-1]["ts"] = 0
        d["traceEvents"].insert(len(d["traceEvents"]) - 3, d["traceEvents"].pop())
    yield "renamed: a rename before the first name", argv, {"t": broken(good, first_name_kept)}, \
        "threads renamed-0..7, want 8"
    yield "renamed: a thread more", argv, {"t": broken(
        good, lambda d: d["traceEvents"].append(x("aiuMalloc", 1, tid=120)))}, \
        "threads with spans, want 9"

    def main_renamed(d):
        d["traceEvents"].append(meta("thread_name", "renamed-0", PARENT, PARENT, 7))
    yield "renamed: the main thread renamed", argv, {"t": broken(good, main_renamed)}, \
        "the main thread's name"


def untraced_cases():
    u = {"checksum": 42, "calls": {"aiuMalloc": 30, "flex::RuntimeStream::query": 61,
                                   "spyre::SpyreStream::query": 61}}
    t = broken(u, lambda c: c["calls"].update({"flex::RuntimeStream::query": 75}))
    argv = ["untraced", "@t", "@u"]
    yield "untraced", argv, {"t": t, "u": u}, None
    yield "untraced: another checksum", argv, {"t": broken(t, lambda c: c.update(checksum=43)),
                                               "u": u}, "checksum"
    yield "untraced: a call less", argv, {"t": broken(
        t, lambda c: c["calls"].update(aiuMalloc=29)), "u": u}, "calls, traced and untraced"
    yield "untraced: too few polls", argv, {"t": broken(
        t, lambda c: c["calls"].update({"flex::RuntimeStream::query": 59})), "u": u}, \
        "one per iteration"


def ring_full_cases():
    good = trace([], [probe("aiuMalloc", hits=9000, events=7000, dropsRingFull=2000),
                      probe("aiuFree", hits=9000, events=9000), probe("notInJob", noReturn=3)],
                 events=16000, drops=2000)
    counts = {"calls": {"aiuMalloc": 9000, "aiuFree": 9000}}
    argv = ["ring-full", "@t", "@c"]
    yield "ring-full", argv, {"t": good, "c": counts}, None
    yield "ring-full: a call with no return", argv, {"t": broken(
        good, lambda d: by_name(d, "aiuFree").update(noReturn=1)), "c": counts}, \
        "a loss other than a full ring"
    yield "ring-full: too few drops", argv, {"t": broken(
        good, lambda d: by_name(d, "aiuMalloc").update(dropsRingFull=1000)), "c": counts}, \
        "did not overflow"
    yield "ring-full: stats' drops short", argv, {"t": broken(
        good, lambda d: d["spyreStats"].update(drops=1999)), "c": counts}, "stats' drops"
    yield "ring-full: too few events", argv, {"t": broken(
        good, lambda d: d["spyreStats"].update(events=10000)), "c": counts}, "over 10000"


def tail_cases():
    ev = []
    for i in range(30):
        ev += [x("outer", i * 100, 40), x("inner", i * 100 + 5, 35)]
    good = trace(ev, [probe("outer", returnProbe="sites"), probe("inner", returnProbe="sites")])
    argv = ["tail-call", "@t", "sites"]
    yield "tail-call sites", argv, {"t": good}, None
    yield "tail-call nested", ["tail-call", "@t", "nested"], {"t": good}, None
    yield "tail-call: a call missing", argv, {"t": broken(
        good, lambda d: d["traceEvents"].pop())}, "want 30 each"
    yield "tail-call: an unmatched return", argv, {"t": broken(
        good, lambda d: by_name(d, "inner").update(unmatchedReturns=1))}, "unmatched returns"
    yield "tail-call: outer ended at the jump", argv, {"t": broken(
        good, lambda d: by_name(d, "outer").update(tailExits=1))}, "outer ends at the jump"
    yield "tail-call nested: outer ended at the jump, allowed", ["tail-call", "@t", "nested"], \
        {"t": broken(good, lambda d: by_name(d, "outer").update(tailExits=1))}, None
    yield "tail-call: inner unwound", argv, {"t": broken(
        good, lambda d: by_name(d, "inner").update(unwound=1))}, "inner ends at the jump"

    def late_inner(d):
        d["traceEvents"][1]["ts"] += 10
    yield "tail-call: inner past outer's end", argv, {"t": broken(good, late_inner)}, \
        "inner not inside outer"

    def short_inner(d):
        d["traceEvents"][1]["dur"] = 1
        d["traceEvents"][0]["dur"] = 100
    yield "tail-call: not ending together", ["tail-call", "@t", "nested"], \
        {"t": broken(good, short_inner)}, "end apart"


def longjmp_cases():
    ev = [x("aiuGetNumDevices", i * 10) for i in range(40)]
    ev += [x("jump", i * 10 + 1, 5, unwound=True) for i in range(39)]
    ev += [instant("jump", 400, noReturn=True)]
    good = trace(ev, [probe("jump", hits=40, events=39, unwound=39, noReturn=1),
                      probe("aiuGetNumDevices", hits=40, events=40)], unwound=39)
    argv = ["longjmp", "@t"]
    yield "longjmp", argv, {"t": good}, None
    yield "longjmp: frames too deep", argv, {"t": broken(
        good, lambda d: by_name(d, "aiuGetNumDevices").update(dropsTooDeep=1))}, "too deep"
    yield "longjmp: an unwound call not an event", argv, {"t": broken(
        good, lambda d: by_name(d, "jump").update(events=38))}, "jump hits and events"
    yield "longjmp: stats' unwound", argv, {"t": broken(
        good, lambda d: d["spyreStats"].update(unwound=40))}, "stats' unwound"

    def args_kept(d):
        named(d, "jump")[5]["args"]["x"] = 1
    yield "longjmp: an unwound span with args", argv, {"t": broken(good, args_kept)}, \
        "want unwound spans"

    def last_span(d):
        named(d, "jump")[39].update(ph="X", dur=1.0)
    yield "longjmp: the last call a span", argv, {"t": broken(good, last_span)}, \
        "want a noReturn instant"

    def last_early(d):
        named(d, "jump")[39]["ts"] = 380
    yield "longjmp: the last call before the 39th ended", argv, {"t": broken(good, last_early)}, \
        "before the 39th's end"


def deepjump_cases():
    ev = [x("deep", i, 1, depth=1, jump=0, r=1) for i in range(150)]
    ev += [x("deep", 1000 + k, 1, depth=k, jump=1, unwound=True)
           for k in range(5, 21) for _ in range(100)]
    good = trace(ev, [probe("deep", hits=2150, events=1750, dropsTooDeep=400, unwound=1600)],
                 unwound=1600)
    done = {"deepCalls": 2150}
    argv = ["deepjump", "@t", "@d"]
    yield "deepjump", argv, {"t": good, "d": done}, None
    yield "deepjump: a call not hit", argv, {"t": broken(
        good, lambda d: d["spyreProbes"][0].update(hits=2149)), "d": done}, "want 2150"
    yield "deepjump: too deep counted unwound", argv, {"t": broken(
        good, lambda d: d["spyreProbes"][0].update(dropsTooDeep=0, unwound=2000)), "d": done}, \
        "too deep 400"
    yield "deepjump: stats' unwound", argv, {"t": broken(
        good, lambda d: d["spyreStats"].update(unwound=0)), "d": done}, "events 1750"

    def ret_arg(d):
        d["traceEvents"][0]["args"]["r"] = 0
    yield "deepjump: a return value wrong", argv, {"t": broken(good, ret_arg), "d": done}, \
        "a returned span's args"

    def depth(d):
        d["traceEvents"][-1]["args"]["depth"] = 4
    yield "deepjump: an unwound call's depth", argv, {"t": broken(good, depth), "d": done}, \
        "unwound calls per depth"

    def ret_on_unwound(d):
        d["traceEvents"][-1]["args"]["r"] = 1
    yield "deepjump: an unwound call with a return value", argv, \
        {"t": broken(good, ret_on_unwound), "d": done}, "an unwound span's args"


def throw_cases():
    ev = []
    for i in range(40):
        ev += [x("tryAlloc", i * 100, 50), x("aiuMalloc", i * 100 + 5, 10, bytes=2**64 - 1,
                                              unwound=True)]
    ev += [x("aiuMalloc", 5000 + i * 100, 10, bytes=2**64 - 1, unwound=True) for i in range(40)]
    ev += [x("aiuGetNumDevices", 9000 + i) for i in range(40)]
    good = trace(ev, [probe("tryAlloc", hits=40, events=40),
                      probe("aiuMalloc", hits=80, events=80, unwound=80),
                      probe("catchBegin", hits=80), probe("aiuGetNumDevices", hits=40, events=40)],
                 unwound=80)
    argv = ["throw", "@t"]
    yield "throw", argv, {"t": good}, None
    yield "throw: frames leaked", argv, {"t": broken(
        good, lambda d: by_name(d, "tryAlloc").update(dropsTooDeep=1))}, "frames leaked"
    yield "throw: a throw missed", argv, {"t": broken(
        good, lambda d: by_name(d, "aiuMalloc").update(unwound=79, noReturn=1))}, \
        "aiuMalloc unwound, noReturn"
    yield "throw: a catch made an event", argv, {"t": broken(
        good, lambda d: by_name(d, "catchBegin").update(events=1))}, "catchBegin"

    def ptr(d):
        named(d, "aiuMalloc")[7]["args"]["ptr"] = "0x1000"
    yield "throw: a thrown call with a return value", argv, {"t": broken(good, ptr)}, \
        "no ptr"

    def outside(d):
        named(d, "aiuMalloc")[3]["ts"] += 60
    yield "throw: a catch outside tryAlloc", argv, {"t": broken(good, outside)}, \
        "not inside its tryAlloc"
    yield "throw: tryAlloc unwound", argv, {"t": broken(
        good, lambda d: by_name(d, "tryAlloc").update(unwound=1))}, "tryAlloc unwound"
    yield "throw: the job signalled", argv, {"t": broken(
        good, lambda d: d["spyreStats"].update(targetSignal=6))}, "targetSignal"
    guard = trace([], [probe("tryAlloc", hits=40, unwound=30, noReturn=10),
                       probe("aiuMalloc", hits=80, events=75, unwound=75, noReturn=5),
                       probe("unwindRaise", hits=80),
                       probe("aiuGetNumDevices", hits=40, events=40)])
    argv = ["throw", "@t", "--uretprobes"]
    yield "throw --uretprobes", argv, {"t": guard}, None
    yield "throw --uretprobes: a raise unseen", argv, {"t": broken(
        guard, lambda d: by_name(d, "unwindRaise").update(hits=79))}, "unwindRaise hits"
    yield "throw --uretprobes: a throw neither unwound nor open", argv, {"t": broken(
        guard, lambda d: by_name(d, "aiuMalloc").update(noReturn=4))}, \
        "aiuMalloc unwound + noReturn"
    yield "throw --uretprobes: tryAlloc's return seen", argv, {"t": broken(
        guard, lambda d: by_name(d, "tryAlloc").update(noReturn=9))}, "tryAlloc unwound"


def inside_cases():
    good = trace([x("aiuGetNumDevices", i * 10) for i in range(20)] +
                 [instant("inside", 300, code=5, noReturn=True)],
                 [probe("inside", hits=1, noReturn=1),
                  probe("aiuGetNumDevices", hits=20, events=20)])
    argv = ["inside", "@t", "--code", "5", "--calls", "20"]
    yield "inside", argv, {"t": good}, None
    yield "inside: another exit code", ["inside", "@t", "--code", "7", "--calls", "20"], \
        {"t": good}, "noReturn instant with code 7"
    yield "inside: returned", argv, {"t": broken(
        good, lambda d: by_name(d, "inside").update(noReturn=0, events=1))}, \
        "inside hits, noReturn"
    yield "inside: counted unwound", argv, {"t": broken(
        good, lambda d: by_name(d, "inside").update(unwound=1))}, "inside events, unwound"

    def early(d):
        named(d, "inside")[0]["ts"] = 50
    yield "inside: entered before the calls before it", argv, {"t": broken(good, early)}, \
        "before the last aiuGetNumDevices"
    yield "inside: a call before it lost", argv, {"t": broken(
        good, lambda d: by_name(d, "aiuGetNumDevices").update(events=19))}, \
        "aiuGetNumDevices events"


def no_stack_cases():
    good = trace([], [probe("aiuMalloc", hits=700, events=600, dropsNoStack=100),
                      probe("aiuFree", hits=700, events=690, dropsNoStack=10),
                      probe("notInJob", dropsTooDeep=5)])
    counts = {"calls": {"aiuMalloc": 700, "aiuFree": 700}}
    argv = ["no-stack", "@t", "@c"]
    yield "no-stack", argv, {"t": good, "c": counts}, None
    yield "no-stack: counted too deep", argv, {"t": broken(
        good, lambda d: by_name(d, "aiuFree").update(dropsTooDeep=10, dropsNoStack=0)),
        "c": counts}, \
        "too deep or ring full"
    yield "no-stack: a hit missed", argv, {"t": broken(
        good, lambda d: by_name(d, "aiuFree").update(hits=699)), "c": counts}, \
        "hits, want the job's calls"
    yield "no-stack: a call lost uncounted", argv, {"t": broken(
        good, lambda d: by_name(d, "aiuFree").update(events=689)), "c": counts}, \
        "events + no stack"
    yield "no-stack: too few without a stack", argv, {"t": broken(
        good, lambda d: by_name(d, "aiuMalloc").update(events=610, dropsNoStack=90)),
        "c": counts}, "want over 100"


def cases():
    for f in (fork_cases, forkdev_cases, runtime_cases, late_threads_cases, renamed_cases,
              untraced_cases, ring_full_cases, tail_cases, longjmp_cases, deepjump_cases,
              throw_cases, inside_cases, no_stack_cases, pid_reused_cases):
        yield from f()


def pid_reused_cases():
    t = trace([meta("process_name", "mock-spyre-job", PARENT),
               meta("thread_name", "mock-spyre-job", PARENT, PARENT),
               meta("thread_name", "train-0", PARENT, PARENT + 1),
               meta("process_name", "impostor", CHILD)])
    argv = ["pid-reused", "@t", str(PARENT), "mock-spyre-job", "impostor"]
    yield "pid-reused", argv, {"t": t}, None
    yield "pid-reused: the next owner's thread name", argv, {"t": broken(
        t, lambda d: d["traceEvents"][2]["args"].update(name="impostor"))}, "next owner"
    yield "pid-reused: the next owner's process name", argv, {"t": broken(
        t, lambda d: d["traceEvents"][0]["args"].update(name="impostor"))}, "process name"
