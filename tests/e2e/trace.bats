#!/usr/bin/env bats
# Core tracer, end to end: attach to a running mock job by PID, trace, detach.

load helpers

CHECK_TRACE="python3 $ROOT/tests/e2e/check_trace.py"

@test "trace has every call the job made, nested per thread, with metadata" {
	start_job --phases 2 --threads 3 --streams 2 --iters 40
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase 1
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json.1" --pid "$JOB_PID"
	grep -q "aiuLaunchComputeStream" "$BATS_TEST_TMPDIR/tracer.out"	# summary printed
	# the job keeps running after the tracer detached, and still works
	run_phase 2
	kill -0 "$JOB_PID"
	stop_job
	[ "$JOB_RC" -eq 0 ]
}

@test "every call is traced on each per-thread stack path: staged, unstaged, hash map" {
	# the kernel here offers task storage to uprobe programs: the other paths are forced
	for path in "" SPYRE_NO_STAGE=1 SPYRE_NO_TASK_STORAGE=1; do
		rm -f "$BATS_TEST_TMPDIR/counts.json"	# run_phase waits for the new job's
		start_job --threads 3 --streams 2 --iters 30
		export SPYRE_NO_STAGE= SPYRE_NO_TASK_STORAGE=
		[ -z "$path" ] || export "${path?}"
		start_tracer -v -o "$BATS_TEST_TMPDIR/t.json" --force
		export SPYRE_NO_STAGE= SPYRE_NO_TASK_STORAGE=
		run_phase
		stop_tracer INT
		[ "$TRACER_RC" -eq 0 ]
		case $path in
		"") grep -q "call stacks in task storage, spans staged" "$BATS_TEST_TMPDIR/tracer.err" ;;
		*STAGE*) grep -q "call stacks in task storage$" "$BATS_TEST_TMPDIR/tracer.err" ;;
		*) grep -q "call stacks in a hash map" "$BATS_TEST_TMPDIR/tracer.err" ;;
		esac
		$VERIFY "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json" \
			--pid "$JOB_PID"
		stop_job
	done
}

@test "tracing does not change the job's results" {
	"$MOCK" --iters 30 --counts "$BATS_TEST_TMPDIR/untraced.json" --quiet
	start_job --iters 30
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	want=$(counts_field "$BATS_TEST_TMPDIR/untraced.json" checksum)
	got=$(counts_field "$BATS_TEST_TMPDIR/counts.json" checksum)
	[ -n "$want" ] && [ "$want" = "$got" ]
	# and the trace did record the phase
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json"
}

@test "no uprobes are left behind after the tracer exits" {
	start_job
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	# while attached, the kernel lists our uprobes for the job's libflex.so
	grep -q "libflex.so" <(grep -h . /sys/kernel/debug/tracing/uprobe_events /sys/kernel/tracing/uprobe_events 2>/dev/null) || \
		[ "$(ls /sys/bus/event_source/devices/uprobe >/dev/null 2>&1; echo $?)" -eq 0 ]
	stop_tracer TERM
	[ "$TRACER_RC" -eq 0 ]
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$BATS_TEST_TMPDIR/t.json"
	# perf-event uprobes vanish with the tracer: nothing of ours in the job's memory maps
	! grep -q "uprobes" /proc/$JOB_PID/maps
}

@test "the tracer stops by itself when the target exits, and closes the trace" {
	start_job --iters 20
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_job
	TRACER_RC=0
	wait "$TRACER_PID" || TRACER_RC=$?
	[ "$TRACER_RC" -eq 0 ]
	grep -q '"targetExited":true' "$BATS_TEST_TMPDIR/t.json"
	# the job destroys its 2 x 2 pool streams and the default stream at exit, after its
	# counted phase
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json" \
		--extra flex::RuntimeStream::~RuntimeStream=5
}

@test "-d stops after the given duration" {
	start_job
	SECONDS=0
	run "$TOOL" -p "$JOB_PID" -d 0.5 -o "$BATS_TEST_TMPDIR/t.json" -q
	[ "$status" -eq 0 ]
	[ $SECONDS -lt 60 ]	# a bound for a loaded machine, not the tool's speed
	$VERIFY "$BATS_TEST_TMPDIR/t.json"
}

@test "gzip output when the name ends in .gz" {
	start_job --iters 10
	start_tracer -o "$BATS_TEST_TMPDIR/t.json.gz"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	gzip -t "$BATS_TEST_TMPDIR/t.json.gz"
	$VERIFY "$BATS_TEST_TMPDIR/t.json.gz" --counts "$BATS_TEST_TMPDIR/counts.json"
}

