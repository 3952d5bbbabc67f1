#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# kernel-backports.sh DIR: Debian's newest bookworm-backports kernel (6.12 at this writing)
# unpacked under DIR (DIR/boot/vmlinuz-*, DIR/lib/modules/*, with modules.dep), for a second
# guest kernel: uprobe_multi links (6.6+) and no lockdown, which neither this host (6.18 under
# lockdown) nor bookworm's own 6.1 have. Nothing is installed on the host: apt reads a private
# source list (and an empty package status) and downloads the one .deb. Idempotent: does nothing once DIR has a kernel.
set -eu

dir=${1:?usage: kernel-backports.sh DIR}
case $dir in /*) ;; *) dir=$(pwd)/$dir ;; esac	# apt reads relative Dir:: paths from /
if ls "$dir"/boot/vmlinuz-* >/dev/null 2>&1; then
	echo "vm kernel: $(ls "$dir"/boot/vmlinuz-*) present"
	exit 0
fi
apt=$dir.apt
rm -rf "$apt"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
echo "deb http://deb.debian.org/debian bookworm-backports main" >"$apt/sources.list"
set -- -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
	-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o Debug::NoLocking=1 \
	-o Dir::State::status=/dev/null -o APT::Sandbox::User=root
apt-get "$@" update -qq
# the metapackage names the versioned image package
pkg=$(apt-cache "$@" depends linux-image-amd64 | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)/\1/p' |
	head -1)
[ -n "$pkg" ] || { echo "vm kernel: no linux-image in bookworm-backports" >&2; exit 1; }
(cd "$apt" && apt-get "$@" download "$pkg")
rm -rf "$dir.tmp"
dpkg-deb -x "$apt"/"$pkg"_*.deb "$dir.tmp"
kver=$(ls "$dir.tmp/lib/modules")
depmod -b "$dir.tmp" "$kver"
rm -rf "$dir" "$apt"
mv "$dir.tmp" "$dir"
echo "vm kernel: $dir/boot/vmlinuz-$kver"
