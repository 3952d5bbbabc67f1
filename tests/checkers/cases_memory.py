"""check_memory.py (memory.bats): a made-up ledger, good, then one break per promise."""
from craft import broken, meta, probe, x

CHECKER = "check_memory.py"
PID = 100
INNER = "spyreAllocate(unsigned long, flex::AllocationDirective const&)"
ALLOC, FREE = "spyre::SpyreAllocator::allocate", "spyre::SpyreAllocator::ReportAndDelete"


def ledger_trace():
    """3 allocations of 100 bytes, 2 freed: 100 leaked, peak 300 at ts 3"""
    ev, cur = [], 0
    for i, (addr, b) in enumerate([(1, 100), (2, 100), (3, 100), (1, -100), (2, -100)]):
        cur += b
        ev.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]",
                   "pid": PID, "tid": PID + 1, "ts": float(i + 1),
                   "args": {"Device Type": 20, "Device Id": 0, "Addr": addr * 0x1000, "Bytes": b,
                            "Total Reserved": cur, "Total Allocated": cur}})
        ev.append({"ph": "C", "name": "Spyre memory (device 0)", "pid": PID, "tid": 0,
                   "ts": float(i + 1), "args": {"allocated": cur}})
    led = {"device": 0, "allocated": {
        "allocs": 3, "frees": 2, "bytesAllocated": 300, "bytesFreed": 200, "unknownFrees": 0,
        "failedAllocs": 0, "freesMissed": 0, "current": 100, "peak": 300, "peakTs": 3.0}}
    t = {"traceEvents": ev, "spyreMemory": {"nestedAllocs": 3, "processes": [
        {"pid": PID, "devices": [led]}]}}
    c = {"pid": PID, "calls": {ALLOC: 4, FREE: 2}, "thrown": {ALLOC: 0}, "emptyAllocs": 1,
         "bytes": {"allocated": 300}, "leaked": [{"addr": "0x3000", "bytes": 100}]}
    return t, c


def mev(d, i):
    return [e for e in d["traceEvents"] if e["name"] == "[memory]"][i]


def led(d):
    return d["spyreMemory"]["processes"][0]["devices"][0]["allocated"]


def ledger_cases():
    t, c = ledger_trace()
    argv = ["ledger", "@t", "@c"]
    yield "ledger", argv, {"t": t, "c": c}, None

    # a free more of a block from before the attach: the job's 3 frees, the ledger's 2
    c3 = broken(c, lambda d: d["calls"].update({FREE: 3}))
    yield "ledger --unknown-frees", argv + ["--unknown-frees", "1"], {"t": broken(
        t, lambda d: led(d).update(unknownFrees=1)), "c": c3}, None
    yield "ledger: an unknown free uncounted", argv + ["--unknown-frees", "1"], \
        {"t": t, "c": c3}, "the ledger, want the job's"
    yield "ledger: the empty allocation nested", argv, {"t": broken(
        t, lambda d: d["spyreMemory"].update(nestedAllocs=4)), "c": c}, "nestedAllocs"
    yield "ledger: another process", argv, {"t": broken(
        t, lambda d: d["spyreMemory"]["processes"].append({"pid": 7, "devices": []})), "c": c}, \
        "the job alone"
    yield "ledger: a failed allocation", argv, {"t": broken(
        t, lambda d: led(d).update(failedAllocs=1)), "c": c}, "the ledger, want the job's"
    yield "ledger: bytes freed of an unknown block", argv, {"t": broken(
        t, lambda d: led(d).update(bytesFreed=250)), "c": c}, "less freed"
    yield "ledger: an event lost", argv, {"t": broken(
        t, lambda d: d["traceEvents"].pop(0)), "c": c}, "[memory] events"
    yield "ledger: an event on the main thread", argv, {"t": broken(
        t, lambda d: mev(d, 1).update(tid=PID)), "c": c}, "a [memory] event's thread"
    yield "ledger: an event process-scoped", argv, {"t": broken(
        t, lambda d: mev(d, 1).update(s="p")), "c": c}, "thread-scoped"
    yield "ledger: another device type", argv, {"t": broken(
        t, lambda d: mev(d, 2)["args"].update({"Device Type": 1})), "c": c}, "device or address"
    yield "ledger: reserved apart from allocated", argv, {"t": broken(
        t, lambda d: mev(d, 2)["args"].update({"Total Reserved": 400})), "c": c}, "totals"
    yield "ledger: bytes not adding up", argv, {"t": broken(
        t, lambda d: mev(d, 4)["args"].update(Bytes=-90)), "c": c}, "do not add up"

    def counter_lost(d):
        d["traceEvents"] = [e for e in d["traceEvents"] if not (e["ph"] == "C" and e["ts"] == 2)]
    yield "ledger: a counter sample lost", argv, {"t": broken(t, counter_lost), "c": c}, \
        "counter samples"

    def counter_end(d):
        [e for e in d["traceEvents"] if e["ph"] == "C"][-1]["args"]["allocated"] = 0
    yield "ledger: the counter ending at 0", argv, {"t": broken(t, counter_end), "c": c}, \
        "ending at the leak"
    yield "ledger: the peak elsewhere", argv, {"t": broken(
        t, lambda d: led(d).update(peak=400)), "c": c}, "counter's peak"
    yield "ledger: the peak's time", argv, {"t": broken(
        t, lambda d: led(d).update(peakTs=2.5)), "c": c}, "the peak's time"


