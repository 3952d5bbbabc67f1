#!/usr/bin/env python3
"""A job of fixed work whose probed calls cost a known share of it, for the overhead tests
(tests/e2e/cost.bats) and the bench (bench/overhead.py): CALLS calls of libc's labs() through
ctypes (the probe: --no-default --driver off --probe 'libc.so.6:labs'), each after WORK rounds
of plain Python arithmetic (~0.1 us a round here). WORK 0: the calls alone, so the probes take
nearly all of the job's CPU time (a trap costs ~20 us here, the call ~1 us).

    cost_job.py --ready F --go F --out F --calls N [--work K]

F(ready) gets the pid; the job then waits for F(go) to exist, works, and writes F(out):
{"pid", "cpu": CPU seconds of the work (this process, all threads), "calls": N}.
"""
import argparse
import ctypes
import json
import os
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ready", required=True)
    ap.add_argument("--go", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--calls", type=int, required=True)
    ap.add_argument("--work", type=int, default=0)
    a = ap.parse_args()
    labs = ctypes.CDLL("libc.so.6").labs
    labs.restype = ctypes.c_long
    labs.argtypes = [ctypes.c_long]
    labs(-1)  # resolved (the PLT, ctypes' own caches) before the ready file
    with open(a.ready + ".tmp", "w") as f:
        f.write(f"{os.getpid()}\n")
    os.rename(a.ready + ".tmp", a.ready)
    end = time.monotonic() + 120
    while not os.path.exists(a.go) and time.monotonic() < end:
        time.sleep(0.005)
    c0, t0 = time.process_time(), os.times()
    x = 0
    for i in range(a.calls):
        for k in range(a.work):
            x = (x * 31 + k) & 0xFFFF
        x += labs(-i) & 1
    cpu, t1 = time.process_time() - c0, os.times()
    with open(a.out + ".tmp", "w") as f:
        json.dump({"pid": os.getpid(), "cpu": cpu, "user": t1.user - t0.user,
                   "system": t1.system - t0.system, "calls": a.calls, "x": x}, f)
    os.rename(a.out + ".tmp", a.out)


if __name__ == "__main__":
    main()
