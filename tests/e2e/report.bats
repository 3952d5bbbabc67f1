#!/usr/bin/env bats
# report: the tables a trace holds, read back; every figure against the job's own counts or
# the same figure computed over the JSON here, independently.

load fault-helpers

CHECK_REPORT="python3 $ROOT/tests/e2e/check_report.py"

# the mock job launched and traced whole: its counts, the trace
trace_mock() {
	"$TOOL" -o "$BATS_TEST_TMPDIR/t.json" -q "$@" -- "$MOCK" --iters 200 \
		--counts "$BATS_TEST_TMPDIR/counts.json" >"$BATS_TEST_TMPDIR/job.out" \
		2>"$BATS_TEST_TMPDIR/tracer.err"
}

@test "report: host calls, kernels, copies and device busy time equal the job's counts and the JSON's own figures" {
	trace_mock --summary-json "$BATS_TEST_TMPDIR/s.json"
	# --summary-json: the summary's facts as the metadata has them, one model written twice
	$CHECK_REPORT summary-json "$BATS_TEST_TMPDIR/s.json" "$BATS_TEST_TMPDIR/t.json"
	run "$TOOL" report --json "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 0 ]
	echo "$output" >"$BATS_TEST_TMPDIR/r.json"
	$CHECK_REPORT tables "$BATS_TEST_TMPDIR/r.json" "$BATS_TEST_TMPDIR/t.json" \
		"$BATS_TEST_TMPDIR/counts.json"
	# --by-thread: a host row per function and thread, each the same as over the JSON
	run "$TOOL" report --json --by-thread "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 0 ]
	echo "$output" >"$BATS_TEST_TMPDIR/rt.json"
	$CHECK_REPORT by-thread "$BATS_TEST_TMPDIR/rt.json" "$BATS_TEST_TMPDIR/t.json"
	# the same tables for people
	run "$TOOL" report "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "report: $BATS_TEST_TMPDIR/t.json: "*" events over "* ]]
	grep -q "^host calls, by total time$" <<<"$output"
	grep -Eq "^ +2,000 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+  spyreLaunchJobPlan$" <<<"$output"
	grep -q "^device kernels, by total time" <<<"$output"
	grep -Eq "^ +400 +26,214,400 +[0-9.]+ +[0-9.]+ +[0-9.]+  Memcpy \(HtoD\)$" <<<"$output"
	grep -Eq "^  device pid 0 \"Spyre 0\": busy [0-9.]+ % of " <<<"$output"
	grep -Eq "^health: [0-9,]+ events, [0-9,]+ probe hits, 0 dropped \(ring full 0, too deep 0, device spans dropped 0\), 0 unwound \(the run's summary line\)$" <<<"$output"
}

@test "report: a trace's health line is the run's own summary line, losses and all" {
	# a consumer starved (stopped) with a ring too small: calls dropped, counted by cause
	start_job --threads 2 --iters 5000 --compute-us 0
	start_tracer --ringbuf-mb 1 -o "$BATS_TEST_TMPDIR/t.json"
	kill -USR1 "$JOB_PID"
	wait_size "$BATS_TEST_TMPDIR/t.json" 500000
	kill -STOP "$TRACER_PID"
	EXTRA_PIDS+=("$TRACER_PID")
	sleep 0.5	# the 1 MiB ring holds ~11k events: a drop needs the job, not a clock
	kill -CONT "$TRACER_PID"
	wait_for "$BATS_TEST_TMPDIR/counts.json" 60
	stop_tracer INT
	stop_job
	[ "$TRACER_RC" -eq 0 ]
	local line
	line=$(sed -n 's/^spyre-bpftrace summary for pid [0-9]*: //p' \
		"$BATS_TEST_TMPDIR/tracer.out" "$BATS_TEST_TMPDIR/tracer.err")
	[[ "$line" == *" dropped (ring full "* ]]
	run "$TOOL" report "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 0 ]
	grep -Fxq "health: $line (the run's summary line)" <<<"$output" || {
		echo "summary: $line"; grep "^health" <<<"$output"; false; }
	# the same counts in the report's JSON, under the metadata's own keys
	run "$TOOL" report --json "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 0 ]
	echo "$output" >"$BATS_TEST_TMPDIR/rh.json"
	$CHECK_REPORT health "$BATS_TEST_TMPDIR/rh.json" "$BATS_TEST_TMPDIR/t.json"
}

