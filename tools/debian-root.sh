#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# debian-root.sh SUITE DIR [PKG,...]: a clean Debian SUITE root in DIR (debootstrap minbase,
# plus PKGs), made once. Used by tests/e2e/package.bats (bookworm, the package installed into a
# throwaway overlay of it), tests/e2e/pystack.bats (trixie with its python3) and
# tools/vm/rootfs.sh (bookworm for `make vm-next-torch`).
# The mirror is the one this machine's apt uses (its first deb.debian.org-style URI), so that a
# machine that reaches Debian only through its configured mirror can still make one;
# DEBIAN_MIRROR=URL: that one. Exits 77 when debootstrap failed and the mirror's SUITE release
# file cannot be fetched either (no network, no mirror): a test may skip on that; any other
# failure is 1.
set -eu

suite=${1:?usage: debian-root.sh SUITE DIR [PKG,...]}
dir=${2:?usage: debian-root.sh SUITE DIR [PKG,...]}
include=${3:-}
[ -e "$dir/.complete" ] && { echo "debian-root: $dir present"; exit 0; }

mirror=${DEBIAN_MIRROR:-}
[ -n "$mirror" ] || mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
	     /etc/apt/sources.list.d/*.sources 2>/dev/null |
	 sed -n -e 's|^deb \(\[[^]]*\] \)\{0,1\}\(https\{0,1\}://[^ ]*/debian/\{0,1\}\) .*|\2|p' \
		-e 's|^URIs: *\(https\{0,1\}://[^ ]*/debian/\{0,1\}\)$|\1|p' | head -1)
mirror=${mirror:-http://deb.debian.org/debian}
rm -rf "$dir.tmp"
mkdir -p "$(dirname "$dir")"
echo "debian-root: debootstrap $suite from $mirror into $dir"
if ! debootstrap --variant=minbase ${include:+--include="$include"} "$suite" "$dir.tmp" \
	"$mirror" >"$dir.log" 2>&1; then
	tail -20 "$dir.log" >&2
	rm -rf "$dir.tmp"
	if ! wget -q -T 20 -t 2 -O /dev/null "${mirror%/}/dists/$suite/InRelease" 2>/dev/null; then
		echo "debian-root: cannot reach ${mirror%/}/dists/$suite/InRelease" >&2
		exit 77
	fi
	exit 1
fi
# the download cache: tens of MB the root never needs again
rm -f "$dir.tmp"/var/cache/apt/archives/*.deb
touch "$dir.tmp/.complete"
rm -rf "$dir"
mv "$dir.tmp" "$dir"
