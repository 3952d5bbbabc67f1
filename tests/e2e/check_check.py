#!/usr/bin/env python3
"""Checks what `spyre-bpftrace check` and `recover` wrote or said (tests/e2e/check.bats):

  recovered TRACE   recover's copy of a trace cut mid-phase (the mock job, 2 threads, 2 streams):
      marked spyreRecovered, over 1000 spans kept; every track of a span named, its process
      too (names are written when first known, not at the end): device 0 "Spyre 0", the job's
      threads train-0 and train-1, its streams 0 and 1, the job mock-spyre-job
  json REPORT DIR   check --json DIR DIR/missing.json over DIR's w1.json (clean.json, 20 events)
      and w2.json.gz (overlap.json, 11 events, 2 overlaps): each file's events and problems by
      kind, the missing one's error, the totals
  big ROOT TOOL TMP   check of a trace past 2 GiB made by big_trace.py into a pipe: every event
      read (over 500,000), no problem, in a max RSS under an eighth of its size

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse
import fcntl
import resource
import subprocess
import sys

from checklib import load, need, spans


def recovered(a):
    d = load(a.trace)
    need(d.get("spyreRecovered") is True, "spyreRecovered", d.get("spyreRecovered"))
    need(len(spans(d)) > 1000, "spans kept, want over 1000", len(spans(d)))
    # names are written when first known, not at the end: every track of the cut trace has one
    pn = {e["pid"]: e["args"]["name"] for e in d["traceEvents"]
          if e["ph"] == "M" and e["name"] == "process_name"}
    tn = {(e["pid"], e["tid"]): e["args"]["name"] for e in d["traceEvents"]
          if e["ph"] == "M" and e["name"] == "thread_name"}
    tracks = {(e["pid"], e["tid"]) for e in spans(d)}
    missing = sorted(t for t in tracks if t not in tn or t[0] not in pn)
    need(not missing, "tracks without a name", missing, pn, tn)
    need(pn.get(0) == "Spyre 0", "device 0's name", pn)
    need(sorted(tn[t] for t in tracks if t[0] != 0) == ["train-0", "train-1"],
         "the job's threads, want train-0 and train-1", tn)
    need({n for (p, t), n in tn.items() if p == 0} >= {"Stream 0", "Stream 1"},
         "device tracks, want streams 0 and 1", tn)
    need(any(n.startswith("mock-spyre") for n in pn.values()), "the job's process name", pn)


def json_report(a):
    r, d = load(a.report), a.dir
    f = {x["file"]: x for x in r["files"]}
    w1 = f.get(d + "/w1.json", {})
    need(w1.get("events") == 20 and w1.get("problems") == 0, "w1.json, want 20 events, clean",
         w1)
    w2 = f.get(d + "/w2.json.gz", {})
    need(w2.get("events") == 11 and w2.get("byKind") == {"overlap": 2},
         "w2.json.gz, want 11 events, 2 overlaps", w2)
    need(len(w2["lines"]) == 2 and all(l.endswith("[overlap]") for l in w2["lines"]),
         "w2.json.gz's problem lines", w2)
    need(f.get(d + "/missing.json", {}).get("error") == "No such file or directory",
         "the missing file's error", f)
    need(r["totals"] == {"files": 3, "events": 31, "problems": 2, "unreadable": 1}, "totals",
         r["totals"])


def big(a):
    root, tool, tmp = a.root, a.tool, a.tmp
    size = 2_200_000_000   # past 2 GiB, which check refused to load
    gen = subprocess.Popen([sys.executable, root + "/tests/e2e/big_trace.py",
                            root + "/tests/fixtures/traces/spyre-sample.json", str(size),
                            "--pad", "4000", "--count", tmp + "/count"], stdout=subprocess.PIPE)
    fcntl.fcntl(gen.stdout, 1031, 1 << 20)   # F_SETPIPE_SZ: 1 MiB, not 64 KiB, a switch
    chk = subprocess.Popen([tool, "check", "/dev/stdin"], stdin=gen.stdout,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    gen.stdout.close()
    out = chk.communicate()[0]
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # check's alone
    need(gen.wait() == 0, "big_trace.py failed")
    n = int(open(tmp + "/count").read())
    print(out, "max RSS %.0f MB for %.0f MB" % (rss / 1e6, size / 1e6))
    need(chk.returncode == 0, "check's exit status", chk.returncode)
    need(out == "check: /dev/stdin: %d events, 0 problems\n" % n,
         "check's line, want every event and no problem", out, n)
    need(n > 500_000, "events, want over 500,000", n)
    need(rss < size / 8, "max RSS, want under an eighth of the trace", rss)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("recovered")
    c.add_argument("trace")
    c.set_defaults(fn=recovered)
    c = sub.add_parser("json")
    c.add_argument("report")
    c.add_argument("dir")
    c.set_defaults(fn=json_report)
    c = sub.add_parser("big")
    for f in ("root", "tool", "tmp"):
        c.add_argument(f)
    c.set_defaults(fn=big)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