@test "report: a budgeted run's health says which part of the run the figures cover" {
	start_job --iters 4000
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --no-status --max-overhead 20
	run_phase
	stop_tracer
	stop_job
	[ "$TRACER_RC" -eq 0 ]
	run "$TOOL" report "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -Eq "^  budget: traced [0-9.]+ s of [0-9.]+ s \([0-9]+ %\) in [0-9]+ windows; the figures above cover the windows only" <<<"$output"
}

@test "report: a directory, a merged trace, a profiler's trace; a cut one is an error naming recover" {
	trace_mock
	local d=$BATS_TEST_TMPDIR
	mkdir "$d/dir"
	cp "$d/t.json" "$d/dir/a.json"
	gzip -c "$d/t.json" >"$d/dir/b.json.gz"
	run "$TOOL" report --json "$d/dir" "$ROOT/tests/fixtures/traces/kineto-sample.json"
	[ "$status" -eq 0 ]
	echo "$output" >"$d/rf.json"
	$CHECK_REPORT files "$d/rf.json"
	run "$TOOL" report "$ROOT/tests/fixtures/traces/kineto-sample.json"
	[[ "$output" == *"health: not a trace of spyre-bpftrace (no spyreStats)"* ]]
	# ours merged with Kineto's (the samples of one run): both kinds of events in one report
	"$TOOL" merge "$ROOT/tests/fixtures/traces/spyre-sample.json" \
		"$ROOT/tests/fixtures/traces/kineto-sample.json" -o "$d/m.json"
	run "$TOOL" report --json "$d/m.json"
	[ "$status" -eq 0 ]
	echo "$output" >"$d/rm.json"
	$CHECK_REPORT merged "$d/rm.json"
	# cut short: said, with the way out; the other files still reported, exit 1
	head -c 100000 "$d/t.json" >"$d/cut.json"
	run "$TOOL" report "$d/cut.json" "$d/t.json"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"report: $d/cut.json: not a whole trace: "*"(cut short: \`spyre-bpftrace recover\` closes it)"* ]]
	[[ "$output" == *"report: $d/t.json: "*" events over "* ]]
	# a name with a terminal's escape in it (the trace is the job's and anyone's): escaped
	printf '{"traceEvents":[{"ph":"X","name":"evil\\u001b[2Jname","cat":"x","pid":1,"tid":1,"ts":1,"dur":2}]}' \
		>"$d/evil.json"
	run "$TOOL" report "$d/evil.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *'evil\x1b[2Jname'* ]]
	[[ "$output" != *$'\e'* ]]
	run "$TOOL" report "$d/nonexistent.json"
	[ "$status" -eq 1 ]
	run "$TOOL" report
	[ "$status" -eq 2 ]
	[[ "$output" == *"usage: spyre-bpftrace report [--json] FILE|DIR..."* ]]
}

@test "report: why a device idled, cut into queued, waiting and host-bound, and who ran meanwhile" {
	# kernels at 100-200, 300-400, 600-700 us: idle 200-300 and 400-600. Launch 2 (250-270)
	# queues kernel 2 from 270; a synchronize waits 200-250; launch 3 (450-460) queues kernel 3
	# from 460; a Python step runs 380-455. So queued 30 + 140, waiting 50, host-bound
	# 20 (250-270) + 60 (400-460): the step ran 55 of it, the launches 30. With --python the
	# launches name their lines (args.python): train.py:42 made launch 2 (20 of it),
	# train.py:57 launch 3 and an aiuMalloc inside it (452-455): 10, its nested call once
	python3 "$ROOT/tests/e2e/make_trace.py" idle "$BATS_TEST_TMPDIR/t.json"
	run "$TOOL" report --json "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 0 ]
	echo "$output" >"$BATS_TEST_TMPDIR/r.json"
	$CHECK_REPORT idle "$BATS_TEST_TMPDIR/r.json"
	run "$TOOL" report "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	grep -q "^  device pid 0: idle 0.300 ms: queued 0.170 ms (56.7 %), waiting 0.050 ms (16.7 %), host-bound 0.080 ms (26.7 %)$" <<<"$output"
	grep -Eq "^ +0.055 +68.8 %  torch/nn/modules/module.py\(1750\): step$" <<<"$output"
	grep -q "^\.\.\. and the Python lines that made those calls" <<<"$output"
	grep -Eq "^ +0.020 +25.0 %  train.py:42 step$" <<<"$output"
	grep -Eq "^ +0.010 +12.5 %  train.py:57 step$" <<<"$output"
}

