"""check_analyzer.py (analyzer.bats): a trace and what the analyzer would make of it, good, then
one break per promise."""
from craft import broken, x

CHECKER = "check_analyzer.py"


def flows(ids, pid=100):
    ev = []
    for i in ids:
        ev += [{"ph": "s", "id": i, "pid": pid, "tid": pid, "ts": float(i), "cat": "ac2g",
                "name": "ac2g"},
               {"ph": "f", "id": i, "pid": 0, "tid": 7, "ts": i + 0.5, "cat": "ac2g",
                "name": "ac2g", "bp": "e"}]
    return ev


def cases():
    inp = {"traceEvents": [x("aiuLaunchComputeStream", 1.0), x("embedding_fwd#0", 2.0, pid=0,
                                                               tid=7, cat="kernel"),
                           x("aiuMalloc", 3.0, 0.0)] + flows(range(1, 4)),
           "deviceProperties": [{"id": 0}]}

    def analyzed(d):
        d["traceEvents"][1].update(name="embedding_fwd#")
        d["traceEvents"][1]["args"]["orig_name"] = "embedding_fwd#0"
    out = broken(inp, analyzed)
    argv = ["kept", "@i", "@o"]
    yield "kept", argv, {"i": inp, "o": out}, None
    yield "kept: arrows of its own added", argv, {"i": inp, "o": broken(
        out, lambda d: d["traceEvents"].extend(flows([9])))}, None
    yield "kept: a zero-length span skipped", argv, {"i": inp, "o": broken(
        out, lambda d: d["traceEvents"].pop(2))}, "X events changed"
    yield "kept: a renamed kernel without its name", argv, {"i": inp, "o": broken(
        out, lambda d: d["traceEvents"][1]["args"].pop("orig_name"))}, "X events changed"
    yield "kept: an arrow lost", argv, {"i": inp, "o": broken(
        out, lambda d: d["traceEvents"].pop())}, "arrows lost"
    yield "kept: no kernel", argv, {"i": broken(inp, lambda d: d["traceEvents"].pop(1)),
                                    "o": broken(out, lambda d: d["traceEvents"].pop(1))}, \
        "no kernel"
    yield "kept: two devices", argv, {"i": inp, "o": broken(
        out, lambda d: d["deviceProperties"].append({"id": 1}))}, "deviceProperties"

    m = {"traceEvents": [x("aten::linear", 1.0), x("aiuLaunchComputeStream", 2.0),
                         x("Spyre compute", 3.0, pid=0, cat="kernel")],
         "deviceProperties": [{"id": 0}]}
    yield "merged", ["merged", "@o"], {"o": m}, None
    yield "merged: Kineto's ops lost", ["merged", "@o"], {"o": broken(
        m, lambda d: d["traceEvents"].pop(0))}, "ops of one side lost"

    inp = {"traceEvents": [x("a", 1.0), x("z", 2.0, 0.0)] + flows(range(1, 4)) +
           flows(range(10, 12), pid=200)}
    out = broken(inp, lambda d: d["traceEvents"].pop(1))     # v1.2.0 skips zero-length spans
    argv = ["arrows", "@i", "@o", "5", "100:3", "200:2"]
    yield "arrows", argv, {"i": inp, "o": out}, None
    yield "arrows: a span moved", argv, {"i": inp, "o": broken(
        out, lambda d: d["traceEvents"][0].update(tid=101))}, "X events changed"
    yield "arrows: one of its own", argv, {"i": inp, "o": broken(
        out, lambda d: d["traceEvents"].extend(flows([99])))}, "arrows changed"

    def moved(d):
        d["traceEvents"][2]["ts"] += 1.0      # the finish of id 1, off its slice
    yield "arrows: a finish moved", argv, {"i": inp, "o": broken(out, moved)}, "arrows changed"
    yield "arrows: another count", ["arrows", "@i", "@o", "6"], {"i": inp, "o": out}, \
        "arrows, want 6"
    yield "arrows: per pid", ["arrows", "@i", "@o", "5", "100:2"], {"i": inp, "o": out}, \
        "arrows per pid"
    two = broken(inp, lambda d: d["traceEvents"].extend(flows([1])))
    yield "arrows: an id used twice", ["arrows", "@i", "@o"], {"i": two, "o": two}, \
        "one start and one finish"
