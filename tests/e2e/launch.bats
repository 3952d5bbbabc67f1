#!/usr/bin/env bats
# Launch mode (`-- CMD`) probes the program's own functions, not only its libraries: a PIE
# program, one with its C++ runtime linked in, a statically linked non-PIE one (no program
# interpreter, no library at all), and the Python interpreter's own symbols. The ground truth
# is the job's own count of its calls (tests/progs/throwjob.cpp writes it), or the number of
# calls a Python script makes through ctypes.

load helpers

CHECK_TRACE="python3 $ROOT/tests/e2e/check_trace.py"

# launch_throwjob PROGRAM [TOOL OPTIONS]: run `spyre-bpftrace -- PROGRAM` (a build of
# throwjob, 20 rounds) with its tj_leaf and tj_catch probed; releases the job once it is
# ready, waits for both, sets TRACER_RC
launch_throwjob() {
	local prog=$1
	shift
	rm -f "$BATS_TEST_TMPDIR/job.ready" "$BATS_TEST_TMPDIR/counts.json"
	"$TOOL" -o "$BATS_TEST_TMPDIR/t.json" --no-default --probe 'throwjob*:tj_leaf' \
		--probe 'throwjob*:tj_catch' "$@" -- "$prog" "$BATS_TEST_TMPDIR/job.ready" \
		"$BATS_TEST_TMPDIR/counts.json" normal 20 \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_ready "$BATS_TEST_TMPDIR/job.ready" "$TRACER_PID" ||
		{ cat "$BATS_TEST_TMPDIR/tracer.err"; return 1; }
	kill -USR1 "$(cat "$BATS_TEST_TMPDIR/job.ready")"
	wait_child "$TRACER_PID" 60
	TRACER_RC=$CHILD_RC
	TRACER_PID=
	cat "$BATS_TEST_TMPDIR/tracer.out" "$BATS_TEST_TMPDIR/tracer.err"
}

# same_calls: every call the job counted of tj_leaf and tj_catch is one span (neither is left
# by an exception: tj_catch catches the one thrown below it), and the trace is valid
same_calls() {
	[ "$TRACER_RC" -eq 0 ]
	$VERIFY "$BATS_TEST_TMPDIR/t.json"
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	$CHECK_TRACE calls "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" 20 \
		tj_leaf tj_catch
}

@test "launch mode traces a PIE program's own functions: exact call counts" {
	launch_throwjob "$BUILD/tests/throwjob"
	same_calls
}

@test "launch mode traces the own functions of a program with its C++ runtime linked in" {
	launch_throwjob "$BUILD/tests/throwjob-static"
	same_calls
}

@test "launch mode traces a statically linked non-PIE program (no interpreter, no library)" {
	readelf -h "$BUILD/tests/throwjob-allstatic" | grep -q 'Type: *EXEC'
	run readelf -l "$BUILD/tests/throwjob-allstatic"
	[[ "$output" != *INTERP* ]]
	launch_throwjob "$BUILD/tests/throwjob-allstatic"
	same_calls
}

@test "launch mode: a line naming the program without a matching function is exit 10 before it runs" {
	run "$TOOL" -o "$BATS_TEST_TMPDIR/t.json" --no-default --probe 'throwjob:tj_leafx' \
		-- "$BUILD/tests/throwjob" "$BATS_TEST_TMPDIR/job.ready" \
		"$BATS_TEST_TMPDIR/counts.json" normal 1
	echo "$output"
	[ "$status" -eq 10 ]
	[[ "$output" == *"--probe: throwjob tj_leafx resolves nowhere: no function matching 'tj_leafx' in throwjob ("*" functions); near misses: tj_leaf"* ]]
	[[ "$output" == *"not starting $BUILD/tests/throwjob"* ]]
	# the job never ran
	[ ! -e "$BATS_TEST_TMPDIR/job.ready" ]
	[ ! -e "$BATS_TEST_TMPDIR/t.json" ]
}

