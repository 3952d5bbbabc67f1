#!/usr/bin/env bats
# Faults while tracing: the target dies, forks, execs or starts threads; the tracer is signalled,
# killed, starved, doubled, or its disk fills up. Each test states what the user is promised.

load fault-helpers

CHECK_FAULTS="python3 $ROOT/tests/e2e/check_faults.py"

setup_file() {
	"$MOCK" --iters 10000 --compute-us 0 --counts "$BATS_FILE_TMPDIR/untraced-10000.json" --quiet
}

# status_lines: how many status lines the tracer printed so far
status_lines() {
	grep -c ' ev/s, ' "$BATS_TEST_TMPDIR/tracer.err" || true
}

status_lines_reach() {
	[ "$(status_lines)" -ge "$1" ]
}

# one_phase: run the only phase of a single-phase job
one_phase() {
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/counts.json" 120
}

# stop_mid_phase SIGNAL: signal the tracer in the middle of a busy phase; the trace must be
# closed and valid, and the job must finish the phase with the untraced result
stop_mid_phase() {
	start_job --iters 10000 --compute-us 0
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	kill -USR1 "$JOB_PID"
	wait_size "$BATS_TEST_TMPDIR/t.json" 1000000
	stop_tracer "$1"
	[ "$TRACER_RC" -eq 0 ]
	[ ! -e "$BATS_TEST_TMPDIR/counts.json" ]	# really mid-phase
	grep -q "summary for pid $JOB_PID" "$BATS_TEST_TMPDIR/tracer.out"
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --pid "$JOB_PID"
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(json_get "$BATS_TEST_TMPDIR/t.json" 'd["spyreStats"]["events"] > 5000')" = True ]
	wait_for "$BATS_TEST_TMPDIR/counts.json" 60
	[ "$(counts_field "$BATS_TEST_TMPDIR/counts.json" checksum)" = \
	  "$(counts_field "$BATS_FILE_TMPDIR/untraced-10000.json" checksum)" ]
}

@test "target SIGKILLed mid-phase: trace closed and valid, summary printed, the kill reported, exit 9" {
	start_job --threads 2 --iters 100000 --compute-us 0
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	kill -USR1 "$JOB_PID"
	wait_size "$BATS_TEST_TMPDIR/t.json" 1000000
	kill -KILL "$JOB_PID"
	wait_gone "$TRACER_PID" 20
	TRACER_RC=0
	wait "$TRACER_PID" || TRACER_RC=$?
	[ "$TRACER_RC" -eq 9 ]
	grep -q "summary for pid $JOB_PID" "$BATS_TEST_TMPDIR/tracer.out"
	grep -q "^target $JOB_PID killed by SIGKILL while traced" "$BATS_TEST_TMPDIR/tracer.out"
	grep -q "target $JOB_PID was killed by SIGKILL while traced" "$BATS_TEST_TMPDIR/tracer.err"
	grep -q "target killed" "$BATS_TEST_TMPDIR/tracer.err"
	grep -q '"targetSignal":9,"targetExitCode":-1,"targetExited":true' "$BATS_TEST_TMPDIR/t.json"
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --pid "$JOB_PID"
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(json_get "$BATS_TEST_TMPDIR/t.json" 'd["spyreStats"]["events"] > 5000')" = True ]
	# every call entered before the kill is accounted for, once: its span, or a loss (the
	# calls the kill cut short: with no return, instants at their entry)
	lost_once "$BATS_TEST_TMPDIR/t.json"
}

@test "a forked child is not traced (no -f): only the parent's calls, child unharmed" {
	start_helper fork 40 25 "$BATS_TEST_TMPDIR/done.json"
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json"	# written after the child exited with status 0
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	child=$(json_get "$BATS_TEST_TMPDIR/done.json" 'd["child"]')
	$CHECK_FAULTS fork "$BATS_TEST_TMPDIR/t.json" "$JOB_PID" "$child"
}

