#!/usr/bin/env python3
"""Checks what `spyre-bpftrace report --json` (and --summary-json) wrote (tests/e2e/
report.bats) against the trace it read, every figure computed here apart, or against the known
answer of a made-up trace:

  summary-json SUMMARY TRACE   --summary-json wrote the metadata's spyreProbes, spyreStats and
      spyreMemory (and maybe more), each as the trace has it
  tables REPORT TRACE COUNTS   host calls, kernels and copies: every span by kind and name, its
      count, total, exact nearest-rank p50 and p99 (copies: bytes); the memory row the ledger's
      peak, its time, end, allocs (the job's allocate calls) and frees, peakIn the innermost
      host span around the peak on its thread
  by-thread REPORT TRACE   --by-thread: a host row per process, thread and function, each its
      count and total, named as the thread's thread_name; two threads at least
  files REPORT   a directory (a.json, b.json.gz: read alike) and Kineto's sample, in that order;
      Kineto's: its kernels, not a trace of ours
  merged REPORT   ours merged with Kineto's samples: host rows of both, the kernels of both
  health REPORT TRACE   the health facts, under the metadata's own keys (events, probe hits,
      each loss, unwound, drops), each the trace's; dropped the sum of the losses, drops the
      ring's, too deep's and no-stack's; some dropped with the ring full (a starved run)
  idle REPORT   make_trace.py idle's trace: the idle time cut into queued 170, waiting 50 and
      host-bound 80 us, host-bound by function (the Python step 55, the launches 30, aiuMalloc 3)
      and by Python line (train.py:42 20, train.py:57 10)

REPORT is report --json's output: {"files": [...]}, the first file's tables checked.
Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse
import collections

from checklib import load, need

DEV = ("kernel", "gpu_memcpy", "gpu_memset")


def ns(us):
    return round(us * 1000)


def summary_json(a):
    s, t = load(a.summary), load(a.trace)
    need(set(s) >= {"spyreProbes", "spyreStats", "spyreMemory"}, "summary keys", list(s))
    need(all(s[k] == t.get(k) for k in s), "summary facts other than the trace's",
         [k for k in s if s[k] != t.get(k)])


def rank(v, p):
    v = sorted(v)
    return v[max(1, -(-len(v) * p // 100)) - 1]


def tables(a):
    r, t, calls = load(a.report)["files"][0], load(a.trace), load(a.counts)["calls"]
    # independently: every X span by kind and name, exact nearest-rank percentiles
    durs = collections.defaultdict(list)
    nbytes = collections.Counter()
    for e in t["traceEvents"]:
        if e.get("ph") != "X":
            continue
        kind = {"kernel": "kernels", "gpu_memcpy": "copies", "gpu_memset": "copies"}.get(
            e.get("cat"), "host")
        durs[kind, e["name"]].append(ns(e.get("dur", 0)))
        if kind == "copies":
            nbytes[e["name"]] += e["args"]["bytes"]
    for kind in ("host", "kernels", "copies"):
        got = {x["name"]: x for x in r[kind]}
        want = {n for (k, n) in durs if k == kind}
        need(set(got) == want, "%s rows other than the trace's names" % kind, set(got) ^ want)
        for name, x in got.items():
            v = durs[kind, name]
            need(x["count"] == len(v) and x["totalNs"] == sum(v), "%s count or total" % name, x,
                 len(v), sum(v))
            if kind != "copies":
                need(x["p50Ns"] == rank(v, 50) and x["p99Ns"] == rank(v, 99),
                     "%s p50 or p99" % name, x, rank(v, 50), rank(v, 99))
            else:
                need(x["bytes"] == nbytes[name], "%s bytes" % name, x, nbytes[name])
    led = t["spyreMemory"]["processes"][0]["devices"][0]["allocated"]
    m = r["memory"][0]
    need((m["peakBytes"], m["peakTs"], m["endBytes"]) == (led["peak"], led["peakTs"],
                                                          led["current"]),
         "memory peak, its time or end, other than the ledger's", m, led)
    need(m["allocs"] == led["allocs"] == calls["spyre::SpyreAllocator::allocate"],
         "memory allocs, want the ledger's and the job's", m, led)
    need(m["frees"] == led["frees"], "memory frees, want the ledger's", m, led)
    around = [e for e in t["traceEvents"] if e.get("ph") == "X" and e.get("cat") not in DEV and
              e["tid"] == m["peakTid"] and
              ns(e["ts"]) <= ns(m["peakTs"]) <= ns(e["ts"]) + ns(e["dur"])]
    need(around and m["peakIn"] == min(around, key=lambda e: ns(e["dur"]))["name"],
         "peakIn, want the innermost span around the peak", m, around[:5])
    print(len(r["host"]), "functions,", len(r["kernels"]), "kernels checked")


def by_thread(a):
    r, t = load(a.report)["files"][0], load(a.trace)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in t["traceEvents"]
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    want = collections.defaultdict(list)
    for e in t["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") not in DEV:
            want[e["pid"], e["tid"], e["name"]].append(ns(e.get("dur", 0)))
    got = {(x["pid"], x["tid"], x["name"]): x for x in r["host"]}
    need(set(got) == set(want), "rows other than the trace's threads and names",
         set(got) ^ set(want))
    for k, x in got.items():
        need(x["count"] == len(want[k]) and x["totalNs"] == sum(want[k]), "count or total", k, x)
        need(x["thread"] == names.get(k[:2], ""), "thread name", k, x)
    need(len({k[1] for k in got}) >= 2, "the mock's threads apart, want 2 at least",
         {k[1] for k in got})


def files(a):
    f = load(a.report)["files"]
    order = [x["file"].rsplit("/", 1)[1] for x in f]
    need(order == ["a.json", "b.json.gz", "kineto-sample.json"], "files or their order", order)
    # plain and gzip read alike
    need(dict(f[0], file=None) == dict(f[1], file=None), "plain and gzip read differently")
    # Kineto's own: its kernels, no health facts
    need(f[2]["kernels"] and not f[2]["health"]["spyreTrace"], "Kineto's file", f[2])


def merged(a):
    f = load(a.report)["files"][0]
    names = {x["name"] for x in f["host"]}
    need({"aiuScheduleWait", "aten::linear"} <= names, "host rows, want ours and Kineto's",
         names)
    k = {x["name"] for x in f["kernels"]}
    need(k == {"Spyre compute", "linear_fwd_8x64x64"}, "kernels, want ours and Kineto's", k)


def health(a):
    h, s = load(a.report)["files"][0]["health"], load(a.trace)["spyreStats"]
    keys = ("events", "probeHits", "dropsRingFull", "dropsTooDeep", "dropsNoStack",
            "recordsUnreadable", "deviceOverflow", "unwound", "drops")
    need(all(h.get(k) == s.get(k) for k in keys), "health facts other than the trace's",
         [(k, h.get(k), s.get(k)) for k in keys if h.get(k) != s.get(k)])
    need(h.get("dropped") == sum(s[k] for k in keys[2:7]), "dropped, want the losses summed", h)
    need(s["drops"] == s["dropsRingFull"] + s["dropsTooDeep"] + s["dropsNoStack"],
         "the trace's drops, want ring full + too deep + no stack", s)
    need(s["dropsRingFull"] > 0, "nothing dropped with the ring full", s)


def idle(a):
    f = load(a.report)["files"][0]
    i = f["devices"][0]["idle"]
    need(i == {"ns": 300000, "queuedNs": 170000, "waitingNs": 50000, "hostBoundNs": 80000},
         "idle", i)
    hb = f["hostBound"]
    need(hb["ns"] == 80000, "host-bound", hb)
    need(hb["functions"] == [{"name": "torch/nn/modules/module.py(1750): step", "ns": 55000},
                             {"name": "aiuLaunchComputeStream", "ns": 30000},
                             {"name": "aiuMalloc", "ns": 3000}], "host-bound functions", hb)
    need(hb["pythonLines"] == [{"name": "train.py:42 step", "ns": 20000},
                               {"name": "train.py:57 step", "ns": 10000}],
         "host-bound Python lines", hb)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, fn, args in (("summary-json", summary_json, ("summary", "trace")),
                           ("tables", tables, ("report", "trace", "counts")),
                           ("by-thread", by_thread, ("report", "trace")),
                           ("files", files, ("report",)),
                           ("merged", merged, ("report",)),
                           ("health", health, ("report", "trace")),
                           ("idle", idle, ("report",))):
        c = sub.add_parser(name)
        for f in args:
            c.add_argument(f)
        c.set_defaults(fn=fn)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
