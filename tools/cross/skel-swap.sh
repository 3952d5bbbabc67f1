#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# skel-swap.sh TWIN.o OBJ.o [BPFTOOL] > X.skel.h: a libbpf skeleton for OBJ.o, a BPF object of
# the other byte order than this machine's (s390x's bpfeb), which bpftool cannot open.
#
# TWIN.o is the same source compiled for this machine's byte order with the same defines and
# vmlinux.h. bpftool writes the skeleton from TWIN.o; the object bytes it embeds (the body of
# X__elf_bytes(): "*sz = N;" then one string literal) are replaced by OBJ.o's. The rest of the
# skeleton (map, program and data-section names and layouts) comes from BTF, which must be the
# same in both objects: the script compares their BTF, type by type, and fails if it differs.
set -eu

twin=${1:?usage: skel-swap.sh TWIN.o OBJ.o [BPFTOOL]}
obj=${2:?usage: skel-swap.sh TWIN.o OBJ.o [BPFTOOL]}
bpftool=${3:-bpftool}
name=$(basename "$obj" .o | tr . _)	# what bpftool names it: spyre.bpf.o -> spyre_bpf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bpftool" btf dump file "$twin" >"$tmp/twin.btf"
"$bpftool" btf dump file "$obj" >"$tmp/obj.btf"
cmp -s "$tmp/twin.btf" "$tmp/obj.btf" || {
	echo "skel-swap: $twin and $obj differ in BTF: not twins" >&2
	diff "$tmp/twin.btf" "$tmp/obj.btf" | head -n 20 >&2
	exit 1
}
"$bpftool" gen skeleton "$twin" name "$name" >"$tmp/skel.h"

# OBJ's bytes as the lines of a C string literal, every byte as \xNN (so no escape can run
# into the next character), 32 to a line, continued with a backslash as bpftool does
od -An -v -tx1 "$obj" | tr -s ' \n' '\n\n' | sed '/^$/d' |
	awk '{ printf "\\x%s", $1 } NR % 32 == 0 { printf "\\\n" } END { printf "\";\n" }' \
	>"$tmp/bytes"
size=$(stat -c %s "$obj")

# in ${name}__elf_bytes(): replace "*sz = N;" and the literal after it (up to the line that
# ends it with '";')
awk -v fn="${name}__elf_bytes(size_t *sz)" -v size="$size" -v bytes="$tmp/bytes" '
	index($0, fn) && $0 !~ /;$/ { infn = 1 }
	infn && /\*sz = [0-9]+;/ { print "\t*sz = " size ";"; state = 1; next }
	state == 1 && /return \(const void \*\)"\\$/ {
		print
		while ((getline l < bytes) > 0)
			print l
		state = 2
		next
	}
	state == 2 { if (/";$/) { state = 3; infn = 0 } next }
	{ print }
	END { if (state != 3) exit 1 }' "$tmp/skel.h" || {
	echo "skel-swap: no ${name}__elf_bytes() literal in bpftool's skeleton" >&2
	exit 1
}
