"""check_fleet.py (fleet.bats): good, then one break per promise."""
from craft import broken, by_name, meta, probe, x

CHECKER = "check_fleet.py"
PIDS = [100, 200]


def cases():
    yield from prom_cases()
    ev = []
    for p in PIDS:
        ev += [x("aiuMalloc", float(i), pid=p) for i in range(51)]
        ev += [meta("process_name", "mock-spyre-job", p),
               {"ph": "M", "name": "process_labels", "pid": p, "tid": 0, "ts": 0,
                "args": {"labels": "/b/mock-spyre-job --quiet"}}]
    t = {"traceEvents": ev, "spyreSampling": {"systemWide": True}}
    argv = ["system-wide", "@t"] + [str(p) for p in PIDS]
    yield "system-wide", argv, {"t": t}, None
    yield "system-wide: a job barely traced", argv, {"t": broken(
        t, lambda d: d["traceEvents"].pop(0))}, "runtime spans of pid 100"
    yield "system-wide: a job unnamed", argv, {"t": broken(
        t, lambda d: d["traceEvents"][51]["args"].update(name="?"))}, "process name of pid 100"
    yield "system-wide: a job unlabelled", argv, {"t": broken(
        t, lambda d: d["traceEvents"][-1]["args"].update(labels=""))}, "labels of pid 200"
    yield "system-wide: not said system-wide", argv, {"t": broken(
        t, lambda d: d["spyreSampling"].update(systemWide=False))}, "systemWide"

    calls = {"a": 20000, "b": 16000, "c": 30000, "small": 100, "spyre::alloc": 500}
    ps = [probe("A", "a", hits=20000, events=2000, sampledOut=18000),
          probe("B", "b", hits=16000, events=1700, sampledOut=14300),
          probe("C", "c", hits=30000, events=2900, sampledOut=27100),
          probe("small", hits=100, events=5, sampledOut=95),
          probe("spyreAllocate(unsigned long)", "spyre::alloc", sharedName="spyreAllocate",
                hits=500, events=500)]
    t = {"traceEvents": [], "spyreProbes": ps}
    c = {"calls": calls}
    argv = ["sampled", "@t", "@c", "10"]
    yield "sampled", argv, {"t": t, "c": c}, None
    yield "sampled: the ledger's probe sampled", argv, {"t": broken(
        t, lambda d: d["spyreProbes"][4].update(events=50, sampledOut=450)), "c": c}, \
        "an unsampled probe sampled"
    yield "sampled: a call unseen", argv, {"t": broken(
        t, lambda d: by_name(d, "A").update(hits=19999)), "c": c}, "want every call"
    yield "sampled: a call neither recorded nor sampled out", argv, {"t": broken(
        t, lambda d: by_name(d, "B").update(sampledOut=14299)), "c": c}, \
        "events + sampled out"
    yield "sampled: 1 in 5 recorded", argv, {"t": broken(
        t, lambda d: by_name(d, "C").update(events=6000, sampledOut=24000)), "c": c}, \
        "C recorded 0.2000"
    yield "sampled: too few probes to judge", argv, {"t": broken(
        t, lambda d: d["spyreProbes"].pop(0)), "c": c}, "want 3 at least"

    exact = ["spyreAllocate", "spyreFree", "aiuCreateComputeParams", "aiuDataTransferHtoD",
             "aiuDataTransferDtoH", "aiuDmaCallback"]
    ps = [probe(n, hits=300, events=300) for n in exact]
    ps += [probe("aiuLaunchComputeStream", hits=50000, events=12000, dropsRateCap=38000)]
    t = {"traceEvents": [], "spyreProbes": ps}
    argv = ["rate-cap", "@t", "3500000000", "2000"]     # 4 s: 1.25 x 2000 x 6 = 15000
    yield "rate-cap", argv, {"t": t}, None
    yield "rate-cap: a ledger probe capped", argv, {"t": broken(
        t, lambda d: by_name(d, "spyreFree").update(dropsRateCap=1, events=299))}, \
        "an uncapped probe capped"
    yield "rate-cap: an uncapped probe missing", argv, {"t": broken(
        t, lambda d: d["spyreProbes"].pop(0))}, "uncapped probes"
    yield "rate-cap: never applied", argv, {"t": broken(
        t, lambda d: by_name(d, "aiuLaunchComputeStream").update(dropsRateCap=0))}, \
        "the cap never applied"
    yield "rate-cap: over the cap", argv, {"t": broken(
        t, lambda d: by_name(d, "aiuLaunchComputeStream").update(events=15001))}, \
        "events over the cap"

    prom = ("# HELP spyre_window_duration_seconds x\nspyre_window_duration_seconds 1.02\n"
            "spyre_window_attach_seconds 0.05\nspyre_window_detach_seconds 0.01\n"
            'spyre_events_total{pid="1"} 5\n')
    log = ("window 1: attach 50.1 ms, traced 1.01 s, detach 9.0 ms\n"
           "window 2: attach 40.0 ms, traced 1.20 s, detach 8.0 ms\n")
    argv = ["window-times", "@p", "@l"]
    yield "window-times", argv, {"p": prom, "l": log}, None
    yield "window-times: a window too long", argv, {"p": prom.replace(" 1.02", " 1.7"),
                                                   "l": log}, "spyre_window_duration_seconds"
    yield "window-times: no attach time", argv, {"p": prom.replace(" 0.05", " 0"), "l": log}, \
        "attach or detach"
    yield "window-times: a window cut short in the log", argv, {
        "p": prom, "l": log.replace("1.20 s", "0.50 s")}, "a window's traced time"

    yield "no-target-pid", ["no-target-pid", "@t"], {"t": {"spyreStats": {"events": 1}}}, None
    yield "no-target-pid: one", ["no-target-pid", "@t"], {
        "t": {"spyreStats": {"targetPid": 2**64 - 1}}}, "targetPid"

    ev = [x("aiuLaunchComputeStream", float(i), pid=p, correlation=p * 10 + i)
          for p in PIDS for i in range(5)]
    t = {"traceEvents": ev}
    argv = ["job-ids", "@t"] + [str(p) for p in PIDS]
    yield "job-ids", argv, {"t": t}, None
    yield "job-ids: an id of two jobs", argv, {"t": broken(
        t, lambda d: d["traceEvents"][7]["args"].update(correlation=1000))}, \
        "share a correlation"
    yield "job-ids: a job idle", argv, {"t": broken(
        t, lambda d: d["traceEvents"].pop())}, "launched nothing"


