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
  files TRACE SUMMARY FUNC FILE=N ...   (names.bats) one library mapped from several files:
      FUNC's probe once per file, all named FUNC (none renamed, no sharedName), each with its
      file's calls; every span FUNC, its file in args.file; the summary (SUMMARY, the tracer's
      stdout) a row "FUNC [FILE]" per file with its count, nothing renamed
  hits TRACE SYMBOL N   (scale.bats) SYMBOL's one probe hit N times, nothing dropped
  table TRACE MIN SYMBOL ...   (pytorch-trixie.bats) each SYMBOL has its probe, and over MIN
      at::_ops::*::call functions do (the whole table resolved)

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse
import collections
import re

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


def files(a):
    t = load(a.trace)
    want = {f: int(n) for f, n in (w.rsplit("=", 1) for w in a.want)}
    ps = t["spyreProbes"]
    # one function, one name: each copy's probe is FUNC, nothing renamed
    need(len(ps) == len(want), "probes, want one per file", ps)
    need(all(p["name"] == a.func and "sharedName" not in p for p in ps),
         "a probe renamed or sharing its name", ps)
    need({p.get("library") for p in ps} == set(want), "the probes' libraries", ps)
    for p in ps:
        need(p["events"] == want[p["library"]], "events of " + p["library"], p)
    # every event has the function's name; its file is in args
    sp = spans(t)
    need({e["name"] for e in sp} == {a.func}, "span names", {e["name"] for e in sp})
    n = collections.Counter(e["args"].get("file") for e in sp)
    need(n == want, "spans by file", dict(n))
    # the summary: one row per file, the function's name and its file, with its count
    rows = {}
    out = open(a.summary).read()
    # a row: count, total ms, mean, p50 and p99 us, two blanks, the function (facts.c's fn_row)
    for line in out.split("\n"):
        m = re.match(r"^ +([0-9,]+) +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+  (%s.*)$" %
                     re.escape(a.func), line.rstrip())
        if m:
            rows[m.group(2)] = int(m.group(1).replace(",", ""))
    need(rows == {"%s [%s]" % (a.func, f): k for f, k in want.items()}, "summary rows", rows)
    need("renamed:" not in out, "the summary renamed a function")


def hits(a):
    d = load(a.trace)
    h = [p["hits"] for p in d["spyreProbes"] if p["symbol"] == a.symbol]
    need(h == [a.n], "%s's hits, want one probe with %d" % (a.symbol, a.n), h)
    need(d["spyreStats"]["drops"] == 0, "drops", d["spyreStats"])


def table(a):
    d = load(a.trace)
    syms = {p["symbol"] for p in d["spyreProbes"]}
    for s in a.symbol:
        need(s in syms, "no probe of " + s)
    ops = sum(s.startswith("at::_ops::") and s.endswith("::call") for s in syms)
    print("%d at::_ops::*::call probes" % ops)
    need(ops > a.min, "at::_ops::*::call probes, want over %d" % a.min, ops)


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
    c = sub.add_parser("files")
    for f in ("trace", "summary", "func"):
        c.add_argument(f)
    c.add_argument("want", nargs="+", metavar="FILE=N")
    c.set_defaults(fn=files)
    c = sub.add_parser("hits")
    c.add_argument("trace")
    c.add_argument("symbol")
    c.add_argument("n", type=int)
    c.set_defaults(fn=hits)
    c = sub.add_parser("table")
    c.add_argument("trace")
    c.add_argument("min", type=int)
    c.add_argument("symbol", nargs="+")
    c.set_defaults(fn=table)
    c = sub.add_parser("query-done")
    c.add_argument("trace")
    c.add_argument("counts")
    c.set_defaults(fn=query_done)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
