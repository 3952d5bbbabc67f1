#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Debian packages the QEMU guest test needs: the emulator, a stock kernel with BTF and kprobes
# (its image, modules and System.map land in /boot and /lib/modules), and a static busybox for
# the guest's userspace. Idempotent: apt runs only when something is missing.
set -eu

exec sh "$(dirname "$0")/apt-install.sh" "vm deps" qemu-system-x86 linux-image-amd64 \
	busybox-static cpio file xz-utils zstd
