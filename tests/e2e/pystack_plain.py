#!/usr/bin/python3
"""A job for any CPython (tests/e2e/pystack.bats): os.getpid() calls (libc's getpid, which the test
probes) from known lines, recorded with inspect as pystack_job.py records its torch calls.

    pystack_plain.py --ready F --go F --linger F --out F
"""
import inspect
import json
import os
import sys
import time

CALLS = {}


def here(op):
    f = inspect.currentframe().f_back
    c = CALLS.setdefault(str(f.f_lineno), {"op": op, "func": f.f_code.co_qualname
                                           if hasattr(f.f_code, "co_qualname")
                                           else f.f_code.co_name, "count": 0})
    c["count"] += 1


def wait_file(path, timeout):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class Job:
    def run(self, n):
        for _ in range(n):
            os.getpid(); here("getpid")  # noqa: E702


def main():
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    pid = os.getpid()  # before the tracer: every getpid it sees is a call site
    with open(args["--ready"] + ".tmp", "w") as f:
        f.write(str(pid))
    os.rename(args["--ready"] + ".tmp", args["--ready"])
    if not wait_file(args["--go"], 60):
        sys.exit("no go")
    Job().run(10)
    os.getpid(); here("getpid")  # noqa: E702
    with open(args["--out"] + ".tmp", "w") as f:
        json.dump({"pid": pid, "calls": CALLS, "file": __file__}, f)
    os.rename(args["--out"] + ".tmp", args["--out"])
    wait_file(args["--linger"], 60)


if __name__ == "__main__":
    main()