def prom_cases():
    keys = {"spyre_trace_events_total": "events", "spyre_probe_hits_total": "probeHits",
            'spyre_calls_dropped_total{reason="ring_full"}': "dropsRingFull",
            'spyre_calls_dropped_total{reason="unreadable"}': "recordsUnreadable",
            "spyre_device_spans_dropped_total": "deviceOverflow",
            "spyre_unwound_calls_total": "unwound"}
    wins = [{"events": 100, "probeHits": 120, "dropsRingFull": 20, "recordsUnreadable": 0,
             "deviceOverflow": 1, "unwound": 2},
            {"events": 50, "probeHits": 50, "dropsRingFull": 0, "recordsUnreadable": 1,
             "deviceOverflow": 0, "unwound": 0}]
    prom = "# TYPE spyre_trace_events_total counter\n" + "".join(
        "%s %d\n" % (k, sum(w[v] for w in wins)) for k, v in keys.items())
    files = {"out/w1.json": {"spyreStats": wins[0], "traceEvents": []},
             "out/w2.json": {"spyreStats": wins[1], "traceEvents": []}}
    argv = ["prom-counts", "@p", "@out"]
    yield "prom-counts", argv, dict(files, p=prom), None
    yield "prom-counts: a window left out", argv, dict(
        files, p=prom.replace("spyre_trace_events_total 150", "spyre_trace_events_total 100")), \
        "the windows' summed"
    yield "prom-counts: a series missing", argv, dict(
        files, p=prom.replace("spyre_unwound_calls_total 2\n", "")), "series missing"
    zero = {k: dict(v, spyreStats=dict(v["spyreStats"], events=0)) for k, v in files.items()}
    yield "prom-counts: nothing traced", argv, dict(zero, p=prom.replace(
        "spyre_trace_events_total 150", "spyre_trace_events_total 0")), "no event"