@test "a forked child is followed with --follow" {
	"$TOOL" --help | grep -q -- '--follow' || skip "needs --follow"
	start_helper fork 40 25 "$BATS_TEST_TMPDIR/done.json"
	start_tracer --follow -o "$BATS_TEST_TMPDIR/t.json"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	child=$(json_get "$BATS_TEST_TMPDIR/done.json" 'd["child"]')
	$CHECK_FAULTS fork "$BATS_TEST_TMPDIR/t.json" "$JOB_PID" "$child" --follow
}

# forkdev_arrows TRACE PARENT CHILD: flexhelper forkdev 30 traced into TRACE: parent and child
# copy 4096 and 8192 bytes; the child's streams and callbacks sit at its parent's addresses (a
# fork's copy), so both use the same stream ids and completion keys at the same time. Every
# launch of both has one arrow, to a span of its own process (its byte count), each with an id
# of its own, and no correlation is shared (launches return nothing: the ids are the tracer's).
forkdev_arrows() {
	$CHECK_FAULTS forkdev "$@"
	python3 "$ROOT/tests/e2e/verify_flows.py" "$1" --bytes "$2:4096" --bytes "$3:8192" \
		--min-arrows "$2:90" --min-arrows "$3:90"
	"$TOOL" check "$1"
}

@test "a followed child's device work: each arrow from its own process's launch to its own span, ids unique" {
	"$TOOL" --help | grep -q -- '--follow' || skip "needs --follow"
	start_helper forkdev 30 "$BATS_TEST_TMPDIR/done.json"
	start_tracer --follow -o "$BATS_TEST_TMPDIR/t.json"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	forkdev_arrows "$BATS_TEST_TMPDIR/t.json" "$JOB_PID" \
		"$(json_get "$BATS_TEST_TMPDIR/done.json" 'd["child"]')"
}

@test "launch mode with --follow: a launched job and its child launching device work, arrows right" {
	"$TOOL" --follow -q -o "$BATS_TEST_TMPDIR/t.json" -- "$FLEXHELPER" \
		"$BATS_TEST_TMPDIR/job.ready" forkdev 30 "$BATS_TEST_TMPDIR/done.json" \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready" 60
	JOB_PID=$(cat "$BATS_TEST_TMPDIR/job.ready")
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json" 60
	kill -TERM "$JOB_PID"
	# the tracer ends with its target
	TRACER_RC=0
	wait "$TRACER_PID" || TRACER_RC=$?
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$TRACER_RC" -eq 0 ]
	forkdev_arrows "$BATS_TEST_TMPDIR/t.json" "$JOB_PID" \
		"$(json_get "$BATS_TEST_TMPDIR/done.json" 'd["child"]')"
}

@test "target execs a program without the runtime: tracer keeps waiting, trace valid on SIGINT" {
	start_helper exec 30 "$BATS_TEST_TMPDIR/done.json" /bin/sleep 60
	start_tracer --status -o "$BATS_TEST_TMPDIR/t.json"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json"
	wait_until 120 grep -qx sleep /proc/"$JOB_PID"/comm
	# two more status lines: the tracer lived through at least one rescan of the new image
	n=$(status_lines)
	wait_until 120 status_lines_reach $((n + 2))
	kill -0 "$TRACER_PID"	# documented: pid still exists, so the tracer keeps waiting
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	grep -q '"targetExited":false' "$BATS_TEST_TMPDIR/t.json"
	$CHECK_FAULTS runtime "$BATS_TEST_TMPDIR/t.json" aiuGetNumDevices=30
}

