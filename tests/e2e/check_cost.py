#!/usr/bin/env python3
"""Checks the tracer's cost figures (tests/e2e/cost.bats, budget.bats) against the CPU time the
job was seen to spend: measure_cost.py's output (the job's CPU time untraced twice and traced
once, and the trace's spyreStats) or cost_job.py's own count beside a trace of it.

  budgeted MEASURED PCT   --max-overhead PCT, measure_cost.py's RUN: its two untraced runs
      within 15 % of each other (a quiet attempt); the trace's budget PCT, its own figure within
      PCT + 5 (the first window's attach), the slowdown measured under PCT + 30 (a shared
      machine: far below tracing all the time, +260 %), the probes on less than half the run
  probe-time MEASURED   no budget: the probes cost something measurable (over 20 %), the
      estimated probe time (estProbeNs) within a factor of 2 of the CPU time tracing added,
      the per-hit costs calibrated
  too-hot TRACE   the probes took most of the job's CPU: the overhead unknown (null), never a
      capped number, the probes' share over the two thirds (COST_KNOWN_SHARE, cost.h) past
      which the tool calls the overhead unknown
  twin OUT TRACE   cost_job.py --twin (OUT: its CPU, probed and twin code's time): the figure is
      its definition (estProbeNs over jobCpuNs less it), jobCpuNs the job's clock within 15 %,
      tracing added over 2 % and 0.15 s, the estimate 0.6-1.7x the side-by-side measurement,
      the figure within 1.7x of the true one

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse

from checklib import load, need


def budgeted(a):
    r = load(a.measured)
    u = r["untraced"]
    need(abs(u[0] - u[1]) <= 0.15 * sum(u) / 2, "no quiet attempt: untraced runs", u)
    s = r["stats"]
    need(s.get("maxOverheadPct") == a.pct, "maxOverheadPct, want %s" % a.pct, s)
    # the tool's own figure over the run is the one the budget holds: within it, bar the first
    # window (200 ms at ~+260 %: ~2 points over 10 s)
    need(s["estOverheadPct"] is not None and s["estOverheadPct"] <= a.pct + 5,
         "estOverheadPct, want %s at most" % (a.pct + 5), s)
    # measured on a shared machine: far below tracing all the time (+260 %), near the budget
    need(r["measuredPct"] < a.pct + 30, "measuredPct, want under %s" % (a.pct + 30),
         r["measuredPct"])
    need(s["budget"]["tracedSec"] < s["budget"]["runSec"] / 2, "traced half the run or more",
         s["budget"])


def probe_time(a):
    r = load(a.measured)
    m, e = r["measuredPct"], r["estimatedPct"]
    need(m > 20, "measuredPct, want over 20 (the probes cost something here)", r)
    # the probe time itself, against the job's CPU time traced minus untraced: the percentage
    # divides by what is left of the job and swings with load (here +248 % measured for
    # +640 % estimated once, at load 10, with the probe time 21 % high)
    added = r["traced"] - sum(r["untraced"]) / len(r["untraced"])
    probe = r["stats"]["estProbeNs"] / 1e9
    need(added > 0 and 0.5 <= probe / added <= 2, "probe time, want within 2x of the time added",
         probe, added, m, e)
    need(r["stats"]["hitCostNs"]["calibrated"], "hit costs not calibrated", r["stats"])


def too_hot(a):
    s = load(a.trace)["spyreStats"]
    need(s["estOverheadPct"] is None, "estOverheadPct, want null", s)
    # the share moves with what traps cost that day: 79-135 % seen
    need(s["estProbeCpuPct"] > 100 * 2 / 3, "estProbeCpuPct, want over two thirds", s)


def twin(a):
    o, s = load(a.out), load(a.trace)["spyreStats"]
    told = s["estOverheadPct"]
    added = o["probed"] - o["twin"]
    true = 100 * added / (o["cpu"] - added)
    print(o, "added %.3f s (+%.1f %%), reported %s %%" % (added, true, told))
    # the definition: the probes' estimated time over the job's CPU time less that time, the
    # job's CPU time from its own clock (the job's own count of its work, plus its wait for go)
    p, c = s["estProbeNs"] / 1e9, s["jobCpuNs"] / 1e9
    need(told is not None and abs(told - 100 * p / (c - p)) < 0.01,
         "estOverheadPct, want estProbeNs over jobCpuNs less it", told, p, c)
    need(abs(c - o["cpu"]) <= 0.15 * o["cpu"] + 0.1, "jobCpuNs, want the job's clock", c,
         o["cpu"])
    # large enough to tell: what traps cost moves over hours on these VMs (single-stepped
    # 6-20 us: +4.7 % one morning, 0.32 s added of 7.1 s, where the test was written at > +10 %)
    need(true > 2 and added > 0.15, "tracing added, want over 2 % and 0.15 s", true, added, s)
    # the estimate against the side-by-side measurement: 0.83-1.35x here in 8 runs, beside a
    # CPU hog too (make bench compares within +-25 % in a quiet run)
    need(added > 0 and 0.6 <= p / added <= 1.7, "probe time, want 0.6-1.7x the time added",
         p, added)
    need(true / 1.7 <= told <= true * 1.7, "estOverheadPct, want within 1.7x of the true",
         told, true)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("budgeted")
    c.add_argument("measured")
    c.add_argument("pct", type=float)
    c.set_defaults(fn=budgeted)
    c = sub.add_parser("probe-time")
    c.add_argument("measured")
    c.set_defaults(fn=probe_time)
    c = sub.add_parser("too-hot")
    c.add_argument("trace")
    c.set_defaults(fn=too_hot)
    c = sub.add_parser("twin")
    c.add_argument("out")
    c.add_argument("trace")
    c.set_defaults(fn=twin)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
