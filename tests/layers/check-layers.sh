#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# make check-layers: user/ holds the layer rule (tools/check-layers.py), and the checker itself
# sees each kind of break, in small trees made here: an include up a layer, one without its
# folder, two modules that include each other, a folder the rule does not place.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
chk="python3 $top/tools/check-layers.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

$chk "$top" || fail=1

# tree NAME: an empty user/ with every folder the rule knows, and a clean module in each
tree() {
	r=$tmp/$1
	for d in common output resolve stream attach report cmd offline; do
		mkdir -p "$r/user/$d"
		printf '#include "common/base.h"\n' > "$r/user/$d/$d.c"
	done
	printf '/* base */\n' > "$r/user/common/base.h"
	printf '#include "stream/stream.h"\n' > "$r/user/cmd/cmd.c"
	for d in output resolve stream attach report cmd offline; do
		printf '/* %s */\n' "$d" > "$r/user/$d/$d.h"
	done
}

# expect NAME PATTERN: the checker fails on tree NAME, saying PATTERN
expect() {
	if out=$($chk "$tmp/$1"); then
		echo "check-layers: tree $1 passed, it should not"
		fail=1
	elif ! printf '%s\n' "$out" | grep -q -- "$2"; then
		printf 'check-layers: tree %s: no "%s" in:\n%s\n' "$1" "$2" "$out"
		fail=1
	fi
}

tree clean
$chk "$tmp/clean" > /dev/null || { echo "check-layers: a clean tree failed"; fail=1; }

tree up
printf '#include "attach/attach.h"\n' >> "$tmp/up/user/stream/stream.c"
expect up 'user/stream/stream.c:2: includes attach/attach.h: stream/ may not reach up into attach/'

tree bare
printf '#include "stream.h"\n' >> "$tmp/bare/user/report/report.c"
expect bare '"stream.h" without its folder: "stream/stream.h"'

tree cycle
printf '#include "stream/b.h"\n' > "$tmp/cycle/user/stream/a.c"
printf '/* a */\n' > "$tmp/cycle/user/stream/a.h"
printf '#include "stream/a.h"\n' > "$tmp/cycle/user/stream/b.c"
printf '/* b */\n' > "$tmp/cycle/user/stream/b.h"
expect cycle 'modules that depend on each other: stream/a <-> stream/b'

tree offline
printf '#include "cmd/cmd.h"\n' >> "$tmp/offline/user/offline/offline.c"
expect offline 'includes cmd/cmd.h: offline/ may not reach into cmd/'

tree stray
mkdir -p "$tmp/stray/user/misc"
expect stray 'user/misc/: a folder the layer rule does not place'

exit $fail
