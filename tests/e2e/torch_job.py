#!/usr/bin/python3
"""A small CPU PyTorch training job for the exception tests (tests/e2e/exceptions.bats): real C++
code that throws through traced calls. Run with Debian's python3-torch (/usr/bin/python3).

Every iteration trains a two-layer network by gradient descent, with the gradients written out
as explicit torch.mm calls (no autograd: autograd's backward would make mm calls of its own
that the job could not count), and once makes a torch.mm with mismatched shapes: the shape
check throws c10::Error inside at::_ops::mm::call, the Python binding turns it into a
RuntimeError, caught here; and once a torch.ones with a negative last dimension, whose size
has 1 to 4 dimensions by turns: the c10::Error leaves at::_ops::ones::call, whose third
argument (after the hidden result pointer, the size's data pointer) is that count, which the
tracer must show on each unwound call. A tracer with a return probe on that path kills the job
there.

    torch_job.py --ready F --go F --out F [--iters N] [--no-errors] [--linger F]

F(ready) gets the pid once torch is imported and the model built; the job then waits (at most
--go-timeout seconds) for F(go) to exist, trains, writes F(out) (with --linger: waits as long
again for F(linger), so that a tracer can leave a live job) and exits 0:
    {"pid", "checksum": sha256 of the final parameters' bytes, "caught": shape errors caught,
     "mmOk": torch.mm calls that returned, "mmFailed": those that raised,
     "calls": {symbol: entries}, "unwound": {symbol: entries left by the exception},
     "unwoundCalls": [[symbol, 0, [args]], ...] (tests/e2e/check_unwound.py --args)}
for the two functions a torch.mm on CPU float tensors enters: at::_ops::mm::call (the
dispatcher's entry, once per torch.mm) and at::native::structured_mm_out_cpu::impl (the CPU
kernel, reached only after the shape check passed).
"""
import argparse
import hashlib
import json
import os
import sys

# one thread everywhere, before torch loads its BLAS: the result must not depend on how work
# is split, and a single thread is what the counts assume
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import torch  # noqa: E402
from jobsync import wait_file, write_atomic  # noqa: E402

MM_CALL = "at::_ops::mm::call"
MM_CPU = "at::native::structured_mm_out_cpu::impl"
ONES_CALL = "at::_ops::ones::call"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ready", required=True)
    ap.add_argument("--go", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--go-timeout", type=float, default=120)
    ap.add_argument("--no-errors", action="store_true", help="skip the failing torch.mm")
    ap.add_argument("--linger", help="after writing --out, wait for this file to exist")
    a = ap.parse_args()

    torch.manual_seed(1234)
    torch.set_num_threads(1)
    n, d_in, d_hid, d_out, lr = 64, 32, 48, 8, 0.01
    x = torch.randn(n, d_in)
    y = torch.randn(n, d_out)
    w1 = torch.randn(d_in, d_hid) * 0.1
    w2 = torch.randn(d_hid, d_out) * 0.1
    bad = torch.randn(d_in + 1, d_hid)  # x @ bad: inner dimensions 32 and 33 do not match
    mm_ok = mm_failed = caught = 0
    ones_dims = []  # the size's length of each torch.ones that raised

    def mm(p, q):
        nonlocal mm_ok
        r = torch.mm(p, q)
        mm_ok += 1
        return r

    write_atomic(a.ready, f"{os.getpid()}\n")
    if not wait_file(a.go, a.go_timeout, "torch_job"):
        return 3

    with torch.no_grad():
        for _ in range(a.iters):
            if not a.no_errors:
                try:
                    torch.mm(x, bad)
                    print("torch_job: mismatched torch.mm did not raise", file=sys.stderr)
                    return 1
                except RuntimeError as e:
                    if "shapes cannot be multiplied" not in str(e):
                        raise
                    mm_failed += 1
                    caught += 1
                dims = 1 + len(ones_dims) % 4
                try:
                    torch.ones(*([1] * (dims - 1) + [-1]))
                    print("torch_job: torch.ones(..., -1) did not raise", file=sys.stderr)
                    return 1
                except RuntimeError as e:
                    if "negative dimension" not in str(e):
                        raise
                    ones_dims.append(dims)
                    caught += 1
            h_pre = mm(x, w1)
            h = h_pre.clamp(min=0)
            pred = mm(h, w2)
            g_pred = (pred - y) * (2.0 / n)
            g_w2 = mm(h.t(), g_pred)
            g_h = mm(g_pred, w2.t()) * (h_pre > 0)
            g_w1 = mm(x.t(), g_h)
            w1 -= lr * g_w1
            w2 -= lr * g_w2

    digest = hashlib.sha256()
    for p in (w1, w2):
        digest.update(p.contiguous().numpy().tobytes())
    out = {
        "pid": os.getpid(),
        "checksum": digest.hexdigest(),
        "caught": caught,
        "mmOk": mm_ok,
        "mmFailed": mm_failed,
        "calls": {MM_CALL: mm_ok + mm_failed, MM_CPU: mm_ok, ONES_CALL: len(ones_dims)},
        "unwound": {MM_CALL: mm_failed, MM_CPU: 0, ONES_CALL: len(ones_dims)},
        "unwoundCalls": [[MM_CALL, 0, []]] * mm_failed + [[ONES_CALL, 0, [d]] for d in ones_dims],
    }
    write_atomic(a.out, json.dumps(out) + "\n")
    if a.linger and not wait_file(a.linger, a.go_timeout, "torch_job"):
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
