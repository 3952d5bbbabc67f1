# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=dash
# Sourced by the guest's /init: VFIO on QEMU's emulated `edu` PCI device (1234:11e8) behind
# the emulated Intel IOMMU. Loads the VFIO modules in the order build-initramfs.sh recorded from
# modules.dep (busybox has no modprobe database here), binds the device to vfio-pci, and writes
# its IOMMU group number to /tmp/vfio-group. Leaves /tmp/vfio-group empty when any part is
# missing, and says why on stdout.

EDU_VENDOR=0x1234
EDU_DEVICE=0x11e8

vfio_load_modules() {
	local kver p
	kver=$(uname -r)
	[ -f /lib/modules/load-order ] || { echo "vfio: no modules in the initramfs"; return 1; }
	while read -r p; do
		# already loaded (or built in): insmod says EEXIST, which is fine
		grep -q "^$(basename "$p" .ko | tr - _) " /proc/modules && continue
		insmod "/lib/modules/$kver/$p" || { echo "vfio: insmod $p failed"; return 1; }
	done </lib/modules/load-order
}

# vfio_find_edu: the sysfs address of the first edu device
vfio_find_edu() {
	local d
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor")" = $EDU_VENDOR ] && [ "$(cat "$d/device")" = $EDU_DEVICE ] &&
			{ basename "$d"; return 0; }
	done
	return 1
}

vfio_setup() {
	local dev group
	: >/tmp/vfio-group
	vfio_load_modules || return 1
	dev=$(vfio_find_edu) || { echo "vfio: no edu device (QEMU -device edu)"; return 1; }
	[ -e /sys/bus/pci/devices/$dev/iommu_group ] ||
		{ echo "vfio: $dev has no IOMMU group (intel_iommu=on, -device intel-iommu)"; return 1; }
	echo vfio-pci >/sys/bus/pci/devices/$dev/driver_override
	[ -e /sys/bus/pci/devices/$dev/driver ] &&
		echo "$dev" >/sys/bus/pci/devices/$dev/driver/unbind
	echo "$dev" >/sys/bus/pci/drivers_probe
	[ "$(basename "$(readlink /sys/bus/pci/devices/$dev/driver)")" = vfio-pci ] ||
		{ echo "vfio: $dev did not bind to vfio-pci"; return 1; }
	group=$(basename "$(readlink /sys/bus/pci/devices/$dev/iommu_group)")
	[ -c /dev/vfio/$group ] || { echo "vfio: no /dev/vfio/$group"; return 1; }
	echo "vfio: $dev bound to vfio-pci, group $group"
	echo "$group" >/tmp/vfio-group
}
