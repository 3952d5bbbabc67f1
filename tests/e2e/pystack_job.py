#!/usr/bin/python3
"""The Python-stack tests' job (tests/e2e/pystack.bats): Debian's python3-torch making torch.mm and
torch.add calls from known lines of this file, in a function, a nested one and a second thread
calling at the same time, so the trace's innermost frame of each aten op can be checked against
the line that made the call.

    pystack_job.py --ready F --go F --linger F --out F [--iters N]

F(ready) gets the pid once torch is imported; the job waits for F(go), makes its calls, writes
F(out), then waits for F(linger) (at most 60 s) so that the tracer reads its code objects while it
lives, and exits 0. F(out):
    {"pid", "calls": {"LINE": {"op": "aten::mm", "func": QUALNAME, "count": N}}, "file": __file__}
Each call site records its own line with inspect (the ground truth).
"""
import argparse
import inspect
import json
import os
import sys
import threading

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import torch  # noqa: E402
from jobsync import wait_file, write_atomic  # noqa: E402

CALLS = {}


def here(op):
    """Count a call of @op made on the caller's line (the line of the statement calling here)."""
    f = inspect.currentframe().f_back
    c = CALLS.setdefault(str(f.f_lineno), {"op": op, "func": f.f_code.co_qualname, "count": 0})
    c["count"] += 1


class Model:
    def __init__(self):
        self.w = torch.ones(8, 8)

    def layer(self, x):
        y = torch.mm(x, self.w); here("aten::mm")  # noqa: E702
        return y

    def step(self, x):
        y = self.layer(x)
        z = torch.add(y, x); here("aten::add")  # noqa: E702
        def inner(a):  # noqa: E306
            return torch.mm(a, a), here("aten::mm")
        inner(z)
        return z


def worker(x, n):
    """A second Python thread, calling while main does: its ops must name its own lines."""
    for _ in range(n):
        torch.mm(x, x); here("aten::mm")  # noqa: E702


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ready", required=True)
    ap.add_argument("--go", required=True)
    ap.add_argument("--linger", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    m = Model()
    x = torch.ones(8, 8)
    write_atomic(a.ready, str(os.getpid()))
    if not wait_file(a.go, 60):
        sys.exit("no go")
    t = threading.Thread(target=worker, args=(x, a.iters), name="pyworker")
    t.start()
    for _ in range(a.iters):
        m.step(x)
        torch.mm(x, x); here("aten::mm")  # noqa: E702
    t.join()
    write_atomic(a.out, json.dumps({"pid": os.getpid(), "calls": CALLS, "file": __file__}))
    wait_file(a.linger, 60)


if __name__ == "__main__":
    main()
