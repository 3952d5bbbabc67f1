#!/usr/bin/python3
"""A small CPU PyTorch training job that profiles itself with PyTorch's own profiler, for the
merge tests (tests/e2e/merge.bats): spyre-bpftrace traces it by PID while the profiler runs,
and `merge` puts both traces together. Run with Debian's python3-torch (/usr/bin/python3),
which is built without Kineto: the profiler writes its legacy export (a bare array, ts in µs
from the profiler's start, pid "CPU functions", torch's own thread numbers).

    torch_profiled.py --ready F --go F --out DIR [--iters N]

F(ready) gets the pid once torch is imported and the model built; the job waits for F(go),
trains --iters steps under the profiler, then writes DIR/profile.json (the profiler's export)
and DIR/job.json: {"pid", "tid" (the training thread), "profilerStartNs" (CLOCK_REALTIME just
before the profiler was enabled), "profilerEnabledNs" (just after), "iters"}.
"""
import argparse
import json
import os
import threading
import time

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import torch  # noqa: E402
from jobsync import wait_file, write_atomic  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ready", required=True)
    ap.add_argument("--go", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--go-timeout", type=float, default=120)
    a = ap.parse_args()

    torch.manual_seed(1234)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 48), torch.nn.ReLU(), torch.nn.Linear(48, 8))
    x, y = torch.randn(64, 32), torch.randn(64, 8)
    write_atomic(a.ready, str(os.getpid()))
    if not wait_file(a.go, a.go_timeout):
        raise SystemExit("torch_profiled: no go file")

    start = time.time_ns()
    with torch.autograd.profiler.profile() as prof:
        enabled = time.time_ns()
        for _ in range(a.iters):
            loss = torch.nn.functional.mse_loss(model(x), y)
            model.zero_grad()
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.01 * p.grad
    os.makedirs(a.out, exist_ok=True)
    prof.export_chrome_trace(os.path.join(a.out, "profile.json"))
    write_atomic(os.path.join(a.out, "job.json"), json.dumps({
        "pid": os.getpid(), "tid": threading.get_native_id(), "profilerStartNs": start,
        "profilerEnabledNs": enabled, "iters": a.iters}))


if __name__ == "__main__":
    main()
