#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""torchmm: real C++ code for the per-call bench: a CPU loop calling torch.mm on small matrices
(Debian's python3-torch, one thread), so a probe on at::_ops::mm::call in libtorch_cpu.so shows
its cost per call next to the empty pairs on the same offsets.

Same handshake as callbench: --ready-file gets the pid once torch is loaded and warm, then each
SIGUSR1 runs one phase and writes RESULT.<phase>, a key=value line (the calling thread's CPU
time per call, median over repetitions; calls made); SIGTERM or SIGINT ends.
Run with /usr/bin/python3 (the interpreter that has torch)."""
import argparse
import os
import signal
import statistics
import time

import torch


def phase(a, b, reps, rep_ms):
    per_call, calls = [], 0
    rep_ns = rep_ms * 1000000
    for r in range(reps + 1):  # the first repetition is a warm-up
        n, t0, c0 = 0, time.monotonic_ns(), time.thread_time_ns()
        # at least one batch: a tracer starting on the same CPU can hold the job past rep_ns
        while n == 0 or time.monotonic_ns() - t0 < rep_ns:
            for _ in range(100):
                torch.mm(a, b)
            n += 100
        if r:
            per_call.append((time.thread_time_ns() - c0) / n)
        calls += n
    return statistics.median(per_call), calls


def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=8, help="matrices SIZE x SIZE (8)")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--rep-ms", type=int, default=40)
    ap.add_argument("--ready-file")
    ap.add_argument("--result", required=True)
    o = ap.parse_args()
    torch.set_num_threads(1)
    a, b = torch.randn(o.size, o.size), torch.randn(o.size, o.size)
    sigs = {signal.SIGUSR1, signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    phase(a, b, 1, 20)  # warm: the op's dispatch tables, the allocator's cache
    if o.ready_file:
        write_atomic(o.ready_file, "%d\n" % os.getpid())
    k = 0
    while signal.sigwait(sigs) == signal.SIGUSR1:
        k += 1
        med, calls = phase(a, b, o.reps, o.rep_ms)
        write_atomic("%s.%d" % (o.result, k),
                     "phase=%d size=%d cpu_median_ns=%.3f calls=%d\n" % (k, o.size, med, calls))


if __name__ == "__main__":
    main()