@test "launch mode: -- CMD traces from the first call" {
	run "$TOOL" -o "$BATS_TEST_TMPDIR/t.json" -q -- "$MOCK" --iters 5 --quiet \
		--counts "$BATS_TEST_TMPDIR/counts.json"
	[ "$status" -eq 0 ]
	# made before main's loop: from the start
	$CHECK_TRACE has "$BATS_TEST_TMPDIR/t.json" aiuInitializeRuntime aiuGetNumDevices
	# setup calls happen before the job's counted phase: one device; its 2 x 2 pool streams
	# and its default stream are destroyed after it
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json" \
		--extra flex::initializeRuntime=1 --extra flex::getNumDevices=1 \
		--extra flex::RuntimeStream::~RuntimeStream=5
}

@test "list shows resolved probes and why the others did not resolve" {
	start_job
	run "$TOOL" list -v -p "$JOB_PID"
	[ "$status" -eq 0 ]
	[[ "$output" == *"aiuDataTransferHtoD"*"flex::RuntimeStream::launchOperationH2D"* ]]
	[[ "$output" == *"after endbr64"* ]]
	# the costly probe is named as such: the D2H callback's invoker begins "endbr64; mov; jmp"
	echo "$output" | grep "JobPlanStepD2H::construct.*::_M_invoke " | grep -q "single-stepped"
	! echo "$output" | grep "flex::FlexAllocator::allocate " | grep -q "single-stepped"
	[[ "$output" == *"NOT RESOLVED: no mapped library matches 'libunwind.so*'"* ]]
	run "$TOOL" list -v -p "$JOB_PID" --no-default --probe 'libflex.so:flex::nothing*'
	[ "$status" -eq 10 ]
	[[ "$output" == *"NOT RESOLVED: no function matching 'flex::nothing*'"* ]]
}

@test "list is one line a probe by default, a glob keeps the names it matches; a typo of yours says why" {
	start_job
	run "$TOOL" list -p "$JOB_PID"
	echo "$output"
	[ "$status" -eq 0 ]
	n=$(echo "$output" | sed -n 's/.* probe specs resolved to \([0-9]*\) functions.*/\1/p')
	[ "$n" -gt 40 ]
	[[ "$output" == *"process $JOB_PID (mock-spyre-job): "* ]]
	# a header, one line per function, the count of lines resolving nowhere, the limits
	[ "$(echo "$output" | grep -c '+0x[0-9a-f]* *~[0-9.]* us')" -eq "$n" ]
	[ "$(echo "$output" | wc -l)" -eq $((n + 4)) ]
	[[ "$output" == *"3 lines of the built-in tables resolve nowhere here (-v says which and why)"* ]]
	echo "$output" | grep -q '^aiuStreamQuery  *flex::RuntimeStream::query  *libflex.so+0x'
	# the glob: aiu* names, 11 of the default table's here (aiuDmaCallback among them)
	run "$TOOL" list -p "$JOB_PID" 'aiu*'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c '^aiu[A-Za-z]* .*+0x')" -eq 11 ]
	! echo "$output" | grep -q '^spyre'
	# by function too
	run "$TOOL" list -p "$JOB_PID" 'flex::RuntimeStream::*'
	[ "$(echo "$output" | grep -c '+0x')" -eq 7 ]
	run "$TOOL" list -p "$JOB_PID" --probe 'libflex.so:flex::nothing*'
	[ "$status" -eq 10 ]
	[[ "$output" == *"--probe: libflex.so flex::nothing*: NOT RESOLVED: no function matching 'flex::nothing*'"* ]]
}

@test "list without -p prints the tables and the processes that map the runtime" {
	start_job
	run "$TOOL" list
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"default:"*"libflex.so*"*"flex::RuntimeStream::query"*"aiuStreamQuery"* ]]
	echo "$output" | grep -Eq "^ *$JOB_PID +mock-spyre-job +libflex.so$"
	# not this shell, nor anything else without a library of the tables
	! echo "$output" | grep -Eq "^ *$$ "
	run "$TOOL" list 'aiuStream*'
	[ "$(echo "$output" | grep -c '^default:')" -eq 1 ]
	# with --no-default, the user's table alone: no process maps libnever.so
	run "$TOOL" list --no-default --probe 'libnever.so:f'
	[[ "$output" == *"--probe "*"libnever.so"* ]]
	[[ "$output" == *"no process on this node maps a library of these tables"* ]]
}

