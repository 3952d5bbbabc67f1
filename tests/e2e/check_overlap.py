#!/usr/bin/env python3
"""Check report's compute/communication overlap against the trace, computed here apart: for each
process with collectives (spyre_comms::Context::OP spans), the union of their spans, and how
much of it the union of its devices' kernels covers (a device is the process's whose launches,
joined by args.correlation, its work came from; one with several such processes is no one's).
With --want PID=COLLECTIVES_NS,OVERLAP_NS (repeatable) the report's figures are these exactly
too: a made-up trace's known answer, the computation here not trusted alone.
Usage: check_overlap.py REPORT_JSON TRACE [--min-overlap-pct P] [--want PID=C,O ...]. Exit 1
with the difference."""
import argparse
import json
import sys
from collections import defaultdict

COMMS = "spyre_comms::Context::"
OPS = {"allgather", "allreduce", "alltoall", "barrier", "broadcast", "gather", "recv", "reduce",
       "reduce_scatter", "scatter", "send"}


def ns(us):
    return round(us * 1000)


def union(ivs):
    out = []
    for lo, hi in sorted(ivs):
        if hi <= lo:
            continue
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def inter(a, b):
    t, j = 0, 0
    for lo, hi in a:
        while j < len(b) and b[j][1] <= lo:
            j += 1
        k = j
        while k < len(b) and b[k][0] < hi:
            t += min(hi, b[k][1]) - max(lo, b[k][0])
            k += 1
    return t


def expected(trace):
    xs = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    comms, launch_pid, owner, kerns = defaultdict(list), {}, {}, defaultdict(list)
    for e in xs:
        name, cat = e.get("name", ""), e.get("cat")
        corr = e.get("args", {}).get("correlation")
        if cat in ("kernel", "gpu_memcpy"):
            continue
        if name.startswith(COMMS) and name[len(COMMS):] in OPS and e.get("dur", 0) > 0:
            comms[e["pid"]].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])))
        if corr is not None:
            launch_pid[corr] = e["pid"]
    for e in xs:
        corr = e.get("args", {}).get("correlation")
        if e.get("cat") not in ("kernel", "gpu_memcpy") or corr not in launch_pid:
            continue
        host = launch_pid[corr]
        owner[e["pid"]] = host if owner.get(e["pid"], host) == host else -2
    for e in xs:
        if e.get("cat") == "kernel" and e.get("dur", 0) > 0:
            kerns[e["pid"]].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])))
    out = {}
    for pid, c in comms.items():
        c = union(c)
        k = union([iv for dev, ivs in kerns.items() if owner.get(dev) == pid for iv in ivs])
        out[pid] = (sum(hi - lo for lo, hi in c), inter(c, k))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("report")
    ap.add_argument("trace")
    ap.add_argument("--min-overlap-pct", type=float, default=0)
    ap.add_argument("--want", action="append", default=[], metavar="PID=C,O")
    a = ap.parse_args()
    rep = json.load(open(a.report))
    rep = rep["files"][0] if "files" in rep else rep
    got = {o["pid"]: (o["collectivesNs"], o["overlapNs"]) for o in rep["overlap"]}
    want = expected(json.load(open(a.trace)))
    bad = []
    known = {int(p): tuple(int(v) for v in co.split(",")) for p, co in
             (w.split("=", 1) for w in a.want)}
    if known and got != known:
        bad.append(f"report {got}, the known answer {known}")
    if set(got) != set(want):
        bad.append(f"processes {sorted(got)} != {sorted(want)}")
    for pid, (c, o) in want.items():
        g = got.get(pid)
        # the report reads µs with three decimals as ns the same way: exact, bar a rounding
        if g is None or abs(g[0] - c) > 2 or abs(g[1] - o) > 2:
            bad.append(f"pid {pid}: report {g}, trace {(c, o)}")
        elif c and 100 * o / c < a.min_overlap_pct:
            bad.append(f"pid {pid}: overlap {100 * o / c:.1f} % < {a.min_overlap_pct}")
        else:
            print(f"pid {pid}: collectives {c / 1e6:.3f} ms, overlapped {o / 1e6:.3f} ms")
    for b in bad:
        print("check_overlap:", b, file=sys.stderr)
    sys.exit(1 if bad or not want else 0)


if __name__ == "__main__":
    main()
