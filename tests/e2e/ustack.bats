#!/usr/bin/env bats
# Native stacks (--ustack, stack=1): a job whose every frame is known (tests/progs/stackjob,
# frame pointers, a frameless leaf), its leaked blocks named by the code that allocated them, the
# -O2 mock without frame pointers, and Debian's python3-torch.

load helpers

SJ=$BUILD/tests/stackjob
CHECK_USTACK="python3 $ROOT/tests/e2e/check_ustack.py"

# stack_run OUT_JSON ROUNDS LEAKS TOOL_ARGS...: stackjob traced from its start by PID, to its end
stack_run() {
	local out=$1 rounds=$2 leaks=$3 d=$BATS_TEST_TMPDIR
	shift 3
	rm -f "$d/ready" "$d/t.ready"
	"$SJ" "$d/ready" "$d/counts.json" "$rounds" "$leaks" &
	JOB_PID=$!
	wait_for "$d/ready"
	"$TOOL" -p "$JOB_PID" --ready-file "$d/t.ready" -o "$out" "$@" >"$d/out" 2>"$d/err" &
	TRACER_PID=$!
	wait_ready "$d/t.ready" "$TRACER_PID" || { cat "$d/err"; return 1; }
	kill -USR1 "$JOB_PID"
	wait "$JOB_PID"
	wait "$TRACER_PID"
}

# kernel_adds_entry_caller: Linux 6.13+ puts the return address of a uprobe at a function's
# `push %rbp` into the stack itself; before, the tracer adds it for every function
kernel_adds_entry_caller() {
	local v
	v=$(uname -r | cut -d- -f1)
	[ "$(printf '%s\n6.13\n' "$v" | sort -V | head -n 1)" = 6.13 ]
}

@test "native stacks: every frame of a known call chain, the frameless leaf's caller from its return address" {
	[ "$(uname -m)" = x86_64 ] || skip "the frameless leaf is x86-64's (its attribute)"
	stack_run "$BATS_TEST_TMPDIR/t.json" 200 5 --no-default --ustack \
		--probe 'stackjob:leaf_mix' --probe 'stackjob:layer_leaky' \
		--probe 'libstackrt.so:dev_alloc'
	cat "$BATS_TEST_TMPDIR/err"
	kernel_adds_entry_caller && added=exact || added=at-least
	cat "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/err" >"$BATS_TEST_TMPDIR/all"
	$CHECK_USTACK chains "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" \
		"$BATS_TEST_TMPDIR/all" --caller-added "$added"
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 0 ]
	# not asked: no stacks, no stack map
	stack_run "$BATS_TEST_TMPDIR/plain.json" 20 1 --no-default --probe 'stackjob:leaf_mix'
	! grep -q '"ustack"' "$BATS_TEST_TMPDIR/plain.json"
	! grep -q 'native stacks' "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/err"
}

@test "native stacks on every per-thread stack path: records handed over one by one, stacks in a hash map" {
	local env
	for env in SPYRE_NO_STAGE=1 SPYRE_NO_TASK_STORAGE=1; do
		env "$env" bash -c "$(declare -f stack_run wait_for wait_ready ended); \
			BATS_TEST_TMPDIR=$BATS_TEST_TMPDIR SJ=$SJ TOOL=$TOOL; \
			stack_run $BATS_TEST_TMPDIR/t.json 50 2 --no-default --ustack --force \
				--probe 'stackjob:leaf_mix' --probe 'libstackrt.so:dev_alloc'"
		$CHECK_USTACK prefixes "$BATS_TEST_TMPDIR/t.json" 50 2 || { echo "$env"; false; }
	done
}

@test "a job that leaks: each live block names the native code that allocated it (stack=1 in a table)" {
	local d=$BATS_TEST_TMPDIR
	printf 'libstackrt.so\tdev_alloc\t\tmem=alloc ptr=ret size=arg1 stack=1\n' >"$d/t.probes"
	printf 'libstackrt.so\tdev_free\t\tmem=free ptr=arg1\n' >>"$d/t.probes"
	stack_run "$d/t.json" 100 5 --no-default --probes "$d/t.probes"
	cat "$d/out" "$d/err"
	$CHECK_USTACK leaks "$d/t.json" "$d/counts.json"
	# the summary: each group, then the code that allocated it
	[ "$(grep -c '^ *1 x .*dev_alloc' "$d/out")" -eq 5 ]
	[ "$(grep -Ec '^ +called from layer_leaky\+0x[0-9a-f]+ \(stackjob\) <- run_round\+0x[0-9a-f]+ \(stackjob\) <- main\+' "$d/out")" -eq 5 ]
	run "$TOOL" check "$d/t.json"
	[ "$status" -eq 0 ]
}

@test "stack=1 is for spans: an instant asks in vain, said with the line" {
	local d=$BATS_TEST_TMPDIR
	printf 'libstackrt.so\tdev_free\t\ttype=instant stack=1\n' >"$d/bad.probes"
	run "$TOOL" list -p $$ --no-default --probes "$d/bad.probes"
	echo "$output"
	[ "$status" -ne 0 ]
	grep -q "bad.probes:1: .*stack=1 needs a span" <<<"$output"
}

@test "the -O2 mock without frame pointers: each allocation's stack has the allocator and its caller" {
	start_job --threads 2 --iters 20
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --ustack
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	$CHECK_USTACK mock "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
	stop_job
}

@test "real PyTorch: aten ops and the CPU allocator with their native callers (Debian's python3-torch)" {
	load torch-helpers
	need_torch
	local d=$BATS_TEST_TMPDIR
	cat >"$d/job.py" <<'PY'
import os, sys, time, torch
open(sys.argv[1], "w").write(str(os.getpid()))
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
a = torch.ones(8, 8)
for i in range(40):
    b = torch.mm(a, a)
PY
	"$TORCH_PY" "$d/job.py" "$d/ready" "$d/go" &
	JOB_PID=$!
	wait_for "$d/ready"
	"$TOOL" -p "$JOB_PID" --probes torch --ustack --ready-file "$d/t.ready" -o "$d/t.json" \
		>"$d/out" 2>"$d/err" &
	TRACER_PID=$!
	wait_ready "$d/t.ready" "$TRACER_PID"
	touch "$d/go"
	wait "$JOB_PID"
	wait "$TRACER_PID"
	cat "$d/err"
	$CHECK_USTACK torch "$d/t.json"
	run "$TOOL" check "$d/t.json"
	[ "$status" -eq 0 ]
}

@test "fleet mode (-a): the job found on the node has its native stacks too" {
	start_job --threads 2 --iters 10
	rm -f "$BATS_TEST_TMPDIR/tr.ready"
	"$TOOL" -a --ustack -o "$BATS_TEST_TMPDIR/t.json" --ready-file "$BATS_TEST_TMPDIR/tr.ready" \
		-q >"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_ready "$BATS_TEST_TMPDIR/tr.ready" "$TRACER_PID"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	$CHECK_USTACK fleet "$BATS_TEST_TMPDIR/t.json" "$JOB_PID"
	stop_job
}