@test "--probe and --probes add probes without recompiling" {
	start_job --iters 10
	printf 'libflex.so* flex::RuntimeStream::synchronize name=mySync arg1=s:x\n' \
		> "$BATS_TEST_TMPDIR/site.probes"
	start_tracer --no-default --probes "$BATS_TEST_TMPDIR/site.probes" \
		--probe 'libflex.so:flex::FlexAllocator::alloc*:myAlloc' -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	$CHECK_TRACE probe-counts "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" \
		mySync=flex::RuntimeStream::synchronize myAlloc=flex::FlexAllocator::allocate
}

@test "--probe as perf and bpftrace users type it: uprobe:PATH:SYMBOL and PATH:SYMBOL, exact calls" {
	start_job --iters 10
	lib=$(readlink -f "$BUILD/mock/libflex.so")
	# the mapped file's path, once with bpftrace's prefix, once spelled through ".."
	start_tracer --no-default --probe "uprobe:$lib:flex::RuntimeStream::synchronize" \
		--probe "$BUILD/tests/../mock/libflex.so:flex::FlexAllocator::allocate:myAlloc" \
		-o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	$CHECK_TRACE probe-counts "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" \
		flex::RuntimeStream::synchronize=flex::RuntimeStream::synchronize \
		myAlloc=flex::FlexAllocator::allocate
	# a path to another file of that name is no match: exit 10, that name offered
	run "$TOOL" list -p "$JOB_PID" --no-default --probe "/nope/libflex.so:flex::getNumDevices"
	echo "$output"
	[ "$status" -eq 10 ]
	[[ "$output" == *"no mapped library matches '/nope/libflex.so'"*"near misses: libflex.so"* ]]
}

@test "instant probes are thread-scoped ph:i events, one per call" {
	start_job --iters 10
	printf 'libflex.so* flex::RuntimeStream::query name=queryHit type=instant arg1=s:x\n' \
		> "$BATS_TEST_TMPDIR/i.probes"
	start_tracer --no-default --probes "$BATS_TEST_TMPDIR/i.probes" -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	$CHECK_TRACE instants "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" queryHit \
		flex::RuntimeStream::query
	"$TOOL" check "$BATS_TEST_TMPDIR/t.json"
}

# another tool's uprobe (a tracefs uprobe event, what `perf probe` makes) on the instruction of
# one of our return sites: the kernel runs both consumers at each hit
other_uprobe_off() {
	local ev=$1
	[ -n "$ev" ] || return 0
	echo 0 >"/sys/kernel/tracing/events/spyre_other/$ev/enable" 2>/dev/null
	echo "-:spyre_other/$ev" >>/sys/kernel/tracing/uprobe_events 2>/dev/null
	true
}

@test "another tool's uprobe on a return site's instruction: both see every call, the job's result unchanged" {
	local lib="$BUILD/mock/libflex.so" sym=_ZN4flex13FlexAllocator8allocateEmRKNS_19AllocationDirectiveE
	local ev="allocret$$" T=/sys/kernel/tracing rets
	"$MOCK" --iters 30 --counts "$BATS_TEST_TMPDIR/untraced.json" --quiet
	# the function's ret instructions (its return sites), as file offsets
	rets=$(objdump -d --no-show-raw-insn --disassemble="$sym" "$lib" |
		awk '$2 == "ret" || $2 == "ret\t" { sub(":", "", $1); print "0x" $1 }')
	[ -n "$rets" ]
	n=0
	for r in $rets; do
		echo "p:spyre_other/$ev$n $lib:$r" >>$T/uprobe_events
		echo 1 >"$T/events/spyre_other/$ev$n/enable"
		n=$((n + 1))
	done
	start_job --iters 30
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	hits=$(awk -v e="^$ev" '$2 ~ e { s += $3 } END { print s + 0 }' $T/uprobe_profile)
	for i in $(seq 0 $((n - 1))); do other_uprobe_off "$ev$i"; done
	[ "$TRACER_RC" -eq 0 ]
	want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["calls"]["flex::FlexAllocator::allocate"])' \
		"$BATS_TEST_TMPDIR/counts.json")
	[ "$want" -gt 0 ]
	# theirs: every call once (no other process maps this build's library)
	echo "other tool's hits $hits, calls $want"
	[ "$hits" -eq "$want" ]
	# ours: every call a span, the job's checksum that of the untraced run
	[ "$(counts_field "$BATS_TEST_TMPDIR/untraced.json" checksum)" = \
	  "$(counts_field "$BATS_TEST_TMPDIR/counts.json" checksum)" ]
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json"
}

