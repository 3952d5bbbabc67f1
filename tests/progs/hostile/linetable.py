# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A hostile Python process for the tracer's --python (issue 43, hostile.bats).

Its code objects carry a crafted line table (co_linetable): one entry for the first code unit,
then bytes without bit 7, which a decoder skips one at a time looking for the next entry. Every
frame of the calls it makes past that first unit sends the decoder through the whole table.

  linetable.py READY GO SIZE DEPTH MODE
    READY  file written once the process is set up (its pid inside)
    GO     file waited for before the calls start
    SIZE   the line table's length in bytes
    DEPTH  nested frames of such code objects under each call to os.getpid()
    MODE   same: the same code objects for every call (one table scanned per frame, per call)
           new:  a new code object (pointing at the same table) for every call, all kept alive
Runs until killed.
"""
import os
import sys
import time
import types

ready, go, size, depth, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), \
    sys.argv[5]
TABLE = bytes([0x80]) + bytes(size - 1)


def leaf(n, f):
    if n:
        return f(n - 1, f)
    return os.getpid()


CODE = leaf.__code__.replace(co_linetable=TABLE)
kept = []


def make():
    return types.FunctionType(CODE.replace(co_name="leaf%d" % len(kept)), globals())


same = make()
open(ready, "w").write(str(os.getpid()))
while not os.path.exists(go):
    time.sleep(0.01)
while True:
    if mode == "new":
        f = make()
        kept.append(f)	# alive: its address is not reused by the next
        f(depth - 1, f)
        time.sleep(0.001)
    else:
        same(depth - 1, same)
