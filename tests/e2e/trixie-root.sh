#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# trixie-root.sh DIR: a Debian trixie root with trixie's python3 (CPython 3.13) in DIR
# (debootstrap minbase), made once: tests/e2e/pystack.bats runs a Python job in it with chroot.
# The mirror is the one this machine's apt uses (its first deb.debian.org-style URI), as
# tools/deb/bookworm-root.sh finds it; TRIXIE_MIRROR=URL: that one. Exits 77 when debootstrap
# failed and the mirror's trixie release file cannot be fetched either (no network, no mirror):
# the test skips; any other failure is one.
set -eu

dir=${1:?usage: trixie-root.sh DIR}
[ -e "$dir/.complete" ] && { echo "trixie-root: $dir present"; exit 0; }

mirror=${TRIXIE_MIRROR:-}
[ -n "$mirror" ] || mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
	     /etc/apt/sources.list.d/*.sources 2>/dev/null |
	 sed -n -e 's|^deb \(\[[^]]*\] \)\{0,1\}\(https\{0,1\}://[^ ]*/debian/\{0,1\}\) .*|\2|p' \
		-e 's|^URIs: *\(https\{0,1\}://[^ ]*/debian/\{0,1\}\)$|\1|p' | head -1)
mirror=${mirror:-http://deb.debian.org/debian}
rm -rf "$dir.tmp"
mkdir -p "$(dirname "$dir")"
echo "trixie-root: debootstrap from $mirror into $dir"
if ! debootstrap --variant=minbase --include=python3 trixie "$dir.tmp" "$mirror" \
	>"$dir.log" 2>&1; then
	tail -20 "$dir.log" >&2
	rm -rf "$dir.tmp"
	if ! wget -q -T 20 -t 2 -O /dev/null "${mirror%/}/dists/trixie/InRelease" 2>/dev/null; then
		echo "trixie-root: cannot reach ${mirror%/}/dists/trixie/InRelease" >&2
		exit 77
	fi
	exit 1
fi
# the download cache: the root never needs it again
rm -f "$dir.tmp"/var/cache/apt/archives/*.deb
touch "$dir.tmp/.complete"
rm -rf "$dir"
mv "$dir.tmp" "$dir"
