#!/usr/bin/env bats
# Thousands of probes in one run (issue 15), on real code: Debian's PyTorch (python3-torch, the
# job of tests/e2e/torch_job.py), globs over libtorch_cpu.so's operator entries
# (at::_ops::*::call, 2,952 functions) and CPU kernels (at::native::*, 2,546 more). The table
# resolves, the counters get room for it, the probes attach through uprobe_multi links and
# leave nothing behind; the limits that remain are named when they are hit (docs/user-guide.md,
# "Limits"). Where a probe is armed is read from the job's memory (probe_sites.py).

load torch-helpers

PROBE_SITES="python3 $ROOT/tests/e2e/probe_sites.py"
OPS=(--no-default --probe 'libtorch_cpu.so*:at::_ops::*::call')
MANY=("${OPS[@]}" --probe 'libtorch_cpu.so*:at::native::*')

setup_file() {
	# a job held before its first iteration, for the tests that only attach or are refused
	if "$TORCH_PY" -c 'import torch' 2>/dev/null; then
		"$TORCH_PY" "$TORCH_JOB" --ready "$BATS_FILE_TMPDIR/held.ready" \
			--go "$BATS_FILE_TMPDIR/held.go" --out "$BATS_FILE_TMPDIR/held.json" \
			--go-timeout 900 >/dev/null 2>&1 3>&- &
		wait_for "$BATS_FILE_TMPDIR/held.ready" 60
	fi
}

teardown_file() {
	[ -e "$BATS_FILE_TMPDIR/held.ready" ] && kill -KILL "$(cat "$BATS_FILE_TMPDIR/held.ready")"
	true
}

# held_job: HELD, the pid of the job setup_file holds (skip without torch)
held_job() {
	need_torch
	HELD=$(cat "$BATS_FILE_TMPDIR/held.ready")
}

# attached TRACE: the functions a trace's metadata lists as attached
attached() {
	python3 -c 'import json,sys; print(sum(not p.get("attachFailed") for p in json.load(open(sys.argv[1]))["spyreProbes"]))' "$1"
}

@test "5,000 PyTorch functions by PID: all attached, the job trains as untraced, check clean, no breakpoint left" {
	need_torch
	torch_untraced
	start_torch_job --linger "$BATS_TEST_TMPDIR/job.linger"
	"$TOOL" list -v -p "$JOB_PID" "${MANY[@]}" > "$BATS_TEST_TMPDIR/list.txt"
	n=$(sed -n 's/.* resolved to \([0-9]*\) functions$/\1/p' "$BATS_TEST_TMPDIR/list.txt")
	echo "resolved: $n functions"
	[ "$n" -ge 5000 ]
	start_tracer -v -o "$BATS_TEST_TMPDIR/t.json" "${MANY[@]}"
	grep 'attached in' "$BATS_TEST_TMPDIR/tracer.err"
	grep -q 'uprobe_multi links' "$BATS_TEST_TMPDIR/tracer.err"
	# one library: a link per kind (entries, return instructions, tail jumps, entries only),
	# and one per library holding returns of tail-called functions (this one, and those
	# `list` names with no probe of their own)
	links=$(sed -n 's/.* probes attached in .* ms, \([0-9]*\) links .*/\1/p' \
		"$BATS_TEST_TMPDIR/tracer.err")
	tails=$(grep -c ': no probe, [0-9]* return sites\? of tail-called functions$' \
		"$BATS_TEST_TMPDIR/list.txt" || true)
	echo "links: $links, libraries with tail-call returns only: $tails"
	[ "$links" -ge 1 ] && [ "$links" -le $((5 + tails)) ]
	# every entry and listed return site holds a breakpoint in the job
	read -r armed total < <($PROBE_SITES "$JOB_PID" < "$BATS_TEST_TMPDIR/list.txt")
	echo "armed $armed of $total probe sites"
	[ "$total" -ge 5000 ] && [ "$armed" -eq "$total" ]
	touch "$JOB_GO"
	wait_for "$BATS_TEST_TMPDIR/counts.json" 300
	stop_tracer INT
	cat "$BATS_TEST_TMPDIR/tracer.out"
	[ "$TRACER_RC" -eq 0 ]
	# detached while the job lives on: the original bytes are back at every site
	read -r armed total < <($PROBE_SITES "$JOB_PID" < "$BATS_TEST_TMPDIR/list.txt")
	echo "after detach: armed $armed of $total"
	[ "$armed" -eq 0 ]
	touch "$BATS_TEST_TMPDIR/job.linger"
	wait_child "$JOB_PID" 60
	JOB_PID=
	[ "$CHILD_RC" -eq 0 ]
	same_as_untraced "$BATS_TEST_TMPDIR/counts.json" "$BATS_FILE_TMPDIR/torch-untraced.json" \
		checksum caught mmOk mmFailed
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(attached "$BATS_TEST_TMPDIR/t.json")" -ge 5000 ]
	# one of the 5,000 is traced exactly: torch.mm's entry, once per call, failed ones too
	python3 "$ROOT/tests/e2e/check_trace.py" hits "$BATS_TEST_TMPDIR/t.json" at::_ops::mm::call \
		$(( $(counts_field "$BATS_TEST_TMPDIR/counts.json" mmOk) + \
		    $(counts_field "$BATS_TEST_TMPDIR/counts.json" mmFailed) ))
}

