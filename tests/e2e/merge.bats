#!/usr/bin/env bats
# merge, end to end: a trace of the mock job and a Kineto-style trace of the same run, written
# with real CLOCK_REALTIME stamps taken around the traced phase, line up in the merged file.

load helpers

CHECK_MERGE="python3 $ROOT/tests/e2e/check_merge.py"

# kineto_trace OUT PID BEFORE_NS AFTER_NS [CORR]: what the PyTorch profiler would have written
# for a ProfilerStep spanning [BEFORE, AFTER], with its own device 0 (a kernel and its arrow,
# correlation and arrow id CORR, 1 by default)
kineto_trace() {
	python3 "$ROOT/tests/e2e/make_trace.py" kineto "$@"
}

now_ns() {
	python3 -c 'import time; print(time.time_ns())'
}

@test "merge lines our spans up inside the Kineto step that ran them" {
	start_job --threads 2 --streams 2 --iters 20
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	local before after
	before=$(now_ns)
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/counts.json" 120
	after=$(now_ns)
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	# Kineto's op has the correlation of our first launch: ours must move off it
	local corr
	corr=$(python3 -c 'import json, sys
print(min(e["args"]["correlation"] for e in json.load(open(sys.argv[1]))["traceEvents"]
          if "correlation" in e.get("args", {})))' "$BATS_TEST_TMPDIR/t.json")
	kineto_trace "$BATS_TEST_TMPDIR/k.json" "$JOB_PID" "$before" "$after" "$corr"

	run "$TOOL" merge "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/k.json" \
		-o "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"our device pid 0 is Kineto's too: now pid 1"* ]]
	[[ "$output" == *"correlation ids clash"* ]]
	$CHECK_MERGE kineto "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/k.json" \
		"$BATS_TEST_TMPDIR/m.json" "$JOB_PID"
	# arrows still join each launch to its device span (ours on pid 1) after the id shift
	n=$(python3 -c 'import json, sys
print(sum(e["ph"] == "X" and e["name"] in ("aiuDataTransferHtoD", "aiuDataTransferDtoH",
          "aiuLaunchComputeStream") for e in json.load(open(sys.argv[1]))["traceEvents"]))' \
		"$BATS_TEST_TMPDIR/t.json")
	python3 "$ROOT/tests/e2e/verify_flows.py" "$BATS_TEST_TMPDIR/m.json" --min-arrows "$JOB_PID:$n"
	run "$TOOL" check "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	# usage errors and a refused overwrite
	run "$TOOL" merge "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/k.json"
	[ "$status" -eq 2 ]
	run "$TOOL" merge "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/k.json" \
		-o "$BATS_TEST_TMPDIR/m.json"
	[ "$status" -eq 7 ]
	run "$TOOL" merge "$BATS_TEST_TMPDIR/k.json" "$BATS_TEST_TMPDIR/t.json" \
		-o "$BATS_TEST_TMPDIR/m2.json"
	[ "$status" -eq 1 ]
	[[ "$output" == *"give ours first"* ]]
}

# trace_rank N: a fresh mock job (its op ids count from 1) traced for one phase into rN.json;
# its pid in RANK_PID
trace_rank() {
	# a rank as torchrun starts it: RANK and WORLD_SIZE in its environment (distributedInfo)
	export RANK=$(($1 - 1)) WORLD_SIZE=3
	start_job --threads 2 --streams 2 --iters 10 --bytes $((4096 * $1))
	unset RANK WORLD_SIZE
	start_tracer -o "$BATS_TEST_TMPDIR/r$1.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	rm -f "$BATS_TEST_TMPDIR/counts.json"
	RANK_PID=$JOB_PID
}

@test "merge of two ranks' traces: the same op ids and arrow ids in both, one arrow per id after" {
	trace_rank 1
	local p1=$RANK_PID
	trace_rank 2
	local p2=$RANK_PID
	# both tracers numbered their launches and arrows from the same base: the ids collide (the
	# case under test)
	$CHECK_MERGE clash "$BATS_TEST_TMPDIR/r1.json" "$BATS_TEST_TMPDIR/r2.json"
	# the later one first: the other's time base is the merged one's, and an earlier base
	# keeps every ts at or after 0
	run "$TOOL" merge "$BATS_TEST_TMPDIR/r2.json" "$BATS_TEST_TMPDIR/r1.json" \
		-o "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"arrow ids clash"* ]]
	# our correlations move just past the other rank's correlations, not past its arrow ids;
	# our arrow ids just past its arrow ids. Every id stays below 2^53, exact as a double
	$CHECK_MERGE offsets "$BATS_TEST_TMPDIR/r2.json" "$BATS_TEST_TMPDIR/r1.json" \
		"$BATS_TEST_TMPDIR/m.json"
	# every arrow of both ranks joins its own rank's launch to its own rank's copy
	python3 "$ROOT/tests/e2e/verify_flows.py" "$BATS_TEST_TMPDIR/m.json" \
		--bytes "$p1:4096" --bytes "$p2:8192" --min-arrows "$p1:100" --min-arrows "$p2:100"
	run "$TOOL" check "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "merge of three ranks' traces, two at a time either way: 300 arrows, one per id, each in its own rank" {
	local p=() r
	for r in 1 2 3; do
		trace_rank $r
		p+=("$RANK_PID")
	done
	# merge takes two traces: a third rank onto two merged ranks, and a rank onto two merged
	# ranks given first (the merged trace as ours). The later base first, as above
	local t=$BATS_TEST_TMPDIR
	run "$TOOL" merge "$t/r2.json" "$t/r1.json" -o "$t/m21.json"
	[ "$status" -eq 0 ]
	run "$TOOL" merge "$t/r3.json" "$t/m21.json" -o "$t/m3.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"arrow ids clash"* ]]
	run "$TOOL" merge "$t/r3.json" "$t/r2.json" -o "$t/m32.json"
	[ "$status" -eq 0 ]
	run "$TOOL" merge "$t/m32.json" "$t/r1.json" -o "$t/m3b.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"arrow ids clash"* ]]
	for m in m3 m3b; do
		echo "# $m"
		# each rank: 2 threads x 10 iterations x (1 HtoD + 3 kernels + 1 DtoH) launches, each
		# with its arrow, as in its own trace; its device spans on a device pid of its own
		$CHECK_MERGE ranks "$t/$m.json" "$t/r1.json" "$t/r2.json" "$t/r3.json" "${p[@]}"
		# and every arrow joins its own rank's launch to its own rank's copy or kernel
		python3 "$ROOT/tests/e2e/verify_flows.py" "$t/$m.json" \
			--bytes "${p[0]}:4096" --bytes "${p[1]}:8192" --bytes "${p[2]}:12288" \
			--min-arrows "${p[0]}:100" --min-arrows "${p[1]}:100" \
			--min-arrows "${p[2]}:100"
		run "$TOOL" check "$t/$m.json"
		echo "$output"
		[ "$status" -eq 0 ]
	done
}

# --- real code: Debian's PyTorch profiles itself (legacy export) while we trace it -------------

TORCH_PY=/usr/bin/python3	# Debian's python with python3-torch, whatever python3 is on PATH
# the ops the profiler records, probed where the dispatcher enters them, named like the profiler
TORCH_OPS=(linear addmm relu mse_loss mm t sum)

# profiled_torch_run: trace tests/e2e/torch_profiled.py by PID while it profiles itself; the
# job's files land in $BATS_TEST_TMPDIR/job (profile.json, job.json), our trace in t.json
profiled_torch_run() {
	"$TORCH_PY" -c 'import torch' 2>/dev/null || skip "no python3-torch for $TORCH_PY"
	local probes=() op
	for op in "${TORCH_OPS[@]}"; do
		probes+=(--probe "libtorch_cpu.so*:at::_ops::$op::call:aten::$op")
	done
	"$TORCH_PY" "$ROOT/tests/e2e/torch_profiled.py" --ready "$BATS_TEST_TMPDIR/job.ready" \
		--go "$BATS_TEST_TMPDIR/job.go" --out "$BATS_TEST_TMPDIR/job" --iters 25 \
		>"$BATS_TEST_TMPDIR/job.out" 2>&1 &
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready" 60
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --no-default "${probes[@]}" "$@"
	touch "$BATS_TEST_TMPDIR/job.go"
	# the tracer ends with its target
	wait_child "$JOB_PID" 120
	JOB_RC=$CHILD_RC
	wait_child "$TRACER_PID" 30
	TRACER_RC=$CHILD_RC
	[ "$JOB_RC" -eq 0 ]
	[ "$TRACER_RC" -eq 0 ]
}

@test "merge with a legacy PyTorch profiler export: refused without its start time, saying what is missing" {
	profiled_torch_run
	run "$TOOL" merge "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/job/profile.json" \
		-o "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"legacy PyTorch export"* ]]
	[[ "$output" == *"--profiler-start NS"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/m.json" ]
}

@test "merge with a legacy PyTorch profiler export: clocks fitted on the shared ops, threads paired, check clean" {
	profiled_torch_run
	local start
	start=$(counts_field "$BATS_TEST_TMPDIR/job/job.json" profilerStartNs)
	# the profiler's own export does not pass check: it rounds ts and dur to whole µs apart
	run "$TOOL" check "$BATS_TEST_TMPDIR/job/profile.json"
	[ "$status" -eq 8 ]
	run "$TOOL" merge "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/job/profile.json" \
		-o "$BATS_TEST_TMPDIR/m.json" --profiler-start "$start"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"fitted on"* ]]
	run "$TOOL" check "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	$CHECK_MERGE legacy "$BATS_TEST_TMPDIR/m.json" "$BATS_TEST_TMPDIR/t.json" \
		"$BATS_TEST_TMPDIR/job/job.json" "${TORCH_OPS[@]}"
}

@test "merge with a legacy PyTorch profiler export of a --python trace: our python_function spans kept, check clean" {
	profiled_torch_run --python
	local start
	start=$(counts_field "$BATS_TEST_TMPDIR/job/job.json" profilerStartNs)
	run "$TOOL" merge "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/job/profile.json" \
		-o "$BATS_TEST_TMPDIR/m.json" --profiler-start "$start"
	echo "$output"
	[ "$status" -eq 0 ]
	run "$TOOL" check "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	$CHECK_MERGE python "$BATS_TEST_TMPDIR/m.json" "$BATS_TEST_TMPDIR/t.json"
}

# shifted IN OUT NS: our trace IN with its clock anchors NS later (as if traced then)
shifted() {
	python3 "$ROOT/tests/e2e/make_trace.py" shift "$@"
}

@test "merge of traces 29 days apart is refused either way round, saying how far apart" {
	local s=$ROOT/tests/fixtures/traces/spyre-sample.json l=$BATS_TEST_TMPDIR/later.json
	shifted "$s" "$l" $((29 * 86400 * 10**9))
	run "$TOOL" merge "$l" "$s" -o "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"the traces are 29.0 days apart (ours after the other's): not one run"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/m.json" ]
	run "$TOOL" merge "$s" "$l" -o "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"29.0 days apart (ours before the other's)"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/m.json" ]
}

@test "merge of two of our traces names the second as ours; -o is required, says its help; -o DIR" {
	local s=$ROOT/tests/fixtures/traces/spyre-sample.json l=$BATS_TEST_TMPDIR/later.json
	shifted "$s" "$l" 1000000000
	run "$TOOL" merge "$l" "$s" -o "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"wrote $BATS_TEST_TMPDIR/m.json (22 + 16 spyre-bpftrace events, the second"* ]]
	[[ "$output" == *"trace's first); the first trace's moved by +1.000000 s onto the second's"* ]]
	[[ "$output" == *"our correlation ids clash with the second trace's"* ]]
	[[ "$output" != *Kineto* ]]
	run "$TOOL" check "$BATS_TEST_TMPDIR/m.json"
	[ "$status" -eq 0 ]

	run "$TOOL" merge --help
	[[ "$output" == *"merge: the merged trace (required)"* ]]
	run "$TOOL" merge "$l" "$s"
	[ "$status" -eq 2 ]

	mkdir "$BATS_TEST_TMPDIR/dir"
	run "$TOOL" merge "$l" "$s" -o "$BATS_TEST_TMPDIR/dir" --force
	echo "$output"
	[ "$status" -eq 7 ]
	[[ "$output" == *"dir: Is a directory (-o names the file to write, not its directory)"* ]]
}

@test "merge of a trace over 2 GiB in bounded memory: max RSS under an eighth of its size, every event written" {
	# the sample's events again and again, each copy later in time, spans padded to 4 KB;
	# gzip -1 on disk (22 MB): merge reads each input twice, so not from a pipe
	local d=$BATS_TEST_TMPDIR
	python3 "$ROOT/tests/e2e/big_trace.py" "$ROOT/tests/fixtures/traces/spyre-sample.json" \
		2.2e9 --pad 4000 --count "$d/count" | gzip -1 >"$d/big.json.gz"
	$CHECK_MERGE big "$TOOL" "$d/big.json.gz" "$ROOT/tests/fixtures/traces/kineto-sample.json" \
		"$d/m.json.gz" "$d/count"
	# every event there, and no problem but the Kineto sample's own (its marker's pid "")
	run "$TOOL" check "$d/m.json.gz"
	echo "$output"
	[[ "$output" == *": $(( $(cat "$d/count") - 4 + 21 )) events, 2 problems"* ]]
	[ "$(grep -c "(Record Window End, pid , tid , .*\[bad-pid-tid\]" <<<"$output")" -eq 2 ]
}
