#!/usr/bin/env bats
# Driver tier, end to end: the mock runtime's VFIO ioctls (on stand-in files here: this host has
# no vfio module, no kprobes and refuses fentry) traced through the syscall tracepoints.

load helpers

CHECK_DRIVER="python3 $ROOT/tests/e2e/check_driver.py"

# check_driver TRACE COUNTS [setup]: driver spans against the job's ioctl counts; with "setup",
# the job's setup and shutdown ioctls for 2 devices are expected on top of the phase's.
check_driver() {
	$CHECK_DRIVER spans "$1" "$2" ${3:+--setup}
}

setup() {
	export FLEX_VFIO_DIR=$BATS_TEST_TMPDIR/vfio
	mkdir -p "$FLEX_VFIO_DIR"
}

@test "driver: tracepoint path chosen here; every ioctl traced, named, nested in its runtime call" {
	start_job --phases 2 --threads 3 --streams 2 --iters 30 --bytes 10000
	start_tracer --status -o "$BATS_TEST_TMPDIR/t.json"
	run_phase 1
	# the status line (once a second) names the path in use
	local deadline=$((SECONDS + 120))
	until grep -q "driver tracepoint" "$BATS_TEST_TMPDIR/tracer.err"; do
		[ $SECONDS -lt $deadline ] || { cat "$BATS_TEST_TMPDIR/tracer.err"; return 1; }
		sleep 0.1
	done
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	check_driver "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json.1"
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json.1" --pid "$JOB_PID"
	grep -q '"driverPath":"tracepoint"' "$BATS_TEST_TMPDIR/t.json"
	grep -q "driver tier (tracepoint)" "$BATS_TEST_TMPDIR/tracer.out"	# summary
	# the job was alive while tracing: fds resolved to the stand-in files
	$CHECK_DRIVER devices "$BATS_TEST_TMPDIR/t.json" "$FLEX_VFIO_DIR"
	run_phase 2
	stop_job
	[ "$JOB_RC" -eq 0 ]
}

@test "driver: launch mode sees the setup sequence and the reset at shutdown" {
	run "$TOOL" -o "$BATS_TEST_TMPDIR/t.json" -q -- "$MOCK" --devices 2 --threads 2 --iters 5 \
		--quiet --counts "$BATS_TEST_TMPDIR/counts.json"
	[ "$status" -eq 0 ]
	check_driver "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" setup
}

# Records are read after the ioctl (10-100 ms later), when a short job has exited: its fds'
# names came from /proc/PID/fd and were lost ("char 1:3"; in the 6.1 guest "char 10:196").
@test "driver: a job that exited before its records were read still has its fds named exactly" {
	# no FLEX_VFIO_DIR: every stand-in is /dev/null, a device node, named by its number
	run env -u FLEX_VFIO_DIR "$TOOL" -o "$BATS_TEST_TMPDIR/n.json" -q -- "$MOCK" --devices 2 \
		--threads 1 --iters 2 --quiet --counts "$BATS_TEST_TMPDIR/n-counts.json"
	[ "$status" -eq 0 ]
	# stand-in files: named by the kernel's dentry name once /proc no longer has them
	run "$TOOL" -o "$BATS_TEST_TMPDIR/f.json" -q -- "$MOCK" --devices 2 --threads 1 \
		--iters 2 --quiet --counts "$BATS_TEST_TMPDIR/f-counts.json"
	[ "$status" -eq 0 ]
	check_driver "$BATS_TEST_TMPDIR/n.json" "$BATS_TEST_TMPDIR/n-counts.json" setup
	check_driver "$BATS_TEST_TMPDIR/f.json" "$BATS_TEST_TMPDIR/f-counts.json" setup
	$CHECK_DRIVER exited "$BATS_TEST_TMPDIR/n.json" "$BATS_TEST_TMPDIR/f.json" \
		"$FLEX_VFIO_DIR"
}

