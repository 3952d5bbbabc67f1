#!/usr/bin/env python3
"""Check the sixth argument a trace recorded for throwjob's tj_args6(i, 2, 3, 4, 5, 0x6000 + i)
(traced with `throwjob* tj_args6 arg1=a:u arg6=f:x`): every call of the job's last phase, each
with f == 0x6000 + a. The sixth integer argument is a register on x86-64 and ppc64le and on
the stack on s390x.

    check_args6.py TRACE ROUNDS
"""
import json
import sys


def main():
    d = json.load(open(sys.argv[1]))
    rounds = int(sys.argv[2])
    ev = [e for e in d["traceEvents"] if e.get("name") == "tj_args6" and e.get("ph") in "Xi"]
    seen = sorted(e["args"]["a"] for e in ev)
    bad = [e["args"] for e in ev if e["args"]["f"] != hex(0x6000 + e["args"]["a"])]
    if seen != list(range(rounds)) or bad:
        sys.exit(f"check_args6: {sys.argv[1]}: calls {seen[:8]}... of {rounds}, "
                 f"wrong sixth argument in {bad[:4]}")
    print(f"check_args6: {sys.argv[1]}: {len(ev)} calls, sixth argument right in each")


if __name__ == "__main__":
    main()
