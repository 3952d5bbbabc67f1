#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A picture of a trace, for the docs: lay out a few iterations of the job (tools/trace-layout.py),
# draw them with the offline page tools/trace-view.html in headless Chromium, screenshot it.
#
# usage: tools/trace-screenshot.sh TRACE OUT.png [trace-layout.py options]
#        e.g. --iterations 3 | --window FROM_US:TO_US | --width 1600 | --title TEXT
#
# Perfetto UI needs the network and chrome://tracing does not load in headless Chromium (and
# takes its file only through the UI), so the drawing is ours. Chromium comes from Debian
# (`apt-get install chromium`, done here when missing; needs root); nothing else is fetched.
set -eu

if [ $# -lt 2 ]; then
	sed -n '3,8p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
fi
trace=$1
out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)

browser=
for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null 2>&1; then
		browser=$b
		break
	fi
done
if [ -z "$browser" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "trace-screenshot: Chromium is missing; run as root to install it, or:" \
			"apt-get install chromium" >&2
		exit 1
	fi
	echo "trace-screenshot: installing Chromium (Debian package)" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
	browser=chromium
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

size=$(python3 "$here/trace-layout.py" "$trace" "$tmp/view.html" "$@")
width=${size%x*}
height=${size#*x}

# a fresh profile, nothing phoning home, no GPU; the sandbox needs user namespaces we may
# not have as root in a container
"$browser" --headless=new --no-sandbox --disable-gpu --disable-background-networking \
	--disable-component-update --disable-sync --no-first-run --no-default-browser-check \
	--disable-extensions --hide-scrollbars --force-device-scale-factor=1 \
	--user-data-dir="$tmp/profile" --window-size="$width,$height" \
	--screenshot="$tmp/shot.png" "file://$tmp/view.html" >"$tmp/browser.log" 2>&1 || {
	cat "$tmp/browser.log" >&2
	echo "trace-screenshot: $browser failed" >&2
	exit 1
}
if [ ! -s "$tmp/shot.png" ]; then
	cat "$tmp/browser.log" >&2
	echo "trace-screenshot: no screenshot was written" >&2
	exit 1
fi
mv "$tmp/shot.png" "$out"
echo "trace-screenshot: wrote $out (${width}x${height})"