def other_cases():
    t = {"traceEvents": [], "spyreMemory": {"processes": [{"liveGroups": [], "devices": [
        {"allocated": {"peak": 4 * 100, "current": 0, "bytesAllocated": 3 * 5 * 2 * 100}}]}]}}
    argv = ["sampled", "@t", "3", "5", "100"]
    yield "sampled", argv, {"t": t}, None
    yield "sampled: a peak of 7 buffers", argv, {"t": broken(
        t, lambda d: led(d).update(peak=700))}, "peak, want 2..6"
    yield "sampled: an allocation skipped", argv, {"t": broken(
        t, lambda d: led(d).update(bytesAllocated=2900))}, "bytes allocated"
    yield "sampled: a live group", argv, {"t": broken(
        t, lambda d: d["spyreMemory"]["processes"][0]["liveGroups"].append({"count": 1}))}, \
        "live groups"

    ev = []
    for name in ("spyreAllocate(unsigned long)", INNER):
        ev += [x(name, float(i), bytes=0 if i < 20 else 12345) for i in range(140)]
    t = {"traceEvents": ev, "spyreMemory": {"nestedAllocs": 120, "processes": [{"devices": [
        {"allocated": {"allocs": 120, "frees": 120, "failedAllocs": 0}}]}]},
         "spyreProbes": [probe("spyreAllocate(unsigned long)", ALLOC, events=140),
                         probe(INNER, ALLOC, events=140)]}
    c = {"calls": {ALLOC: 140}}
    argv = ["empty", "@t", "@c"]
    yield "empty", argv, {"t": t, "c": c}, None
    yield "empty: a failed allocation", argv, {"t": broken(
        t, lambda d: led(d).update(failedAllocs=20)), "c": c}, "allocs, frees, failed"
    yield "empty: one overload untraced", argv, {"t": broken(
        t, lambda d: d["spyreProbes"].pop()), "c": c}, "both overloads"

    def sized(d):
        d["traceEvents"][3]["args"]["bytes"] = 12345
    yield "empty: an empty one with a size", argv, {"t": broken(t, sized), "c": c}, \
        "20 of size 0"

    ev, ps = [], []
    for name, sym in (("aiuMalloc", "flex::FlexAllocator::allocate"), (INNER, ALLOC)):
        ev += [x(name, float(i), bytes=2**64 - 1, unwound=True) for i in range(20)]
        ev += [x(name, 100.0 + i, bytes=12345, ptr="0x1") for i in range(60)]
        ps.append(probe(name, sym, events=80, unwound=20))
    t = {"traceEvents": ev, "spyreProbes": ps, "spyreMemory": {"processes": [{"devices": [
        {"allocated": {"peak": 4 * 12345, "failedAllocs": 0}}]}]}}
    c = {"thrown": {"flex::FlexAllocator::allocate": 20, ALLOC: 20},
         "calls": {"flex::FlexAllocator::allocate": 80, ALLOC: 80}}
    argv = ["oom", "@t", "@c"]
    yield "oom", argv, {"t": t, "c": c}, None
    yield "oom: a throw returned", argv, {"t": broken(
        t, lambda d: d["traceEvents"][0]["args"].pop("unwound")), "c": c}, \
        "aiuMalloc: unwound spans"
    yield "oom: a thrown call's pointer", argv, {"t": broken(
        t, lambda d: d["traceEvents"][85]["args"].update(ptr="0x0")), "c": c}, \
        "a thrown call's args"
    yield "oom: a call lost", argv, {"t": broken(
        t, lambda d: d["traceEvents"].pop()), "c": c}, "spans, want the job's calls"
    yield "oom: the probe said open", argv, {"t": broken(
        t, lambda d: d["spyreProbes"][0].update(noReturn=1)), "c": c}, "its probe's counts"
    yield "oom: booked as failed", argv, {"t": broken(
        t, lambda d: led(d).update(failedAllocs=20)), "c": c}, "peak or failed"

    blocks = [{"addr": hex(0x1000 * (i + 1)), "bytes": 20000, "probe": INNER, "ts": float(i),
               "tid": 101} for i in range(5)]
    t = {"traceEvents": [meta("thread_name", "train-0", PID, 101)],
         "spyreMemory": {"processes": [{"liveBlocks": blocks, "liveBlocksNotListed": 0,
                                        "liveGroups": [{"count": 5, "bytes": 20000,
                                                        "probe": INNER, "thread": "train-0"}]}]}}
    c = {"leaked": [{"addr": b["addr"], "bytes": 20000} for b in blocks]}
    argv = ["leak", "@t", "@c"]
    p0 = lambda d: d["spyreMemory"]["processes"][0]
    yield "leak", argv, {"t": t, "c": c}, None
    yield "leak: a block freed shown live", argv, {"t": t, "c": broken(
        c, lambda d: d["leaked"].pop())}, "the job's 5 leaks"
    yield "leak: booked by the outer overload", argv, {"c": c, "t": broken(
        t, lambda d: p0(d)["liveBlocks"][2].update(probe="spyreAllocate(unsigned long)"))}, \
        "a live block's probe"
    yield "leak: newest first", argv, {"c": c, "t": broken(
        t, lambda d: p0(d)["liveBlocks"].reverse())}, "oldest first"
    yield "leak: another thread", argv, {"c": c, "t": broken(
        t, lambda d: p0(d)["liveBlocks"][0].update(tid=102))}, "want train-0"
    yield "leak: two groups", argv, {"c": c, "t": broken(
        t, lambda d: p0(d)["liveGroups"].append({"count": 0}))}, "one of 5 x 20000"
    yield "leak: the group's thread", argv, {"c": c, "t": broken(
        t, lambda d: p0(d)["liveGroups"][0].update(thread="train-1"))}, "probe or thread"
    yield "leak: blocks unlisted", argv, {"c": c, "t": broken(
        t, lambda d: p0(d).update(liveBlocksNotListed=1))}, "not listed"


def cases():
    yield from ledger_cases()
    yield from other_cases()
