#!/usr/bin/env bats
# The tracer on a second, stock kernel (Debian 6.1 under QEMU TCG): tests/vm/run-vm-test.sh,
# docs/vm-test.md. Builds the guest first (incremental; installs QEMU and the kernel once).

load helpers

@test "QEMU guest on a stock kernel: CO-RE trace by PID, VFIO driver tier through kprobes" {
	run make -s -C "$ROOT" vm-build BUILD="$BUILD"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	run env BUILD="$BUILD" bash "$ROOT/tests/vm/run-vm-test.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q "^ok - vm core on " <<<"$output"
}
