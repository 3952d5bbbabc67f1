#!/usr/bin/env bats
# Collectives and ranks, end to end: the mock job's process group (c10d::SpyreCCLBackend over
# libspyre_comms) traced per rank, against each rank's own counts; distributedInfo from the
# environment torchrun gives (two ranks), from getRank/getSize (a world of one), or from both;
# the two ranks' traces merged into one.

load helpers

CHECK_COLL="python3 $ROOT/tests/e2e/check_collectives.py"

# check_rank TRACE COUNTS PCI ITERS: the collective spans equal the rank's calls, each comms op
# carries what the job passed it, read from the argument torch-spyre passes it in (bytes and
# dtype of its input tensor, op, root, peer, tag), and distributedInfo names the rank (PCI: its
# AIU_WORLD_RANK_<r>, or "")
check_rank() {
	$CHECK_COLL rank "$@"
}

# trace_two_ranks: a job of two ranks, each traced by a tracer of its own into t<r>.json, 21
# iterations (three of each kind of collective); the ranks' counts in c.json.r<r>, their pids
# in RANKS
trace_two_ranks() {
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	"$MOCK" --world-size 2 --wait-go --linger --quiet --iters 21 --threads 1 \
		--ready-file "$BATS_TEST_TMPDIR/job.ready" --counts "$BATS_TEST_TMPDIR/c.json" \
		>"$BATS_TEST_TMPDIR/job.out" 2>"$BATS_TEST_TMPDIR/job.err" &
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
	mapfile -t RANKS <"$BATS_TEST_TMPDIR/job.ready"
	[ "${#RANKS[@]}" -eq 2 ]
	local r tracers=()
	for r in 0 1; do
		rm -f "$BATS_TEST_TMPDIR/tracer$r.ready"
		"$TOOL" -p "${RANKS[$r]}" -o "$BATS_TEST_TMPDIR/t$r.json" \
			--ready-file "$BATS_TEST_TMPDIR/tracer$r.ready" \
			>"$BATS_TEST_TMPDIR/tracer$r.out" 2>&1 &
		tracers+=($!)
		wait_ready "$BATS_TEST_TMPDIR/tracer$r.ready" "${tracers[$r]}"
	done
	kill -USR1 "$JOB_PID"	# the launcher hands the go to both ranks
	wait_for "$BATS_TEST_TMPDIR/c.json.r0" 120
	wait_for "$BATS_TEST_TMPDIR/c.json.r1" 120
	for r in 0 1; do
		kill -INT "${tracers[$r]}"
		wait "${tracers[$r]}"
	done
	stop_job
	[ "$JOB_RC" -eq 0 ]
}

@test "two ranks: each rank's trace has its collectives, with their arguments, and its rank" {
	trace_two_ranks
	check_rank "$BATS_TEST_TMPDIR/t0.json" "$BATS_TEST_TMPDIR/c.json.r0" 0000:1a:00.0 21
	check_rank "$BATS_TEST_TMPDIR/t1.json" "$BATS_TEST_TMPDIR/c.json.r1" 0000:1b:00.0 21
}

@test "two ranks' traces merged: both ranks' collectives, each rank's distributedInfo by pid, and report's table of them" {
	trace_two_ranks
	# the later trace first (merge.bats): the earlier one's time base keeps every ts >= 0
	run "$TOOL" merge "$BATS_TEST_TMPDIR/t1.json" "$BATS_TEST_TMPDIR/t0.json" \
		-o "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	$CHECK_COLL merged "$BATS_TEST_TMPDIR/m.json" "$BATS_TEST_TMPDIR/c.json.r0" \
		"$BATS_TEST_TMPDIR/c.json.r1"
	run "$TOOL" check "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	# report: each rank's collectives by op, against the rank's own calls, in the merged
	# trace (ranks by pid) and in one rank's (its distributedInfo)
	run "$TOOL" report --json "$BATS_TEST_TMPDIR/m.json" "$BATS_TEST_TMPDIR/t1.json"
	[ "$status" -eq 0 ]
	echo "$output" >"$BATS_TEST_TMPDIR/rc.json"
	$CHECK_COLL report "$BATS_TEST_TMPDIR/rc.json" "$BATS_TEST_TMPDIR/c.json.r0" \
		"$BATS_TEST_TMPDIR/c.json.r1"
	# each rank's collectives against its devices' kernels, computed apart from the trace
	"$TOOL" report --json "$BATS_TEST_TMPDIR/m.json" >"$BATS_TEST_TMPDIR/r.json"
	python3 "$ROOT/tests/e2e/check_overlap.py" "$BATS_TEST_TMPDIR/r.json" \
		"$BATS_TEST_TMPDIR/m.json"
	run "$TOOL" report "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	grep -Eq "^ +1 +${RANKS[1]} +3 +192 +[0-9.]+ +[0-9.]+  allreduce$" <<<"$output"
	grep -Eq "^ +1 +${RANKS[1]} +[0-9.]+ +[0-9.]+ +[0-9.]+%$" <<<"$output"
}

@test "a world of one without torchrun's environment: rank and size from getRank/getSize" {
	# the Spyre stack's card of each rank is there: getRank's rank names it
	export AIU_WORLD_RANK_0=0000:1a:00.0 AIU_WORLD_RANK_1=0000:1b:00.0
	start_job --world-size 1 --iters 14 --threads 1
	! tr '\0' '\n' </proc/"$JOB_PID"/environ | grep -q '^RANK='
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	check_rank "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" 0000:1a:00.0 14
}

@test "RANK without a world size in the environment: the size from getSize, the rank from RANK" {
	# the job's world is one (no WORLD_SIZE); the tracer takes RANK from the environment and
	# fills only what it lacks from the probes: getRank's answer is not needed
	export RANK=0
	start_job --world-size 1 --iters 14 --threads 1
	tr '\0' '\n' </proc/"$JOB_PID"/environ | grep -qx 'RANK=0'
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	check_rank "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" "" 14
}

@test "AIU_WORLD_SIZE gives the world size where torchrun's WORLD_SIZE is missing" {
	# no process group at all (no getRank/getSize calls): everything from the environment, as
	# a Spyre job started without torchrun has it
	export RANK=1 AIU_WORLD_SIZE=4 AIU_WORLD_RANK_1=0000:1b:00.0
	start_job --iters 5 --threads 1
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	$CHECK_COLL dist "$BATS_TEST_TMPDIR/t.json" 1 4 --pci 0000:1b:00.0
}