@test "launch mode traces the Python interpreter's own symbols, under the command's name" {
	# Debian's python3 is a link to python3.11: the command's name works; 17 calls through
	# ctypes, beyond those the interpreter makes itself (counted in a run that makes none)
	local n
	for n in 0 17; do
		run "$TOOL" -q -o "$BATS_TEST_TMPDIR/p$n.json" --no-default \
			--probe 'python3:Py_GetVersion' -- /usr/bin/python3 -c \
			"import ctypes; [ctypes.pythonapi.Py_GetVersion() for _ in range($n)]"
		echo "$output"
		[ "$status" -eq 0 ]
	done
	$CHECK_TRACE more "$BATS_TEST_TMPDIR/p0.json" "$BATS_TEST_TMPDIR/p17.json" \
		Py_GetVersion 17
}

@test "launch mode: a script's program is its interpreter, found through env" {
	# Debian's python3 first in PATH (a shim that is itself a script would be the program)
	printf '#!/usr/bin/env python3\nimport ctypes, sys\nfor _ in range(int(sys.argv[1])):\n    ctypes.pythonapi.Py_GetVersion()\n' \
		>"$BATS_TEST_TMPDIR/job.py"
	chmod +x "$BATS_TEST_TMPDIR/job.py"
	local n
	for n in 0 9; do
		PATH=/usr/bin:/bin run "$TOOL" -q -o "$BATS_TEST_TMPDIR/p$n.json" --no-default \
			--probe 'python3*:Py_GetVersion' -- "$BATS_TEST_TMPDIR/job.py" $n
		echo "$output"
		[ "$status" -eq 0 ]
		[[ "$output" != *"resolves nowhere"* ]]
	done
	$CHECK_TRACE more "$BATS_TEST_TMPDIR/p0.json" "$BATS_TEST_TMPDIR/p9.json" Py_GetVersion 9
}

# The job's end is the exit code (perf, strace): a failed job fails the run that launched it.
@test "launch mode passes the job's exit status through: 3, a bad option's 2, 128+SIGSEGV" {
	run "$TOOL" -q -o "$BATS_TEST_TMPDIR/a.json" -- sh -c 'exit 3'
	echo "$output"
	[ "$status" -eq 3 ]
	run "$TOOL" -q -o "$BATS_TEST_TMPDIR/b.json" -- "$MOCK" --bogus
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"unrecognized option '--bogus'"* ]]
	run "$TOOL" -q -o "$BATS_TEST_TMPDIR/c.json" -- sh -c 'kill -SEGV $$'
	echo "$output"
	[ "$status" -eq $((128 + 11)) ]
	# the traces are written all the same
	for f in a b c; do $VERIFY "$BATS_TEST_TMPDIR/$f.json"; done
}

@test "launch mode: a job that never loads the Spyre runtime is exit 5, said as by PID" {
	run "$TOOL" -q -o "$BATS_TEST_TMPDIR/t.json" -- true
	echo "$output"
	[ "$status" -eq 5 ]
	[[ "$output" == *"no Spyre runtime in true: it ended having mapped no library the probe table matches"* ]]
	# the job's own failure is the likelier story: its status, the runtime said too
	run "$TOOL" -q -o "$BATS_TEST_TMPDIR/u.json" -- false
	[ "$status" -eq 1 ]
	[[ "$output" == *"no Spyre runtime in false"* ]]
}

@test "launch mode: a job that succeeds is exit 0; the summary is on stderr, stdout is the job's" {
	"$TOOL" -o "$BATS_TEST_TMPDIR/t.json" -- "$MOCK" --iters 2 --threads 1 \
		>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err"
	cat "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/err"
	grep -q 'spyre-bpftrace summary for pid' "$BATS_TEST_TMPDIR/err"
	! grep -q 'spyre-bpftrace' "$BATS_TEST_TMPDIR/out"
	# the mock's own counts are on its stdout
	grep -q 'aiuLaunchComputeStream\|calls' "$BATS_TEST_TMPDIR/out"
}

