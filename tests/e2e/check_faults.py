#!/usr/bin/env python3
"""Checks a trace of a job that faulted while traced (tests/e2e/faults.bats) against what the
job did: tests/progs/flexhelper.cpp's modes, or the mock job's counts. One subcommand per fault:

  fork TRACE PARENT CHILD [--follow]   flexhelper fork 40 25: the parent's 40 calls and none of
      the child's (no event of its pid or tid, no drop), or with --follow both, 40 and 25
  forkdev TRACE PARENT CHILD   flexhelper forkdev 30: 90 launches each with a correlation of
      its own, none shared between the two processes (their ids are the tracer's)
  runtime TRACE [--pid PID] NAME=N ...   the runtime calls (privateuse1_runtime spans) are
      exactly these; with --pid, every span is PID's
  late-threads TRACE PID   flexhelper threads 3 20: three threads started after attach, named
      late-0..2, each with its 20 allocate, malloc, free and get calls; none on the main thread
  renamed TRACE PID --threads N   mock --rename-at: the name a loader keeps for each thread with
      spans (its last thread_name, Perfetto's rule): the main thread mock-spyre-job, N threads
      renamed-0..7, no other
  untraced TRACED UNTRACED   a job's counts after the tracer was killed equal an untraced run's
      (checksum and calls), bar the polled query calls, at least 60 of them
  ring-full TRACE COUNTS   a starved consumer: the only loss is a full ring, over 1000 of them,
      the stats' drops at least that, over 10000 events
  tail-call TRACE MODE   flexhelper tail 30: outer jumps into inner; 30 of each, no unmatched
      return, inner inside outer, both ending at inner's return (50 us); MODE sites: the jump is
      followed, nothing ends at it and nothing is unwound
  longjmp TRACE   flexhelper longjmp 40: 39 unwound events with no args but "unwound", then the
      last call as a noReturn instant after them; nothing too deep
  deepjump TRACE DONE   flexhelper deepjump 100 20 150: 2150 calls, 150 returned, the 16 outer
      calls of each chain (depth 20 down to 5) unwound, 4 per chain too deep
  throw TRACE [--uretprobes]   flexhelper throw 40: 80 allocations thrown through; with return
      sites each an unwound event (size, no pointer) ending at its catch, inside tryAlloc for the
      first 40; with --uretprobes (the unwind guard) the unwinder seen 80 times and every throw's
      call accounted unwound or noReturn
  inside TRACE --code N --calls M   flexhelper inside M N: the call running when tracing ended
      (stopped, or its process exited in it) an instant at its entry with its code and
      noReturn, after the M calls before it
  no-stack TRACE COUNTS   SPYRE_TEST_NO_STACK_EVERY: every call a hit, each an event or a
      dropsNoStack, none too deep or ring-full, over 100 without a stack
  pid-reused TRACE PID NAME IMPOSTOR   (hostile.bats) the job ended and its pid went to another
      program before the names were read: PID's process named NAME, no process or thread
      name of it naming the IMPOSTOR

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse
import collections
import sys

from checklib import load, need, probes, spans

RUNTIME = "privateuse1_runtime"
# allocate(size_t, directive): allocate's overloads are named by their parameters
ALLOC_DIR = "spyreAllocate(unsigned long, flex::AllocationDirective const&)"


def runtime_calls(d, key=lambda e: e["name"]):
    return collections.Counter(key(e) for e in spans(d) if e.get("cat") == RUNTIME)


def fork(a):
    d = load(a.trace)
    parent, child = a.parent, a.child
    x = spans(d)
    if a.follow:
        n = collections.Counter(e["pid"] for e in x if e["name"] == "aiuGetNumDevices")
        need(n == {parent: 40, child: 25}, "aiuGetNumDevices per pid, want parent 40 child 25",
             dict(n))
        return
    need(all(e["pid"] == parent for e in x), "a span not of the parent",
         {(e["pid"], e["tid"]) for e in x})
    need(not any(e.get("tid") == child or e.get("pid") == child for e in d["traceEvents"]),
         "an event of the child")
    n = sum(1 for e in x if e["name"] == "aiuGetNumDevices")
    need(n == 40, "aiuGetNumDevices spans, want the parent's 40", n)
    p = probes(d)["aiuGetNumDevices"]
    need(p["hits"] == 40 and p["unmatchedReturns"] == 0, "aiuGetNumDevices probe", p)
    need(d["spyreStats"]["drops"] == 0, "drops", d["spyreStats"])


def forkdev(a):
    d = load(a.trace)
    corr = {p: {e["args"]["correlation"] for e in spans(d) if e["pid"] == p and
                e["name"].startswith(("aiuDataTransfer", "aiuLaunchCompute"))}
            for p in (a.parent, a.child)}
    # 30 rounds of H2D, compute, D2H each
    need(len(corr[a.parent]) == 90 and len(corr[a.child]) == 90,
         "launch correlations per pid, want 90 each", {p: len(c) for p, c in corr.items()})
    shared = corr[a.parent] & corr[a.child]
    need(not shared, "correlations shared by parent and child", len(shared))


def runtime(a):
    d = load(a.trace)
    want = {k: int(v) for k, v in (w.rsplit("=", 1) for w in a.want)}
    if a.pid is not None:
        pids = {e["pid"] for e in spans(d)}
        need(pids == {a.pid}, "span pids, want only %d" % a.pid, pids)
    n = runtime_calls(d)
    need(n == want, "runtime calls", dict(n))


def late_threads(a):
    d = load(a.trace)
    names = {e["tid"]: e["args"]["name"] for e in d["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    n = runtime_calls(d, key=lambda e: (e["tid"], e["name"]))
    tids = {t for t, _ in n}
    need(len(tids) == 3 and a.pid not in tids, "threads with runtime calls, want 3 late ones",
         dict(n))
    need(sorted(names.get(t, "-") for t in tids) == ["late-0", "late-1", "late-2"], "thread names",
         names)
    for t in tids:
        for f in (ALLOC_DIR, "aiuMalloc", "spyreFree", "aiuGetNumDevices"):
            need(n[(t, f)] == 20, "calls of %s on thread %d, want 20" % (f, t), n[(t, f)])


def renamed(a):
    d = load(a.trace)
    last = {}
    for e in d["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == a.pid:
            if e["tid"] not in last or e["ts"] >= last[e["tid"]][0]:
                last[e["tid"]] = (e["ts"], e["args"]["name"])
    kept = {t: last.get(t, (0, "-"))[1]
            for t in {e["tid"] for e in spans(d) if e["pid"] == a.pid}}
    print("\n".join("%d %s" % tn for tn in sorted(kept.items())))
    # the main thread (shutdownRuntime) keeps its name
    need(kept.get(a.pid) == "mock-spyre-job", "the main thread's name", kept.get(a.pid))
    ren = [t for t, v in kept.items() if v in ["renamed-%d" % i for i in range(8)]]
    need(len(ren) == a.threads, "threads renamed-0..7, want %d" % a.threads, kept)
    need(len(kept) == a.threads + 1, "threads with spans, want %d" % (a.threads + 1), kept)


def untraced(a):
    t, u = load(a.traced), load(a.untraced)
    # query() is polled until true: how often depends on timing, traced or not
    polled = ("flex::RuntimeStream::query", "spyre::SpyreStream::query")
    strip = lambda c: {k: v for k, v in c["calls"].items() if k not in polled}
    need(t["checksum"] == u["checksum"], "checksum, traced and untraced",
         t["checksum"], u["checksum"])
    need(strip(t) == strip(u), "calls, traced and untraced", t["calls"], u["calls"])
    need(t["calls"][polled[0]] >= 60, "query calls, want one per iteration at least",
         t["calls"])


def ring_full(a):
    d, calls = load(a.trace), load(a.counts)["calls"]
    total = 0
    for p in d["spyreProbes"]:
        if p["symbol"] not in calls:
            continue
        # the only loss here: a full ring (the job returns from every call, before the stop)
        need(p["sampledOut"] == p["dropsRateCap"] == p["noReturn"] == p["unwound"] == 0,
             "a loss other than a full ring", p)
        total += p["dropsRingFull"] + p["dropsTooDeep"] + p["dropsNoStack"]
    need(total > 1000, "drops, the ring did not overflow", total)
    need(d["spyreStats"]["drops"] >= total, "stats' drops under the probes'", d["spyreStats"],
         total)
    need(d["spyreStats"]["events"] > 10000, "events, want over 10000", d["spyreStats"])


def tail_call(a):
    d = load(a.trace)
    ev = spans(d)
    outer = sorted((e for e in ev if e["name"] == "outer"), key=lambda e: e["ts"])
    inner = sorted((e for e in ev if e["name"] == "inner"), key=lambda e: e["ts"])
    p = probes(d)
    need(len(outer) == 30 and len(inner) == 30, "outer and inner spans, want 30 each",
         len(outer), len(inner), p["outer"], p["inner"])
    need(p["outer"]["unmatchedReturns"] == 0 and p["inner"]["unmatchedReturns"] == 0,
         "unmatched returns", p["outer"], p["inner"])
    if a.mode == "sites":
        # the jump is followed: no call ends at it, none is left open
        need(p["outer"]["returnProbe"] == "sites" and p["outer"]["tailExits"] == 0,
             "outer ends at the jump", p["outer"])
        need(p["outer"]["unwound"] == 0, "outer unwound", p["outer"])
        need(p["inner"]["tailExits"] == 0 and p["inner"]["unwound"] == 0,
             "inner ends at the jump or unwound", p["inner"])
    for o, i in zip(outer, inner):
        # the inner call starts inside the outer one, and both end at the same return
        need(o["ts"] <= i["ts"] and i["ts"] + i["dur"] <= o["ts"] + o["dur"] + 0.002,
             "inner not inside outer", o, i)
        need(abs((o["ts"] + o["dur"]) - (i["ts"] + i["dur"])) < 50,
             "outer and inner end apart", o, i)


def longjmp(a):
    d = load(a.trace)
    p = probes(d)
    # each dead frame is found by the next traced call at its stack level or above (the
    # kernel's rule for its own return records); without that, the frames would pile up past
    # 16 and the calls after them would be dropped as too deep
    need(all(x["dropsTooDeep"] == 0 for x in p.values()), "calls dropped too deep",
         [x for x in p.values() if x["dropsTooDeep"]])
    # each call left is an event from its entry to where the thread was seen above it
    need(p["jump"]["hits"] == 40 and p["jump"]["events"] == 39, "jump hits and events",
         p["jump"])
    need(p["jump"]["unwound"] == 39 and p["jump"]["noReturn"] == 1, "jump unwound, noReturn",
         p["jump"])
    need(d["spyreStats"]["unwound"] == 39, "stats' unwound", d["spyreStats"])
    need(p["aiuGetNumDevices"]["events"] == 40 and p["aiuGetNumDevices"]["noReturn"] == 0,
         "aiuGetNumDevices", p["aiuGetNumDevices"])
    jump = [e for e in d["traceEvents"] if e.get("name") == "jump"]
    need(len(jump) == 40, "jump events", len(jump))
    # no probe arguments here: "unwound" alone
    need(all(e["ph"] == "X" and e["args"] == {"unwound": True} for e in jump[:39]),
         "the first 39 jumps, want unwound spans", jump[:3])
    # the last one: at its entry, after the 39th ended
    need(jump[39]["ph"] == "i" and jump[39]["args"] == {"noReturn": True},
         "the last jump, want a noReturn instant", jump[39])
    need(jump[39]["ts"] >= jump[38]["ts"] + jump[38]["dur"], "the last jump before the 39th's end",
         jump[38:])


def deepjump(a):
    d, calls = load(a.trace), load(a.done)["deepCalls"]
    p = d["spyreProbes"][0]
    need(calls == 2150 and p["hits"] == calls, "calls and hits, want 2150", calls, p)
    need(p["dropsTooDeep"] == 400 and p["unwound"] == 1600 and p["noReturn"] == 0,
         "too deep 400, unwound 1600, no return 0", p)
    need(p["events"] == 150 + 1600 and d["spyreStats"]["unwound"] == 1600,
         "events 1750, stats' unwound 1600", p, d["spyreStats"])
    ev = spans(d)
    back = [e for e in ev if "unwound" not in e["args"]]
    need(len(back) == 150, "spans that returned, want 150", len(back))
    need(all(e["args"] == {"depth": 1, "jump": 0, "r": 1} for e in back),
         "a returned span's args", [e["args"] for e in back][:3])
    # the 16 outer calls of each chain, with the depth each was called with (20 down to 5)
    left = collections.Counter(e["args"]["depth"] for e in ev if e["args"].get("unwound") is True)
    need(left == {k: 100 for k in range(5, 21)}, "unwound calls per depth", dict(left))
    need(all("r" not in e["args"] and e["args"]["jump"] == 1 for e in ev if "unwound" in e["args"]),
         "an unwound span's args",
         [e["args"] for e in ev if "unwound" in e["args"]][:3])


def throw(a):
    d = load(a.trace)
    p = probes(d)
    keys = ("tryAlloc", "aiuMalloc", "aiuGetNumDevices") + (("unwindRaise",) if a.uretprobes
                                                            else ())
    print({k: p.get(k) for k in keys})
    need(all(x["dropsTooDeep"] == 0 for x in p.values()), "frames leaked",
         [x for x in p.values() if x["dropsTooDeep"]])
    if a.uretprobes:
        need(p["unwindRaise"]["hits"] == 80, "unwindRaise hits, want 80", p["unwindRaise"])
        m = p["aiuMalloc"]
        need(m["hits"] == 80 and m["events"] == m["unwound"], "aiuMalloc hits, events", m)
        need(m["unwound"] + m["noReturn"] == 80, "aiuMalloc unwound + noReturn", m)
        # the guard gives back tryAlloc's return address too: its return is not seen
        need(p["tryAlloc"]["hits"] == 40, "tryAlloc hits", p["tryAlloc"])
        need(p["tryAlloc"]["unwound"] + p["tryAlloc"]["noReturn"] == 40,
             "tryAlloc unwound + noReturn", p["tryAlloc"])
        need(p["aiuGetNumDevices"]["events"] == 40, "aiuGetNumDevices events",
             p["aiuGetNumDevices"])
        return
    # the allocation that threw is in the trace: its size, "unwound", no return value
    need(p["aiuMalloc"]["hits"] == 80 and p["aiuMalloc"]["events"] == 80,
         "aiuMalloc hits, events", p["aiuMalloc"])
    need(p["aiuMalloc"]["unwound"] == 80 and p["aiuMalloc"]["noReturn"] == 0,
         "aiuMalloc unwound, noReturn", p["aiuMalloc"])
    need(p["catchBegin"]["hits"] == 80 and p["catchBegin"]["events"] == 0, "catchBegin",
         p["catchBegin"])
    m = [e for e in d["traceEvents"] if e.get("name") == "aiuMalloc"]
    need(len(m) == 80 and all(e["ph"] == "X" and e["args"]["unwound"] is True
                              and e["args"]["bytes"] == 2**64 - 1
                              and "ptr" not in e["args"] for e in m),
         "aiuMalloc events, want 80 unwound spans of 2^64-1 bytes, no ptr", len(m), m[:3])
    # the first 40 were caught in tryAlloc: each ends inside its tryAlloc span, at the catch
    t = [e for e in d["traceEvents"] if e.get("name") == "tryAlloc"]
    need(all(s["ts"] <= x["ts"] and x["ts"] + x["dur"] <= s["ts"] + s["dur"] + 0.002
             for x, s in zip(m[:40], t)), "an aiuMalloc not inside its tryAlloc",
         list(zip(m, t))[:3])
    # tryAlloc catches and returns normally: its return instruction is seen, its span kept
    need(p["tryAlloc"]["hits"] == 40 and p["tryAlloc"]["events"] == 40, "tryAlloc hits, events",
         p["tryAlloc"])
    need(p["tryAlloc"]["unwound"] == 0, "tryAlloc unwound", p["tryAlloc"])
    need(p["aiuGetNumDevices"]["events"] == 40, "aiuGetNumDevices events", p["aiuGetNumDevices"])
    need(d["spyreStats"]["unwound"] == 80 and d["spyreStats"]["targetSignal"] == 0,
         "stats' unwound and targetSignal", d["spyreStats"])


def inside(a):
    d = load(a.trace)
    p = probes(d)
    need(p["inside"]["hits"] == 1 and p["inside"]["noReturn"] == 1, "inside hits, noReturn",
         p["inside"])
    need(p["inside"]["events"] == 0 and p["inside"]["unwound"] == 0, "inside events, unwound",
         p["inside"])
    e = [x for x in d["traceEvents"] if x.get("name") == "inside"]
    need(len(e) == 1 and e[0]["ph"] == "i" and e[0]["args"] == {"code": a.code, "noReturn": True},
         "inside, want one noReturn instant with code %d" % a.code, e)
    # it was entered after the calls before it
    last = max(x["ts"] for x in d["traceEvents"] if x.get("name") == "aiuGetNumDevices")
    need(e[0]["ts"] > last, "inside entered before the last aiuGetNumDevices", e, last)
    need(p["aiuGetNumDevices"]["events"] == a.calls, "aiuGetNumDevices events",
         p["aiuGetNumDevices"])


def no_stack(a):
    d, calls = load(a.trace), load(a.counts)["calls"]
    total = 0
    for p in d["spyreProbes"]:
        want = calls.get(p["symbol"])
        if not want:
            continue
        need(p["dropsTooDeep"] == 0 and p["dropsRingFull"] == 0, "too deep or ring full", p)
        need(p["hits"] == want, "hits, want the job's calls", p, want)
        need(p["events"] + p["dropsNoStack"] == want, "events + no stack, want the job's calls",
             p, want)
        total += p["dropsNoStack"]
    need(total > 100, "calls without a stack, want over 100", total)


def pid_reused(a):
    d = load(a.trace)
    names = [(e["name"], e["args"]["name"]) for e in d["traceEvents"]
             if e.get("ph") == "M" and e.get("pid") == a.pid and
             e["name"] in ("process_name", "thread_name")]
    need(("process_name", a.name) in names, "process name, want " + a.name, names)
    need(not any(a.impostor in n for _, n in names), "a name of the pid's next owner", names)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("fork")
    c.add_argument("trace")
    c.add_argument("parent", type=int)
    c.add_argument("child", type=int)
    c.add_argument("--follow", action="store_true")
    c.set_defaults(fn=fork)
    c = sub.add_parser("forkdev")
    c.add_argument("trace")
    c.add_argument("parent", type=int)
    c.add_argument("child", type=int)
    c.set_defaults(fn=forkdev)
    c = sub.add_parser("runtime")
    c.add_argument("trace")
    c.add_argument("want", nargs="+", metavar="NAME=N")
    c.add_argument("--pid", type=int)
    c.set_defaults(fn=runtime)
    c = sub.add_parser("late-threads")
    c.add_argument("trace")
    c.add_argument("pid", type=int)
    c.set_defaults(fn=late_threads)
    c = sub.add_parser("renamed")
    c.add_argument("trace")
    c.add_argument("pid", type=int)
    c.add_argument("--threads", type=int, required=True)
    c.set_defaults(fn=renamed)
    c = sub.add_parser("untraced")
    c.add_argument("traced")
    c.add_argument("untraced")
    c.set_defaults(fn=untraced)
    c = sub.add_parser("ring-full")
    c.add_argument("trace")
    c.add_argument("counts")
    c.set_defaults(fn=ring_full)
    c = sub.add_parser("tail-call")
    c.add_argument("trace")
    c.add_argument("mode", choices=("sites", "nested"))
    c.set_defaults(fn=tail_call)
    c = sub.add_parser("longjmp")
    c.add_argument("trace")
    c.set_defaults(fn=longjmp)
    c = sub.add_parser("deepjump")
    c.add_argument("trace")
    c.add_argument("done")
    c.set_defaults(fn=deepjump)
    c = sub.add_parser("throw")
    c.add_argument("trace")
    c.add_argument("--uretprobes", action="store_true")
    c.set_defaults(fn=throw)
    c = sub.add_parser("inside")
    c.add_argument("trace")
    c.add_argument("--code", type=int, required=True)
    c.add_argument("--calls", type=int, required=True)
    c.set_defaults(fn=inside)
    c = sub.add_parser("no-stack")
    c.add_argument("trace")
    c.add_argument("counts")
    c.set_defaults(fn=no_stack)
    c = sub.add_parser("pid-reused")
    c.add_argument("trace")
    c.add_argument("pid", type=int)
    c.add_argument("name")
    c.add_argument("impostor")
    c.set_defaults(fn=pid_reused)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
