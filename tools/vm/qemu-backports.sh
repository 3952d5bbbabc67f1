#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# qemu-backports.sh DIR PKG...: Debian bookworm-backports' QEMU system emulators (10.0 at this
# writing; PKG: qemu-system-s390x, qemu-system-ppc) unpacked under DIR, with their data files
# (qemu-system-data: s390-ccw.img, slof.bin, vof.bin) in DIR/usr/share/qemu, which QEMU is
# pointed at with -L (tools/vm/run-qemu.sh, QEMU_DATA). The other architectures' guests run
# under it: bookworm's QEMU 7.2 loses the target of a branch single-stepped under s390x's PER
# (fixed in 9.1), so a probed return instruction goes on at the next one (docs/vm-test.md).
#
# Nothing is installed on the host, as in kernel-backports.sh: apt reads a private source list
# (and an empty package status) and downloads the .debs, dpkg-deb -x unpacks them. The shared
# libraries they need are bookworm's, those of bookworm's own qemu-system-misc and
# qemu-system-ppc (tools/cross/deps.sh installs both). Idempotent: DIR/.debs names what was
# unpacked, with the versions.
set -eu

dir=${1:?usage: qemu-backports.sh DIR PKG...}
shift
[ $# -gt 0 ] || { echo "usage: qemu-backports.sh DIR PKG..." >&2; exit 1; }
case $dir in /*) ;; *) dir=$(pwd)/$dir ;; esac	# apt reads relative Dir:: paths from /
# qemu-system-common: the modules and helpers of this version; qemu-system-data: the firmware
pkgs="$* qemu-system-common qemu-system-data"
if [ "$(sed 's/=[^ ]*//g' "$dir/.debs" 2>/dev/null)" = "$(echo $pkgs)" ]; then
	echo "qemu: $(cat "$dir/.debs") present in $dir"
	exit 0
fi
apt=$dir.apt
rm -rf "$apt"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
echo "deb http://deb.debian.org/debian bookworm-backports main" >"$apt/sources.list"
set -- -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
	-o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null \
	-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o Debug::NoLocking=1 \
	-o Dir::State::status=/dev/null -o APT::Sandbox::User=root
apt-get "$@" update -qq
stamp=
for p in $pkgs; do
	v=$(apt-cache "$@" show "$p" | sed -n 's/^Version: //p' | head -n 1)
	[ -n "$v" ] || { echo "qemu: no $p in bookworm-backports" >&2; exit 1; }
	(cd "$apt/debs" && apt-get "$@" download "$p=$v")
	stamp="$stamp $p=$v"
done
rm -rf "$dir.tmp"
for d in "$apt"/debs/*.deb; do
	dpkg-deb -x "$d" "$dir.tmp"
done
rm -rf "$dir.tmp/usr/share/doc" "$dir.tmp/usr/share/man"
# a library missing on the host shows here, not as a guest that never boots
for b in "$dir.tmp"/usr/bin/qemu-system-*; do
	[ -L "$b" ] && continue
	if ldd "$b" | grep 'not found'; then
		echo "qemu: $b needs libraries this host lacks (make cross-deps installs them)" >&2
		exit 1
	fi
	"$b" --version | head -n 1
done
echo $stamp >"$dir.tmp/.debs"
rm -rf "$dir" "$apt"
mv "$dir.tmp" "$dir"
echo "qemu: $stamp in $dir"
