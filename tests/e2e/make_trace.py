#!/usr/bin/env python3
"""Writes the made-up inputs of merge.bats:

  make_trace.py kineto OUT PID BEFORE_NS AFTER_NS [CORR]   what the PyTorch profiler would have
      written for a ProfilerStep spanning [BEFORE, AFTER], with its own device 0 (a kernel and
      its arrow, correlation and arrow id CORR, 1 by default)
  make_trace.py shift IN OUT NS   our trace IN with its clock anchors NS later (as if traced then)
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


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "kineto":
        kineto(args[0], *(int(v) for v in args[1:]))
    elif cmd == "shift":
        shift(args[0], args[1], int(args[2]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
