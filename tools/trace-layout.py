#!/usr/bin/env python3
"""Lay out a window of a Chrome trace (spyre-bpftrace, Kineto, merged) for tools/trace-view.html:
tracks per pid/tid (process headers, named threads), X spans stacked by nesting depth, ac2g
arrows. Writes the page with the data filled in; tools/trace-screenshot.sh screenshots it.

  trace-layout.py TRACE OUT.html [--iterations N] [--window FROM_US:TO_US] [--width PX]

Without --window it picks N iterations of the job from the middle of the trace, counted by the
host-to-device copies (aiuDataTransferHtoD) of the thread that makes the most of them, or the
middle millisecond when there are none."""
import argparse
import gzip
import json
import os
import sys
from collections import defaultdict

ROW = 16          # px per nesting level
PROC_ROW = 22     # px of a process header
TOP = 64          # px above the first track: title and time axis
LEGEND = 110      # px below the last track
CATEGORIES = [    # category, color, what it is (shown in the legend, in this order)
    ("privateuse1_runtime", "#4e79a7", "runtime call on a host thread"),
    ("privateuse1_driver", "#b07aa1", "VFIO ioctl (kernel driver)"),
    ("kernel", "#e15759", "device compute (launch or previous op .. completion)"),
    ("gpu_memcpy", "#59a14f", "device copy, one lane per overlap"),
    ("gpu_memset", "#edc948", "device memset"),
    ("cpu_op", "#f28e2b", "PyTorch op (Kineto)"),
    ("python_function", "#76b7b2", "Python function (Kineto)"),
    ("user_annotation", "#9c755f", "user annotation / ProfilerStep (Kineto)"),
]
OTHER = "#a0a0a0"


