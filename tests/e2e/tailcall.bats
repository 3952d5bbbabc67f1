#!/usr/bin/env bats
# Tail calls: a traced function that ends in `jmp other` (what -O2 makes of `return other(...)`)
# is still running until other returns. Its span must end where its caller gets control back,
# with the value the caller gets, whether other is untraced, traced (then nested inside), in
# another library (through the PLT), reached through a chain of tail jumps or by a conditional
# jump (jcc), and an allocator's pointer must reach the device memory ledger. The job
# (tests/progs/tailjob) writes its own view: the ids each launch returned and how long the
# tail-called function worked on each.

load helpers

TAILJOB=$BUILD/tests/tailjob
CHECK_TAIL="python3 $ROOT/tests/e2e/check_tailcall.py"
N=40
LAUNCHES="tail_launch tail_launch_traced tail_launch_plt tail_launch_chain"
# odd sizes take its jne into rt_enqueue, even ones its jmp into rt_enqueue_hi, whose ids have
# bit 40 set (tail.h's TAIL_HI_ID): a span's ret= says which branch its call took
COND=tail_launch_cond

# start_tailjob: the job, held before its work; sets JOB_PID
start_tailjob() {
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	"$TAILJOB" "$BATS_TEST_TMPDIR/job.ready" "$N" "$BATS_TEST_TMPDIR/done.json" \
		>"$BATS_TEST_TMPDIR/job.out" 2>"$BATS_TEST_TMPDIR/job.err" &
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
}

