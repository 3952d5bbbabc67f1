#!/usr/bin/python3
"""A job for any CPython (tests/e2e/pystack.bats): os.getpid() calls (libc's getpid, which the test
probes) from known lines, recorded with inspect as pystack_job.py records its torch calls.

    pystack_plain.py --ready F --go F --linger F --out F
"""
import inspect
import json
import os
import sys
from jobsync import wait_file, write_atomic

CALLS = {}


def here(op):
    f = inspect.currentframe().f_back
    c = CALLS.setdefault(str(f.f_lineno), {"op": op, "func": f.f_code.co_qualname
                                           if hasattr(f.f_code, "co_qualname")
                                           else f.f_code.co_name, "count": 0})
    c["count"] += 1


class Job:
    def run(self, n):
        for _ in range(n):
            os.getpid(); here("getpid")  # noqa: E702


def main():
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    pid = os.getpid()  # before the tracer: every getpid it sees is a call site
    write_atomic(args["--ready"], str(pid))
    if not wait_file(args["--go"], 60):
        sys.exit("no go")
    Job().run(10)
    os.getpid(); here("getpid")  # noqa: E702
    write_atomic(args["--out"], json.dumps({"pid": pid, "calls": CALLS, "file": __file__}))
    wait_file(args["--linger"], 60)


if __name__ == "__main__":
    main()