@test "target execs a program that maps the same runtime: its calls are traced too" {
	start_helper exec 5 "$BATS_TEST_TMPDIR/done1.json" "$FLEXHELPER" \
		"$BATS_TEST_TMPDIR/ready2" threads 2 3 "$BATS_TEST_TMPDIR/done2.json"
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/ready2"	# the new image initialized the runtime
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done2.json"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	# 5 before the exec; after it: initializeRuntime, then 2 threads x 3 x (torch-spyre's
	# allocate, both overloads (one calls the other; each named by its parameters) with
	# flex's inside, free, get)
	$CHECK_FAULTS runtime "$BATS_TEST_TMPDIR/t.json" --pid "$JOB_PID" aiuGetNumDevices=11 \
		aiuInitializeRuntime=1 "spyreAllocate(unsigned long, flex::AllocationDirective const&)=6" \
		"spyreAllocate(unsigned long)=6" aiuMalloc=6 spyreFree=6
}

@test "threads created after attach are traced, with their names" {
	start_helper threads 3 20 "$BATS_TEST_TMPDIR/done.json"
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/done.json"
	$CHECK_FAULTS late-threads "$BATS_TEST_TMPDIR/t.json" "$JOB_PID"
}

@test "threads renamed after their first traced call have their last names in the trace" {
	# 8 threads rename themselves 5 iterations into the phase; the job then ends while traced,
	# so /proc no longer has their names when the tracer stops
	start_job --threads 8 --streams 1 --iters 20 --rename-at 5
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_job
	[ "$JOB_RC" -eq 0 ]
	wait_child "$TRACER_PID" 30
	[ "$CHILD_RC" -eq 0 ]
	# the name a loader keeps (the thread_name of the greatest ts, the last in the file among
	# equals: Perfetto's rule): the main thread (shutdownRuntime) keeps its name, the 8 others
	# have their new ones
	$CHECK_FAULTS renamed "$BATS_TEST_TMPDIR/t.json" "$JOB_PID" --threads 8
	# the first names stay in the file, at ts 0; each rename comes later, at a later ts
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "SIGTERM mid-phase: trace closed and valid, job finishes with the untraced result" {
	stop_mid_phase TERM
}

@test "SIGINT mid-phase: trace closed and valid, job finishes with the untraced result" {
	stop_mid_phase INT
}

# warm_site: the probe site of the tracer's registration warm-up (user/attach/warm.c), in the format
# of `spyre-bpftrace list` for probe_sites.py
warm_site() {
	python3 - "$TOOL" <<'PY'
import subprocess, sys
tool = sys.argv[1]
run = lambda *a: subprocess.run(a, capture_output=True, text=True, check=True).stdout
addr = next(int(l.split()[0], 16) for l in run("nm", tool).splitlines()
            if l.endswith(" spyre_warm_target"))
for l in run("readelf", "-lW", tool).splitlines():
    f = l.split()
    if f and f[0] == "LOAD" and int(f[2], 16) <= addr < int(f[2], 16) + int(f[4], 16):
        print(f"warm spyre-bpftrace+{addr - int(f[2], 16) + int(f[1], 16):#x}")
PY
}

# warm_count: the uprobes the warm-up registered, from the tracer's -v output
warm_count() {
	sed -n 's/.*(\([0-9]*\) uprobes kept the registration lock warm).*/\1/p' \
		"$BATS_TEST_TMPDIR/tracer.err"
}

@test "registration warm-up: on with uprobe_multi links, its uprobes gone while tracing goes on" {
	start_job
	warm_site >"$BATS_TEST_TMPDIR/warm.txt"
	[ -s "$BATS_TEST_TMPDIR/warm.txt" ]
	SPYRE_NO_WARM=1 start_tracer -v -o "$BATS_TEST_TMPDIR/off.json"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	[ "$(warm_count)" = 0 ]
	start_tracer -v -o "$BATS_TEST_TMPDIR/t.json"
	if grep -q 'uprobe_multi links' "$BATS_TEST_TMPDIR/tracer.err"; then
		[ "$(warm_count)" -ge 1 ]
	else
		# perf-event links: closing a perf uprobe waits under event_mutex, no warm-up
		[ "$(warm_count)" = 0 ]
	fi
	# its uprobes sit in the tracer's own text and go away in the background, not at exit
	wait_until 120 test "$(armed_sites "$TRACER_PID" "$BATS_TEST_TMPDIR/warm.txt")" -eq 0
	kill -0 "$TRACER_PID"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json"
}

@test "tracer SIGKILLed: no uprobes or BPF programs left, the job's later phases are exact" {
	"$MOCK" --phases 3 --iters 30 --counts "$BATS_TEST_TMPDIR/untraced.json" --quiet
	start_job --phases 3 --iters 30
	# the unwinder's sites (libgcc_s) are armed only where the kernel allows the unwind guard
	"$TOOL" list -v -p "$JOB_PID" | grep -v ' _Unwind_' >"$BATS_TEST_TMPDIR/sites.txt"
	[ "$(armed_sites "$JOB_PID" "$BATS_TEST_TMPDIR/sites.txt")" -eq 0 ]
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	# the check can fail: while attached, every resolved site holds a breakpoint
	read -r armed total < <($PROBE_SITES "$JOB_PID" <"$BATS_TEST_TMPDIR/sites.txt")
	[ "$total" -ge 10 ] && [ "$armed" -eq "$total" ]
	progs=$(bpf_prog_ids "$TRACER_PID")
	[ -n "$progs" ]
	run_phase 1
	stop_tracer KILL
	[ "$TRACER_RC" -eq 137 ]
	# the kernel takes the uprobes and programs away with the tracer's last file descriptor
	wait_until 120 test "$(armed_sites "$JOB_PID" "$BATS_TEST_TMPDIR/sites.txt")" -eq 0
	wait_until 120 bpf_progs_gone $progs
	# the job lives on, untraced, with the results of an untraced run
	run_phase 2
	# (query() is polled until true: how often depends on timing, traced or not)
	$CHECK_FAULTS untraced "$BATS_TEST_TMPDIR/counts.json.2" "$BATS_TEST_TMPDIR/untraced.json.2"
	# a new tracer attaches cleanly and sees every call of the next phase
	start_tracer -o "$BATS_TEST_TMPDIR/t2.json"
	run_phase 3
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	$VERIFY "$BATS_TEST_TMPDIR/t2.json" --counts "$BATS_TEST_TMPDIR/counts.json.3" --pid "$JOB_PID"
	[ "$(counts_field "$BATS_TEST_TMPDIR/counts.json.3" checksum)" = \
	  "$(counts_field "$BATS_TEST_TMPDIR/untraced.json.3" checksum)" ]
	# and the killed trace of phase 1 is recoverable (check.bats covers a cut mid-phase)
	run "$TOOL" recover "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.recovered.json"
	[ "$status" -eq 0 ]
	stop_job
	[ "$JOB_RC" -eq 0 ]
}

@test "starved consumer: ring buffer overflows, delivered + dropped = calls, per probe" {
	start_job --threads 2 --iters 5000 --compute-us 0
	start_tracer --ringbuf-mb 1 -o "$BATS_TEST_TMPDIR/t.json"
	kill -USR1 "$JOB_PID"
	wait_size "$BATS_TEST_TMPDIR/t.json" 500000	# consuming normally
	kill -STOP "$TRACER_PID"
	EXTRA_PIDS+=("$TRACER_PID")
	sleep 0.5					# starve it: the 1 MiB ring holds ~11k events
	kill -CONT "$TRACER_PID"
	wait_for "$BATS_TEST_TMPDIR/counts.json" 60
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json" --allow-drops
	# per probe, events + every kind of loss == the job's calls
	lost_once "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
	$CHECK_FAULTS ring-full "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
	# and the user is told
	grep -Eq '[1-9][0-9]* dropped' "$BATS_TEST_TMPDIR/tracer.out"
}

@test "two tracers on one job: both traces complete and exact" {
	start_job --threads 2 --streams 2 --iters 40
	start_tracer -o "$BATS_TEST_TMPDIR/a.json"
	first=$TRACER_PID
	EXTRA_PIDS+=("$first")
	"$TOOL" -p "$JOB_PID" --ready-file "$BATS_TEST_TMPDIR/b.ready" -o "$BATS_TEST_TMPDIR/b.json" \
		>"$BATS_TEST_TMPDIR/b.out" 2>"$BATS_TEST_TMPDIR/b.err" &
	TRACER_PID=$!
	wait_for "$BATS_TEST_TMPDIR/b.ready"
	one_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	TRACER_PID=$first
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	for t in a b; do
		$VERIFY "$BATS_TEST_TMPDIR/$t.json" --counts "$BATS_TEST_TMPDIR/counts.json" \
			--pid "$JOB_PID"
	done
	# the same calls, so the same number of events of each kind
	[ "$(json_get "$BATS_TEST_TMPDIR/a.json" 'd["spyreStats"]["events"]')" = \
	  "$(json_get "$BATS_TEST_TMPDIR/b.json" 'd["spyreStats"]["events"]')" ]
}

@test "output disk full: clear error, exit 7, no crash, the job unaffected" {
	mkdir "$BATS_TEST_TMPDIR/full"
	mount -t tmpfs -o size=64k tmpfs "$BATS_TEST_TMPDIR/full"
	MOUNTS+=("$BATS_TEST_TMPDIR/full")
	"$MOCK" --iters 300 --compute-us 0 --counts "$BATS_TEST_TMPDIR/untraced.json" --quiet
	start_job --iters 300 --compute-us 0
	start_tracer -o "$BATS_TEST_TMPDIR/full/t.json"
	one_phase
	stop_tracer INT
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$TRACER_RC" -eq 7 ]
	grep -q "$BATS_TEST_TMPDIR/full/t.json.*No space left on device" "$BATS_TEST_TMPDIR/tracer.err"
	[ "$(counts_field "$BATS_TEST_TMPDIR/counts.json" checksum)" = \
	  "$(counts_field "$BATS_TEST_TMPDIR/untraced.json" checksum)" ]
	kill -0 "$JOB_PID"
	stop_job
	[ "$JOB_RC" -eq 0 ]
}

# tail_call_trace MODE [TOOL OPTIONS]: flexhelper_tail_outer jumps into flexhelper_tail_inner
# 30 times, both traced (outer, inner); then checks the pair in the trace: nested both ways
# (MODE sites: the jump is followed, inner's return closes both; MODE nested, --uretprobes: one
# return address slot serves both calls)
tail_call_trace() {
	local mode=$1
	shift
	start_helper tail 30 "$BATS_TEST_TMPDIR/done.json"
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --probe 'flexhelper:flexhelper_tail_outer:outer' \
		--probe 'flexhelper:flexhelper_tail_inner:inner' "$@"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/done.json"
	$CHECK_FAULTS tail-call "$BATS_TEST_TMPDIR/t.json" "$mode"
}

@test "a tail call between two traced functions: both spans, nested, ending together at inner's return" {
	tail_call_trace sites
}

@test "--uretprobes: a tail call between two traced functions: both spans, nested, ending together" {
	tail_call_trace nested --uretprobes
}

@test "calls left by longjmp: unwound events, and they do not fill the call stack" {
	# 40 calls leave by longjmp (no unwinder involved, so nothing crashes without the guard):
	# more than the 16 frames a thread can hold open
	start_helper longjmp 40 "$BATS_TEST_TMPDIR/done.json"
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --probe 'flexhelper:flexhelper_jump:jump'
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	# the last jump's call is found dead only once the thread is seen above it again, which
	# it is not before the end (it waits in a call below that frame): a call with no return
	# seen, in the trace as an instant at its entry
	grep -q ' 39 unwound$' "$BATS_TEST_TMPDIR/tracer.out"
	grep -q '^unwound: 39 calls left without returning' "$BATS_TEST_TMPDIR/tracer.out"
	grep -q '^calls with no return seen: 1 .*instants at their entry with "noReturn": true' \
		"$BATS_TEST_TMPDIR/tracer.out"
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/done.json"
	$CHECK_FAULTS longjmp "$BATS_TEST_TMPDIR/t.json"
	lost_once "$BATS_TEST_TMPDIR/t.json"
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "where stack switches cannot be told apart, the summary and the metadata say so, only then" {
	local regions
	for regions in 1 0; do
		start_helper longjmp 10 "$BATS_TEST_TMPDIR/done.json"
		SPYRE_NO_STACK_REGIONS=$((1 - regions)) start_tracer -o "$BATS_TEST_TMPDIR/t$regions.json" \
			--probe 'flexhelper:flexhelper_jump:jump'
		kill -USR1 "$JOB_PID"
		wait_for "$BATS_TEST_TMPDIR/done.json"
		stop_tracer INT
		[ "$TRACER_RC" -eq 0 ]
		stop_job
		rm -f "$BATS_TEST_TMPDIR/done.json"
		grep -q ' 9 unwound$' "$BATS_TEST_TMPDIR/tracer.out"
		if [ "$regions" = 0 ]; then
			grep -q '^stack switches are not told apart on this kernel' \
				"$BATS_TEST_TMPDIR/tracer.out"
			grep -q '"oneStackPerThread":true' "$BATS_TEST_TMPDIR/t$regions.json"
		else
			! grep -q '^stack switches are not told apart' "$BATS_TEST_TMPDIR/tracer.out"
			! grep -q '"oneStackPerThread"' "$BATS_TEST_TMPDIR/t$regions.json"
		fi
	done
}

@test "a longjmp out of calls nested deeper than 16: each lost call counted once (too deep, or unwound with its event)" {
	# 100 times 20 nested calls left by one longjmp, then 150 calls that return: 2,150 calls,
	# 150 spans that returned, 100 x 16 unwound events, 100 x 4 too deep to record
	start_helper deepjump 100 20 150 "$BATS_TEST_TMPDIR/done.json"
	echo 'flexhelper flexhelper_deep arg1=depth:d arg2=jump:d ret=r:d' >"$BATS_TEST_TMPDIR/deep.probes"
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --no-default --probes "$BATS_TEST_TMPDIR/deep.probes"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	lost_once "$BATS_TEST_TMPDIR/t.json"
	$CHECK_FAULTS deepjump "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/done.json"
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "--uretprobes without the unwind guard: the tracer says a C++ exception would end the job" {
	# forced off here; kernels under lockdown refuse it (this host's does)
	start_job
	SPYRE_NO_UNWIND_GUARD=1 start_tracer --uretprobes -v -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	grep -q 'returns seen by uretprobes, NO unwind guard' "$BATS_TEST_TMPDIR/tracer.err"
	grep -q 'warning: --uretprobes without the unwind guard .*a C++ exception thrown through a traced call would terminate the process (.*libgcc_s' \
		"$BATS_TEST_TMPDIR/tracer.err"
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json"
}

@test "C++ exceptions thrown through traced calls: the job lives on, later calls all traced" {
	# 40 allocations throw std::bad_alloc out of the traced allocate: 40 caught in a traced
	# caller, 40 caught untraced. More than the 16 frames a thread can hold open. No guard
	# is needed: return sites leave the stack alone (this host is under lockdown).
	start_helper throw 40 "$BATS_TEST_TMPDIR/done.json"
	start_tracer -v -o "$BATS_TEST_TMPDIR/t.json" \
		--probe 'flexhelper:flexhelper_try_alloc:tryAlloc'
	grep -q 'returns seen by uprobes on return instructions' "$BATS_TEST_TMPDIR/tracer.err"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	# each call the exception leaves ends where a handler takes it (__cxa_begin_catch), the
	# last one too (it was once found only at the thread's next traced call above it)
	grep -q ' 80 unwound$' "$BATS_TEST_TMPDIR/tracer.out"
	grep -q '^C++ exceptions caught: 80$' "$BATS_TEST_TMPDIR/tracer.out"
	$CHECK_FAULTS throw "$BATS_TEST_TMPDIR/t.json"
	lost_once "$BATS_TEST_TMPDIR/t.json"
	stop_job
	[ "$JOB_RC" -eq 0 ]
}

# inside_probes: a table with flexhelper_inside as "inside", its argument as "code"
inside_probes() {
	printf 'flexhelper\tflexhelper_inside\tname=inside arg1=code:i\n' \
		>"$BATS_TEST_TMPDIR/inside.probes"
}

@test "a call still running when tracing stops is in the trace: an instant at its entry, noReturn" {
	start_helper inside 20 5 "$BATS_TEST_TMPDIR/done.json"
	inside_probes
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --probes "$BATS_TEST_TMPDIR/inside.probes"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	grep -q '^calls with no return seen: 1 ' "$BATS_TEST_TMPDIR/tracer.out"
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	$CHECK_FAULTS inside "$BATS_TEST_TMPDIR/t.json" --code 5 --calls 20
	lost_once "$BATS_TEST_TMPDIR/t.json"
	stop_job
	[ "$JOB_RC" -eq 5 ]
}

@test "a call its process exits inside is in the trace: an instant at its entry, noReturn" {
	start_helper inside 20 7 "$BATS_TEST_TMPDIR/done.json"
	inside_probes
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --probes "$BATS_TEST_TMPDIR/inside.probes"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json"
	stop_job
	[ "$JOB_RC" -eq 7 ]
	# the tracer ends with its target
	wait_gone "$TRACER_PID" 20
	TRACER_RC=0
	wait "$TRACER_PID" || TRACER_RC=$?
	[ "$TRACER_RC" -eq 0 ]
	grep -q "^target $JOB_PID exited with status 7" "$BATS_TEST_TMPDIR/tracer.out"
	grep -q '^calls with no return seen: 1 ' "$BATS_TEST_TMPDIR/tracer.out"
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	$CHECK_FAULTS inside "$BATS_TEST_TMPDIR/t.json" --code 7 --calls 20
	lost_once "$BATS_TEST_TMPDIR/t.json"
}

@test "--uretprobes with the unwind guard: C++ exceptions through traced calls, the job lives on" {
	# 40 allocations throw std::bad_alloc out of the traced allocate: 40 caught in a traced
	# caller, 40 caught untraced. More than the 16 frames a thread can hold open.
	start_helper throw 40 "$BATS_TEST_TMPDIR/done.json"
	start_tracer --uretprobes -v -o "$BATS_TEST_TMPDIR/t.json" \
		--probe 'flexhelper:flexhelper_try_alloc:tryAlloc'
	if grep -q 'NO unwind guard' "$BATS_TEST_TMPDIR/tracer.err"; then
		stop_tracer INT
		skip "this kernel refuses bpf_probe_write_user (lockdown): the VM test's unwind step covers it"
	fi
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	$CHECK_FAULTS throw "$BATS_TEST_TMPDIR/t.json" --uretprobes
}

@test "a call that finds no thread stack is counted as such, not as too deep, and nothing else is lost" {
	# fault injection: every 7th entry per CPU finds no stack, as when task storage is busy
	SPYRE_TEST_NO_STACK_EVERY=7 run "$TOOL" -o "$BATS_TEST_TMPDIR/t.json" -- "$MOCK" --quiet \
		--counts "$BATS_TEST_TMPDIR/counts.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" =~ too\ deep\ 0,\ no\ thread\ stack\ [1-9] ]]
	$CHECK_FAULTS no-stack "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
}
