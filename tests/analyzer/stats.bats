#!/usr/bin/env bats
# The statistics IBM's aiu-trace-analyzer (acelyzer) computes on our traces agree with
# `spyre-bpftrace report`'s on the same trace, and each comparison fails when acelyzer reads a
# trace changed after report ran. What is compared, how, and the tolerances where the two define
# a figure differently: tests/analyzer/compare.py. Opt-in, not in `make test` (the analyzer
# cannot be fetched where CI runs):
#   make check-analyzer AIU_TRACE_ANALYZER=/path/to/aiu-trace-analyzer
# (tests/e2e/analyzer-helpers.bash: the Python it needs). Each acelyzer run takes 5-10 s here.

load ../e2e/helpers
load ../e2e/analyzer-helpers

setup_file() {
	analyzer_setup_file
}

setup() {
	analyzer_setup
}

teardown() {
	[ -n "${TRACER_PID:-}" ] && kill -KILL "$TRACER_PID" 2>/dev/null
	[ -n "${JOB_PID:-}" ] && kill -KILL "$JOB_PID" 2>/dev/null
	true
}

# compare TRACE REPORT [compare.py OPTIONS]: compare.py's lines in $output, its status in $status
compare() {
	local t=$1 r=$2
	shift 2
	run python3 "$ROOT/tests/analyzer/compare.py" --analyzer "$ANALYZER" --python "$APY" \
		--trace "$t" --report "$r" --work "$BATS_TEST_TMPDIR/w" "$@"
	echo "$output"
}

# trace_mock: the mock job traced by launch mode, every call, into t.json; report's figures of it
# in t.report.json
trace_mock() {
	local t=$BATS_TEST_TMPDIR/t.json
	"$TOOL" -q -o "$t" -- "$MOCK" --quiet --iters 200 >"$BATS_TEST_TMPDIR/tracer.out" 2>&1 ||
		{ cat "$BATS_TEST_TMPDIR/tracer.out"; return 1; }
	"$TOOL" report --json "$t" >"$BATS_TEST_TMPDIR/t.report.json"
}

# has_line TEXT: a line of $output starts with TEXT
has_line() {
	printf '%s\n' "$output" | awk -v s="$1" 'index($0, s) == 1 { f = 1 } END { exit !f }' ||
		{ echo "no line starting with: $1"; return 1; }
}

@test "acelyzer's kernel profile, device times and copies agree with report's on the mock job's trace" {
	trace_mock
	compare "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/t.report.json"
	[ "$status" -eq 0 ]
	# every figure compared, for each of the mock's three kernels and two directions
	local k
	for k in 'embedding_fwd#0' 'attention_fwd#1' 'mlp_fwd#2'; do
		for s in count total mean median share; do
			has_line "ok   kernels.$s[$k]:"
		done
	done
	for s in 'count[Memcpy (HtoD)]' 'gbps[Memcpy (HtoD)]' 'count[Memcpy (DtoH)]' \
		'gbps[Memcpy (DtoH)]' transferBW; do
		has_line "ok   copies.$s:"
	done
	for s in spans kernelTime elapsed active; do
		has_line "ok   device.$s[0]:"
	done
	has_line "ok   spans kept:"
	has_line "all 25 comparisons hold"
}

@test "and on two ranks' traces merged, device by device" {
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	"$MOCK" --world-size 2 --wait-go --linger --quiet --iters 40 \
		--ready-file "$BATS_TEST_TMPDIR/job.ready" --counts "$BATS_TEST_TMPDIR/c.json" \
		>"$BATS_TEST_TMPDIR/job.out" 2>"$BATS_TEST_TMPDIR/job.err" &
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
	local ranks r tracers=()
	mapfile -t ranks <"$BATS_TEST_TMPDIR/job.ready"
	[ "${#ranks[@]}" -eq 2 ]
	for r in 0 1; do
		"$TOOL" -p "${ranks[$r]}" -o "$BATS_TEST_TMPDIR/t$r.json" \
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
	local m=$BATS_TEST_TMPDIR/m.json
	# the later trace first (merge.bats): the earlier one's time base keeps every ts >= 0
	"$TOOL" merge "$BATS_TEST_TMPDIR/t1.json" "$BATS_TEST_TMPDIR/t0.json" -o "$m"
	"$TOOL" report --json "$m" >"$BATS_TEST_TMPDIR/m.report.json"
	compare "$m" "$BATS_TEST_TMPDIR/m.report.json"
	[ "$status" -eq 0 ]
	# each rank's device (pids 0 and 1 in the merge) on its own; kernels over both (report
	# has them by name): count, total and mean, not the median (acelyzer's is per device)
	for r in 0 1; do
		for s in spans kernelTime elapsed active; do
			has_line "ok   device.$s[$r]:"
		done
	done
	has_line "ok   kernels.mean[embedding_fwd#0]:"
	! printf '%s\n' "$output" | grep -q 'kernels.median'
	has_line "all 23 comparisons hold"
}

@test "each comparison fails when acelyzer reads the trace changed after report ran" {
	trace_mock
	local t=$BATS_TEST_TMPDIR/t.json r=$BATS_TEST_TMPDIR/t.report.json
	# the mutation, then the comparisons it must break (compare.py --mutate; @: the kernel it
	# changed, which compare.py names)
	local -A breaks=(
		[kernel-dur]="kernels.total[@]|kernels.mean[@]|device.kernelTime[0]"
		[kernel-drop]="kernels.count[@]|device.spans[0]"
		[kernel-scale]="kernels.median[@]|kernels.share[@]"
		[kernel-early]="device.elapsed[0]|device.active[0]"
		[copy-drop]="copies.count[Memcpy (HtoD)]|copies.transferBW"
		[copy-bw]="copies.gbps[Memcpy (DtoH)]"
		[cmpt-skew]="spans kept"
	)
	local m k name
	for m in "${!breaks[@]}"; do
		echo "# --mutate $m"
		compare "$t" "$r" --mutate "$m"
		[ "$status" -eq 1 ]
		k=$(printf '%s\n' "$output" | sed -n 's/^mutated: kernel \(.*\): .*/\1/p')
		while IFS= read -r name; do
			has_line "FAIL ${name//@/$k}:"
		done < <(printf '%s\n' "${breaks[$m]}" | tr '|' '\n')
		# and the other kernels' counts still hold
		[ "$(printf '%s\n' "$output" | grep -c '^ok   kernels.count\[')" -ge 2 ]
	done
}
