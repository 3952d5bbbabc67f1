#!/usr/bin/env python3
"""Checks the device memory ledger of a trace of the mock job (spyreMemory, the [memory] events,
the counter track; tests/e2e/memory.bats) against the job's counts file:

  ledger TRACE COUNTS [--unknown-frees N]   the ledger of the traced phase holds exactly what the
      job says it did: each allocation goes through both of torch-spyre's overloads,
      allocate(size_t) calling allocate(size_t, directive): the inner one books the block, the
      outer one returning it is nested (nestedAllocs), once per allocation; an allocation of
      0 bytes (a null DataPtr) is neither booked nor failed, one that threw not booked. One
      process, device 0: allocs, frees (N of them of blocks from before the attach: unknown,
      not in bytesFreed), bytes allocated, nothing failed or missed, the leaked bytes current;
      a [memory] event per allocation and free (thread-scoped instants of a thread of the job,
      device type 20, id 0, reserved = allocated), their bytes adding up to the leak; a counter
      sample per event, never negative, ending at the leak, its peak and time the ledger's
  sampled TRACE THREADS ITERS BYTES   --sample-every never skips the allocator: each thread
      holds its two buffers at most (2..3 x THREADS of them live at once), none at the end, every
      byte of THREADS x ITERS x 2 allocations counted, no live group
  empty TRACE COUNTS   --empty-every 3 over 2 x 30: 120 blocks, 120 nested, none failed; both
      overloads' 140 spans, 20 of them of size 0, 120 of 12345
  oom TRACE COUNTS   --oom-every 4 over 2 x 40: the 20 allocations that threw std::bad_alloc, in
      flex's allocate and torch-spyre's, each an unwound span with its size (2^64 - 1) and no
      pointer, the others 12345; none failed in the ledger
  leak TRACE COUNTS   --leak 5 of 20000 bytes: the live blocks are the job's leaked ones, oldest
      first, booked by the inner overload on thread train-0, in one group; none unlisted

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse

from checklib import load, need, spans

INNER = "spyreAllocate(unsigned long, flex::AllocationDirective const&)"


def device0(d):
    return d["spyreMemory"]["processes"][0]["devices"][0]["allocated"]


def ledger(a):
    d, c = load(a.trace), load(a.counts)
    unknown = a.unknown_frees
    calls = c["calls"]
    allocs = calls["spyre::SpyreAllocator::allocate"] - \
        c["thrown"]["spyre::SpyreAllocator::allocate"] - c["emptyAllocs"]
    frees = calls["spyre::SpyreAllocator::ReportAndDelete"] - unknown
    need(d["spyreMemory"]["nestedAllocs"] == allocs, "nestedAllocs, want the job's allocations",
         d["spyreMemory"]["nestedAllocs"], allocs)
    procs = d["spyreMemory"]["processes"]
    need([p["pid"] for p in procs] == [c["pid"]], "processes, want the job alone", procs)
    devs = procs[0]["devices"]
    need([x["device"] for x in devs] == [0], "devices, want 0 alone", devs)
    al = devs[0]["allocated"]
    leaked = sum(b["bytes"] for b in c["leaked"])
    want = {"allocs": allocs, "frees": frees, "bytesAllocated": c["bytes"]["allocated"],
            "unknownFrees": unknown, "failedAllocs": 0, "freesMissed": 0, "current": leaked}
    got = {k: al.get(k) for k in want}
    need(got == want, "the ledger, want the job's", got, want)
    # frees of blocks from before the attach are not in bytesFreed: only what it allocated
    need(al["bytesAllocated"] - al["bytesFreed"] == leaked,
         "bytes allocated less freed, want the leak", al)
    ev = d["traceEvents"]
    mem = [e for e in ev if e["name"] == "[memory]"]
    need(len(mem) == allocs + frees, "[memory] events, want an allocation or free each",
         len(mem), allocs, frees)
    for e in mem:
        need(e["ph"] == "i" and e.get("s") == "t" and e.get("cat") == "cpu_instant_event",
             "a [memory] event not a thread-scoped instant", e)
        need(e["pid"] == c["pid"] and e["tid"] != e["pid"], "a [memory] event's thread", e)
        x = e["args"]
        need(x["Device Type"] == 20 and x["Device Id"] == 0 and x["Addr"] > 0,
             "a [memory] event's device or address", e)
        need(x["Total Reserved"] == x["Total Allocated"] >= 0, "a [memory] event's totals", e)
    need(sum(e["args"]["Bytes"] for e in mem) == leaked, "[memory] bytes do not add up",
         sum(e["args"]["Bytes"] for e in mem), leaked)
    cnt = sorted((e for e in ev if e["ph"] == "C" and e["name"] == "Spyre memory (device 0)"),
                 key=lambda e: e["ts"])
    need(len(cnt) == allocs + frees, "counter samples, want one per event", len(cnt))
    need(all(e["tid"] == 0 and e["pid"] == c["pid"] for e in cnt), "a counter sample's track")
    vals = [e["args"]["allocated"] for e in cnt]
    need(vals and min(vals) >= 0 and vals[-1] == leaked, "counter, want >= 0, ending at the leak",
         vals[-5:])
    need(max(vals) == al["peak"], "counter's peak, want the ledger's", max(vals), al["peak"])
    peak_ts = [e["ts"] for e in cnt if e["args"]["allocated"] == al["peak"]][0]
    need(abs(peak_ts - al["peakTs"]) < 0.002, "the peak's time, want the ledger's", peak_ts,
         al["peakTs"])


def sampled(a):
    d = load(a.trace)
    al = device0(d)
    b = a.bytes
    # each thread holds its two buffers at most
    need(2 * b <= al["peak"] <= 2 * a.threads * b, "peak, want 2..%d buffers" % (2 * a.threads),
         al)
    need(al["current"] == 0 and al["bytesAllocated"] == a.threads * a.iters * 2 * b,
         "current or bytes allocated", al)
    need(d["spyreMemory"]["processes"][0]["liveGroups"] == [], "live groups",
         d["spyreMemory"]["processes"][0]["liveGroups"])


def empty(a):
    d, c = load(a.trace), load(a.counts)
    al = device0(d)
    need((al["allocs"], al["frees"], al["failedAllocs"]) == (120, 120, 0),
         "allocs, frees, failed, want 120, 120, 0", al)
    need(d["spyreMemory"]["nestedAllocs"] == 120, "nestedAllocs, want 120", d["spyreMemory"])
    # both overloads traced, one span each per call (140 = 120 + 20 empty), the empty ones with
    # their size 0
    sym = "spyre::SpyreAllocator::allocate"
    probes = [p for p in d["spyreProbes"] if p["symbol"] == sym]
    need(len(probes) == 2 and all(p["events"] == c["calls"][sym] == 140 for p in probes),
         "both overloads, 140 events each", probes)
    for p in probes:
        ev = [e for e in spans(d) if e["name"] == p["name"]]
        need(sum(e["args"].get("bytes") == 0 for e in ev) == 20, p["name"] + ": 20 of size 0")
        need(sum(e["args"].get("bytes") == 12345 for e in ev) == 120,
             p["name"] + ": 120 of 12345")


def oom(a):
    d, c = load(a.trace), load(a.counts)
    # the bad_alloc leaves flex's allocate (aiuMalloc) and torch-spyre's around it (the
    # ledger's probe, allocate(size_t, directive)): each call that threw is in both
    for sym, name in (("flex::FlexAllocator::allocate", "aiuMalloc"),
                      ("spyre::SpyreAllocator::allocate", INNER)):
        thrown = c["thrown"][sym]
        need(thrown == 2 * 10, "the job's throws, want 20", c["thrown"])
        m = [e for e in spans(d) if e.get("name") == name]
        bad = [e for e in m if e["args"].get("unwound") is True]
        # each one that threw: the size asked for, no pointer (it returned none); the last
        # one's too, as the next allocation of its thread finds it unwound
        need(len(bad) == thrown, name + ": unwound spans, want the throws", len(bad), thrown)
        need(all(e["args"].get("bytes") == 2**64 - 1 and "ptr" not in e["args"] for e in bad),
             name + ": a thrown call's args", bad[:2])
        need(all(e["args"].get("bytes") == 12345 for e in m if e not in bad),
             name + ": a returned call's size")
        need(len(m) == c["calls"][sym], name + ": spans, want the job's calls", len(m),
             c["calls"][sym])
        p = next(p for p in d["spyreProbes"] if p["name"] == name)
        need(p["unwound"] == thrown and p["noReturn"] == 0 and p["events"] == len(m),
             name + ": its probe's counts", p)
    al = device0(d)
    need(al["peak"] <= 6 * 12345 and al["failedAllocs"] == 0, "peak or failed allocations", al)


def leak(a):
    d, c = load(a.trace), load(a.counts)
    p = d["spyreMemory"]["processes"][0]
    want = sorted((int(b["addr"], 16), b["bytes"]) for b in c["leaked"])
    got = sorted((int(b["addr"], 16), b["bytes"]) for b in p["liveBlocks"])
    need(len(want) == 5 and got == want, "live blocks, want the job's 5 leaks", got, want)
    # allocate(size_t, directive), where the ledger books
    need(all(b["probe"] == INNER for b in p["liveBlocks"]), "a live block's probe",
         p["liveBlocks"])
    ts = [b["ts"] for b in p["liveBlocks"]]
    need(ts == sorted(ts), "live blocks not oldest first", ts)
    names = {e["tid"]: e["args"]["name"] for e in d["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    need({names.get(b["tid"]) for b in p["liveBlocks"]} == {"train-0"},
         "live blocks' threads, want train-0", p["liveBlocks"])
    g = p["liveGroups"]
    need(len(g) == 1 and g[0]["count"] == 5 and g[0]["bytes"] == 20000,
         "live groups, want one of 5 x 20000", g)
    need(g[0]["probe"] == INNER and g[0]["thread"] == "train-0", "the group's probe or thread", g)
    need(p["liveBlocksNotListed"] == 0, "live blocks not listed", p["liveBlocksNotListed"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("ledger")
    c.add_argument("trace")
    c.add_argument("counts")
    c.add_argument("--unknown-frees", type=int, default=0)
    c.set_defaults(fn=ledger)
    c = sub.add_parser("sampled")
    c.add_argument("trace")
    for f in ("threads", "iters", "bytes"):
        c.add_argument(f, type=int)
    c.set_defaults(fn=sampled)
    for name, fn in (("empty", empty), ("oom", oom), ("leak", leak)):
        c = sub.add_parser(name)
        c.add_argument("trace")
        c.add_argument("counts")
        c.set_defaults(fn=fn)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
