# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Crafted ELF files for the hostile-target tests (issue 43, hostile.bats, test_elfsym.c's
twins): an x86-64 ET_DYN header and what follows, made sparse so that a claim of hundreds of
megabytes costs a few kilobytes of disk.

  craft_elf.py sections PATH N    N section headers by extended numbering (e_shnum 0, the count
                                  in section 0's sh_size), the file as long as the table (sparse)
  craft_elf.py note PATH SIZE     one SHT_NOTE section of SIZE bytes (zeros: empty notes), its
                                  build id not among them, the file as long (sparse)
"""
import struct
import sys

EHDR = '<16sHHIQQQIHHHHHH'
SHDR = '<IIQQQQIIQQ'


def ident():
    return b'\x7fELF' + bytes([2, 1, 1]) + bytes(9)


def write(path, shoff, shnum_field, shdrs, size):
    eh = struct.pack(EHDR, ident(), 3, 62, 1, 0, 0, shoff, 0, 64, 56, 0, 64, shnum_field, 0)
    with open(path, 'wb') as f:
        f.write(eh.ljust(4096, b'\0'))
        f.seek(shoff)
        f.write(b''.join(shdrs))
        f.truncate(size)


def main():
    mode, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == 'sections':
        # section 0 holds the count; the table runs to the end of the file
        sh0 = struct.pack(SHDR, 0, 0, 0, 0, 0, n, 0, 0, 0, 0)
        write(path, 4096, 0, [sh0], 4096 + n * 64)
    elif mode == 'note':
        null = struct.pack(SHDR, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        note = struct.pack(SHDR, 0, 7, 2, 0, 8192, n, 0, 0, 4, 0)	# SHT_NOTE, SHF_ALLOC
        write(path, 4096, 2, [null, note], 8192 + n)
    else:
        sys.exit('unknown mode ' + mode)


main()
