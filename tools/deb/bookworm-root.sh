#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# bookworm-root.sh DIR [PKG,...]: a clean Debian bookworm root in DIR (debootstrap minbase, plus
# PKGs), made once: tests/e2e/package.bats installs the package into a throwaway overlay of it.
# The mirror is the one this machine's apt uses (its first deb.debian.org-style URI), so that
# a machine that reaches Debian only through its configured mirror can still make one.
set -eu

dir=${1:?usage: bookworm-root.sh DIR [PKG,...]}
include=${2:-}
[ -e "$dir/.complete" ] && { echo "bookworm-root: $dir present"; exit 0; }

mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
	     /etc/apt/sources.list.d/*.sources 2>/dev/null |
	 sed -n -e 's|^deb \(\[[^]]*\] \)\{0,1\}\(https\{0,1\}://[^ ]*/debian/\{0,1\}\) .*|\2|p' \
		-e 's|^URIs: *\(https\{0,1\}://[^ ]*/debian/\{0,1\}\)$|\1|p' | head -1)
mirror=${mirror:-http://deb.debian.org/debian}
rm -rf "$dir.tmp"
mkdir -p "$(dirname "$dir")"
echo "bookworm-root: debootstrap from $mirror into $dir"
debootstrap --variant=minbase ${include:+--include="$include"} bookworm "$dir.tmp" "$mirror" \
	>"$dir.log" 2>&1 || { tail -20 "$dir.log" >&2; exit 1; }
# the download cache: 40 MB the root never needs again
rm -f "$dir.tmp"/var/cache/apt/archives/*.deb
touch "$dir.tmp/.complete"
rm -rf "$dir"
mv "$dir.tmp" "$dir"
