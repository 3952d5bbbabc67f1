#!/bin/busybox sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# /init of `make vm-next-torch`'s initramfs (tools/vm/rootfs.sh): load the modules that reach
# the disk (virtio_blk, ext4 and their dependencies, in /lib/modules/load-order), mount the
# Debian root on /dev/vda and switch_root into /opt/spyre/torch-guest.sh (tests/vm/), which
# measures and ships its results. If this fails, the kernel panics (QEMU exits 0: a failure for
# tools/vm/run-qemu.sh).
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /lib/modules/load-order); do
	insmod /lib/modules/$m || echo "torch-init: insmod $m failed"
done
n=0
while [ ! -b /dev/vda ] && [ $n -lt 300 ]; do
	usleep 100000
	n=$((n + 1))
done
mount -t ext4 /dev/vda /newroot || { echo "torch-init: cannot mount /dev/vda"; exit 1; }
mount --move /dev /newroot/dev
umount /proc /sys
exec switch_root /newroot /bin/bash /opt/spyre/torch-guest.sh
