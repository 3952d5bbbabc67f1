#!/usr/bin/env python3
"""Checks a trace of tests/progs/throwjob.cpp or coroutine.c (tests/e2e/exceptions.bats) for
what its run promises beyond check_unwound.py's comparison with the job's counts:

  entries-only TRACE COUNTS   return sites off by the start-up self-test: the spyreStats
      reason says the probe "went on at the instruction after it"; each tj_ probe of the job's
      levels, catch, leaf, cancel and exit an entries-only probe (returnProbe "none", the
      self-test the reason), an event per call, none unwound
  exit-signal TRACE PID SIGNAL   (plain or gzip) the job killed by SIGNAL while traced:
      spyreStats.processExits lists it (exit code -1), targetSignal SIGNAL, targetExited
  attach-failed TRACE COUNTS NAME   NAME's probe failed to attach (attachFailed, no hit); the
      others traced: tj_leaf an event per call
  coroutines TRACE MODE   coroutine.c MODE (nested, interleaved) traced: no unmatched return;
      per function the spans that returned are its 200 rounds' calls (600 or 1200), no fewer
      hits; main_jump, left by longjmp, unwound 600 times when nested, never when interleaved;
      spyreStats.unwound is main_jump's
  other-stack TRACE   interleaved: co_step and co_yield, which cross co_resume, are on the
      thread's other-stack track (tid + 2^22, named "NAME TID: other stack 1"), co_resume and
      main_leaf on the thread's own
  abandoned TRACE COUNTS   coroutines abandoned inside traced calls: each function's 600 calls
      hit, none too deep or unmatched, each an event or open at the end; co_step and co_yield
      597 unwound and 3 open (the last round's), the others neither

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse

from checklib import load, need, probes, spans


def entries_only(a):
    d, c = load(a.trace), load(a.counts)
    need("went on at the instruction after it" in d["spyreStats"].get("returnSitesOff", ""),
         "returnSitesOff, want the self-test's reason", d["spyreStats"])
    p = {x["symbol"]: x for x in d["spyreProbes"]}
    for f in ("tj_level", "tj_catch", "tj_leaf", "tj_cancel_wait", "tj_exit_inside"):
        need(p[f]["returnProbe"] == "none" and "self-test" in p[f].get("entriesOnlyReason", ""),
             f + ": want entries only, for the self-test", p[f])
        need(p[f]["events"] == c["calls"][f], f + ": events, want the job's calls",
             p[f]["events"], c["calls"][f])
        need(p[f]["unwound"] == 0, f + ": unwound", p[f])


def exit_signal(a):
    st = load(a.trace)["spyreStats"]
    need({"pid": a.pid, "signal": a.signal, "exitCode": -1} in st.get("processExits", []),
         "processExits, want pid %d killed by signal %d" % (a.pid, a.signal), st)
    need(st["targetSignal"] == a.signal and st["targetExited"], "targetSignal, targetExited", st)


def attach_failed(a):
    d, c = load(a.trace), load(a.counts)
    p = probes(d)
    need(p[a.name].get("attachFailed") is True and p[a.name]["hits"] == 0,
         a.name + ": want attachFailed, no hit", p[a.name])
    need(p["tj_leaf"]["events"] == c["calls"]["tj_leaf"], "tj_leaf events, want the job's calls",
         p["tj_leaf"], c["calls"])


def coroutines(a):
    d = load(a.trace)
    p = probes(d)
    need(all(x["unmatchedReturns"] == 0 for x in p.values()), "unmatched returns",
         [x for x in p.values() if x["unmatchedReturns"]])
    want = {"co_step": 600, "co_yield": 600, "co_leaf": 600, "main_jump": 0}
    want.update({"co_run": 600, "main_leaf": 1200} if a.mode == "nested" else
                {"co_resume": 600, "main_leaf": 600})
    for name, n in want.items():
        need(p[name]["events"] - p[name]["unwound"] == n and p[name]["hits"] >= n,
             "%s: spans that returned, want %d" % (name, n), p[name])
    need(p["main_jump"]["unwound"] == (600 if a.mode == "nested" else 0), "main_jump unwound",
         p["main_jump"])
    need(d["spyreStats"]["unwound"] == p["main_jump"]["unwound"], "stats' unwound, want "
         "main_jump's", d["spyreStats"])


def other_stack(a):
    ev = load(a.trace)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    by = {}
    for e in spans({"traceEvents": ev}):
        if e.get("cat") != "kernel":
            by.setdefault(e["name"], set()).add(e["tid"])
    main = by.get("co_resume", set())
    need(len(main) == 1 and by.get("main_leaf") == main,
         "co_resume and main_leaf, want one thread's own track", by)
    tid = next(iter(main))
    other = tid + (1 << 22)
    need(by.get("co_step") == {other} and by.get("co_yield") == {other},
         "co_step and co_yield, want the other-stack track %d" % other, by)
    need(names.get(other) == "%s %d: other stack 1" % (names.get(tid), tid),
         "the other-stack track's name", names)


def abandoned(a):
    d, c = load(a.trace), load(a.counts)["calls"]
    p = probes(d)
    for name in ("co_resume", "co_step", "co_leaf", "co_yield", "main_leaf"):
        x = p[name]
        need(x["hits"] == c[name] == 600 and x["dropsTooDeep"] == 0,
             name + ": hits, want the job's 600, none too deep", x, c.get(name))
        need(x["unmatchedReturns"] == 0, name + ": unmatched returns", x)
        need(x["events"] + x["noReturn"] == x["hits"], name + ": events + open, want hits", x)
    # each round leaves co_step and co_yield open on each coroutine's stack; the next round's
    # co_step on that stack finds them over (unwound); the last round's 3 stay open
    for name in ("co_step", "co_yield"):
        need(p[name]["unwound"] == 597 and p[name]["noReturn"] == 3,
             name + ": want 597 unwound, 3 open", p[name])
    for name in ("co_resume", "co_leaf", "main_leaf"):
        need(p[name]["unwound"] == 0 and p[name]["noReturn"] == 0,
             name + ": unwound or open", p[name])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("entries-only")
    c.add_argument("trace")
    c.add_argument("counts")
    c.set_defaults(fn=entries_only)
    c = sub.add_parser("exit-signal")
    c.add_argument("trace")
    c.add_argument("pid", type=int)
    c.add_argument("signal", type=int)
    c.set_defaults(fn=exit_signal)
    c = sub.add_parser("attach-failed")
    c.add_argument("trace")
    c.add_argument("counts")
    c.add_argument("name")
    c.set_defaults(fn=attach_failed)
    c = sub.add_parser("coroutines")
    c.add_argument("trace")
    c.add_argument("mode", choices=("nested", "interleaved"))
    c.set_defaults(fn=coroutines)
    c = sub.add_parser("other-stack")
    c.add_argument("trace")
    c.set_defaults(fn=other_stack)
    c = sub.add_parser("abandoned")
    c.add_argument("trace")
    c.add_argument("counts")
    c.set_defaults(fn=abandoned)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
