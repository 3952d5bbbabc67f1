#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# build.sh VMDIR TOOL MOCK_DIR: the guest kernel and initramfs for the QEMU test. TOOL: the static
# tool, or its Debian package (the cross guests: build-initramfs.sh).
#
# Kernel: VM_KERNEL (a bzImage path; its modules in VM_MODROOT/lib/modules, default the host's)
# or else the newest /boot/vmlinuz-* that has its modules in /lib/modules (tools/vm/deps.sh
# installs Debian's linux-image-amd64). Writes
# VMDIR/vmlinux (extracted once per kernel version), VMDIR/initramfs.cpio.gz and VMDIR/kver.
# VM_KERNEL_RAW=1: QEMU boots VM_KERNEL as it is (s390x's image, powerpc's ELF vmlinux), copied
# to VMDIR/vmlinux without extraction.
set -eu

vmdir=${1:?usage: build.sh VMDIR TOOL MOCK_DIR}
tool=${2:?}
mockdir=${3:?}
here=$(cd "$(dirname "$0")" && pwd)

image=${VM_KERNEL:-}
if [ -z "$image" ]; then
	for f in $(ls /boot/vmlinuz-* 2>/dev/null | sort -V); do
		[ -d "/lib/modules/${f#/boot/vmlinuz-}/kernel" ] && image=$f
	done
fi
[ -n "$image" ] && [ -r "$image" ] || {
	echo "vm build: no guest kernel in /boot (run tools/vm/deps.sh)" >&2
	exit 1
}
kver=${image##*/vmlinu[xz]-}
mkdir -p "$vmdir"

if [ ! -s "$vmdir/vmlinux" ] || [ "$(cat "$vmdir/kver" 2>/dev/null)" != "$kver" ] ||
	[ "$image" -nt "$vmdir/vmlinux" ]; then
	if [ "${VM_KERNEL_RAW:-0}" = 1 ]; then
		cp "$image" "$vmdir/vmlinux"
	else
		sh "$here/extract-vmlinux.sh" "$image" "$vmdir/vmlinux"
	fi
fi
sh "$here/build-initramfs.sh" "$vmdir/initramfs.cpio.gz" "$tool" "$mockdir" "$kver" \
	"${VM_MODROOT:-}"
echo "$kver" >"$vmdir/kver"
