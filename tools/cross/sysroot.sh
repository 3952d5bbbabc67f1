#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# sysroot.sh ARCH DIR [kernel]: the target's libraries for a cross build, unpacked under
# DIR/sysroot; with "kernel" also Debian's bookworm-backports kernel for ARCH under DIR/kernel
# (boot/vmlinu[xz]-*, lib/modules/*) for the VM test and for vmlinux.h.
#
# ARCH is a kernel arch name (s390x, powerpc). Nothing is installed on the host and its apt
# sources are untouched: apt reads a private source list for the foreign Debian architecture
# with its own lists, cache and an empty package status, downloads the .debs, and dpkg-deb -x
# unpacks them. libc6-dev for the target is not here: the cross compiler packages bring it.
# Idempotent: a stamp names what was unpacked.
set -eu

arch=${1:?usage: sysroot.sh ARCH DIR [kernel]}
dir=${2:?usage: sysroot.sh ARCH DIR [kernel]}
want_kernel=${3:-}
case $arch in
s390x) debarch=s390x flavour=s390x ;;
powerpc) debarch=ppc64el flavour=powerpc64le ;;
*) echo "sysroot: unsupported ARCH $arch (s390x or powerpc)" >&2; exit 1 ;;
esac
case $dir in /*) ;; *) dir=$(pwd)/$dir ;; esac	# apt reads relative Dir:: paths from /

# static libraries the tool links (-lbpf -lelf -lz -lcapstone) and their headers; busybox for
# the VM's userspace
PKGS="libbpf-dev libbpf1 libelf-dev libelf1 zlib1g-dev zlib1g libcapstone-dev libcapstone4
	busybox-static"
have_libs() {
	[ "$(cat "$dir/sysroot/.debs" 2>/dev/null)" = "$(echo $PKGS)" ]
}
have_kernel() {
	ls "$dir"/kernel/boot/vmlinu[xz]-* >/dev/null 2>&1
}
if have_libs && { [ -z "$want_kernel" ] || have_kernel; }; then
	echo "sysroot: $dir/sysroot present"
	exit 0
fi

apt=$dir/apt
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
# backports only for the kernel: its default pin (100) keeps the libraries at bookworm's
# versions, the ones the host builds against
cat >"$apt/sources.list" <<SRC
deb [arch=$debarch] http://deb.debian.org/debian bookworm main
deb [arch=$debarch] http://deb.debian.org/debian bookworm-backports main
SRC
set -- -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
	-o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null \
	-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o Debug::NoLocking=1 \
	-o Dir::State::status=/dev/null -o APT::Architecture="$debarch" \
	-o APT::Architectures="$debarch" -o APT::Sandbox::User=root
apt-get "$@" update -qq
mkdir -p "$apt/debs"

if ! have_libs; then
	(cd "$apt/debs" && rm -f ./*.deb &&
		for p in $PKGS; do apt-get "$@" download "$p:$debarch"; done)
	rm -rf "$dir/sysroot.tmp"
	for d in "$apt"/debs/*.deb; do
		dpkg-deb -x "$d" "$dir/sysroot.tmp"
	done
	echo $PKGS >"$dir/sysroot.tmp/.debs"
	rm -rf "$dir/sysroot"
	mv "$dir/sysroot.tmp" "$dir/sysroot"
	echo "sysroot: $dir/sysroot ($(cd "$apt/debs" && ls | tr '\n' ' '))"
fi

if [ -n "$want_kernel" ] && ! have_kernel; then
	# the backports metapackage names the versioned image package
	pkg=$(apt-cache "$@" show "linux-image-$flavour/bookworm-backports" |
		sed -n 's/^Depends: \(linux-image-[0-9][^ ,]*\).*/\1/p' | head -n 1)
	[ -n "$pkg" ] || { echo "sysroot: no linux-image-$flavour in bookworm-backports" >&2; exit 1; }
	(cd "$apt/debs" && apt-get "$@" download "$pkg:$debarch")
	rm -rf "$dir/kernel.tmp"
	dpkg-deb -x "$apt"/debs/"$pkg"_*.deb "$dir/kernel.tmp"
	# modules.dep, from which the VM's initramfs takes the VFIO modules in load order
	depmod -b "$dir/kernel.tmp" "$(ls "$dir/kernel.tmp/lib/modules")"
	rm -rf "$dir/kernel"
	mv "$dir/kernel.tmp" "$dir/kernel"
	echo "sysroot: kernel $(ls "$dir"/kernel/boot/vmlinu[xz]-*)"
fi
rm -f "$apt"/debs/*.deb "$apt"/cache/archives/*.deb
