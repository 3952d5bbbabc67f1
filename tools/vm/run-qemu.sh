#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# run-qemu.sh VMLINUX INITRAMFS OUTDIR [KERNEL ARGS...]
#
# Boots the guest under QEMU TCG (a stock kernel does not run under this machine's /dev/kvm),
# with a q35 machine, an emulated Intel IOMMU (48-bit: the mock maps DMA at IOVA == its virtual
# address) and QEMU's `edu` PCI device for the VFIO steps.
# The guest console goes to OUTDIR/console.log, the guest's /out directory arrives on the
# second serial port and is unpacked into OUTDIR/out. Exit status: the guest's status (0 all
# steps passed), 124 on timeout (VM_TIMEOUT seconds, default 600), 125 when QEMU or the
# transfer failed.
#
# VM_MACHINE=s390x or pseries: another architecture's guest (tools/cross). Its console is the
# machine's own (SCLP, the pseries vty) and /out arrives through a virtio-serial port; neither
# machine has isa-debug-exit, so the guest's status is the "==SPYRE-STATUS=N==" line after
# /out, and QEMU ends when the guest powers off.
# QEMU: the emulator (default: the host's qemu-system-ARCH); QEMU_DATA: the directory of its
# firmware and other data files (-L), for one unpacked outside /usr (tools/vm/qemu-backports.sh).
# VM_MEM: the guest's memory (default 1G); VM_SMP: its CPUs (default 1). VM_DISK: a raw disk
# image attached as virtio-blk (/dev/vda; writes go to a throwaway snapshot), for `make
# vm-next-torch` (tools/vm/rootfs.sh).
set -eu

vmlinux=${1:?usage: run-qemu.sh VMLINUX INITRAMFS OUTDIR [KERNEL ARGS...]}
initrd=${2:?}
outdir=${3:?}
shift 3
timeout=${VM_TIMEOUT:-600}
machine=${VM_MACHINE:-x86}

mkdir -p "$outdir"
rm -rf "$outdir/out" "$outdir/data.txt" "$outdir/console.log"

# -no-reboot: a panic (init died) or a reboot ends QEMU with status 0, which we treat as
# failure: only the debug-exit port gives an odd status. timeout -k kills a QEMU that ignores
# SIGTERM.
# timeout puts QEMU in a process group of its own, out of reach of a terminal's ^C: forward
# our own INT/TERM to it so an interrupted test leaves no VM behind.
data="-chardev file,id=data,path=$outdir/data.txt -device virtserialport,chardev=data,name=out"
case $machine in
x86)
	set -- ${QEMU:-qemu-system-x86_64} -cpu max -machine q35,kernel-irqchip=split \
		-device intel-iommu,intremap=on,aw-bits=48 -device edu \
		-append "console=ttyS0 panic=-1 quiet intel_iommu=on $*" \
		-serial "file:$outdir/console.log" -serial "file:$outdir/data.txt" \
		-device isa-debug-exit,iobase=0xf4,iosize=0x04
	;;
s390x)
	set -- ${QEMU:-qemu-system-s390x} -cpu max -append "console=ttysclp0 panic=-1 quiet $*" \
		-serial "file:$outdir/console.log" -device virtio-serial-ccw $data
	;;
pseries)
	set -- ${QEMU:-qemu-system-ppc64} -machine pseries -cpu power9 \
		-append "console=hvc0 panic=-1 quiet $*" \
		-serial "file:$outdir/console.log" -device virtio-serial-pci $data
	;;
*)
	echo "run-qemu: unknown VM_MACHINE $machine (x86, s390x, pseries)" >&2
	exit 125
	;;
esac

rc=0
if [ -n "${QEMU_DATA:-}" ]; then
	set -- "$@" -L "$QEMU_DATA"
fi
if [ -n "${VM_DISK:-}" ]; then
	set -- "$@" -drive "file=$VM_DISK,if=none,id=disk0,format=raw,snapshot=on" \
		-device virtio-blk-pci,drive=disk0
fi
echo "run-qemu: $("$1" --version | head -n 1)"
timeout -k 10 "$timeout" "$@" -accel tcg -m "${VM_MEM:-1G}" -smp "${VM_SMP:-1}" -nodefaults \
	-display none -no-reboot -kernel "$vmlinux" -initrd "$initrd" </dev/null >"$outdir/qemu.log" 2>&1 &
vm=$!
trap 'kill -TERM $vm 2>/dev/null; wait $vm; exit 130' INT TERM
wait $vm || rc=$?
trap - INT TERM

if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	echo "run-qemu: the guest did not finish within ${timeout} s (killed); console:" >&2
	tail -n 30 "$outdir/console.log" >&2
	exit 124
fi
status=$(tr -d '\r' <"$outdir/data.txt" 2>/dev/null |
	sed -n 's/^==SPYRE-STATUS=\([0-9]*\)==$/\1/p')
# x86 under lockdown (lockdown=integrity): /dev/port is refused, so no debug-exit; the guest
# powers off after its verdict line, as the other machines do
if [ "$machine" = x86 ] && [ $rc -eq 0 ] && [ -n "$status" ]; then
	rc=$((status << 1 | 1))
fi
if [ "$machine" != x86 ]; then
	# the guest's verdict is a line after its results; QEMU itself exits 0 at power-off
	if [ $rc -ne 0 ] || [ -z "$status" ]; then
		echo "run-qemu: QEMU exited with $rc without the guest's verdict; console:" >&2
		tail -n 30 "$outdir/console.log" "$outdir/qemu.log" >&2
		exit 125
	fi
	rc=$((status << 1 | 1))
fi
if [ $((rc & 1)) -ne 1 ]; then
	echo "run-qemu: QEMU exited with $rc without the guest's verdict (init died?); console:" >&2
	tail -n 30 "$outdir/console.log" "$outdir/qemu.log" >&2
	exit 125
fi

mkdir -p "$outdir/out"
if ! sed -n '/^==SPYRE-OUT-BEGIN==/,/^==SPYRE-OUT-END==/p' "$outdir/data.txt" | tr -d '\r' |
	sed '1d;$d' | base64 -d | tar -C "$outdir/out" -xzf -; then
	echo "run-qemu: the guest's results did not arrive intact" >&2
	exit 125
fi
grep -q '^==SPYRE-OUT-END==' "$outdir/data.txt" || {
	echo "run-qemu: the guest's results were cut short" >&2
	exit 125
}
exit $((rc >> 1))
