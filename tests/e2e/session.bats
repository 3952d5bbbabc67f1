#!/usr/bin/env bats
# One tracing session for every mode: what trace mode (-p PID) does while tracing and when it
# stops, fleet mode on one job (-p PID --window) does too. Each case here had drifted apart.

load fault-helpers

setup() {
	OUT=$BATS_TEST_TMPDIR/out
}

@test "-p --window: the job exiting between windows ends the run at once, no file for a window that never came" {
	start_job
	# the next window would open 299 s later: the bounds of the waits tell "at once" from it
	start_tracer --window 1s --period 300s --output-dir "$OUT" \
		--prom-file "$BATS_TEST_TMPDIR/spyre.prom" -q
	wait_for "$BATS_TEST_TMPDIR/spyre.prom" 120	# the first window has closed
	stop_job
	wait_child "$TRACER_PID" 120
	[ "$CHILD_RC" -eq 0 ]
	[ "$(ls "$OUT" | wc -l)" -eq 1 ]
}

# start_orphaned_job [MOCK OPTIONS]: the mock job held before its phase, its parent a process
# that never reaps it (a killed job stays a zombie, which kill(pid, 0) still reaches); JOB_PID
start_orphaned_job() {
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	bash -c '"$@" & echo $! >"$0"; exec sleep 600' "$BATS_TEST_TMPDIR/job.pid" "$MOCK" \
		--wait-go --linger --quiet --ready-file "$BATS_TEST_TMPDIR/job.ready" "$@" \
		>"$BATS_TEST_TMPDIR/job.out" 2>"$BATS_TEST_TMPDIR/job.err" &
	EXTRA_PIDS+=($!)
	wait_for "$BATS_TEST_TMPDIR/job.ready"
	JOB_PID=$(cat "$BATS_TEST_TMPDIR/job.pid")
}

@test "-p --window: the job killed inside a window ends the run even as a zombie, named, exit 9" {
	start_orphaned_job --iters 100000 --compute-us 0
	start_tracer --window 30s --period 30s --output-dir "$OUT" -q
	kill -USR1 "$JOB_PID"
	wait_size "$(echo "$OUT"/*.json.gz)" 20000	# mid-phase, traced
	kill -KILL "$JOB_PID"
	wait_until 120 test "$(proc_state "$JOB_PID")" = Z
	wait_child "$TRACER_PID" 120
	[ "$CHILD_RC" -eq 9 ]
	grep -q "process $JOB_PID was killed by SIGKILL while traced" "$BATS_TEST_TMPDIR/tracer.err"
}

@test "-p --window: -d ends the run between windows, not at the next period" {
	start_job
	SECONDS=0
	run "$TOOL" -p "$JOB_PID" --window 1s --period 300s --output-dir "$OUT" -d 2 -q
	echo "$output"
	[ "$status" -eq 0 ]
	[ $SECONDS -lt 120 ]	# the next period is 298 s after -d
}

@test "-p --window: a full disk stops the run with exit 7, the job unaffected" {
	mkdir "$BATS_TEST_TMPDIR/full"
	mount -t tmpfs -o size=64k tmpfs "$BATS_TEST_TMPDIR/full"
	MOUNTS+=("$BATS_TEST_TMPDIR/full")
	start_job --iters 100000 --compute-us 0
	start_tracer --window 2s --period 2s --output-dir "$BATS_TEST_TMPDIR/full/out" -q
	kill -USR1 "$JOB_PID"
	wait_child "$TRACER_PID" 30
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$CHILD_RC" -eq 7 ]
	grep -q "writing $BATS_TEST_TMPDIR/full/out/spyre-.*No space left on device" \
		"$BATS_TEST_TMPDIR/tracer.err"
	kill -0 "$JOB_PID"
}

@test "-p --window --status: the status line shows the probes' estimated cost, as in trace mode" {
	start_job --iters 100000 --compute-us 0
	start_tracer --window 3s --period 3s --output-dir "$OUT" --status
	kill -USR1 "$JOB_PID"
	# --compute-us 0: the probes take most of the job's CPU time, maybe too much to tell
	wait_until 120 grep -Eq " ev/s, .* probes, (~[0-9]+% overhead|overhead unknown \(probes ~[0-9]+% of the job's CPU\)) \(top: " \
		"$BATS_TEST_TMPDIR/tracer.err"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
}
