#!/usr/bin/env python3
"""Check a trace written under --max-overhead: its budget's windows (spyreStats.budget) are
ordered and apart, every device span ('kernel', 'gpu_memcpy') lies inside one of them (none
stretched over a pause, 1 ms of slack for the bounds taken around a detach), every driver
span ('privateuse1_driver', a VFIO ioctl) began inside one (nothing recorded while paused), the
memory ledger is marked sampled with a pause counted for each pause, and with --max-pct the
tool's own overhead figure is within it. Plain or gzip. Exit 1 with the problem.

--pct P: the budget is P (spyreStats.maxOverheadPct). --none: the run had no budget at all (no
maxOverheadPct, no budget): nothing else is checked. --first-window-sec S: the first window
stayed on over S seconds (a job idle at the attach paid nothing for it), with --traced NAME's
calls traced in it; --switch-within-cpu: what the figure charges for the probes' switches
(budget.switchChargedSec) is no more than the job's CPU time (jobCpuNs)."""
import argparse
import gzip
import json
import sys


def load(path):
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        return json.load(f)


def problems(d, args):
    s = d["spyreStats"]
    b = s.get("budget")
    if args.none:
        return ([] if "maxOverheadPct" not in s and not b else
                [f"a budget: maxOverheadPct {s.get('maxOverheadPct')}, budget {b}"])
    if not b:
        return ["no spyreStats.budget: the run had no budget"]
    out = []
    if args.pct is not None and s.get("maxOverheadPct") != args.pct:
        out.append(f"maxOverheadPct {s.get('maxOverheadPct')}, {args.pct} wanted")
    if args.first_window_sec is not None and (
            not b["windowsUs"] or
            b["windowsUs"][0][1] - b["windowsUs"][0][0] <= args.first_window_sec * 1e6):
        out.append(f"first window {b['windowsUs'][:1]} us, over {args.first_window_sec} s wanted")
    for name in args.traced:
        p = [p for p in d.get("spyreProbes", []) if p["name"] == name]
        if not p or p[0]["events"] <= 0:
            out.append(f"{name}: no call traced ({p})")
    if args.switch_within_cpu and not b["switchChargedSec"] <= s["jobCpuNs"] / 1e9 + 1e-3:
        out.append(f"switch charge {b['switchChargedSec']} s over the job's CPU "
                   f"{s['jobCpuNs'] / 1e9} s")
    wins = b["windowsUs"]
    if b["windows"] != len(wins) or b["windows"] < args.min_windows:
        out.append(f"windows {b['windows']}, {len(wins)} listed, {args.min_windows} wanted")
    if not all(a < e for a, e in wins) or not all(wins[i][1] < wins[i + 1][0]
                                                  for i in range(len(wins) - 1)):
        out.append(f"windows out of order or overlapping: {wins}")
    if args.paused and not b["tracedSec"] < b["runSec"]:
        out.append(f"never paused: traced {b['tracedSec']} s of {b['runSec']} s")
    if args.max_pct is not None and (s.get("estOverheadPct") is None or
                                     s["estOverheadPct"] > args.max_pct):
        out.append(f"overhead {s.get('estOverheadPct')} over {args.max_pct}")
    dev = [e for e in d["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy")]
    if args.device and not dev:
        out.append("no device span")
    outside = [e for e in dev if not any(a - 1000 <= e["ts"] and e["ts"] + e["dur"] <= z + 1000
                                         for a, z in wins)]
    if outside:
        out.append(f"{len(outside)} device spans over a pause, e.g. {outside[:2]} in {wins}")
    # the driver tier's ioctls are not recorded while paused either: each began in a window
    # (a call open at the pause may end after it)
    drv = [e for e in d["traceEvents"] if e.get("cat") == "privateuse1_driver"]
    begun = [e for e in drv if not any(a - 1000 <= e["ts"] <= z + 1000 for a, z in wins)]
    if begun:
        out.append(f"{len(begun)} driver spans begun in a pause, e.g. {begun[:2]} in {wins}")
    m = d["spyreMemory"]
    # a pause after each window but the last, and after the last when the run ended paused;
    # a fleet run's ledger lives across its windows' files: at least this file's
    pauses = b["windows"] - 1 + (b["tracedSec"] < b["runSec"])
    if not m["sampled"] or (m["pauses"] < pauses if args.fleet else
                            m["pauses"] not in (b["windows"] - 1, b["windows"])):
        out.append(f"memory ledger {m} for {b['windows']} windows")
    print("windows", b["windows"], "traced", b["tracedSec"], "of", b["runSec"], "overhead",
          s.get("estOverheadPct"), "cut", b["launchesCutAtPause"], "device spans", len(dev))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("trace")
    ap.add_argument("--min-windows", type=int, default=1)
    ap.add_argument("--max-pct", type=float, help="the tool's figure at most this")
    ap.add_argument("--paused", action="store_true", help="a pause at least")
    ap.add_argument("--device", action="store_true", help="a device span at least")
    ap.add_argument("--fleet", action="store_true", help="a fleet window's file")
    ap.add_argument("--pct", type=float, help="the budget, maxOverheadPct")
    ap.add_argument("--none", action="store_true", help="no budget at all")
    ap.add_argument("--first-window-sec", type=float, help="the first window over this")
    ap.add_argument("--traced", action="append", default=[], help="a probe with events")
    ap.add_argument("--switch-within-cpu", action="store_true",
                    help="switchChargedSec within jobCpuNs")
    args = ap.parse_args()
    bad = problems(load(args.trace), args)
    for p in bad:
        print("check_budget:", p, file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
