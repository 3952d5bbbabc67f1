"""check_exceptions.py (exceptions.bats): good, then one break per promise."""
from craft import broken, by_name, meta, probe, x

CHECKER = "check_exceptions.py"
TJ = ("tj_level", "tj_catch", "tj_leaf", "tj_cancel_wait", "tj_exit_inside")


def simple_cases():
    reason = "the start-up self-test's probe went on at the instruction after it"
    t = {"traceEvents": [], "spyreStats": {"returnSitesOff": reason}, "spyreProbes": [
        probe(f, returnProbe="none", entriesOnlyReason="return sites off (self-test)",
              hits=10 + i, events=10 + i) for i, f in enumerate(TJ)]}
    c = {"calls": {f: 10 + i for i, f in enumerate(TJ)}}
    argv = ["entries-only", "@t", "@c"]
    yield "entries-only", argv, {"t": t, "c": c}, None
    yield "entries-only: no reason given", argv, {"t": broken(
        t, lambda d: d["spyreStats"].pop("returnSitesOff")), "c": c}, "returnSitesOff"
    yield "entries-only: a probe with returns", argv, {"t": broken(
        t, lambda d: by_name(d, "tj_leaf").update(returnProbe="sites")), "c": c}, \
        "tj_leaf: want entries only"
    yield "entries-only: a call missed", argv, {"t": broken(
        t, lambda d: by_name(d, "tj_catch").update(events=10)), "c": c}, "tj_catch: events"
    yield "entries-only: an entry counted unwound", argv, {"t": broken(
        t, lambda d: by_name(d, "tj_level").update(unwound=1)), "c": c}, "tj_level: unwound"

    st = {"processExits": [{"pid": 7, "signal": 0, "exitCode": 0},
                           {"pid": 42, "signal": 6, "exitCode": -1}],
          "targetSignal": 6, "targetExited": True}
    argv = ["exit-signal", "@t", "42", "6"]
    yield "exit-signal", argv, {"t": {"spyreStats": st}}, None
    yield "exit-signal: the exit left out", argv, {"t": {"spyreStats": broken(
        st, lambda s: s["processExits"].pop())}}, "processExits"
    yield "exit-signal: an exit code for a killed job", argv, {"t": {"spyreStats": broken(
        st, lambda s: s["processExits"][1].update(exitCode=134))}}, "processExits"
    yield "exit-signal: the target not said killed", argv, {"t": {"spyreStats": broken(
        st, lambda s: s.update(targetSignal=0))}}, "targetSignal"

    t = {"traceEvents": [], "spyreProbes": [probe("tj_locked", attachFailed=True),
                                            probe("tj_leaf", hits=5, events=5)]}
    c = {"calls": {"tj_leaf": 5}}
    argv = ["attach-failed", "@t", "@c", "tj_locked"]
    yield "attach-failed", argv, {"t": t, "c": c}, None
    yield "attach-failed: said attached", argv, {"t": broken(
        t, lambda d: by_name(d, "tj_locked").pop("attachFailed")), "c": c}, "want attachFailed"
    yield "attach-failed: the others not traced", argv, {"t": broken(
        t, lambda d: by_name(d, "tj_leaf").update(events=0)), "c": c}, "tj_leaf events"


def coroutine_cases():
    def probes(mode):
        n = {"co_step": 600, "co_yield": 600, "co_leaf": 600, "main_jump": 0}
        n.update({"co_run": 600, "main_leaf": 1200} if mode == "nested" else
                 {"co_resume": 600, "main_leaf": 600})
        ps = [probe(k, hits=v, events=v) for k, v in n.items()]
        if mode == "nested":
            ps[3].update(hits=600, events=600, unwound=600)
        return ps
    for mode in ("nested", "interleaved"):
        t = {"traceEvents": [], "spyreProbes": probes(mode),
             "spyreStats": {"unwound": 600 if mode == "nested" else 0}}
        argv = ["coroutines", "@t", mode]
        yield "coroutines " + mode, argv, {"t": t}, None
        yield "coroutines %s: an unmatched return" % mode, argv, {"t": broken(
            t, lambda d: by_name(d, "co_leaf").update(unmatchedReturns=1))}, "unmatched returns"
        yield "coroutines %s: a span counted unwound" % mode, argv, {"t": broken(
            t, lambda d: by_name(d, "co_step").update(unwound=1))}, "co_step: spans that returned"
        yield "coroutines %s: stats' unwound" % mode, argv, {"t": broken(
            t, lambda d: d["spyreStats"].update(unwound=1))}, "stats' unwound"
    t = {"traceEvents": [], "spyreProbes": probes("interleaved"), "spyreStats": {"unwound": 0}}
    yield "coroutines: an interleaved run checked as nested", ["coroutines", "@t", "nested"], \
        {"t": t}, "no probe co_run"

    other = 100 + (1 << 22)
    ev = [meta("thread_name", "coroutine", 100, 100),
          meta("thread_name", "coroutine 100: other stack 1", 100, other),
          x("co_resume", 0.0, 10.0), x("main_leaf", 11.0, 1.0),
          x("co_step", 2.0, 10.0, tid=other), x("co_yield", 3.0, 10.0, tid=other),
          x("k", 0.0, 1.0, pid=0, tid=other + 1, cat="kernel")]
    t = {"traceEvents": ev}
    argv = ["other-stack", "@t"]
    yield "other-stack", argv, {"t": t}, None

    def on_own(d):
        d["traceEvents"][5]["tid"] = 100
    yield "other-stack: a crossing span on the thread's own track", argv, \
        {"t": broken(t, on_own)}, "want the other-stack track"

    def main_moved(d):
        d["traceEvents"][3]["tid"] = other
    yield "other-stack: main_leaf off the thread's track", argv, \
        {"t": broken(t, main_moved)}, "one thread's own track"

    def unnamed(d):
        d["traceEvents"][1]["args"]["name"] = "other stack 1"
    yield "other-stack: the track not named for its thread", argv, \
        {"t": broken(t, unnamed)}, "the other-stack track's name"

    names = ("co_resume", "co_step", "co_leaf", "co_yield", "main_leaf")
    ps = [probe(n, hits=600, events=597 if n in ("co_step", "co_yield") else 600,
                unwound=597 if n in ("co_step", "co_yield") else 0,
                noReturn=3 if n in ("co_step", "co_yield") else 0) for n in names]
    t = {"traceEvents": [], "spyreProbes": ps}
    c = {"calls": {n: 600 for n in names}}
    argv = ["abandoned", "@t", "@c"]
    yield "abandoned", argv, {"t": t, "c": c}, None
    yield "abandoned: frames piled up", argv, {"t": broken(
        t, lambda d: by_name(d, "co_leaf").update(dropsTooDeep=1)), "c": c}, "none too deep"
    yield "abandoned: an unmatched return", argv, {"t": broken(
        t, lambda d: by_name(d, "co_resume").update(unmatchedReturns=1)), "c": c}, \
        "unmatched returns"
    yield "abandoned: a call neither event nor open", argv, {"t": broken(
        t, lambda d: by_name(d, "main_leaf").update(events=599)), "c": c}, "events + open"
    yield "abandoned: the last round's found over", argv, {"t": broken(
        t, lambda d: by_name(d, "co_yield").update(events=600, unwound=600, noReturn=0)),
        "c": c}, "want 597 unwound"
    yield "abandoned: a returning call unwound", argv, {"t": broken(
        t, lambda d: by_name(d, "co_leaf").update(unwound=1)), "c": c}, "co_leaf: unwound"


def cases():
    yield from simple_cases()
    yield from coroutine_cases()
