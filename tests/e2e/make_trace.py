#!/usr/bin/env python3
"""Writes the made-up inputs of merge.bats, report.bats, device.bats and analyzer.bats:

  make_trace.py kineto OUT PID BEFORE_NS AFTER_NS [CORR]   what the PyTorch profiler would have
      written for a ProfilerStep spanning [BEFORE, AFTER], with its own device 0 (a kernel and
      its arrow, correlation and arrow id CORR, 1 by default)
  make_trace.py shift IN OUT NS   our trace IN with its clock anchors NS later (as if traced then)
  make_trace.py idle OUT   a device idle for known reasons (check_report.py idle has the answer):
      kernels at 100-200, 300-400, 600-700 us: idle 200-300 and 400-600. Launch 2 (250-270)
      queues kernel 2 from 270; a synchronize waits 200-250; launch 3 (450-460) queues kernel 3
      from 460; a Python step runs 380-455. So queued 30 + 140, waiting 50, host-bound
      20 (250-270) + 60 (400-460): the step ran 55 of it, the launches 30. The launches name
      their lines (args.python, as with --python): train.py:42 made launch 2 (20 of it),
      train.py:57 launch 3 and an aiuMalloc inside it (452-455): 10, its nested call once
  make_trace.py broken-device IN DIR   a trace of the mock job IN broken three ways for
      verify_device.py to catch: DIR/lost.json without its first kernel span, DIR/bytes.json
      with every copy a byte longer than its launch, DIR/arrow.json with each arrow's finish
      0.5 us off its span
  make_trace.py negative-ts IN OUT   IN with its first runtime span moved to ts -5 us (check
      rejects it, the analyzer fails on it)
"""
import json
import sys


def kineto(out, pid, before, after, corr=1):
    trimester = 7889238 * 10**9          # Kineto floors its base to 3-month intervals
    base = before // trimester * trimester
    us = lambda ns: round((ns - base) / 1000, 3)
    ev = [
        {"name": "process_name", "ph": "M", "ts": us(before), "pid": pid, "tid": 0,
         "args": {"name": "python3"}},
        {"name": "process_name", "ph": "M", "ts": us(before), "pid": 0, "tid": 0,
         "args": {"name": "Spyre 0"}},
        {"name": "thread_name", "ph": "M", "ts": us(before), "pid": 0, "tid": 7,
         "args": {"name": "stream 7"}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": pid, "tid": pid,
         "ts": us(before), "dur": round((after - before) / 1000, 3), "args": {"External id": 1}},
        {"ph": "X", "cat": "privateuse1_runtime", "name": "aiuLaunchComputeStream", "pid": pid,
         "tid": pid, "ts": us(before) + 1, "dur": 2.0, "args": {"correlation": corr}},
        {"ph": "X", "cat": "kernel", "name": "Kernel", "pid": 0, "tid": 7, "ts": us(before) + 4,
         "dur": 3.0, "args": {"correlation": corr, "device": 0, "stream": 7}},
        {"ph": "s", "id": corr, "pid": pid, "tid": pid, "ts": us(before) + 1, "cat": "ac2g",
         "name": "ac2g"},
        {"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": us(before) + 4, "cat": "ac2g",
         "name": "ac2g", "bp": "e"},
    ]
    json.dump({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "IBM Spyre"}],
               "displayTimeUnit": "ms", "baseTimeNanoseconds": base, "traceEvents": ev,
               "traceName": out}, open(out, "w"), indent=1)


def shift(src, out, ns):
    d = json.load(open(src))
    d["baseTimeNanoseconds"] += ns
    d["spyreTracer"]["realtimeBaseNs"] += ns
    json.dump(d, open(out, "w"))


def idle(out):
    ev = [{"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "Spyre 0"}}]

    def x(name, cat, pid, ts, dur, **args):
        ev.append({"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": pid or 1, "ts": ts,
                   "dur": dur, "args": args})
    lines = [None, "train.py:42 step", "train.py:57 step"]
    for i, (lts, ldur, kts) in enumerate([(50, 10, 100), (250, 20, 300), (450, 10, 600)]):
        py = {"python": lines[i]} if lines[i] else {}
        x("aiuLaunchComputeStream", "privateuse1_runtime", 10, lts, ldur, correlation=i + 1, **py)
        x("k%d" % i, "kernel", 0, kts, 100, correlation=i + 1)
    x("aiuMalloc", "privateuse1_runtime", 10, 452, 3, python=lines[2])
    x("spyreStreamSynchronize", "privateuse1_runtime", 10, 200, 50)
    x("torch/nn/modules/module.py(1750): step", "python_function", 10, 380, 75)
    json.dump({"traceEvents": ev}, open(out, "w"))


def broken_device(src, out):
    d = json.load(open(src))
    ev = d["traceEvents"]

    def save(name, events):
        json.dump(dict(d, traceEvents=events), open(f"{out}/{name}.json", "w"))
    i = next(i for i, e in enumerate(ev) if e.get("cat") == "kernel")
    save("lost", ev[:i] + ev[i + 1:])
    save("bytes", [dict(e, args=dict(e["args"], bytes=e["args"]["bytes"] + 1))
                   if e.get("cat") == "gpu_memcpy" else e for e in ev])
    save("arrow", [dict(e, ts=round(e["ts"] + 0.5, 3)) if e["ph"] == "f" else e for e in ev])


def negative_ts(src, out):
    d = json.load(open(src))
    x = next(e for e in d["traceEvents"] if e["ph"] == "X" and e["cat"] == "privateuse1_runtime")
    x["ts"] = -5.0
    json.dump(d, open(out, "w"))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "kineto":
        kineto(args[0], *(int(v) for v in args[1:]))
    elif cmd == "shift":
        shift(args[0], args[1], int(args[2]))
    elif cmd == "idle":
        idle(args[0])
    elif cmd == "negative-ts":
        negative_ts(args[0], args[1])
    elif cmd == "broken-device":
        broken_device(args[0], args[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
