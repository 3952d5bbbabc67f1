#!/usr/bin/env bats
# The tracer on other, stock kernels (Debian 6.1 and 6.12; x86-64, s390x, ppc64le; QEMU TCG):
# tests/vm/run-vm-test.sh, docs/vm-test.md. Builds the guest first (incremental; installs QEMU
# and the kernel once).

load helpers

@test "QEMU guest on a stock kernel: CO-RE trace by PID, VFIO driver tier through kprobes" {
	run make -s -C "$ROOT" vm-build BUILD="$BUILD"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run env BUILD="$BUILD" bash "$ROOT/tests/vm/run-vm-test.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q "^ok - vm core on " <<<"$output"
	grep -q "^ok - vm unwind on " <<<"$output"
	grep -q "^ok - vm uretunwind on " <<<"$output"
	grep -q "^ok - vm throwjob on " <<<"$output"
	grep -q "^ok - vm ustack on " <<<"$output"
}

@test "QEMU guest on Debian's backports kernel: uprobe_multi links, warm-up, unwind guard" {
	# 6.12 without lockdown: the links this host's 6.18 uses, with the unwind guard its
	# lockdown refuses (the first run downloads the kernel package, ~100 MB)
	run make -s -C "$ROOT" vm2-build BUILD="$BUILD"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	# and a uprobe program that writes its registers refused there: rets single-stepped, said so
	run env BUILD="$BUILD" VMDIR="$BUILD/vm2" VM_STEPS=core,unwind,uretunwind,throwjob,ustack \
		VM_EXPECT=multi,refused \
		bash "$ROOT/tests/vm/run-vm-test.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q "^ok - vm core on " <<<"$output"
	grep -q "^ok - vm unwind on " <<<"$output"
	grep -q "^ok - vm uretunwind on " <<<"$output"
	grep -q "^ok - vm throwjob on " <<<"$output"
	grep -q "^ok - vm ustack on " <<<"$output"
}

@test "QEMU guest on Debian's newest kernel: returns and mov/lea entries done by BPF, two tracers, lockdown" {
	# trixie-backports' 7.3 lets a uprobe program write its registers (the first run downloads
	# the kernel's packages, ~120 MB): every step with returns done by BPF, the entryjob's
	# entries too, a second tracer on the same job leaves them to the kernel, the fallback
	# (SPYRE_NO_EMULATED_RETURNS=1) keeps every count; booted again with lockdown=integrity,
	# what this host runs, the returns are still done by BPF
	run make -s -C "$ROOT" vm-next BUILD="$BUILD"
	echo "$output"
	[ "$status" -eq 0 ]
	for s in core unwind throwjob entries twotracers sstep ustack; do
		grep -q "^ok - vm $s on " <<<"$output"
	done
	[ "$(grep -c "^ok - vm core on " <<<"$output")" -eq 2 ]
}

# s390x (big-endian) and ppc64le: cross-built here (mk/cross.mk), the same steps on Debian's
# bookworm-backports kernels of those architectures under bookworm-backports' QEMU 10 (the
# first run downloads them, ~50 and ~80 MB, the emulators, 6 and 11 MB, and the target's
# libraries). cross_vm TARGET FLAVOUR: `make TARGET` passes, with the trace by PID and launch
# mode on a kernel named *-FLAVOUR, run by the tool that architecture's package installed there
# (and removed after).
cross_vm() {
	run make -s -C "$ROOT" "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q "^ok - vm install on .*-$2\$" <<<"$output"
	grep -q "^ok - vm remove on .*-$2\$" <<<"$output"
	grep -q "^ok - vm core on .*-$2\$" <<<"$output"
	grep -q "^ok - vm launch on .*-$2\$" <<<"$output"
	grep -q "^ok - vm fleet on .*-$2\$" <<<"$output"
	grep -q "^ok - vm ustack on .*-$2\$" <<<"$output"
}

@test "QEMU guest on Debian's s390x kernel (QEMU 10): big-endian CO-RE objects, by PID, launch, fleet, exceptions through return sites after the self-test" {
	cross_vm vm-s390x s390x
	grep -q "^ok - vm unwind on .*-s390x\$" <<<"$output"
	grep -q "^ok - vm throwjob on .*-s390x\$" <<<"$output"
	grep -q "^ok - vm args6 on .*-s390x\$" <<<"$output"
}

@test "QEMU guest on Debian's ppc64le kernel (pseries, QEMU 10): by PID, list, launch, fleet, exceptions through return sites" {
	cross_vm vm-ppc64le powerpc64le
	grep -q "^ok - vm unwind on .*-powerpc64le\$" <<<"$output"
	grep -q "^ok - vm throwjob on .*-powerpc64le\$" <<<"$output"
	grep -q "^ok - vm args6 on .*-powerpc64le\$" <<<"$output"
}
