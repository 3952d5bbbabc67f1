#!/usr/bin/env python3
"""Check the ac2g arrows of a spyre-bpftrace trace, however many processes it holds: every id is
used by one start ('s') and one finish ('f'), the start sits at the start of a launch call, the
finish at the start of a device span (bp "e"), both carry the same args.correlation (a copy the
same bytes), and arrows are written after both spans. With --bytes PID:N, every copy launched
by PID moves N bytes, so an arrow from PID's launch to another process's copy of the same
correlation is caught; with --min-arrows PID:N, at least N arrows leave PID. Exit 1 with a list
of problems."""
import argparse
import gzip
import json
import sys
from collections import defaultdict

LAUNCHES = ("aiuDataTransferHtoD", "aiuDataTransferDtoH", "aiuLaunchComputeStream")
DEVICE_CATS = ("kernel", "gpu_memcpy")


def ns(us):
    """µs with three decimals as written by the tracer -> integer ns."""
    return round(us * 1000)


def base_name(e):
    """A probe's name without the " (LIBRARY)" that system-wide tracing appends when several
    libraries export the function."""
    return e.get("name", "").split(" (/")[0]


def bound(at, e):
    """The slice starting where flow end e is that Perfetto binds it to: it reads events in ts
    order, ties in file order, so of several slices starting at e's pid/tid/ts (a zero-length
    device span and the next on its lane) the last one before e is on top; None if none."""
    cands = [x for x in at.get((e["pid"], e["tid"], ns(e["ts"])), []) if x["_i"] < e["_i"]]
    return cands[-1] if cands else None


def arrows(events, bad):
    """[(launch, device span, s, f)] of every well-formed arrow; problems go to bad(msg)."""
    launch_at, span_at = defaultdict(list), defaultdict(list)
    flows = defaultdict(lambda: {"s": [], "f": []})
    for i, e in enumerate(events):
        e["_i"] = i
        ph = e.get("ph")
        if ph in ("s", "f") and e.get("cat") == "ac2g":
            flows[(e.get("name"), e.get("id"))][ph].append(e)
        elif ph == "X" and base_name(e) in LAUNCHES:
            launch_at[(e["pid"], e["tid"], ns(e["ts"]))].append(e)
        elif ph == "X" and e.get("cat") in DEVICE_CATS:
            span_at[(e["pid"], e["tid"], ns(e["ts"]))].append(e)
    out = []
    for (_, fid), f in flows.items():
        if len(f["s"]) != 1 or len(f["f"]) != 1:
            bad(f"ac2g id {fid}: {len(f['s'])} starts, {len(f['f'])} finishes")
            continue
        s, fi = f["s"][0], f["f"][0]
        l, d = bound(launch_at, s), bound(span_at, fi)
        if l is None:
            bad(f"ac2g id {fid}: 's' at {s['pid']}/{s['tid']} {s['ts']} is not at the start "
                f"of a launch")
        if d is None:
            bad(f"ac2g id {fid}: 'f' at {fi['pid']}/{fi['tid']} {fi['ts']} is not at the "
                f"start of a device span")
        if fi.get("bp") != "e":
            bad(f"ac2g id {fid}: 'f' without bp 'e'")
        if l is None or d is None:
            continue
        la, da = l.get("args", {}), d.get("args", {})
        if la.get("correlation") != da.get("correlation"):
            bad(f"ac2g id {fid}: joins launch {l['name']} (correlation {la.get('correlation')}) "
                f"to {d['name']} (correlation {da.get('correlation')})")
            continue
        if d["cat"] == "gpu_memcpy" and da.get("bytes") != la.get("bytes"):
            bad(f"ac2g id {fid}: {d['name']} of {da.get('bytes')} bytes, its launch in pid "
                f"{l['pid']} copied {la.get('bytes')}")
            continue
        # a trace cut after an arrow but before its slices (tracer killed) cannot be
        # recovered into a valid one: arrows are written after both slices, start first
        if not l["_i"] < s["_i"] or not d["_i"] < s["_i"] or not s["_i"] < fi["_i"]:
            bad(f"ac2g id {fid}: written in the order launch {l['_i']}, device span "
                f"{d['_i']}, 's' {s['_i']}, 'f' {fi['_i']}")
        out.append((l, d, s, fi))
    return out


def pid_map(items):
    m = {}
    for it in items or []:
        pid, n = it.split(":")
        m[int(pid)] = int(n)
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--bytes", action="append", help="PID:N: PID's copies move N bytes")
    ap.add_argument("--min-arrows", action="append", help="PID:N: at least N arrows leave PID")
    a = ap.parse_args()
    opener = gzip.open if a.trace.endswith(".gz") else open
    with opener(a.trace, "rt", encoding="utf-8") as f:
        d = json.load(f)
    problems = []
    got = arrows(d["traceEvents"], problems.append)
    want_bytes, want_n = pid_map(a.bytes), pid_map(a.min_arrows)
    per_pid = defaultdict(int)
    for l, dev, s, _ in got:
        per_pid[l["pid"]] += 1
        b = want_bytes.get(l["pid"])
        if b is not None and dev["cat"] == "gpu_memcpy" and dev["args"].get("bytes") != b:
            problems.append(f"arrow from pid {l['pid']} (correlation "
                            f"{l['args'].get('correlation')}) ends at a copy of "
                            f"{dev['args'].get('bytes')} bytes, that process copies {b}")
    for pid, n in want_n.items():
        if per_pid[pid] < n:
            problems.append(f"{per_pid[pid]} arrows leave pid {pid}, want at least {n}")
    for p in problems[:40]:
        print("verify_flows:", p)
    if len(problems) > 40:
        print(f"verify_flows: ... and {len(problems) - 40} more")
    print(f"verify_flows: {a.trace}: {len(got)} arrows from {len(per_pid)} processes "
          f"({dict(per_pid)}), {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