@test "driver: tracefs is mounted by the tracer when it is not" {
	if mountpoint -q /sys/kernel/tracing; then
		umount /sys/kernel/tracing 2>/dev/null || skip "tracefs busy"
	fi
	[ ! -e /sys/kernel/tracing/events ]
	run "$TOOL" -o "$BATS_TEST_TMPDIR/t.json" -q -- "$MOCK" --iters 2 --quiet
	[ "$status" -eq 0 ]
	mountpoint -q /sys/kernel/tracing
	grep -q '"driverPath":"tracepoint"' "$BATS_TEST_TMPDIR/t.json"
}

@test "driver: --driver off records no driver spans" {
	start_job --iters 10
	start_tracer --driver off -o "$BATS_TEST_TMPDIR/t.json"
	run_phase 1 || true
	wait_for "$BATS_TEST_TMPDIR/counts.json"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	! grep -q privateuse1_driver "$BATS_TEST_TMPDIR/t.json"
	grep -q '"driverPath":"off"' "$BATS_TEST_TMPDIR/t.json"
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json"
}

@test "driver: forced paths that cannot work here fail clearly, before any trace is written" {
	start_job
	if [ ! -e /sys/bus/event_source/devices/kprobe ]; then
		run "$TOOL" -p "$JOB_PID" --driver kprobe -o "$BATS_TEST_TMPDIR/k.json"
		[ "$status" -eq 1 ]
		[[ "$output" == *"driver tier: kprobes are not available"* ]]
		[ ! -e "$BATS_TEST_TMPDIR/k.json" ]
	fi
	run "$TOOL" -p "$JOB_PID" --driver fentry --driver-funcs no_such_function_x \
		-o "$BATS_TEST_TMPDIR/f.json"
	[ "$status" -eq 1 ]
	[[ "$output" == *"none of the driver functions is in /proc/kallsyms"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/f.json" ]
	run "$TOOL" -p "$JOB_PID" --driver bogus
	[ "$status" -eq 2 ]
	run "$TOOL" -p "$JOB_PID" --driver-funcs 'a,,b'
	[ "$status" -eq 2 ]
}

@test "driver: auto falls back past a refused fentry to the tracepoints, quietly" {
	grep -qw sock_ioctl /proc/kallsyms || skip "no sock_ioctl symbol"
	[ ! -e /sys/bus/event_source/devices/kprobe ] || skip "kprobes work here"
	start_job --iters 10
	# sock_ioctl(struct file *, unsigned int, unsigned long) exists here; fentry is refused
	# (lockdown) and kprobes are off, so auto must end on the tracepoints
	start_tracer --driver-funcs sock_ioctl -o "$BATS_TEST_TMPDIR/t.json"
	run_phase 1 || true
	wait_for "$BATS_TEST_TMPDIR/counts.json"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	! grep -q "libbpf" "$BATS_TEST_TMPDIR/tracer.err"
	check_driver "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
}

# skipped_run [pair]: the job's DMA phase traced with every 5th return of the job ignored (and
# with "pair" that thread's next entry too), as the kernel does when it skips our programs
# (bpf/vfio.bpf.c); `check` passes and every driver span lies inside its aiuMalloc/spyreFree
skipped_run() {
	start_job --threads 2 --streams 1 --iters 40 --bytes 10000
	[ -z "${1:-}" ] || export SPYRE_TEST_SKIP_SYS_PAIR=1	# this test's process only
	SPYRE_TEST_SKIP_SYS_EXIT=5 start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	$CHECK_DRIVER skipped "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" \
		${1:+--pair}
	grep -q "driver tier (tracepoint): .* dropped (ring full 0, entry or return missed [1-9]" \
		"$BATS_TEST_TMPDIR/tracer.out"
	stop_job
}

@test "driver: a return the kernel skipped costs its span, never makes one over two calls" {
	# without the check of the returning syscall, the next MAP_DMA of the thread (same fd, cmd
	# and arg) closed the stale record
	skipped_run
}

@test "driver: a skipped return and the next entry skipped never make one span of two DMA calls" {
	# a burst of skips (a 1-CPU guest while a bpf() syscall holds the CPU's BPF guard): the
	# next MAP_DMA's return (same fd, cmd and arg: the mock's struct is on its stack) finds
	# the stale record, and only the struct's iova tells the two calls apart (the 7.3 guest
	# had an UNMAP_DMA span from inside one spyreFree to the next; `check`: 20 problems)
	skipped_run pair
}
