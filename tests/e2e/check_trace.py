#!/usr/bin/env python3
"""Checks a trace of the mock job (or another test program) for what one option or probe kind
promises (tests/e2e/trace.bats), against the job's counts file ({"calls": {SYMBOL: n}, ...}).
verify_trace.py checks the whole trace against the default probes; these, one kind each:

  has TRACE NAME ...   spans of each NAME (launch mode: traced from the first call)
  probe-counts TRACE COUNTS NAME=SYMBOL ...   the runtime spans (privateuse1_runtime) are of
      these names alone, each as many as the job's calls of SYMBOL, some
  instants TRACE COUNTS NAME SYMBOL   the events of NAME are thread-scoped instants (ph "i",
      s "t", no dur), one per call of SYMBOL, some
  entries TRACE COUNTS UNTRACED   tests/progs/entryjob.c: its checksum that of an untraced run
      and no mismatch, every function called as many times as it has spans, none of the
      entries done by BPF (this kernel refuses a uprobe program that writes registers)
  query-done TRACE COUNTS   aiuStreamQuery's args.done a bool per call of query(), as many
      true as the job counted (queriesTrue)
  calls TRACE COUNTS N NAME ...   (launch.bats) each NAME called N times by the job, each call a
      span
  more BASE TRACE NAME N   (launch.bats) TRACE has N events of NAME more than BASE: the calls
      the job made beyond those of a run that made none

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse
import collections

from checklib import load, need, spans

RUNTIME = "privateuse1_runtime"


def has(a):
    names = {e["name"] for e in spans(load(a.trace))}
    for n in a.name:
        need(n in names, "no span of " + n, sorted(names))


def probe_counts(a):
    d, c = load(a.trace), load(a.counts)["calls"]
    want = dict(w.split("=", 1) for w in a.want)
    n = collections.Counter(e["name"] for e in spans(d) if e["cat"] == RUNTIME)
    need(set(n) == set(want), "runtime span names, want " + ", ".join(sorted(want)), dict(n))
    for name, sym in want.items():
        need(n[name] == c.get(sym, 0) > 0, "%s spans, want the job's calls of %s" % (name, sym),
             n[name], c.get(sym))


def instants(a):
    d, c = load(a.trace), load(a.counts)["calls"]
    ev = [e for e in d["traceEvents"] if e.get("name") == a.name]
    need(ev and all(e["ph"] == "i" and e.get("s") == "t" and "dur" not in e for e in ev),
         "%s events, want thread-scoped instants" % a.name, ev[:2])
    need(len(ev) == c[a.symbol], "%s events, want the job's calls of %s" % (a.name, a.symbol),
         len(ev), c[a.symbol])


def entries(a):
    t, c, u = load(a.trace), load(a.counts), load(a.untraced)
    n = collections.Counter(e["name"] for e in spans(t))
    need(c["checksum"] == u["checksum"] and c["mismatches"] == 0,
         "checksum or mismatches, traced and untraced", c, u)
    need(all(n[k] == v for k, v in c["calls"].items()), "spans per function, want its calls",
         dict(n), c["calls"])
    need(t["spyreStats"]["entriesDoneByBpf"] == 0, "entries done by BPF", t["spyreStats"])


def query_done(a):
    d, c = load(a.trace), load(a.counts)
    done = [e["args"].get("done") for e in spans(d) if e["name"] == "aiuStreamQuery"]
    need(len(done) == c["calls"]["flex::RuntimeStream::query"], "aiuStreamQuery spans, want "
         "the job's query calls", len(done), c["calls"])
    need(all(v is True or v is False for v in done), "a done not a bool",
         [v for v in done if v is not True and v is not False][:5])
    # how many said true depends on the device's pace; the count is the job's
    need(done.count(True) == c["queriesTrue"], "done true, want the job's queriesTrue",
         done.count(True), c["queriesTrue"])


def calls(a):
    t, c = load(a.trace), load(a.counts)["calls"]
    n = collections.Counter(e["name"] for e in spans(t))
    for f in a.name:
        need(c.get(f) == a.n and n[f] == c[f], "%s: the job's calls and spans, want %d" %
             (f, a.n), c.get(f), n[f])


def more(a):
    n = [sum(e.get("name") == a.name for e in load(p)["traceEvents"]) for p in (a.base, a.trace)]
    need(n[1] - n[0] == a.n, "%s events more than the base run, want %d" % (a.name, a.n), n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("has")
    c.add_argument("trace")
    c.add_argument("name", nargs="+")
    c.set_defaults(fn=has)
    c = sub.add_parser("probe-counts")
    c.add_argument("trace")
    c.add_argument("counts")
    c.add_argument("want", nargs="+", metavar="NAME=SYMBOL")
    c.set_defaults(fn=probe_counts)
    c = sub.add_parser("instants")
    for f in ("trace", "counts", "name", "symbol"):
        c.add_argument(f)
    c.set_defaults(fn=instants)
    c = sub.add_parser("entries")
    for f in ("trace", "counts", "untraced"):
        c.add_argument(f)
    c.set_defaults(fn=entries)
    c = sub.add_parser("calls")
    c.add_argument("trace")
    c.add_argument("counts")
    c.add_argument("n", type=int)
    c.add_argument("name", nargs="+")
    c.set_defaults(fn=calls)
    c = sub.add_parser("more")
    for f in ("base", "trace", "name"):
        c.add_argument(f)
    c.add_argument("n", type=int)
    c.set_defaults(fn=more)
    c = sub.add_parser("query-done")
    c.add_argument("trace")
    c.add_argument("counts")
    c.set_defaults(fn=query_done)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
