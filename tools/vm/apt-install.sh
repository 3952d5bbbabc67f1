#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# apt-install.sh WHAT PKG...: install the Debian packages that are missing, without recommends
# (a kernel package would otherwise pull firmware and a bootloader we never use). Idempotent:
# apt runs only when something is missing. WHAT names the caller in its messages.
# APT_RECOMMENDS=1: with recommends (tools/deps.sh test: what `make deps` always installed).
set -eu

what=${1:?usage: apt-install.sh WHAT PKG...}
shift
missing=
for p in "$@"; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "$what: all present"
	exit 0
fi
echo "$what: installing:$missing"
# other users of this machine may hold the dpkg lock for a while: wait rather than fail
apt-get -o DPkg::Lock::Timeout=900 update -qq
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
	$([ "${APT_RECOMMENDS:-}" = 1 ] || echo --no-install-recommends) $missing