@test "the former cap of 512 functions is gone: 2,952 at::_ops::*::call listed and traced by PID" {
	held_job
	run "$TOOL" list -v -p "$HELD" "${OPS[@]}"
	[ "$status" -eq 0 ]
	[[ "$output" == *" resolved to 2952 functions"* ]]
	echo "$output" | grep '^limits: 65536 functions a run (--max-probes), these 2952 take [0-9]* uprobes; uprobe_multi links$'
	run "$TOOL" -p "$HELD" "${OPS[@]}" -d 1 -q -o "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(attached "$BATS_TEST_TMPDIR/t.json")" -eq 2952 ]
}

@test "--max-probes below what the table resolves: an error naming the limit and the globs, exit 2, no trace file" {
	held_job
	run "$TOOL" -p "$HELD" "${OPS[@]}" --max-probes 100 -o "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"more than 100 functions match the probe table (the limit of --max-probes): raise it"*"narrow the globs"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/t.json" ]
	run "$TOOL" list -v -p "$HELD" "${OPS[@]}" --max-probes 100
	[ "$status" -eq 2 ]
	[[ "$output" == *"more than 100 functions match the probe table"* ]]
	run "$TOOL" -p "$HELD" "${OPS[@]}" --max-probes 0
	[ "$status" -eq 2 ]
	[[ "$output" == *"--max-probes wants 1..1048576"* ]]
}

@test "without uprobe_multi (perf events): past 1024 uprobes an error naming the limit, exit 2; under it traced and removed" {
	held_job
	# 439 functions, ~2,700 uprobes with their return sites: refused before any is attached
	run env SPYRE_NO_UPROBE_MULTI=1 "$TOOL" -p "$HELD" --no-default \
		--probe 'libtorch_cpu.so*:at::_ops::[a-c]*::call' -d 1 -o "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"no uprobe_multi links"*"at most 1024 in a run"*"narrow the probe globs"* ]]
	SPYRE_NO_UPROBE_MULTI=1 "$TOOL" list -v -p "$HELD" --no-default \
		--probe 'libtorch_cpu.so*:at::_ops::addm*::call' > "$BATS_TEST_TMPDIR/list.txt"
	grep 'no uprobe_multi in this kernel: at most 1024 uprobes' "$BATS_TEST_TMPDIR/list.txt"
	run env SPYRE_NO_UPROBE_MULTI=1 "$TOOL" -p "$HELD" --no-default \
		--probe 'libtorch_cpu.so*:at::_ops::addm*::call' -d 1 -q -o "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(attached "$BATS_TEST_TMPDIR/t.json")" -ge 5 ]
	read -r armed total < <($PROBE_SITES "$HELD" < "$BATS_TEST_TMPDIR/list.txt")
	echo "after detach: armed $armed of $total"
	[ "$total" -ge 5 ] && [ "$armed" -eq 0 ]
}
