#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Debian packages the QEMU guest test needs: the emulator, a stock kernel with BTF and kprobes
# (its image, modules and System.map land in /boot and /lib/modules), and a static busybox for
# the guest's userspace. Idempotent: apt runs only when something is missing.
set -eu

PKGS="qemu-system-x86 linux-image-amd64 busybox-static cpio file xz-utils zstd"

missing=
for p in $PKGS; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "vm deps: all present"
	exit 0
fi
echo "vm deps: installing:$missing"
apt-get update -qq
# No recommends: the kernel would otherwise pull firmware and a bootloader we never use.
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