@test "functions that begin with a mov or lea: every call a span, the job's results unchanged, list names the instruction" {
	# tests/progs/entryjob.c: each mov/lea form the entry program can do where the kernel lets
	# a uprobe program write its registers (make vm-next); here the kernel single-steps them
	local ej="$BUILD/tests/entryjob" d="$BATS_TEST_TMPDIR" pid tracer
	[ "$(uname -m)" = x86_64 ] || skip "assembly for x86-64"
	"$ej" "$d/u.ready" "$d/untraced.json" 300 &
	wait_for "$d/u.ready"
	kill -USR1 "$(cat "$d/u.ready")"
	wait
	"$ej" "$d/ready" "$d/counts.json" 300 &
	wait_for "$d/ready"
	pid=$(cat "$d/ready")
	run "$TOOL" list -v -p "$pid" --no-default --probe 'entryjob:ej_*'
	echo "$output"
	[ "$status" -eq 0 ]
	# each decoded instruction named, the one into an argument register left to the kernel
	grep -q 'ej_rip .*lea 0x[0-9a-f]*(%rip),%rax' <<<"$output"
	grep -q 'ej_r11 .*lea -0x2(,%rsi,4),%r11d' <<<"$output"
	grep -q 'ej_cet .*(after endbr64) .*mov %rdi,%r11' <<<"$output"
	[ "$(grep -c 'done by BPF where the kernel lets it' <<<"$output")" -eq 12 ]
	grep -q 'ej_arg .*\[single-stepped: slow probe' <<<"$output"
	"$TOOL" -p "$pid" --no-default --probe 'entryjob:ej_*' --ready-file "$d/t.ready" \
		-o "$d/t.json" >"$d/out" 2>"$d/err" &
	tracer=$!
	wait_ready "$d/t.ready" $tracer
	kill -USR1 "$pid"
	wait $tracer
	# this kernel refuses a uprobe program that writes its registers: none done by BPF here
	$CHECK_TRACE entries "$d/t.json" "$d/counts.json" "$d/untraced.json"
}

@test "aiuStreamQuery's done is the bool query() returned: as many true as the job counted" {
	# the mock's query() leaves the register above its bool's byte as it found it
	run "$TOOL" -q -o "$BATS_TEST_TMPDIR/t.json" -- "$MOCK" --iters 5 --threads 2 --quiet \
		--counts "$BATS_TEST_TMPDIR/counts.json"
	echo "$output"
	[ "$status" -eq 0 ]
	$CHECK_TRACE query-done "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
}

@test "a start line says how many probes went to which process, and how to stop" {
	start_job --iters 5
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$TRACER_RC" -eq 0 ]
	n=$(sed -n "s/^spyre-bpftrace: attached \([0-9,]*\) probes to $JOB_PID (mock-spyre-job), writing .*; Ctrl-C to stop$/\1/p" \
		"$BATS_TEST_TMPDIR/tracer.err" | tr -d ,)
	# every probe of the trace's list but the unwinders (attached with --uretprobes only)
	[ "$n" -eq "$(json_get "$BATS_TEST_TMPDIR/t.json" \
		'len([p for p in d["spyreProbes"] if p.get("type") != "unwind"])')" ]
	# one line, before the job's first traced call is reported
	[ "$(grep -c 'attached .* probes to' "$BATS_TEST_TMPDIR/tracer.err")" -eq 1 ]
	# the summary's counts group thousands; spans the device timeline had no room for are
	# "device spans dropped", not "device spans" (read as none made)
	grep -Eq "summary for pid $JOB_PID: [0-9,]+ events, [0-9,]+ probe hits, [0-9,]+ dropped \(ring full [0-9,]+, too deep [0-9,]+, device spans dropped [0-9,]+\)" \
		"$BATS_TEST_TMPDIR/tracer.out"
	# -q: neither
	run "$TOOL" -q -o "$BATS_TEST_TMPDIR/q.json" -d 0.2 -p "$JOB_PID"
	[[ "$output" != *"attached "* ]]
}

@test "the summary groups the thousands of its counts" {
	start_job --iters 200 --threads 2
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	ev=$(json_get "$BATS_TEST_TMPDIR/t.json" 'format(d["spyreStats"]["events"], ",")')
	[[ "$ev" == *,* ]]
	grep -q "summary for pid $JOB_PID: $ev events" "$BATS_TEST_TMPDIR/tracer.out"
	# the per-function counts too: the most-called function's row
	q=$(counts_field "$BATS_TEST_TMPDIR/counts.json" calls | python3 -c '
import ast, sys; c = ast.literal_eval(sys.stdin.read()); print(format(c["flex::RuntimeStream::synchronize"], ","))')
	grep -Eq "^ +$q +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+  aiuScheduleWait$" "$BATS_TEST_TMPDIR/tracer.out"
}
