"""verify_flows.py (device.bats, faults.bats, merge.bats, fleet.bats, budget.bats): made-up
launches, device spans and their ac2g arrows, good, then one break per promise."""
from craft import broken, x

CHECKER = "verify_flows.py"


def flow_trace():
    ev = []
    for pid, dev, b in ((100, 0, 4096), (200, 1, 8192)):
        for i in range(3):
            c = pid + i
            ts = 10.0 * i
            ev += [x("aiuDataTransferHtoD", ts, 2.0, pid=pid, correlation=c, bytes=b),
                   x("Memcpy (HtoD)", ts + 3, 1.0, pid=dev, tid=5, cat="gpu_memcpy",
                     correlation=c, bytes=b),
                   {"ph": "s", "id": c, "pid": pid, "tid": pid, "ts": ts, "cat": "ac2g",
                    "name": "ac2g"},
                   {"ph": "f", "id": c, "pid": dev, "tid": 5, "ts": ts + 3, "cat": "ac2g",
                    "name": "ac2g", "bp": "e"}]
    return {"traceEvents": ev}


def arrow(d, ph, fid):
    return next(e for e in d["traceEvents"] if e["ph"] == ph and e["id"] == fid)


def cases():
    t = flow_trace()
    argv = ["@t", "--bytes", "100:4096", "--bytes", "200:8192", "--min-arrows", "100:3",
            "--min-arrows", "200:3"]
    yield "good", argv, {"t": t}, None
    yield "a finish lost", argv, {"t": broken(
        t, lambda d: d["traceEvents"].remove(arrow(d, "f", 101)))}, "1 starts, 0 finishes"
    yield "a start off its launch", argv, {"t": broken(
        t, lambda d: arrow(d, "s", 101).update(ts=11.0))}, "is not at the start of a launch"
    yield "a finish off its span", argv, {"t": broken(
        t, lambda d: arrow(d, "f", 101).update(ts=13.5))}, "is not at the start of a device"
    yield "a finish without bp", argv, {"t": broken(
        t, lambda d: arrow(d, "f", 102).pop("bp"))}, "without bp"

    def crossed(d):
        d["traceEvents"][5]["args"]["correlation"] = 201     # the span pid 200's op's
    yield "an arrow onto a span of another op", argv, {"t": broken(t, crossed)}, \
        "joins launch"

    def other_bytes(d):
        d["traceEvents"][1]["args"]["bytes"] = 4097
    yield "a copy of other bytes than its launch", argv, {"t": broken(t, other_bytes)}, \
        "its launch in pid 100 copied 4096"

    def both_bytes(d):
        for e in d["traceEvents"][:4 * 3]:
            if "bytes" in e.get("args", {}):
                e["args"]["bytes"] = 8192
    yield "a process's copies of another's size", argv, {"t": broken(t, both_bytes)}, \
        "that process copies 4096"
    yield "too few arrows", ["@t", "--min-arrows", "100:4"], {"t": t}, \
        "3 arrows leave pid 100, want at least 4"

    def early(d):
        span = d["traceEvents"].pop(1)
        d["traceEvents"].insert(2, span)      # launch, 's', device span, 'f'
    yield "an arrow's start written before its device span", argv, {"t": broken(t, early)}, \
        "written in the order"
