#!/bin/sh
# Regenerate vmlinux/<arch>/vmlinux.h from a kernel's BTF, for CO-RE builds.
# usage: tools/gen-vmlinux.sh ARCH [KERNEL]   (default: /sys/kernel/btf/vmlinux)
#
# KERNEL is a raw BTF file (/sys/kernel/btf/vmlinux), an ELF vmlinux with a .BTF section (what
# Debian's powerpc64le package ships), or a compressed boot image (vmlinuz: x86's bzImage,
# s390x's image, whose payload is a raw binary, not ELF). Other architectures' kernels are
# usually of the other byte order (s390x is big-endian): bpftool reads BTF of either order, so
# all that is needed is to find the BTF blob, which for a boot image means decompressing it.
set -eu
arch=${1:?usage: gen-vmlinux.sh ARCH [KERNEL]}
in=${2:-/sys/kernel/btf/vmlinux}
[ -r "$in" ] || { echo "gen-vmlinux: cannot read $in" >&2; exit 1; }
dir=$(dirname "$0")/../vmlinux/$arch
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

magic() {
	head -c "$2" "$1" | od -An -tx1 | tr -d ' \n'
}

# carve FILE OUT: copy the kernel's BTF blob out of FILE (an image with BTF somewhere in it).
# The header (struct btf_header: magic 0xeb9f, version 1, flags 0, hdr_len 24, then type and
# string section offsets and lengths) is searched in both byte orders; vmlinux BTF has its
# types at offset 0 and its strings right after them, which rules out chance matches.
carve() {
	for order in big little; do
		case $order in
		big) pat='\xeb\x9f\x01\x00\x00\x00\x00\x18' ;;
		little) pat='\x9f\xeb\x01\x00\x18\x00\x00\x00' ;;
		esac
		for off in $(LC_ALL=C grep -obUaP "$pat" "$1" 2>/dev/null | cut -d: -f1); do
			set -- "$1" "$2" $(tail -c +$((off + 9)) "$1" | head -c 16 |
				od -An -tu4 --endian=$order)
			# $3 type_off, $4 type_len, $5 str_off, $6 str_len
			[ $# -eq 6 ] && [ "$3" -eq 0 ] && [ "$5" -eq "$4" ] || continue
			tail -c +$((off + 1)) "$1" | head -c $((24 + $5 + $6)) >"$2"
			[ "$(stat -c %s "$2")" -eq $((24 + $5 + $6)) ] && return 0
		done
	done
	return 1
}

# unpack IMAGE OUT: every compressed stream in IMAGE, tried at each offset its magic appears,
# until one decompresses to something with BTF in it
unpack() {
	for z in 'fd377a585a00 xz -dc --single-stream' '28b52ffd zstd -dc' '1f8b08 gzip -dc' \
		'02214c18 lz4 -dc' '5d0000 xz -dc --format=lzma'; do
		set -- "$1" "$2" $z
		pat=$(echo "$3" | sed 's/../\\x&/g')
		for off in $(LC_ALL=C grep -obUaP "$pat" "$1" 2>/dev/null | cut -d: -f1); do
			# trailing bytes after the stream make the decompressor fail: ignore its status
			tail -c +$((off + 1)) "$1" | "$4" "$5" ${6:+"$6"} >"$tmp/raw" 2>/dev/null || true
			[ -s "$tmp/raw" ] && carve "$tmp/raw" "$2" && return 0
		done
	done
	return 1
}

case $(magic "$in" 4) in
eb9f01* | 9feb01*) btf=$in ;;		# raw BTF
7f454c46) btf=$in ;;			# ELF: bpftool reads its .BTF section
*)
	btf=$tmp/btf
	unpack "$in" "$btf" || { echo "gen-vmlinux: no BTF found in $in" >&2; exit 1; }
	;;
esac
mkdir -p "$dir"
bpftool btf dump file "$btf" format c >"$tmp/vmlinux.h"
mv "$tmp/vmlinux.h" "$dir/vmlinux.h"
echo "wrote $dir/vmlinux.h from $in"
