#!/usr/bin/env python3
"""Checks a trace of tests/progs/tailjob (tests/e2e/tailcall.bats), whose functions leave through
tail jumps, against the job's record of each call (DONE: per function its return values "ret",
the callee's work "work_ns", sizes "bytes"):

  spans TRACE DONE N OUT   the tail-calling launches and tail_wait: one span per call (N, tail_wait
      6N), none ended at a jump, unwound or unmatched, each jump followed (tail_launch_cond's jne
      and jmp: 2), the caller's return value in the job's order, covering the callee's work; the
      conditional one's calls half by each branch, each with its branch's id; the jump through a
      register not followed: ended at the jump N times, the reason in the metadata and in the
      summary (OUT), the jump into free the only other; the traced callee nested in its caller,
      ending at its return with the same value, three times its size
  device TRACE N   launches with key=ret: a device span per launch (5N), the same correlations
  launch TRACE DONE   -- CMD: the launches' return values the job's, in order
  alloc TRACE DONE N PID   an allocator and free that return through tail jumps: every pointer
      the job got booked and freed (none without a pointer, failed, missed or unknown), nothing
      live, the spans' pointers and sizes and the [memory] events the job's, in order; each
      probe's N calls all events, its jump followed, nothing unwound or ended at the jump

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse

from checklib import load, need, probes as probes_of, spans as spans_of

LAUNCHES = ("tail_launch", "tail_launch_traced", "tail_launch_plt", "tail_launch_chain",
            "tail_launch_cond")


def by_name(d, name):
    return sorted((e for e in spans_of(d) if e["name"] == name), key=lambda e: e["ts"])


def spans(a):
    d, truth, n = load(a.trace), load(a.done), a.n
    probes = probes_of(d)
    for name in LAUNCHES + ("tail_wait",):
        s = by_name(d, name)
        want = truth[name]
        calls = len(want["ret"])
        need(len(s) == calls == (6 * n if name == "tail_wait" else n),
             name + ": spans, want the job's calls", len(s), calls)
        p = probes[name]
        need(p["tailExits"] == 0 and p["unwound"] == 0 and p["unmatchedReturns"] == 0,
             name + ": ended at a jump, unwound or unmatched", p)
        # tail_launch_cond: its jne and the jmp after it
        jumps = 2 if name == "tail_launch_cond" else 1
        need(p.get("tailJumpsFollowed") == jumps and p.get("tailJumpsNotFollowed") == 0,
             name + ": jumps followed, want %d" % jumps, p)
        # the caller's value, in the job's order
        got = [e["args"].get("op") for e in s]
        need(got == want["ret"], name + ": return values, want the job's", got[:5],
             want["ret"][:5])
        # the span ends after the tail-called function's work: it covers it (us vs ns)
        for e, w in zip(s, want["work_ns"]):
            need(e["dur"] * 1000 >= w, name + ": a span shorter than the callee's work", e, w)
    # the conditional tail call: half the calls left by the taken jne (odd sizes: rt_enqueue's
    # ids), half by the jmp after the jne not taken (rt_enqueue_hi's); each its branch's id
    hi = 1 << 40
    cond = by_name(d, "tail_launch_cond")
    need(sum(e["args"]["op"] & hi != 0 for e in cond) == n // 2,
         "tail_launch_cond: calls by the jmp, want half", [e["args"] for e in cond[:4]])
    for e in cond:
        need((e["args"]["op"] & hi == 0) == (e["args"]["bytes"] % 2 == 1),
             "tail_launch_cond: an id of the other branch", e)
    # the jump into a function that leaves through a register: not followed, the span ends at
    # the jump as before, each such end counted, the reason in the metadata
    s, p = by_name(d, "tail_launch_indirect"), probes["tail_launch_indirect"]
    need(len(s) == n and p["tailExits"] == n and p["unwound"] == 0,
         "tail_launch_indirect: spans, ends at the jump", len(s), p)
    need(p.get("tailJumpsNotFollowed") == 1 and "register" in p.get("tailNotFollowedReason", ""),
         "tail_launch_indirect: its jump not followed, for the register", p)
    need(all(e["args"].get("op") == 0 for e in s), "tail_launch_indirect: a return value",
         s[:3])
    # ... and the summary names it, with its count and why
    out = open(a.out).read()
    line = "tail exits: tail_launch_indirect: %d calls ended at a tail jump not followed" % n
    need(line in out and "register" in out.split(line, 1)[1].split("\n", 1)[0],
         "the summary's tail exits of tail_launch_indirect", out)
    # the only other: the jump into free (every call of free would trap)
    need(out.count("tail exits: ") == 2, "tail exits in the summary, want 2", out)
    need("tail exits: tail_release: %d calls" % probes["tail_release"]["tailExits"] in out and
         "C/C++ runtime" in out.split("tail exits: tail_release: ", 1)[1].split("\n", 1)[0],
         "the summary's tail exits of tail_release", out)
    # the traced callee: inside its caller, ending at the same return, with the same value
    outer, inner = by_name(d, "tail_launch_traced"), by_name(d, "tail_submit")
    need(len(inner) == n, "tail_submit spans", len(inner))
    for o, i in zip(outer, inner):
        need(o["ts"] <= i["ts"] and i["ts"] + i["dur"] <= o["ts"] + o["dur"] + 0.002,
             "tail_submit not inside its caller", o, i)
        need(i["args"]["op"] == o["args"]["op"], "tail_submit's value, want its caller's", o, i)
        need(i["args"]["bytes"] == 3 * o["args"]["bytes"], "tail_submit's size", o, i)


def device(a):
    d, n = load(a.trace), a.n
    launches = [e for e in spans_of(d) if e["name"].startswith("tail_launch")]
    dev = [e for e in spans_of(d) if e.get("cat") == "kernel"]
    # tail_launch_indirect is not in this table
    need(len(launches) == 5 * n, "launches, want %d" % (5 * n), len(launches))
    need(len(dev) == len(launches), "device spans, want one per launch", len(dev),
         len(launches), d.get("spyreStats"))
    corr = sorted(e["args"].get("correlation") for e in launches)
    need(corr == sorted(e["args"].get("correlation") for e in dev),
         "launches and device spans differ")


def launch(a):
    d, truth = load(a.trace), load(a.done)
    for name in LAUNCHES:
        s = by_name(d, name)
        need([e["args"].get("op") for e in s] == truth[name]["ret"],
             name + ": return values, want the job's", s[:2])


def alloc(a):
    d, n, pid = load(a.trace), a.n, a.pid
    truth = load(a.done)["tail_alloc"]
    num = lambda v: int(v, 16) if isinstance(v, str) else v
    need(len(truth["ret"]) == n and len(set(truth["ret"])) > 1, "the job's record", truth)
    m = d["spyreMemory"]
    need(m["allocsWithoutPointer"] == 0 and m["nestedAllocs"] == 0,
         "allocations without a pointer or nested", m)
    procs = m["processes"]
    need([x["pid"] for x in procs] == [pid], "processes, want the job alone", procs)
    devs = procs[0]["devices"]
    need([x["device"] for x in devs] == [0], "devices, want 0 alone", devs)
    al = devs[0]["allocated"]
    # the job's own calls: every allocation booked with its pointer, every free found its block
    want = {"allocs": n, "frees": n, "failedAllocs": 0, "freesMissed": 0, "unknownFrees": 0,
            "bytesAllocated": sum(truth["bytes"]), "bytesFreed": sum(truth["bytes"]),
            "current": 0}
    need({k: al.get(k) for k in want} == want, "the ledger, want the job's", al, want)
    need(procs[0]["liveBlocks"] == [], "live blocks", procs[0]["liveBlocks"])
    # the pointers the job got, in its order, in the spans (ret=) and the profiler's events
    ev = sorted((e for e in d["traceEvents"] if e.get("ph") in ("X", "i")),
                key=lambda e: e["ts"])
    s = [e for e in ev if e["name"] == "tail_alloc"]
    need([num(e["args"].get("ptr")) for e in s] == truth["ret"],
         "tail_alloc's pointers, want the job's", s[:2], truth["ret"][:2])
    need([e["args"].get("bytes") for e in s] == truth["bytes"], "tail_alloc's sizes", s[:2])
    mem = [e["args"] for e in ev if e["name"] == "[memory]"]
    booked = [(x["Addr"], x["Bytes"]) for x in mem if x["Bytes"] > 0]
    freed = [(x["Addr"], -x["Bytes"]) for x in mem if x["Bytes"] < 0]
    need(booked == freed == list(zip(truth["ret"], truth["bytes"])),
         "[memory] events, want the job's blocks booked and freed", booked[:2], freed[:2])
    probes = probes_of(d)
    for name in ("tail_alloc", "tail_free"):
        p = probes[name]
        need(p["hits"] == p["events"] == n, name + ": hits and events, want %d" % n, p)
        need(p.get("tailJumpsFollowed") == 1 and p["tailExits"] == 0 and p["unwound"] == 0,
             name + ": its jump followed", p)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("spans")
    c.add_argument("trace")
    c.add_argument("done")
    c.add_argument("n", type=int)
    c.add_argument("out")
    c.set_defaults(fn=spans)
    c = sub.add_parser("device")
    c.add_argument("trace")
    c.add_argument("n", type=int)
    c.set_defaults(fn=device)
    c = sub.add_parser("launch")
    c.add_argument("trace")
    c.add_argument("done")
    c.set_defaults(fn=launch)
    c = sub.add_parser("alloc")
    c.add_argument("trace")
    c.add_argument("done")
    c.add_argument("n", type=int)
    c.add_argument("pid", type=int)
    c.set_defaults(fn=alloc)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
