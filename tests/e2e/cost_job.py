#!/usr/bin/env python3
"""A job of fixed work whose probed calls cost a known share of it, for the overhead tests
(tests/e2e/cost.bats) and the bench (bench/overhead.py): CALLS calls of libc's labs() through
ctypes (the probe: --no-default --driver off --probe 'libc.so.6:labs'), each after WORK rounds
of plain Python arithmetic (~0.1 us a round here). WORK 0: the calls alone, so the probes take
nearly all of the job's CPU time (a trap costs ~20 us here, the call ~1 us).

    cost_job.py --ready F --go F --out F --calls N [--work K] [--twin]

--twin: the same calls again, of llabs() (the same code as labs() at another address, so not
probed), in blocks alternating with labs()'s; "probed" and "twin" are each kind's CPU seconds.
Their difference is what the probes added, measured side by side in one process: this VM's
speed moves by 10-50 % between two runs seconds apart, so separate runs cannot tell it.

F(ready) gets the pid; the job then waits for F(go) to exist, works, and writes F(out):
{"pid", "cpu": CPU seconds of the work (this process, all threads), "calls": N}.
"""
import argparse
import ctypes
import json
import os
import time
from jobsync import wait_file, write_atomic


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ready", required=True)
    ap.add_argument("--go", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--calls", type=int, required=True)
    ap.add_argument("--work", type=int, default=0)
    ap.add_argument("--twin", action="store_true")
    a = ap.parse_args()
    labs = ctypes.CDLL("libc.so.6").labs
    labs.restype = ctypes.c_long
    labs.argtypes = [ctypes.c_long]
    llabs = ctypes.CDLL("libc.so.6").llabs
    llabs.restype = ctypes.c_long
    llabs.argtypes = [ctypes.c_long]
    llabs(-1)
    labs(-1)  # resolved (the PLT, ctypes' own caches) before the ready file
    write_atomic(a.ready, f"{os.getpid()}\n")
    wait_file(a.go, 120, poll=0.005)
    c0, t0 = time.process_time(), os.times()
    x = 0
    spent = [0, 0]
    kinds = (0, 1) if a.twin else (0,)
    block = 50 if a.twin else a.calls
    for b in range(0, a.calls, block):
        # the order swapped every block: neither kind always runs first
        for kind in (kinds if (b // block) % 2 == 0 else kinds[::-1]):
            fn = (labs, llabs)[kind]
            s0 = time.thread_time_ns()
            for i in range(b, min(b + block, a.calls)):
                for k in range(a.work):
                    x = (x * 31 + k) & 0xFFFF
                x += fn(-i) & 1
            spent[kind] += time.thread_time_ns() - s0
    cpu, t1 = time.process_time() - c0, os.times()
    out = {"pid": os.getpid(), "cpu": cpu, "user": t1.user - t0.user,
           "system": t1.system - t0.system, "calls": a.calls, "x": x}
    if a.twin:
        out.update(probed=spent[0] / 1e9, twin=spent[1] / 1e9)
    with open(a.out + ".tmp", "w") as f:
        json.dump(out, f)
    os.rename(a.out + ".tmp", a.out)


if __name__ == "__main__":
    main()
