"""check_unwound.py (exceptions.bats): a job's counts of calls left by exceptions and a trace of
them, good, then one break per promise."""
from craft import broken, by_name, probe, x

CHECKER = "check_unwound.py"


def unwound_trace():
    # tj_level: 10 calls, 3 left by an exception (2 recorded with their args, 1 too deep);
    # tj_leaf: 5 calls, all returned
    ev = [x("tj_level", float(i), 1.0, depth=i) for i in range(7)]
    ev += [x("tj_level", 20.0 + i, 1.0, args={"depth": 17 + i, "unwound": True}) for i in range(2)]
    ev += [x("tj_leaf", 40.0 + i) for i in range(5)]
    ps = [probe("tj_level", hits=10, events=9, unwound=2, dropsTooDeep=1, returnProbe="sites"),
          probe("tj_leaf", hits=5, events=5, returnProbe="sites")]
    t = {"traceEvents": ev, "spyreProbes": ps,
         "spyreStats": {"unwound": 2, "targetSignal": 0, "targetExitCode": 0}}
    c = {"calls": {"tj_level": 10, "tj_leaf": 5}, "unwound": {"tj_level": 3},
         "unwoundCalls": [["tj_level", 3, [17]], ["tj_level", 4, [18]], ["tj_level", 16, [99]]]}
    return t, c


def cases():
    t, c = unwound_trace()
    argv = ["@t", "@c", "--return-probe", "sites", "--exit-code", "0"]
    f = lambda tt, cc=c: {"t": tt, "c": cc}
    yield "good", argv, f(t), None
    yield "--args", argv + ["--args"], f(t), None
    yield "a returned call lost", argv, f(broken(t, lambda d: d["traceEvents"].pop(0))), \
        "spans that returned"
    yield "the metadata's events", argv, f(broken(
        t, lambda d: by_name(d, "tj_leaf").update(events=4, hits=4))), "metadata says"
    yield "a call not hit", argv, f(broken(
        t, lambda d: by_name(d, "tj_leaf").update(hits=4, events=4))), "probe hits"
    yield "a call counted twice", argv, f(broken(
        t, lambda d: by_name(d, "tj_level").update(sampledOut=1, hits=10))), \
        "counted twice or not at all"
    yield "too deep counted as unwound", argv, f(broken(
        t, lambda d: by_name(d, "tj_level").update(unwound=3, dropsTooDeep=0,
                                                   events=10))), "metadata says 10 events"

    def no_mark(d):
        d["traceEvents"][7]["args"].pop("unwound")
    yield "an unwound event unmarked", argv, f(broken(t, no_mark)), "spans that returned"
    yield "a ring drop", argv, f(broken(
        t, lambda d: by_name(d, "tj_leaf").update(dropsRingFull=1, hits=5, events=4))), \
        "dropped with the ring full"
    yield "another return probe", ["@t", "@c", "--return-probe", "uretprobe"], f(t), \
        "returnProbe"
    yield "a probe missing", argv, f(broken(t, lambda d: d["spyreProbes"].pop())), \
        "tj_leaf: no probe"
    yield "stats' unwound", argv, f(broken(
        t, lambda d: d["spyreStats"].update(unwound=3))), "spyreStats.unwound"
    yield "a signal", argv, f(broken(
        t, lambda d: d["spyreStats"].update(targetSignal=6))), "targetSignal"
    yield "another exit code", ["@t", "@c", "--exit-code", "1"], f(t), "targetExitCode"
    yield "--args: an argument wrong", argv + ["--args"], f(broken(
        t, lambda d: d["traceEvents"][7]["args"].update(depth=7))), "arguments differ"

    yield "a call said open with no instant for it", argv, f(broken(
        t, lambda d: by_name(d, "tj_leaf").update(noReturn=1))), "noReturn instants"
