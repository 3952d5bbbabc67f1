#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# build.sh DEBARCH TOOL MANPAGE OUTDIR [BUILT_USING_SOURCES...]: the Debian package of the tool
# for DEBARCH (amd64, s390x, ppc64el) in OUTDIR, made with dpkg-deb from a staged root
# (OUTDIR/root); prints the .deb's path last. TOOL is the statically linked tool (so the package
# depends on nothing); BUILT_USING_SOURCES are the packages (installed names, or .deb files) whose
# static archives it contains: their source packages go into Built-Using, as Debian's policy
# (7.8) asks of a statically linked binary. The version comes from git: 0.1+gitYYYYMMDD.HASH,
# the commit's date and hash (+dirty for a work tree with changes).
set -eu

debarch=${1:?usage: build.sh DEBARCH TOOL MANPAGE OUTDIR [SOURCES...]}
tool=${2:?}
man=${3:?}
out=${4:?}
shift 4
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
STRIP=${STRIP:-strip}

hash=$(git -C "$top" rev-parse --short HEAD)
day=$(git -C "$top" log -1 --format=%cd --date=format:%Y%m%d)
version=0.1+git$day.$hash
git -C "$top" diff --quiet HEAD -- 2>/dev/null || version=$version+dirty
maint=${DEB_MAINTAINER:-$(git -C "$top" log -1 --format='%an <%ae>')}
# the changelog's date: the commit's, so that one commit always makes the same package
when=$(git -C "$top" log -1 --format=%cD)
export SOURCE_DATE_EPOCH=$(git -C "$top" log -1 --format=%ct)

# "src (= version)" of each package whose archives were linked in
built_using=
for p in "$@"; do
	if [ -d "$p" ]; then
		# the changelog's first line: "SOURCE (VERSION) DIST; urgency=..."
		set -- $(zcat "$p/changelog.Debian.gz" | head -1)
		src=$1
		ver=${2#(}
		ver=${ver%)}
		pkg=
	else
		src=$(dpkg-query -W -f='${Source}' "$p")
		pkg=$p
		ver=$(dpkg-query -W -f='${Version}' "$p")
	fi
	# Source: "name" or "name (version)" when the source's version differs
	case $src in
	*'('*) ver=${src#*(}; ver=${ver%)}; src=${src%% *} ;;
	'') src=$pkg ;;
	esac
	built_using="$built_using${built_using:+, }$src (= $ver)"
done
built_using=$(printf '%s\n' "$built_using" | tr ',' '\n' | sed 's/^ //' | sort -u |
	paste -sd, - | sed 's/,/, /g')

root=$out/root
doc=$root/usr/share/doc/spyre-bpftrace
rm -rf "$root"
install -d "$root/DEBIAN" "$doc/examples"
install -D -m 0755 "$tool" "$root/usr/sbin/spyre-bpftrace"
"$STRIP" --strip-unneeded --remove-section=.comment --remove-section=.note \
	"$root/usr/sbin/spyre-bpftrace"
install -D -m 0644 "$top/user/resolve/spyre-default.probes" \
	"$root/usr/share/spyre-bpftrace/spyre-default.probes"
install -D -m 0644 "$top/user/resolve/torch.probes" "$root/usr/share/spyre-bpftrace/torch.probes"
install -d "$root/usr/share/man/man8"
gzip -9n < "$man" > "$root/usr/share/man/man8/spyre-bpftrace.8.gz"
install -D -m 0644 "$top/tools/completion/spyre-bpftrace" \
	"$root/usr/share/bash-completion/completions/spyre-bpftrace"
install -D -m 0644 "$here/lintian-overrides" "$root/usr/share/lintian/overrides/spyre-bpftrace"
install -m 0644 "$here/copyright" "$doc/copyright"
# the examples run the packaged tool: /usr/sbin, not make install's /usr/local/sbin
sed -e 's|/usr/local/sbin/spyre-bpftrace|/usr/sbin/spyre-bpftrace|g' \
	-e 's|^\(# Install: \)make install; |\1|' \
	"$top/deploy/spyre-bpftrace.service" > "$doc/examples/spyre-bpftrace.service"
install -m 0644 "$top/deploy/daemonset.yaml" "$doc/examples/daemonset.yaml"
chmod 0644 "$doc/examples/spyre-bpftrace.service"
gzip -9n < "$top/README.md" > "$doc/README.md.gz"
gzip -9n < "$top/docs/user-guide.md" > "$doc/user-guide.md.gz"
gzip -9n < "$top/docs/fleet.md" > "$doc/fleet.md.gz"
printf '%s\n' "spyre-bpftrace ($version) unstable; urgency=medium" "" \
	"  * Built from commit $hash of spyre-bpftrace." "" " -- $maint  $when" |
	gzip -9n > "$doc/changelog.gz"

size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
{
	echo "Package: spyre-bpftrace"
	echo "Version: $version"
	echo "Architecture: $debarch"
	echo "Maintainer: $maint"
	echo "Installed-Size: $size"
	[ -z "$built_using" ] || echo "Built-Using: $built_using"
	echo "Section: utils"
	echo "Priority: optional"
	echo "Description: eBPF tracer for IBM Spyre (AIU) ML jobs"
	echo " Attaches to a running job (or launches one) without restarting it and"
	echo " writes a Chrome Trace Event JSON file for Perfetto: the Spyre runtime's"
	echo " calls, device work per stream, collectives, VFIO ioctls and device"
	echo " memory. Uprobes from a probe table, returns seen at return instructions"
	echo " (C++ exceptions pass through traced calls); CO-RE, statically linked."
} > "$root/DEBIAN/control"
(cd "$root" && find usr -type f | LC_ALL=C sort | xargs md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
find "$root" -type d -exec chmod 0755 {} +

deb=$out/spyre-bpftrace_${version}_$debarch.deb
rm -f "$out"/spyre-bpftrace_*_"$debarch".deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
