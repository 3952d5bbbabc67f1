"""check_keys.py (keys.bats): a made-up keysjob trace, good, then one break per promise."""
from craft import broken, by_name, instant, probe, x

CHECKER = "check_keys.py"
LONG = "/var/tmp/sdsc_" + "k" * 70 + "/inner/bundle.mlir#2"
NAMES = ["fused_add#0", "fused_add#1", "..." + LONG[-60:]]
DIST = {"backend": "spyre_ccl", "rank": 1, "world_size": 2, "pci_bus_id": "0000:1b:00.0"}


def keys_trace():
    ev = [x("make_result", i * 1.0, a=3 * i, b="0x1234") for i in range(3)]
    ev += [x("set_kernel", 10.0 + i, args={"name": n}) for i, n in enumerate(NAMES)]
    ev += [x("launch", 20.0 + i, key=100 + i, kernel=n, correlation=7 + i)
           for i, n in enumerate(NAMES)]
    ev += [x("sync_stream", 30.0, 5.0), x("sync_stream", 40.0, 5.0),
           x("query_stream", 50.0, 1.0, done=0), x("query_stream", 60.0, 2.0, done=1)]
    ends = [(21.0, 13.9, "synchronize"), (31.0, 13.9, "synchronize"), (61.0, 1.0, "query")]
    ev += [x(n, ts, dur, pid=0, tid=1, cat="kernel", end=end, correlation=7 + i)
           for i, (n, (ts, dur, end)) in enumerate(zip(NAMES, ends))]
    ev += [{"ph": ph, "id": 7 + i, "pid": 100, "tid": 100, "ts": 20.0 + i, "cat": "ac2g"}
           for i in range(3) for ph in "sf"]
    return {"traceEvents": ev, "distributedInfo": DIST, "spyreStats": {"deviceSpans": 3},
            "spyreProbes": [probe("launch"), probe("set_kernel", derefFaults=0)]}


def dev(d, i):
    return [e for e in d["traceEvents"] if e["ph"] == "X" and e["pid"] == 0][i]


def cases():
    t = keys_trace()
    argv = ["values", "@t"]
    yield "values", argv, {"t": t}, None
    yield "values: a returned class misread", argv, {"t": broken(
        t, lambda d: d["traceEvents"][1]["args"].update(b="0x0"))}, "make_result's values"

    def head(d):
        d["traceEvents"][5]["args"]["name"] = LONG[:60] + "..."
    yield "values: the long string's head kept", argv, {"t": broken(t, head)}, \
        "set_kernel's names"
    yield "values: a launch's key", argv, {"t": broken(
        t, lambda d: d["traceEvents"][7]["args"].update(key=0))}, "the launches' keys"
    yield "values: a launch's kernel", argv, {"t": broken(
        t, lambda d: d["traceEvents"][8]["args"].update(kernel="fused_add#0"))}, \
        "the launches' kernel names"
    yield "values: a device span ended by the false query", argv, {"t": broken(
        t, lambda d: dev(d, 1).update(ts=31.0, dur=19.5, args=dict(dev(d, 1)["args"],
                                                                   end="query")))}, \
        "device spans' ends"
    yield "values: the last span not at the query's return", argv, {"t": broken(
        t, lambda d: dev(d, 2).update(dur=0.5))}, "true query's return"
    yield "values: a correlation", argv, {"t": broken(
        t, lambda d: dev(d, 0)["args"].update(correlation=99))}, "correlations"
    yield "values: a span past its synchronize", argv, {"t": broken(
        t, lambda d: dev(d, 0).update(dur=14.1))}, "past its synchronize"
    yield "values: an arrow lost", argv, {"t": broken(
        t, lambda d: d["traceEvents"].pop())}, "arrow events"
    yield "values: getRank over the environment", argv, {"t": broken(
        t, lambda d: d["distributedInfo"].update(rank=5))}, "distributedInfo"
    yield "values: a device span more", argv, {"t": broken(
        t, lambda d: d["spyreStats"].update(deviceSpans=4))}, "deviceSpans"
    yield "values: a read faulted", argv, {"t": broken(
        t, lambda d: by_name(d, "set_kernel").update(derefFaults=1))}, "faulted"

    spans = [x("k%d" % i, i * 10.0, 2.0, pid=0, tid=1, cat="kernel", end="synchronize")
             for i in range(4)]
    fol = {"traceEvents": spans, "spyreStats": {"deviceSpans": 4, "launchesInFlight": 0},
           "spyreProbes": [probe("sync_forward", tailJumpsFollowed=1)]}
    yield "sync-ends followed", ["sync-ends", "@t", "followed"], {"t": fol}, None
    yield "sync-ends followed: ended at the jump", ["sync-ends", "@t", "followed"], {"t": broken(
        fol, lambda d: by_name(d, "sync_forward").update(tailExits=1))}, "jump followed"
    yield "sync-ends followed: a launch in flight", ["sync-ends", "@t", "followed"], \
        {"t": broken(fol, lambda d: d["spyreStats"].update(launchesInFlight=1))}, \
        "launchesInFlight"
    yield "sync-ends followed: a span ended otherwise", ["sync-ends", "@t", "followed"], \
        {"t": broken(fol, lambda d: d["traceEvents"][2]["args"].update(end="query"))}, \
        "ended by a synchronize"
    cut = {"traceEvents": [], "spyreStats": {"deviceSpans": 0, "launchesInFlight": 4},
           "spyreProbes": [probe("sync_forward", tailExits=1)]}
    yield "sync-ends cut", ["sync-ends", "@t", "cut"], {"t": cut}, None
    yield "sync-ends cut: followed all the same", ["sync-ends", "@t", "cut"], {"t": fol}, \
        "ended at the jump"
    yield "sync-ends cut: evidence at the jump", ["sync-ends", "@t", "cut"], {"t": broken(
        cut, lambda d: d["spyreStats"].update(deviceSpans=4))}, "deviceSpans, want none"
    real = broken(fol, lambda d: d.update(spyreProbes=[]))
    yield "sync-ends real", ["sync-ends", "@t", "real"], {"t": real}, None
    yield "sync-ends real: a span lost", ["sync-ends", "@t", "real"], {"t": broken(
        real, lambda d: d["spyreStats"].update(deviceSpans=3))}, "deviceSpans, want 4"

    far = {"traceEvents": [instant("sync_stream", i * 1.0, far=0) for i in range(3)],
           "spyreProbes": [probe("sync_stream", derefFaults=3)]}
    yield "deref-fault", ["deref-fault", "@t"], {"t": far}, None
    yield "deref-fault: garbage read", ["deref-fault", "@t"], {"t": broken(
        far, lambda d: d["traceEvents"][1]["args"].update(far=7))}, "reading 0"
    yield "deref-fault: a fault uncounted", ["deref-fault", "@t"], {"t": broken(
        far, lambda d: by_name(d, "sync_stream").update(derefFaults=2))}, "derefFaults"
