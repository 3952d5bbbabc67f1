#!/usr/bin/env python3
"""Count the probe sites that hold a breakpoint in a live process.

A uprobe is an int3 (0xcc) the kernel writes into the process's copy of the library's text; when
the uprobe goes away the original byte comes back. Reading the byte at every attach offset that
`spyre-bpftrace list -p PID` printed, from /proc/PID/mem, tells whether uprobes are still there,
whoever registered them. Prints "SITES_WITH_INT3 TOTAL_SITES"; exit 1 when no site was found.

usage: spyre-bpftrace list -p PID | probe_sites.py PID
"""
import os
import re
import sys

RETURN_SITE = re.compile(r"(?:at |, |jump )(\S+?)\+0x([0-9a-f]+)")
SITE = re.compile(r"\s(\S+)\+0x([0-9a-f]+)(?: \(after endbr64\))?(?: \[[^]]*\])?$")


def mappings(pid):
    """basename -> [(start, end, file offset, perms, path)] of file-backed mappings"""
    out = {}
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) < 6 or not parts[5].startswith("/"):
                continue
            start, end = (int(x, 16) for x in parts[0].split("-"))
            path = parts[5].rstrip("\n")
            if path.endswith(" (deleted)"):
                path = path[: -len(" (deleted)")]
            # map_files names a range without maps' zero padding: 401000-603000 for the
            # statically linked tool's 00401000-00603000
            out.setdefault(os.path.basename(path), []).append(
                (start, end, int(parts[2], 16), parts[1], f"{start:x}-{end:x}"))
    return out


def main():
    pid = int(sys.argv[1])
    maps = mappings(pid)
    sites = []
    for line in sys.stdin:
        line = line.rstrip("\n")
        m = SITE.search(line)
        if line.lstrip().startswith("returns: "):
            # "returns: N return instructions, M tail jumps at LIB+0xOFF, jump LIB+0xOFF"
            sites += [(l, int(o, 16)) for l, o in RETURN_SITE.findall(line)]
        elif m:
            sites.append((m.group(1), int(m.group(2), 16)))
    armed = total = 0
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for lib, off in sites:
            for start, end, foff, perms, rng in maps.get(lib, []):
                if "x" not in perms or not foff <= off < foff + (end - start):
                    continue
                mem.seek(start + off - foff)
                live = mem.read(1)
                with open(f"/proc/{pid}/map_files/{rng}", "rb") as lf:
                    lf.seek(off)
                    orig = lf.read(1)
                total += 1
                if live != orig:
                    if live != b"\xcc":
                        print(f"{lib}+{off:#x}: byte {live.hex()} is neither the file's "
                              f"{orig.hex()} nor int3", file=sys.stderr)
                    armed += 1
                break
    print(armed, total)
    return 0 if total else 1


if __name__ == "__main__":
    sys.exit(main())
