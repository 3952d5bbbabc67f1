#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A trace of any size from a real one: its events again and again, each copy shifted in time
past the one before (and its flow ids past the copy's before), so that the result is as
check-clean as the source. Written to stdout as it is made (a pipe: no disk), until BYTES.

  big_trace.py SRC.json BYTES [--count FILE] [--pad N]

--count FILE gets the number of events written; --pad N adds a string of N bytes to the args
of each span (fewer, larger events: a test's gigabytes in less time). The copy's ts is
K * 10^D + ts (D the digits of the source's last end), written from a template in which each
ts is zero-padded to D digits and preceded by a marker byte that becomes K: one bytes.replace
a copy, not one format an event.
"""
import json
import math
import sys

TS, ID = b"\x01", b"\x02"


def main():
    src, target = sys.argv[1], int(float(sys.argv[2]))
    count_file = sys.argv[sys.argv.index("--count") + 1] if "--count" in sys.argv else None
    pad = int(sys.argv[sys.argv.index("--pad") + 1]) if "--pad" in sys.argv else 0
    doc = json.load(open(src))
    events = doc.pop("traceEvents")
    meta = [e for e in events if e.get("ph") == "M"]
    rest = [e for e in events if e.get("ph") != "M"]
    end = max(e.get("ts", 0) + e.get("dur", 0) for e in rest)
    digits = max(1, math.ceil(math.log10(end + 1)))
    id_digits = max(1, len(str(max([e["id"] for e in rest if "id" in e] or [0]))))

    def templ(orig):
        e = dict(orig, ts="@TS@")
        if pad and e.get("ph") == "X":
            e["args"] = dict(e.get("args", {}), pad="p" * pad)
        if "id" in e and e.get("ph") in ("s", "f"):
            e["id"] = "@ID@"
        t = json.dumps(e, separators=(",", ":")).encode()
        t = t.replace(b'"@TS@"', TS + b"%0*.3f" % (digits + 4, orig["ts"]))
        if b'"@ID@"' in t:
            t = t.replace(b'"@ID@"', ID + b"%0*d" % (id_digits, orig["id"]))
        return t

    block = b",\n".join(templ(e) for e in rest)

    out = sys.stdout.buffer
    head = json.dumps(doc, separators=(",", ":")).encode()
    head = head[:-1] + (b"," if doc else b"") + b'"traceEvents":[\n'
    out.write(head)
    written = len(head)
    n = len(meta)
    if meta:
        m = b",\n".join(json.dumps(e, separators=(",", ":")).encode() for e in meta)
        out.write(m)
        written += len(m)
    k = 1
    chunk, size = [], 0
    while written < target:
        kb = b"%d" % k
        b = (b",\n" if n else b"") + block.replace(TS, kb).replace(ID, kb)
        chunk.append(b)
        size += len(b)
        written += len(b)
        n += len(rest)
        k += 1
        if size >= 1 << 22 or written >= target:
            out.write(b"".join(chunk))
            chunk, size = [], 0
    out.write(b"\n]}\n")
    out.flush()
    if count_file:
        with open(count_file, "w") as f:
            f.write("%d\n" % n)


if __name__ == "__main__":
    main()
