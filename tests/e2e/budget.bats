#!/usr/bin/env bats
# --max-overhead: the probes in windows, detached between them, so that the job's extra CPU
# time over the run stays within the budget; the trace of the windows whole and faithful; a
# default budget with -p and -- CMD. The other tests run with SPYRE_BPFTRACE_MAX_OVERHEAD=none
# (helpers.bash): they count every call.

load helpers

MEASURE="python3 $ROOT/tests/e2e/measure_cost.py"
CHECK_BUDGET="python3 $ROOT/tests/e2e/check_budget.py"
CHECK_COST="python3 $ROOT/tests/e2e/check_cost.py"

# check_windows TRACE: device spans and arrows inside the budget's windows, check clean
check_windows() {
	"$TOOL" check "$1"
	python3 "$ROOT/tests/e2e/verify_flows.py" "$1"
	$CHECK_BUDGET --min-windows 2 --device "$1"
}

@test "--max-overhead holds the job's slowdown near its budget, in windows a check finds whole" {
	# the mock's every-probe default: ~+260 % traced all the time here; ~10 s of work
	# an attempt counts when its two untraced runs agree within 15 % (a shared machine)
	local attempt
	for attempt in 1 2 3; do
		run $MEASURE "$TOOL" "$MOCK" "$BATS_TEST_TMPDIR" 16000 --max-overhead 20
		echo "$output"
		[ "$status" -eq 0 ]
		python3 -c 'import json, sys; u = json.loads(sys.argv[1])["untraced"]
sys.exit(abs(u[0] - u[1]) > 0.15 * sum(u) / 2)' "$output" && break
	done
	echo "$output" >"$BATS_TEST_TMPDIR/measured.json"
	$CHECK_COST budgeted "$BATS_TEST_TMPDIR/measured.json" 20
	check_windows "$BATS_TEST_TMPDIR/t.json"
}

@test "a budget's pauses are said: the start line, the status line, the summary" {
	# 30 %: several windows in the ~5 s of the job's work (at 10 % one or two)
	start_job --iters 8000
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --status --max-overhead 30
	run_phase
	stop_tracer
	cat "$BATS_TEST_TMPDIR/tracer.err" "$BATS_TEST_TMPDIR/tracer.out"
	[ "$TRACER_RC" -eq 0 ]
	grep -q "; overhead held to 30% (--max-overhead; none traces all the time); " \
		"$BATS_TEST_TMPDIR/tracer.err"
	grep -Eq ", paused \([0-9]+% of the time traced, --max-overhead 30%\)" \
		"$BATS_TEST_TMPDIR/tracer.err"
	grep -Eq "^--max-overhead 30%: traced [0-9.]+ s of [0-9.]+ s \([0-9]+%\) in [0-9]+ windows, paused between them to hold the budget: .*; the overhead counts [0-9.]+ s for the windows' attach and detach" \
		"$BATS_TEST_TMPDIR/tracer.out"
	grep -q "^device memory (.*sampled: nor those made or freed while --max-overhead paused" \
		"$BATS_TEST_TMPDIR/tracer.out"
	# no advice to lower what a budget holds already
	! grep -q "to trace for less" "$BATS_TEST_TMPDIR/tracer.err"
	stop_job
	check_windows "$BATS_TEST_TMPDIR/t.json"
}

@test "the default budget: 10 % with -p and -- CMD, from the environment, none traces every call" {
	# not set: ours
	start_job --iters 3000
	SPYRE_BPFTRACE_MAX_OVERHEAD= start_tracer -o "$BATS_TEST_TMPDIR/d.json" --no-status
	run_phase
	stop_tracer
	cat "$BATS_TEST_TMPDIR/tracer.err"
	stop_job
	grep -q "; overhead held to 10% (--max-overhead, the default; none traces all the time); " \
		"$BATS_TEST_TMPDIR/tracer.err"
	$CHECK_BUDGET --pct 10 --paused "$BATS_TEST_TMPDIR/d.json"
	# the environment's
	rm -f "$BATS_TEST_TMPDIR/counts.json"
	start_job --iters 300
	SPYRE_BPFTRACE_MAX_OVERHEAD=35 start_tracer -o "$BATS_TEST_TMPDIR/e.json" --no-status
	run_phase
	stop_tracer
	stop_job
	grep -q "; overhead held to 35% (--max-overhead, the default; " "$BATS_TEST_TMPDIR/tracer.err"
	# none, given: every launch the job made is in the trace, no budget in the metadata
	rm -f "$BATS_TEST_TMPDIR/counts.json"
	start_job --iters 300
	SPYRE_BPFTRACE_MAX_OVERHEAD= start_tracer -o "$BATS_TEST_TMPDIR/n.json" --no-status \
		--max-overhead none
	run_phase
	stop_tracer
	stop_job
	! grep -q "overhead held to" "$BATS_TEST_TMPDIR/tracer.err"
	python3 "$ROOT/tests/e2e/verify_device.py" "$BATS_TEST_TMPDIR/n.json" \
		--counts "$BATS_TEST_TMPDIR/counts.json"
	$CHECK_BUDGET --none "$BATS_TEST_TMPDIR/n.json"
	# a bad value is a usage error either way
	run "$TOOL" -p "$$" --max-overhead lots
	[ "$status" -eq 2 ]
	[[ "$output" == *"--max-overhead wants a percentage > 0, e.g. 10, or none"* ]]
	SPYRE_BPFTRACE_MAX_OVERHEAD=lots run "$TOOL" -p "$$"
	[ "$status" -eq 2 ]
	[[ "$output" == *"SPYRE_BPFTRACE_MAX_OVERHEAD wants a percentage"* ]]
	# (fleet mode: no default; --max-overhead PCT holds each window, fleet.bats)
}

@test "a job that waits while the probes are on pays nothing for their attach: the budget keeps them on, its first calls traced" {
	# held before its work: it uses no CPU, so the window's attach cost it none (a switch's
	# cost lands in the job's CPU clock); charged 200 ms regardless, the first window paused
	# at ~0.3 s and the phase below went untraced (0 probe hits)
	start_job
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --status --max-overhead 10
	# the status line two seconds on (the budget decided every 50 ms meanwhile): still on
	wait_until 60 grep -q "0:02[ ,].*, tracing (100% of the time traced, --max-overhead 10%)" \
		"$BATS_TEST_TMPDIR/tracer.err"
	run_phase
	stop_tracer
	cat "$BATS_TEST_TMPDIR/tracer.err" "$BATS_TEST_TMPDIR/tracer.out"
	[ "$TRACER_RC" -eq 0 ]
	! grep -q "0:0[12][ ,].*paused" "$BATS_TEST_TMPDIR/tracer.err"
	# the phase's first calls, in the first window (the budget may pause it later: the mock's
	# probes cost it more than 10 %); what the figure counts for the switches: no more than the
	# job's CPU beyond its calls'
	$CHECK_BUDGET --first-window-sec 2 --traced spyreLaunchJobPlan --switch-within-cpu \
		"$BATS_TEST_TMPDIR/t.json"
}
