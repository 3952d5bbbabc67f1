"""check_overlap.py (report.bats, collectives.bats): report.bats' made-up trace of two ranks,
its known answer, then breaks of the report."""
from craft import broken

CHECKER = "check_overlap.py"


def k(pid, dev, ts, dur, corr, name="aiuLaunchComputeStream"):
    e = {"ph": "X", "pid": pid, "tid": pid, "name": name, "ts": ts, "dur": dur}
    if corr is not None:
        e["args"] = {"correlation": corr}
    if dev:
        e.update(cat="kernel", name="k", tid=1)
    return e


# rank 0 (pid 100): its kernel 10-50 us, allreduce 30-70: 20 of 40 us overlapped. Rank 1 (101):
# barrier 0-100, its device 20-30 and 60-90: 40 of 100. Device 902 ran work of both: no one's
TRACE = {"traceEvents": [
    k(100, 0, 0, 5, 1), k(900, 1, 10, 40, 1),
    k(100, 0, 30, 40, None, "spyre_comms::Context::allreduce"),
    k(101, 0, 1, 5, 2), k(101, 0, 2, 5, 3), k(901, 1, 20, 10, 2), k(901, 1, 60, 30, 3),
    dict(k(101, 0, 0, 100, None, "spyre_comms::Context::barrier"), tid=102),
    k(100, 0, 3, 1, 4), k(101, 0, 3, 1, 5), k(902, 1, 0, 100, 4), k(902, 1, 100, 1, 5)]}
REPORT = {"files": [{"overlap": [{"pid": 100, "collectivesNs": 40000, "overlapNs": 20000},
                                 {"pid": 101, "collectivesNs": 100000, "overlapNs": 40000}]}]}


def cases():
    argv = ["@r", "@t", "--want", "100=40000,20000", "--want", "101=100000,40000"]
    yield "known answer", argv, {"r": REPORT, "t": TRACE}, None
    yield "without --want", ["@r", "@t"], {"r": REPORT, "t": TRACE}, None

    def off(d):
        d["files"][0]["overlap"][0]["overlapNs"] = 25000
    yield "a report's overlap off", ["@r", "@t"], {"r": broken(REPORT, off), "t": TRACE}, \
        "pid 100: report"
    yield "another known answer", ["@r", "@t", "--want", "100=40000,20001", "--want",
                                   "101=100000,40000"], {"r": REPORT, "t": TRACE}, \
        "the known answer"
    yield "a rank left out", ["@r", "@t"], {"r": broken(
        REPORT, lambda d: d["files"][0]["overlap"].pop()), "t": TRACE}, "processes"

    def shared_device(d):
        d["traceEvents"][-1]["args"]["correlation"] = 4    # 902 rank 0's alone now
    yield "a device of two ranks counted as one's", ["@r", "@t"], \
        {"r": REPORT, "t": broken(TRACE, shared_device)}, "pid 100: report"
    yield "--min-overlap-pct over it", ["@r", "@t", "--min-overlap-pct", "45"], \
        {"r": REPORT, "t": TRACE}, "overlap 40.0 % < 45"