# trace_tailjob PROBES_FILE [TOOL OPTIONS]: trace the job's work with that table only
trace_tailjob() {
	local probes=$1
	shift
	start_tailjob
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --no-default --probes "$probes" "$@"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json" 120
	stop_tracer INT
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	[ "$JOB_RC" -eq 0 ]
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

write_probes() {
	cat >"$BATS_TEST_TMPDIR/tail.probes" <<'P'
libtailrt.so	tail_launch		arg1=bytes:u ret=op:u
libtailrt.so	tail_launch_traced	arg1=bytes:u ret=op:u
libtailrt.so	tail_launch_plt		arg1=bytes:u ret=op:u
libtailrt.so	tail_launch_chain	arg1=bytes:u ret=op:u
libtailrt.so	tail_launch_indirect	arg1=bytes:u ret=op:u
libtailrt.so	tail_launch_cond	arg1=bytes:u ret=op:u
libtailrt.so	tail_submit		arg1=bytes:u ret=op:u
libtailrt.so	tail_wait		arg1=id:u ret=op:u
libtailrt.so	tail_complete		type=instant arg1=op:u
libtailrt.so	tail_release		arg1=ptr:x
P
}

@test "the test runtime's launch functions end in the tail jumps this file relies on" {
	# objdump: each launch and the wait end in a jmp to their callee (same library, or the
	# PLT stub of libtailb.so's function); tail_submit (traced) jumps on to rt_enqueue
	dis=$(objdump -d --no-show-raw-insn "$BUILD/tests/libtailrt.so")
	for pair in tail_launch:rt_enqueue tail_launch_traced:tail_submit \
		    tail_launch_plt:tailb_enqueue@plt tail_launch_chain:rt_stage \
		    rt_stage:rt_enqueue tail_submit:rt_enqueue tail_wait:rt_query \
		    tail_launch_indirect:rt_dispatch tail_release:free@plt \
		    tail_alloc:rt_alloc tail_free:rt_free $COND:rt_enqueue_hi; do
		fn=${pair%%:*} callee=${pair#*:}
		body=$(echo "$dis" | awk -v f="<$fn>:" '$2 == f {p = 1; next} /^$/ {p = 0} p')
		echo "$fn: $body"
		echo "$body" | grep -qE "jmp +[0-9a-f]+ <$callee>"
		if echo "$body" | grep -qE "\bret\b"; then return 1; fi
	done
	# the conditional one: its jne lands in another function, not in a part of its own
	echo "$dis" | awk -v f="<$COND>:" '$2 == f {p = 1; next} /^$/ {p = 0} p' |
		grep -qE "jne +[0-9a-f]+ <rt_enqueue>"
	# the allocator and its free return by themselves: were they to jump on into malloc or
	# free, the chain would end in the C runtime, not followed, and no pointer would be seen
	for fn in rt_alloc rt_free; do
		body=$(echo "$dis" | awk -v f="<$fn>:" '$2 == f {p = 1; next} /^$/ {p = 0} p')
		echo "$body" | grep -qE "\bret\b"
		if echo "$body" | grep -qE "jmp +[0-9a-f]+ <(malloc|free)@plt>"; then return 1; fi
	done
	# ... and rt_dispatch leaves through a register: what cannot be followed
	echo "$dis" | awk '$2 == "<rt_dispatch>:" {p = 1; next} /^$/ {p = 0} p' |
		grep -qE "jmp +\*%r[a-z0-9]+$"
}

@test "list: every launch's tail jump is followed, and what it costs is named per probe" {
	write_probes
	start_tailjob
	run "$TOOL" list -v -p "$JOB_PID" --no-default --probes "$BATS_TEST_TMPDIR/tail.probes"
	echo "$output"
	[ "$status" -eq 0 ]
	for fn in $LAUNCHES tail_wait tail_submit; do
		echo "$output" | grep -A4 "^    $fn  *$fn " |
			grep -q "tail calls: 1 jump followed into [12] functions\?: 1 more return site probed, each hit by every call of"
	done
	# the jcc and the jmp after it: two jumps, each into a function of its own
	echo "$output" | grep -A4 "^    $COND  *$COND " |
		grep -q "tail calls: 2 jumps followed into 2 functions: 2 more return sites probed"
	# the PLT jump lands in the second library, which gets return sites and no probe
	echo "$output" | grep -q "libtailb.so: no probe, 1 return site of tail-called functions"
	# the ones that cannot be followed say so, and why; no other does
	[ "$(echo "$output" | grep -c "NOT followed")" -eq 2 ]
	echo "$output" | grep -A4 "^    tail_launch_indirect " |
		grep -q "tail calls: 1 jump NOT followed (the span ends at the jump, ret unknown): a function it jumps to has jumps through a register"
	# a jump into the C runtime is not followed: free's returns would trap on every free
	echo "$output" | grep -A4 "^    tail_release " |
		grep -q "tail calls: 1 jump NOT followed (the span ends at the jump, ret unknown): it jumps into the C/C++ runtime"
	! echo "$output" | grep -q "libc.so.6: no probe"
	stop_job
}

@test "spans of tail-calling functions: one per call, the caller's return value, covering the callee's work, traced callee nested" {
	write_probes
	trace_tailjob "$BATS_TEST_TMPDIR/tail.probes"
	lost_once "$BATS_TEST_TMPDIR/t.json"
	$CHECK_TAIL spans "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/done.json" "$N" \
		"$BATS_TEST_TMPDIR/tracer.out"
}

@test "device spans of launches that tail-call the function returning the op id: one per launch" {
	cat >"$BATS_TEST_TMPDIR/dev.probes" <<'P'
libtailrt.so	tail_launch		arg1=bytes:u dev=launch op=compute key=ret
libtailrt.so	tail_launch_traced	arg1=bytes:u dev=launch op=compute key=ret
libtailrt.so	tail_launch_plt		arg1=bytes:u dev=launch op=compute key=ret
libtailrt.so	tail_launch_chain	arg1=bytes:u dev=launch op=compute key=ret
libtailrt.so	tail_launch_cond	arg1=bytes:u dev=launch op=compute key=ret
libtailrt.so	tail_complete		type=instant arg1=op:u dev=complete key=arg1
P
	trace_tailjob "$BATS_TEST_TMPDIR/dev.probes"
	$CHECK_TAIL device "$BATS_TEST_TMPDIR/t.json" "$N"
}

@test "launch mode (-- CMD): tail jumps into a library not loaded yet are followed too" {
	write_probes
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	"$TOOL" --no-default --probes "$BATS_TEST_TMPDIR/tail.probes" -o "$BATS_TEST_TMPDIR/t.json" \
		-- "$TAILJOB" "$BATS_TEST_TMPDIR/job.ready" 10 "$BATS_TEST_TMPDIR/done.json" \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
	JOB_PID=$(cat "$BATS_TEST_TMPDIR/job.ready")
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json" 120
	kill -TERM "$JOB_PID"
	wait_child "$TRACER_PID" 60
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$CHILD_RC" -eq 0 ]
	$CHECK_TAIL launch "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/done.json"
}

@test "an allocator that returns through a tail jump: the ledger books each pointer its caller got, each freed" {
	# tail_alloc is `jmp rt_alloc`, tail_free `jmp rt_free`: the pointer exists only at
	# rt_alloc's return, which the followed jump probes. Were the span to end at the jump, its
	# ptr=ret would be 0: no allocation booked (failedAllocs), each free of an unknown pointer
	cat >"$BATS_TEST_TMPDIR/mem.probes" <<'P'
libtailrt.so	tail_alloc	arg1=bytes:u ret=ptr:x mem=alloc ptr=ret size=arg1
libtailrt.so	tail_free	arg1=ptr:x mem=free ptr=arg1
P
	trace_tailjob "$BATS_TEST_TMPDIR/mem.probes"
	lost_once "$BATS_TEST_TMPDIR/t.json"
	$CHECK_TAIL alloc "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/done.json" "$N" "$JOB_PID"
}
