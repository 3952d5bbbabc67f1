#!/usr/bin/python3
"""A small CPU PyTorch training job for the torch probe table (tests/e2e/torch_ops.bats): an MLP
of nn.Linear layers with ReLU between them, MSE loss, autograd's backward, an SGD step. Fixed
seed, one thread: the same run gives the same weights, traced or not. Run with Debian's
python3-torch (/usr/bin/python3).

    torch_train.py --ready F --go F --out F [--iters N] [--layers L]

F(ready) gets the pid once torch is imported and the model built (the traced window starts
after it); the job then waits (at most --go-timeout seconds) for F(go) to exist, trains, writes
F(out) and exits 0:
    {"pid", "iters", "layers": nn.Linear layers, "relus", "params": parameter tensors,
     "checksum": sha256 of the final parameters' bytes,
     "iterations": [[start_ns, end_ns], ...] CLOCK_MONOTONIC (what the tracer's timestamps
                   are), around each iteration: every op of iteration k lies inside its pair,
     "iterNs": each iteration's duration}
"""
import argparse
import hashlib
import json
import os
import sys
import time

# one thread everywhere, before torch loads its BLAS: the result must not depend on how work
# is split, and a single thread is what the per-iteration counts assume
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import torch  # noqa: E402
from torch import nn  # noqa: E402

from jobsync import wait_file, write_atomic  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ready", required=True)
    ap.add_argument("--go", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--go-timeout", type=float, default=120)
    a = ap.parse_args()

    torch.manual_seed(1234)
    torch.set_num_threads(1)
    n, width, d_in, d_out, lr = 64, 48, 32, 8, 0.01
    dims = [d_in] + [width] * (a.layers - 1) + [d_out]
    mods = []
    for i in range(a.layers):
        mods.append(nn.Linear(dims[i], dims[i + 1]))
        if i < a.layers - 1:
            mods.append(nn.ReLU())
    model = nn.Sequential(*mods)
    loss_fn = nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    x = torch.randn(n, d_in)
    y = torch.randn(n, d_out)

    write_atomic(a.ready, f"{os.getpid()}\n")
    if not wait_file(a.go, a.go_timeout, "torch_train"):
        return 3

    bounds = []
    for _ in range(a.iters):
        t0 = time.monotonic_ns()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        t1 = time.monotonic_ns()
        bounds.append([t0, t1])

    digest = hashlib.sha256()
    params = list(model.parameters())
    for p in params:
        digest.update(p.detach().contiguous().numpy().tobytes())
    out = {
        "pid": os.getpid(),
        "iters": a.iters,
        "layers": a.layers,
        "relus": a.layers - 1,
        "params": len(params),
        "checksum": digest.hexdigest(),
        "loss": float(loss),
        "iterations": bounds,
        "iterNs": [t1 - t0 for t0, t1 in bounds],
    }
    write_atomic(a.out, json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
