#!/usr/bin/env python3
"""Checks the Python line (args.python, args.pystack) a trace gives events of probes with py=1
or without it (tests/e2e/pystack.bats), where the job is no pystack_job.py with its record of
call sites (check_pystack.py checks those):

  none TRACE NAME   no event of NAME carries args.python (its probe has no py=1)
  calls TRACE NAME --arg KEY=VALUE --site WHERE --count N   the events of NAME whose args.KEY is
      VALUE are N, each naming the line WHERE ("FILE:LINE QUALNAME")
  memory TRACE WHERE --blocks N --bytes B   an allocator probe with py=1 (mem=alloc): the one
      live group of the first process is N blocks of B bytes in all from WHERE, each live block
      names WHERE, so do the N [memory] events that allocated them (python, and pystack's first
      frame); no free's [memory] event names a line

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse
import sys

from checklib import load, need


def none(a):
    d = load(a.trace)
    n = sum("python" in e.get("args", {}) for e in d["traceEvents"] if e.get("name") == a.name)
    need(n == 0, "%s events with a Python line, want none" % a.name, n)


def calls(a):
    d = load(a.trace)
    key, value = a.arg.split("=", 1)
    ev = [e for e in d["traceEvents"]
          if e.get("name") == a.name and str(e.get("args", {}).get(key)) == value]
    need(len(ev) == a.count, "%s events with %s, want %d" % (a.name, a.arg, a.count), len(ev))
    lines = sorted({str(e["args"].get("python")) for e in ev})
    need(lines == [a.site], "their Python lines, want %r" % a.site, lines)


def memory(a):
    d = load(a.trace)
    where = a.where
    p = d["spyreMemory"]["processes"][0]
    groups = [(g["count"], g["bytes"], g.get("python")) for g in p["liveGroups"]]
    need(groups == [(a.blocks, a.bytes, where)], "live groups", p["liveGroups"])
    need([b.get("python") for b in p["liveBlocks"]] == [where] * a.blocks, "live blocks' lines",
         p["liveBlocks"])
    # each allocation's [memory] event names its line too (the kept blocks': this one), a free
    # none
    mem = [e for e in d["traceEvents"] if e["name"] == "[memory]"]
    live = {int(b["addr"], 16) for b in p["liveBlocks"]}
    kept = [e for e in mem if e["args"]["Addr"] in live and e["args"]["Bytes"] > 0]
    need(len(kept) == a.blocks and all(e["args"].get("python") == where and
                                       e["args"].get("pystack", [None])[0] == where
                                       for e in kept),
         "the live blocks' allocation events, want each naming the line", kept)
    need(all("python" not in e["args"] for e in mem if e["args"]["Bytes"] < 0),
         "a free's event names a line",
         [e for e in mem if e["args"]["Bytes"] < 0 and "python" in e["args"]][:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("none")
    c.add_argument("trace")
    c.add_argument("name")
    c.set_defaults(fn=none)
    c = sub.add_parser("calls")
    c.add_argument("trace")
    c.add_argument("name")
    c.add_argument("--arg", required=True)
    c.add_argument("--site", required=True)
    c.add_argument("--count", type=int, required=True)
    c.set_defaults(fn=calls)
    c = sub.add_parser("memory")
    c.add_argument("trace")
    c.add_argument("where")
    c.add_argument("--blocks", type=int, required=True)
    c.add_argument("--bytes", type=int, required=True)
    c.set_defaults(fn=memory)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
