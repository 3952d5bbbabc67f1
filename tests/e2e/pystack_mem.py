#!/usr/bin/python3
"""The Python-stack tests' allocation job (tests/e2e/pystack.bats): CPU tensors allocated at known
lines of this file through PyTorch's CPU allocator (c10::alloc_cpu, which the test books as
allocations), some kept alive, some freed, so the memory ledger's live blocks can be checked
against the line that allocated them.

    pystack_mem.py --ready F --go F --linger F --out F

F(out): {"pid", "file", "kept": {"line", "func", "count", "bytes"}, "freed": {...}}
"""
import inspect
import json
import os
import sys

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import torch  # noqa: E402
from jobsync import wait_file, write_atomic  # noqa: E402


def line():
    return inspect.currentframe().f_back.f_lineno


def allocate(keep):
    for _ in range(3):
        keep.append(torch.empty(5000)); kept = line()  # noqa: E702
    for _ in range(4):
        t = torch.empty(7000); freed = line()  # noqa: E702
        del t
    return kept, freed


def main():
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    write_atomic(args["--ready"], str(os.getpid()))
    if not wait_file(args["--go"], 60):
        sys.exit("no go")
    keep = []
    kept, freed = allocate(keep)
    out = {"pid": os.getpid(), "file": __file__,
           "kept": {"line": kept, "func": "allocate", "count": 3, "bytes": 5000 * 4},
           "freed": {"line": freed, "func": "allocate", "count": 4, "bytes": 7000 * 4}}
    write_atomic(args["--out"], json.dumps(out))
    wait_file(args["--linger"], 60)
    del keep


if __name__ == "__main__":
    main()
