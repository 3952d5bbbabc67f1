#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# extract-vmlinux.sh BZIMAGE OUT: write the uncompressed ELF kernel hidden in a bzImage.
# QEMU's -kernel boots an ELF vmlinux directly through its PVH note, which is much faster
# under TCG than running the bzImage's own decompressor. Tries every compressor's magic at
# every offset it appears until one yields an ELF file.
set -eu

in=${1:?usage: extract-vmlinux.sh BZIMAGE OUT}
out=${2:?usage: extract-vmlinux.sh BZIMAGE OUT}
tmp=$out.tmp
trap 'rm -f "$tmp"' EXIT

is_elf() {
	[ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]
}

# try MAGIC_HEX DECOMPRESSOR...: grep prints the byte offset of each candidate magic
try() {
	magic=$1
	shift
	for off in $(LC_ALL=C grep -obUaP "$magic" "$in" 2>/dev/null | cut -d: -f1); do
		# trailing bytes after the stream make the decompressor complain: ignore its status
		tail -c +$((off + 1)) "$in" | "$@" >"$tmp" 2>/dev/null || true
		if [ -s "$tmp" ] && is_elf "$tmp"; then
			mv "$tmp" "$out"
			echo "extract-vmlinux: $in -> $out ($1 stream at byte $off)"
			exit 0
		fi
	done
}

try '\xfd\x37\x7a\x58\x5a\x00' xz -dc --single-stream
try '\x28\xb5\x2f\xfd' zstd -dc
try '\x1f\x8b\x08' gzip -dc
try '\x02\x21\x4c\x18' lz4 -dc
try '\x5d\x00\x00' xz -dc --format=lzma
echo "extract-vmlinux: no compressed ELF kernel found in $in" >&2
exit 1
