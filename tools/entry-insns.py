#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""entry-insns.py LIB...: how x86-64 functions begin, the instruction a uprobe at a function's
entry lands on, and the one after an endbr64 (issue 25, part 2: which entries the kernel
single-steps today, and which of those BPF could perform exactly).

Reads the ELF files' defined function symbols (.symtab, else .dynsym; `readelf -Ws`) and the
first bytes at each, and sorts them into kinds: emulated by the kernel (push, nop5), endbr64
followed by each kind, mov reg,reg, mov $imm,reg, lea, sub $imm,%rsp, other. Prints a table per
library, counts and shares. Only the encodings listed are decoded, by hand (no Capstone binding
in Debian's python3 here); everything else is "other".
"""
import struct
import subprocess
import sys


def segments(path):
    """(vaddr, offset, filesz) of the PT_LOAD segments"""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    segs = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            segs.append((int(f[2], 16), int(f[1], 16), int(f[4], 16)))
    return segs


def functions(path):
    """the addresses of defined FUNC symbols, .symtab when there is one"""
    out = subprocess.run(["readelf", "-Ws", path], capture_output=True, text=True).stdout
    tabs, cur = {}, None
    for line in out.splitlines():
        if line.startswith("Symbol table"):
            cur = "symtab" if ".symtab" in line else "dynsym"
            tabs.setdefault(cur, set())
            continue
        f = line.split()
        if cur and len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND":
            addr = int(f[1], 16)
            if addr:
                tabs[cur].add(addr)
    return tabs.get("symtab") or tabs.get("dynsym") or set()


def kind(b):
    """the kind of the instruction at b[0:], and its length (0: not decoded)"""
    if b[:4] == b"\xf3\x0f\x1e\xfa":
        return "endbr64", 4
    if 0x50 <= b[0] <= 0x57:
        return "push (emulated)", 1
    if b[0] == 0x41 and 0x50 <= b[1] <= 0x57:
        return "push (emulated)", 2
    if b[:5] == b"\x0f\x1f\x44\x00\x00":
        return "nop5 (emulated)", 5
    rex = b[0] if 0x40 <= b[0] <= 0x4f else None
    o = 1 if rex is not None else 0
    op, modrm = b[o], b[o + 1]
    mod = modrm >> 6
    if op in (0x89, 0x8b) and mod == 3:
        return "mov reg,reg", o + 2
    if 0xb8 <= op <= 0xbf:
        return "mov $imm,reg", o + 1 + (8 if rex and rex & 8 else 4)
    if op == 0xc7 and mod == 3 and (modrm >> 3) & 7 == 0:
        return "mov $imm,reg", o + 6
    if op == 0x31 and mod == 3 or op == 0x33 and mod == 3:
        return "xor reg,reg (flags)", o + 2
    if op == 0x8d and rex is not None:
        return "lea", 0
    if rex == 0x48 and op == 0x83 and modrm == 0xec:
        return "sub $imm,%rsp (flags)", o + 3
    if rex == 0x48 and op == 0x81 and modrm == 0xec:
        return "sub $imm,%rsp (flags)", o + 6
    if op == 0xe9 or op == 0xeb:
        return "jmp (emulated)", 0
    if op == 0xc3:
        return "ret", 1
    return "other", 0


def main():
    for path in sys.argv[1:]:
        segs, counts, n = segments(path), {}, 0
        with open(path, "rb") as f:
            data = f.read()
        for addr in functions(path):
            for va, off, sz in segs:
                if va <= addr < va + sz:
                    b = data[off + addr - va:off + addr - va + 16]
                    break
            else:
                continue
            if len(b) < 16:
                continue
            k, ln = kind(b)
            if k == "endbr64":
                k = "endbr64 + " + kind(b[4:])[0]
            counts[k] = counts.get(k, 0) + 1
            n += 1
        print(f"{path}: {n} functions")
        for k, c in sorted(counts.items(), key=lambda kv: -kv[1]):
            print(f"  {k:40s} {c:8d} {100 * c / n:5.1f}%")


if __name__ == "__main__":
    main()
