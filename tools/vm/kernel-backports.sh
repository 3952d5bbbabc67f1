#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# kernel-backports.sh DIR [SUITE]: Debian's newest kernel of SUITE (default bookworm-backports,
# 6.12 at this writing; trixie-backports: 7.3 at this writing, `make vm-next`) unpacked under
# DIR (DIR/boot/vmlinuz-*, DIR/lib/modules/*, with modules.dep), for another guest kernel:
# 6.12 has uprobe_multi links (6.6+) and no lockdown, which neither this host (6.18 under
# lockdown) nor bookworm's own 6.1 have; 7.3 also lets a uprobe program write its registers
# (returns done by BPF, docs/user-guide.md). Nothing is installed on the host: apt reads a
# private source list (and an empty package status) and downloads the .debs. Idempotent: does
# nothing once DIR has a kernel.
#
# Since 7.x Debian splits an image: linux-image-VER is a metapackage over linux-binary-VER (the
# vmlinuz, in /usr/lib/modules/VER), linux-modules-VER and linux-base-VER (System.map,
# config); merged-/usr paths are moved to the layout older packages have (boot/, lib/modules/).
set -eu

dir=${1:?usage: kernel-backports.sh DIR [SUITE]}
suite=${2:-bookworm-backports}
case $dir in /*) ;; *) dir=$(pwd)/$dir ;; esac	# apt reads relative Dir:: paths from /
if ls "$dir"/boot/vmlinuz-* >/dev/null 2>&1; then
	echo "vm kernel: $(ls "$dir"/boot/vmlinuz-*) present"
	exit 0
fi
apt=$dir.apt
rm -rf "$apt"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
echo "deb http://deb.debian.org/debian $suite main" >"$apt/sources.list"
set -- -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
	-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o Debug::NoLocking=1 \
	-o Dir::State::status=/dev/null -o APT::Sandbox::User=root
apt-get "$@" update -qq
# the metapackage names the versioned image package
pkg=$(apt-cache "$@" depends linux-image-amd64 | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)/\1/p' |
	head -1)
[ -n "$pkg" ] || { echo "vm kernel: no linux-image in $suite" >&2; exit 1; }
# a split image: its linux-binary/modules/base parts of the same version
parts=$(apt-cache "$@" depends "$pkg" |
	sed -n 's/^ *Depends: \(linux-\(binary\|modules\|base\)-[0-9][^ ]*\)$/\1/p')
(cd "$apt/debs" && apt-get "$@" download "$pkg" $parts)
rm -rf "$dir.tmp"
for d in "$apt"/debs/*.deb; do
	dpkg-deb -x "$d" "$dir.tmp"
done
if [ -d "$dir.tmp/usr/lib/modules" ]; then
	mkdir -p "$dir.tmp/lib" "$dir.tmp/boot"
	mv "$dir.tmp/usr/lib/modules" "$dir.tmp/lib/modules"
	for k in "$dir.tmp"/lib/modules/*/vmlinuz; do
		[ -e "$k" ] || continue
		v=${k%/vmlinuz}
		mv "$k" "$dir.tmp/boot/vmlinuz-${v##*/}"
	done
fi
kver=$(ls "$dir.tmp/lib/modules")
depmod -b "$dir.tmp" "$kver"
rm -rf "$dir" "$apt"
mv "$dir.tmp" "$dir"
echo "vm kernel: $dir/boot/vmlinuz-$kver"
