#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# `make vm-next-torch` (opt-in, never in `make test`; docs/vm-test.md): boot the 7.3 kernel of
# `make vm-next` ($BUILD/vm-next/kernel) under QEMU TCG with 4 GiB and the Debian bookworm disk of
# tools/vm/rootfs.sh ($BUILD/vm-torch), let tests/vm/torch-guest.sh measure torch.mm untraced and
# traced by spyre-bpftrace (default, SPYRE_NO_EMULATED_RETURNS=1, --uretprobes) and by bpftrace
# (comparable work, an empty uprobe + uretprobe pair), by bench/emptyprobe's empty programs and
# with the tracers stopped for a phase (where the cost goes), and print its summary. Results,
# with each phase's files, in $BUILD/vm-torch/run/out. VM_ARGS: spyre.rounds=N (5),
# spyre.reps=N (5), spyre.repms=MS (300), spyre.kinds=a,b, spyre.bpfstats=0; VM_MEM (4G),
# VM_SMP (1: with 2 the guest's job has CPU 0 to itself, the tracers and the script CPU 1),
# VM_TIMEOUT (3600 s).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
DIR=$BUILD/vm-torch
image=$(ls "$BUILD"/vm-next/kernel/boot/vmlinuz-* | head -n 1)
[ -r "$image" ] || { echo "vm-next-torch: no kernel in $BUILD/vm-next/kernel" >&2; exit 1; }
if [ ! -s "$DIR/vmlinux" ] || [ "$image" -nt "$DIR/vmlinux" ]; then
	sh "$ROOT/tools/vm/extract-vmlinux.sh" "$image" "$DIR/vmlinux" || exit 1
fi
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "vm-next-torch: $(basename "$image"), host load $(load)," \
	"commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
start=$(date +%s)
VM_MEM=${VM_MEM:-4G} VM_DISK=$DIR/disk.img VM_TIMEOUT=${VM_TIMEOUT:-3600} \
	sh "$ROOT/tools/vm/run-qemu.sh" "$DIR/vmlinux" "$DIR/initramfs.cpio.gz" "$DIR/run" \
	${VM_ARGS:-}
rc=$?
echo "vm-next-torch: guest exit $rc after $(($(date +%s) - start)) s, host load $(load)"
out=$DIR/run/out
[ -f "$out/results.txt" ] && cat "$out/results.txt"
[ -f "$out/returns-ours.txt" ] && sed 's/^/default: /' "$out/returns-ours.txt"
[ -f "$out/returns-sstep.txt" ] && sed 's/^/SPYRE_NO_EMULATED_RETURNS=1: /' "$out/returns-sstep.txt"
if [ $rc -ne 0 ]; then
	echo "vm-next-torch: FAILED (guest log: $out/guest.log, console: $DIR/run/console.log)" >&2
	[ -f "$out/guest.log" ] && tail -n 20 "$out/guest.log" >&2
fi
exit $rc