def load(path):
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        d = json.load(f)
    return d if isinstance(d, dict) else {"traceEvents": d}


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def auto_window(spans, iterations):
    by_thread = defaultdict(list)
    for s in spans:
        if s["name"] == "aiuDataTransferHtoD":
            by_thread[(s["pid"], s["tid"])].append(s["ts"])
    if by_thread:
        marks = sorted(max(by_thread.values(), key=len))
        if len(marks) > iterations:
            i = max(0, len(marks) // 2 - iterations // 2)
            i = min(i, len(marks) - iterations - 1)
            a, b = marks[i], marks[i + iterations]
            pad = (b - a) * 0.03
            return a - pad, b - pad
    lo = min(s["ts"] for s in spans)
    hi = max(s["ts"] + s["dur"] for s in spans)
    mid = (lo + hi) / 2
    return mid - 500, mid + 500


def layout(d, window, iterations, title):
    ev = [e for e in d.get("traceEvents", []) if isinstance(e, dict)]
    pname, psort, tname, tsort = {}, {}, {}, {}
    spans, flows = [], defaultdict(dict)
    for e in ev:
        ph, pid, tid = e.get("ph"), e.get("pid"), e.get("tid")
        if not is_int(pid):
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        if ph == "M":
            if e.get("name") == "process_name":
                pname[pid] = str(args.get("name", pid))
            elif e.get("name") == "process_sort_index" and is_int(args.get("sort_index")):
                psort[pid] = args["sort_index"]
            elif e.get("name") == "thread_name" and is_int(tid):
                tname[(pid, tid)] = str(args.get("name", tid))
            elif e.get("name") == "thread_sort_index" and is_int(tid):
                tsort[(pid, tid)] = args.get("sort_index")
        elif ph == "X" and is_int(tid) and isinstance(e.get("ts"), (int, float)):
            dur = e.get("dur") if isinstance(e.get("dur"), (int, float)) else 0
            spans.append({"pid": pid, "tid": tid, "ts": e["ts"], "dur": max(dur, 0),
                          "name": str(e.get("name", "")), "cat": str(e.get("cat", ""))})
        elif ph in ("s", "f") and is_int(tid) and isinstance(e.get("ts"), (int, float)):
            flows[(e.get("cat"), e.get("id"))][ph] = (pid, tid, e["ts"])
    if not spans:
        sys.exit("trace-layout: no X events to draw")
    t0, t1 = window if window else auto_window(spans, iterations)
    vis = [s for s in spans if s["ts"] < t1 and s["ts"] + s["dur"] > t0]

    # nesting depth per thread; spans that straddle the window edge keep their depth
    lanes = defaultdict(list)
    for s in vis:
        lanes[(s["pid"], s["tid"])].append(s)
    depth_of = {}
    for key, ss in lanes.items():
        ss.sort(key=lambda s: (s["ts"], -s["dur"]))
        stack = []
        for s in ss:
            while stack and stack[-1] <= s["ts"]:
                stack.pop()
            s["depth"] = len(stack)
            stack.append(s["ts"] + s["dur"])
        depth_of[key] = max(s["depth"] for s in ss) + 1

    tracks, y = [], TOP
    thread_y = {}
    procs = sorted({p for p, _ in lanes}, key=lambda p: (psort.get(p, p), p))
    for p in procs:
        label = pname.get(p, f"process {p}")
        tracks.append({"kind": "process", "label": f"{label}  (pid {p})", "y": y,
                       "h": PROC_ROW})
        y += PROC_ROW
        tids = sorted((t for q, t in lanes if q == p),
                      key=lambda t: (tsort.get((p, t), t) if is_int(tsort.get((p, t)))
                                     else t, t))
        for t in tids:
            h = depth_of[(p, t)] * ROW + 6
            tracks.append({"kind": "thread", "label": tname.get((p, t), f"thread {t}"),
                           "y": y, "h": h})
            thread_y[(p, t)] = y + 3
            y += h
    out_spans = [{"ts": s["ts"], "dur": s["dur"], "name": s["name"], "cat": s["cat"],
                  "y": thread_y[(s["pid"], s["tid"])] + s["depth"] * ROW}
                 for s in vis]

    def flow_y(pid, tid, ts, bind_start):
        """y of the slice a flow end binds to: the deepest span around ts on its thread"""
        best = None
        for s in lanes.get((pid, tid), []):
            inside = s["ts"] == ts if bind_start else s["ts"] <= ts <= s["ts"] + s["dur"]
            if inside and (best is None or s["depth"] > best["depth"]):
                best = s
        if best is None:
            return None
        return thread_y[(pid, tid)] + best["depth"] * ROW + ROW / 2

    out_flows = []
    for (cat, _), f in flows.items():
        if "s" not in f or "f" not in f:
            continue
        (sp, st, sts), (fp, ft, fts) = f["s"], f["f"]
        if sts > t1 or fts < t0 or (sp, st) not in thread_y or (fp, ft) not in thread_y:
            continue
        y0, y1 = flow_y(sp, st, sts, False), flow_y(fp, ft, fts, True)
        if y0 is not None and y1 is not None:
            out_flows.append({"t0": sts, "y0": y0, "t1": fts, "y1": y1})

    used = {s["cat"] for s in vis}
    legend = [{"cat": c, "color": col, "text": txt} for c, col, txt in CATEGORIES if c in used]
    colors = {c: col for c, col, _ in CATEGORIES}
    if used - set(colors):
        legend.append({"cat": "other", "color": OTHER, "text": ", ".join(sorted(used - set(colors)))})
    if out_flows:
        legend.append({"cat": "ac2g", "color": "#333333", "text": "arrow: launch -> the device work it queued"})
    return {"title": title, "t0": t0, "t1": t1, "height": y + LEGEND, "tracks": tracks,
            "spans": out_spans, "flows": out_flows, "legend": legend, "colors": colors,
            "other": OTHER}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--window", metavar="FROM_US:TO_US")
    ap.add_argument("--width", type=int, default=1600)
    ap.add_argument("--title")
    a = ap.parse_args()
    window = None
    if a.window:
        lo, hi = (float(x) for x in a.window.split(":"))
        if not hi > lo:
            sys.exit("trace-layout: --window FROM:TO with FROM < TO")
        window = (lo, hi)
    data = layout(load(a.trace), window, max(1, a.iterations),
                  a.title or os.path.basename(a.trace))
    data["width"] = a.width
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "trace-view.html"), encoding="utf-8") as f:
        page = f.read()
    # "</" cannot end the script element early: names come from the trace
    blob = json.dumps(data).replace("</", "<\\/")
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(page.replace("/*TRACE_DATA*/null", blob, 1))
    print(f"{data['width']}x{data['height']}")


if __name__ == "__main__":
    main()