# launch_held [TOOL OPTIONS]: the mock launched, held before its phase (it waits for SIGUSR1 and
# would run until stopped); sets TRACER_PID and JOB_PID once the job is ready
launch_held() {
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	"$TOOL" -o "$BATS_TEST_TMPDIR/t.json" "$@" -- "$MOCK" --wait-go --linger --quiet \
		--ready-file "$BATS_TEST_TMPDIR/job.ready" \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_ready "$BATS_TEST_TMPDIR/job.ready" "$TRACER_PID" ||
		{ cat "$BATS_TEST_TMPDIR/tracer.err"; return 1; }
	JOB_PID=$(cat "$BATS_TEST_TMPDIR/job.ready")
}

@test "launch mode: a SIGINT to the tracer alone stops the launched job too (SIGTERM), exit 0" {
	launch_held
	kill -0 "$JOB_PID"
	kill -INT "$TRACER_PID"
	wait_child "$TRACER_PID" 60
	TRACER_PID=
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$CHILD_RC" -eq 0 ]
	grep -q "stopping $MOCK (pid $JOB_PID) with SIGTERM" "$BATS_TEST_TMPDIR/tracer.err"
	# reaped by the tracer: no process of that pid is left, zombie or not
	! kill -0 "$JOB_PID" 2>/dev/null
	$VERIFY "$BATS_TEST_TMPDIR/t.json"
}

@test "launch mode: --kill none leaves the job running at -d's end, and says so" {
	launch_held -d 1 --kill none
	wait_child "$TRACER_PID" 60
	TRACER_PID=
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$CHILD_RC" -eq 0 ]
	grep -q "$MOCK (pid $JOB_PID) still runs: tracing stopped, the job was left running (--kill none)" \
		"$BATS_TEST_TMPDIR/tracer.err"
	kill -0 "$JOB_PID"
	kill -TERM "$JOB_PID"
	wait_gone "$JOB_PID"
}

@test "launch mode: -d's end stops the job; one that ignores SIGTERM gets SIGKILL after the grace" {
	# Python's own function resolves before it runs: the tracer's exit is its own, 0
	"$TOOL" -q -o "$BATS_TEST_TMPDIR/t.json" --no-default --probe 'python3:Py_GetVersion' \
		-- /usr/bin/python3 -c 'import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
open(sys.argv[1] + ".tmp", "w").write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)' "$BATS_TEST_TMPDIR/job.ready" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_ready "$BATS_TEST_TMPDIR/job.ready" "$TRACER_PID" ||
		{ cat "$BATS_TEST_TMPDIR/tracer.err"; return 1; }
	JOB_PID=$(cat "$BATS_TEST_TMPDIR/job.ready")
	kill -INT "$TRACER_PID"
	wait_child "$TRACER_PID" 60
	TRACER_PID=
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$CHILD_RC" -eq 0 ]
	grep -q "python3 had not ended 3 s after SIGTERM: killed (SIGKILL)" "$BATS_TEST_TMPDIR/tracer.err"
	! kill -0 "$JOB_PID" 2>/dev/null
	# at -d's end the same, whatever the job had done by then
	run "$TOOL" -q -o "$BATS_TEST_TMPDIR/u.json" -d 0.5 -- "$MOCK" --wait-go --linger --quiet \
		--ready-file "$BATS_TEST_TMPDIR/job2.ready"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"with SIGTERM: tracing stopped before it ended"* ]]
	! pgrep -f "$BATS_TEST_TMPDIR/job2.ready"
}

@test "--kill: a bad signal, or no launched job, is a usage error" {
	run "$TOOL" --kill bogus -o "$BATS_TEST_TMPDIR/t.json" -- true
	[ "$status" -eq 2 ]
	[[ "$output" == *"--kill wants a signal"* ]]
	run "$TOOL" --kill none -p $$
	[ "$status" -eq 2 ]
	[[ "$output" == *"--kill is for a job launched with -- CMD"* ]]
}
