# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Crafted ELF files for the hostile-target tests (issue 43, hostile.bats, test_elfsym.c's
twins): an x86-64 ET_DYN header and what follows, made sparse so that a claim of hundreds of
megabytes costs a few kilobytes of disk.

  craft_elf.py sections PATH N    N section headers by extended numbering (e_shnum 0, the count
                                  in section 0's sh_size), the file as long as the table (sparse)
  craft_elf.py note PATH SIZE     one SHT_NOTE section of SIZE bytes (zeros: empty notes), its
                                  build id not among them, the file as long (sparse)
  craft_elf.py forge PATH FROM CLAIM  PATH: a copy of library FROM whose GNU build id is
                                  CLAIM's (the same length): another library's identity, claimed
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


def build_id_at(data):
    """(offset, length) of the GNU build id's bytes in an ELF64 little-endian file."""
    eh = struct.unpack_from(EHDR, data)
    shoff, shentsize, shnum = eh[6], eh[11], eh[12]
    for i in range(shnum):
        sh = struct.unpack_from(SHDR, data, shoff + i * shentsize)
        if sh[1] != 7:	# SHT_NOTE
            continue
        off, end = sh[4], sh[4] + sh[5]
        while off + 12 <= end:
            namesz, descsz, typ = struct.unpack_from('<III', data, off)
            name_end = off + 12 + (namesz + 3) // 4 * 4
            if typ == 3 and data[off + 12:off + 12 + namesz] == b'GNU\0':
                return name_end, descsz
            off = name_end + (descsz + 3) // 4 * 4
    sys.exit('no build id')


def forge(path, src, claim):
    data = bytearray(open(src, 'rb').read())
    want = open(claim, 'rb').read()
    off, n = build_id_at(data)
    coff, cn = build_id_at(want)
    if n != cn:
        sys.exit('build ids of different lengths')
    data[off:off + n] = want[coff:coff + cn]
    open(path, 'wb').write(data)


def main():
    if sys.argv[1] == 'forge':
        forge(*sys.argv[2:5])
        return
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