@test "report: compute/communication overlap per rank, from a trace whose answer is known" {
	# rank 0 (pid 100) launches (correlation 1) a kernel on its device (pid 900) from 10 to
	# 50 us and is in allreduce from 30 to 70 us: 20 of its 40 us overlapped. Rank 1 (pid
	# 101) is in barrier from 0 to 100 us while its device (901) runs 20-30 and 60-90 us: 40
	# of 100. Device 902 ran work of both (correlations 4 and 5): no one's, its kernel over
	# both ranks' collectives counts for neither.
	cat >"$BATS_TEST_TMPDIR/o.json" <<'JSON'
{"traceEvents":[
{"ph":"X","pid":100,"tid":100,"name":"aiuLaunchComputeStream","ts":0,"dur":5,"args":{"correlation":1}},
{"ph":"X","pid":900,"tid":1,"cat":"kernel","name":"k","ts":10,"dur":40,"args":{"correlation":1}},
{"ph":"X","pid":100,"tid":100,"name":"spyre_comms::Context::allreduce","ts":30,"dur":40},
{"ph":"X","pid":101,"tid":101,"name":"aiuLaunchComputeStream","ts":1,"dur":5,"args":{"correlation":2}},
{"ph":"X","pid":101,"tid":101,"name":"aiuLaunchComputeStream","ts":2,"dur":5,"args":{"correlation":3}},
{"ph":"X","pid":901,"tid":1,"cat":"kernel","name":"k","ts":20,"dur":10,"args":{"correlation":2}},
{"ph":"X","pid":901,"tid":1,"cat":"kernel","name":"k","ts":60,"dur":30,"args":{"correlation":3}},
{"ph":"X","pid":101,"tid":102,"name":"spyre_comms::Context::barrier","ts":0,"dur":100},
{"ph":"X","pid":100,"tid":100,"name":"aiuLaunchComputeStream","ts":3,"dur":1,"args":{"correlation":4}},
{"ph":"X","pid":101,"tid":101,"name":"aiuLaunchComputeStream","ts":3,"dur":1,"args":{"correlation":5}},
{"ph":"X","pid":902,"tid":1,"cat":"kernel","name":"k","ts":0,"dur":100,"args":{"correlation":4}},
{"ph":"X","pid":902,"tid":1,"cat":"kernel","name":"k","ts":100,"dur":1,"args":{"correlation":5}}
]}
JSON
	run "$TOOL" report --json "$BATS_TEST_TMPDIR/o.json"
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" >"$BATS_TEST_TMPDIR/r.json"
	python3 "$ROOT/tests/e2e/check_overlap.py" "$BATS_TEST_TMPDIR/r.json" \
		"$BATS_TEST_TMPDIR/o.json" --want 100=40000,20000 --want 101=100000,40000
	run "$TOOL" report "$BATS_TEST_TMPDIR/o.json"
	echo "$output"
	grep -Eq "^ +\? +100 +0\.040 +0\.020 +50\.0%$" <<<"$output"
	grep -Eq "^ +\? +101 +0\.100 +0\.040 +40\.0%$" <<<"$output"
}

@test "report: the summary's table, spyreProbes and report's host rows are one model: counts and totals equal" {
	"$TOOL" -o "$BATS_TEST_TMPDIR/t.json" -- "$MOCK" --iters 200 >"$BATS_TEST_TMPDIR/job.out" \
		2>"$BATS_TEST_TMPDIR/tracer.err"
	"$TOOL" report --json "$BATS_TEST_TMPDIR/t.json" >"$BATS_TEST_TMPDIR/r.json"
	"$TOOL" report "$BATS_TEST_TMPDIR/t.json" >"$BATS_TEST_TMPDIR/r.txt"
	python3 "$ROOT/tests/e2e/check_fn_rows.py" "$BATS_TEST_TMPDIR/t.json" \
		"$BATS_TEST_TMPDIR/tracer.err" "$BATS_TEST_TMPDIR/r.json" "$BATS_TEST_TMPDIR/r.txt"
}

@test "report: counts in a trace's metadata that are no counts (negative, fractional, huge) read as 0" {
	local t=$BATS_TEST_TMPDIR/h.json
	printf '%s\n' '{"traceEvents":[{"ph":"X","name":"f","cat":"cpu_op","pid":1,"tid":1,"ts":1,"dur":2}],' \
		'"spyreStats":{"events":-5,"probeHits":1e30,"dropsRingFull":2.5,"dropsTooDeep":3,' \
		'"dropsNoStack":0,"recordsUnreadable":0,"deviceOverflow":0,"unwound":7}}' >"$t"
	run "$TOOL" report "$t"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -Fxq "health: 0 events, 0 probe hits, 3 dropped (ring full 0, too deep 3, device spans dropped 0), 7 unwound (the run's summary line)" <<<"$output"
}
