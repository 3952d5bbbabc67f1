"""check_pystack.py (pystack.bats, pytorch-trixie.bats): a job's record of its call sites and
a trace of it, good, then one break per promise."""
from craft import broken, x

CHECKER = "check_pystack.py"
J = "/j.py"
MOD, MAIN, STEP = J + ":30 <module>", J + ":10 main", J + ":20 Model.step"
INNER = J + ":25 Model.step.<locals>.inner"

JOB = {"pid": 100, "file": J, "calls": {
    "10": {"op": "aten::mm", "func": "main", "count": 2},
    "20": {"op": "aten::add", "func": "Model.step", "count": 1},
    "25": {"op": "aten::add", "func": "Model.step.<locals>.inner", "count": 1}}}


def pyspan(frame, ts, dur, pid_, parent=None):
    loc, func = frame.split(" ", 1)
    f, line = loc.rsplit(":", 1)
    args = {"Python id": pid_}
    if parent is not None:
        args["Python parent id"] = parent
    return x("%s(%s): %s" % (f, line, func), ts, dur, cat="python_function", **args)


def good_trace():
    ev = [x("aten::mm", 5.0, 1.0, python=MAIN, pystack=[MAIN, MOD]),
          x("aten::mm", 20.0, 1.0, python=MAIN, pystack=[MAIN, MOD]),
          x("aten::add", 52.0, 1.0, python=STEP, pystack=[STEP, MAIN, MOD]),
          x("aten::add", 72.0, 1.0, python=INNER, pystack=[INNER, STEP, MAIN, MOD]),
          pyspan(MOD, 0.0, 100.0, 1), pyspan(MAIN, 1.0, 90.0, 2, 1),
          pyspan(STEP, 50.0, 30.0, 3, 2), pyspan(INNER, 70.0, 5.0, 4, 3)]
    return {"traceEvents": ev, "spyreStats": {"pythonFunctionSpans": 4, "pythonStacks": 4,
                                              "pythonStacksUnnamed": 0}}


def cases():
    good = good_trace()
    ops = ["--op", "aten::mm=aten::mm", "--op", "aten::add=aten::add"]
    argv = ["@t", "@j"] + ops
    f = lambda t, j=JOB: {"t": t, "j": j}
    yield "call sites", argv, f(good), None
    yield "call sites: another line", argv, f(broken(
        good, lambda d: d["traceEvents"][0]["args"].update(python=J + ":11 main"))), \
        "is no call site of aten::mm"
    yield "call sites: a stack not from <module>", argv, f(broken(
        good, lambda d: d["traceEvents"][1]["args"]["pystack"].pop())), "pystack"

    def worker(d):
        d["traceEvents"][1]["tid"] = 101
    yield "call sites: a worker thread's stack ends at <module>", argv, \
        f(broken(good, worker)), "pystack"

    def bootstrap(d):
        worker(d)
        d["traceEvents"][1]["args"]["pystack"][-1] = J + ":900 Thread._bootstrap"
    yield "call sites: a worker thread's stack from Thread._bootstrap", argv, \
        f(broken(good, bootstrap)), None
    yield "call sites: a call missing", argv, f(broken(
        good, lambda d: d["traceEvents"].pop(0))), "1 events, the job made 2 calls"
    yield "--sampled: a call missing", argv + ["--sampled"], f(broken(
        good, lambda d: d["traceEvents"].pop(0))), None
    yield "--sampled: none", argv + ["--sampled"], f(broken(
        good, lambda d: d["traceEvents"].__delitem__(slice(0, 4)))), "no event sampled"
    yield "--ops", argv + ["--ops", "4"], f(good), None
    yield "--ops: other than N", argv + ["--ops", "5"], f(good), "4 events of the ops, want 5"

    yield "--spans", argv + ["--spans"], f(good), None
    yield "--spans: a frame with no span", argv + ["--spans"], f(broken(
        good, lambda d: d["traceEvents"].pop(6))), "no span of"

    def outside_parent(d):
        d["traceEvents"][6]["dur"] = 50.0
    yield "--spans: a span past its parent", argv + ["--spans"], \
        f(broken(good, outside_parent)), "not inside its parent"

    def overlap(d):
        d["traceEvents"].append(x("aiuMalloc", 75.0, 10.0))
    yield "--spans: a span partly over another event", argv + ["--spans"], \
        f(broken(good, overlap)), "partly overlaps"
    yield "--spans: the count", argv + ["--spans"], f(broken(
        good, lambda d: d["spyreStats"].update(pythonFunctionSpans=5))), "pythonFunctionSpans"

    ws = argv + ["--whole-stack", J]
    yield "--whole-stack", ws, f(good), None

    def frames(d):
        d["traceEvents"][3]["args"]["pystack"] = [INNER, MAIN, MOD]
    yield "--whole-stack: a frame lost", ws, f(broken(good, frames)), \
        "the nested function's stack"
    yield "--whole-stack: another file", ["@t", "@j"] + ops + ["--whole-stack", "/k.py"], \
        f(good), "the nested function's stack"
    yield "--whole-stack: a stack unnamed", ws, f(broken(
        good, lambda d: d["spyreStats"].update(pythonStacksUnnamed=1))), "pythonStacksUnnamed"

    other = broken(good, lambda d: d["traceEvents"].append(
        x("aten::mm", 5.0, pid=200, python="/k.py:1 f", pystack=["/k.py:1 f"])))
    yield "--own-pid: another process's calls left out", argv + ["--own-pid"], f(other), None
    yield "another process's calls counted without --own-pid", argv, f(other), \
        "is no call site"
    yield "--own-pid: none of the job's", argv + ["--own-pid"], f(other, dict(JOB, pid=300)), \
        "no event of the ops from the job's pid"
