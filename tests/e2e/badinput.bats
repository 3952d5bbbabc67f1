#!/usr/bin/env bats
# Bad input: every refusal comes with a clear message and the exit code docs/user-guide.md
# documents; what the tracer must not touch (symlink targets, existing files) stays untouched.

load fault-helpers

# trace_briefly ARGS...: a short trace of JOB_PID (`run`: sets status and output)
trace_briefly() {
	run "$TOOL" -p "$JOB_PID" -d 0.3 -q "$@"
	echo "$output"
}

# copy_runtime DIR: the mock job and its libraries in DIR, so a test may delete or chmod them
copy_runtime() {
	mkdir -p "$1/torch_spyre"
	cp "$BUILD"/mock/mock-spyre-job "$BUILD"/mock/libflex.so "$BUILD"/mock/libspyre_comms.so.1 \
		"$1"/
	cp "$BUILD"/mock/torch_spyre/_C.so "$1"/torch_spyre/
}

# NODAC: run as root, but without the capabilities that let root read any file
NODAC="setpriv --inh-caps=-dac_override,-dac_read_search --bounding-set=-dac_override,-dac_read_search"

# --- processes ---------------------------------------------------------------------------------

@test "a PID that does not exist: exit 3" {
	sleep 0 &
	gone=$!
	wait "$gone" || true
	run "$TOOL" -p "$gone" -o "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 3 ]
	[[ "$output" == *"no such process: $gone"* ]]
	huge=$(($(cat /proc/sys/kernel/pid_max) + 1))
	run "$TOOL" -p "$huge" -o "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 3 ]
	[[ "$output" == *"no such process: $huge"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/t.json" ]
}

@test "a kernel thread: exit 3" {
	[ "$(cat /proc/2/comm)" = kthreadd ]
	run "$TOOL" -p 2 -o "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 3 ]
	[[ "$output" == *"process 2 is a kernel thread"* ]]
	run "$TOOL" list -p 2
	[ "$status" -eq 3 ]
	[ ! -e "$BATS_TEST_TMPDIR/t.json" ]
}

@test "a zombie: exit 3" {
	# the parent execs a program that never reaps: its child stays a zombie until the parent is
	# killed (teardown). The bounds are generous: on a loaded machine (make test beside other
	# work) the child was not a zombie within 10 s
	sh -c 'sleep 0 & echo $! > "$1"; exec sleep 3600' sh "$BATS_TEST_TMPDIR/zpid" &
	EXTRA_PIDS+=($!)
	wait_until 120 test -s "$BATS_TEST_TMPDIR/zpid"
	zombie=$(cat "$BATS_TEST_TMPDIR/zpid")
	wait_until 120 test "$(proc_state "$zombie")" = Z
	run "$TOOL" -p "$zombie" -o "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 3 ]
	[[ "$output" == *"process $zombie is a zombie"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/t.json" ]
}

@test "a process without the Spyre runtime: exit 5" {
	sleep 60 &
	JOB_PID=$!
	run "$TOOL" -p "$JOB_PID" -o "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 5 ]
	[[ "$output" == *"no Spyre runtime in process $JOB_PID"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/t.json" ]	# no empty trace left behind
	run "$TOOL" list -v -p "$JOB_PID"
	[ "$status" -eq 5 ]
	[[ "$output" == *"NOT RESOLVED: no mapped library matches 'libflex.so*'"* ]]
}

# --- options and probe specs ---------------------------------------------------------------------

@test "unknown options and bad option values: exit 2" {
	run "$TOOL" --no-such-option -p 1
	[ "$status" -eq 2 ]
	[[ "$output" == *"unrecognized option '--no-such-option'"* ]]
	[[ "$output" == *"usage: spyre-bpftrace"* ]]
	run "$TOOL" -p abc
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid PID 'abc'"* ]]
	run "$TOOL" -p 1 --ringbuf-mb 3
	[ "$status" -eq 2 ]
	[[ "$output" == *"--ringbuf-mb wants a power of two"* ]]
	run "$TOOL" -p 1 -d -1
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid duration '-1'"* ]]
	run "$TOOL" -o "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"give exactly one of -p PID"* ]]
	run "$TOOL" -p 1 stray
	[ "$status" -eq 2 ]
	[[ "$output" == *"unexpected argument 'stray'"* ]]
}

@test "an option its subcommand does not take: exit 2 naming the option and the subcommand" {
	echo '{"traceEvents":[]}' >"$BATS_TEST_TMPDIR/t.json"
	run "$TOOL" check --sample-every 5 --window 2s "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"check does not take --sample-every (an option of tracing)"* ]]
	run "$TOOL" list -p 1 --prom-file "$BATS_TEST_TMPDIR/x.prom"
	[ "$status" -eq 2 ]
	[[ "$output" == *"list does not take --prom-file (an option of tracing)"* ]]
	run "$TOOL" list -p 1 -d 2
	[ "$status" -eq 2 ]
	[[ "$output" == *"list does not take -d/--duration"* ]]
	run "$TOOL" recover -d 2 "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"recover does not take -d/--duration (an option of tracing)"* ]]
	run "$TOOL" merge "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/t.json" \
		-o "$BATS_TEST_TMPDIR/m.json" -p 1
	[ "$status" -eq 2 ]
	[[ "$output" == *"merge does not take -p/--pid (an option of tracing and list)"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/m.json" ]
	run "$TOOL" -p 1 --nest-tolerance 5
	[ "$status" -eq 2 ]
	[[ "$output" == *"tracing does not take --nest-tolerance (an option of merge)"* ]]
	# the help lists what each subcommand takes
	run "$TOOL" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"  check     --json"* ]]
	[[ "$output" == *"  recover   -o --force"* ]]
	[[ "$output" == *"  merge     -o --force --profiler-start --nest-tolerance"* ]]
}

@test "fleet mode's files without fleet mode, the driver tier in fleet mode, or windows of a launched command: exit 2, not ignored" {
	# fleet mode has no driver tier: its options were ignored there
	run "$TOOL" -a --sample-every 2 --driver off -d 1 -o "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--driver is not for fleet mode"* ]]
	run "$TOOL" -p 1 --window 1s --period 2s --output-dir "$BATS_TEST_TMPDIR/out" \
		--driver-funcs vfio_device_fops_unl_ioctl
	[ "$status" -eq 2 ]
	[[ "$output" == *"--driver-funcs is not for fleet mode"* ]]
	run "$TOOL" -p 1 --output-dir "$BATS_TEST_TMPDIR/out"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--output-dir is for fleet mode: give -a or --window"* ]]
	run "$TOOL" -p 1 --prom-file "$BATS_TEST_TMPDIR/x.prom" -o "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--prom-file is for fleet mode"* ]]
	# windows of -- CMD read /proc/0 and never started CMD
	run "$TOOL" --window 1s --period 1s --output-dir "$BATS_TEST_TMPDIR/out" -d 2 -- \
		touch "$BATS_TEST_TMPDIR/ran"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--window traces -p PID or -a, not -- CMD"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/out" ] && [ ! -e "$BATS_TEST_TMPDIR/t.json" ]
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "-d takes a duration as --window does: 500ms stops in half a second, 10s is ten seconds" {
	start_job
	local t0=$SECONDS
	run "$TOOL" -p "$JOB_PID" -d 500ms -q -o "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[ $((SECONDS - t0)) -lt 60 ]	# not 500 s; a loaded machine's start-up is seconds
	$VERIFY "$BATS_TEST_TMPDIR/t.json"
	start_tracer -d 10s -q -o "$BATS_TEST_TMPDIR/t10.json"
	sleep 2
	# not ended: 10s is not 10 ms (nor refused)
	kill -0 "$TRACER_PID"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	run "$TOOL" -p "$JOB_PID" -d 10q
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid duration '10q'"* ]]
	run "$TOOL" -p "$JOB_PID" --window 0 --period 1s --output-dir "$BATS_TEST_TMPDIR/out"
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid duration '0'"* ]]
}

@test "-vv: libbpf's debug output and the tracer's own choices; -v -v is the same; -v only ours" {
	start_job
	for v in -vv "-v -v"; do
		trace_briefly $v -o "$BATS_TEST_TMPDIR/t.json" --force
		[ "$status" -eq 0 ]
		[[ "$output" == *"libbpf: "*"found program"* ]]
		[[ "$output" == *"probes attached in"* ]]
	done
	# one -v: the tracer's choices, not libbpf's debug output
	trace_briefly -v -o "$BATS_TEST_TMPDIR/t.json" --force
	[ "$status" -eq 0 ]
	[[ "$output" == *"probes attached in"* ]]
	[[ "$output" != *"found program"* ]]
	# where the start-up time went, each phase a time (the help names this line)
	[[ "$output" =~ "start-up, ms from the ring's creation (thread CPU): table resolved "[0-9.]+" ("[0-9.]+"), uprobe object loaded "[0-9.]+.*", ready "[0-9.]+ ]]
	# none: neither
	trace_briefly -o "$BATS_TEST_TMPDIR/t.json" --force
	[ "$status" -eq 0 ]
	[[ "$output" != *"probes attached in"* ]]
}

@test "malformed --probe: exit 2 with the reason" {
	start_job
	local spec
	for spec in 'libflex.so' ':flex::x' 'libflex.so:' 'a:b:c:d' 'libflex.so:flex::x:na"me'; do
		run "$TOOL" -p "$JOB_PID" -o "$BATS_TEST_TMPDIR/t.json" --probe "$spec"
		echo "$spec -> $status: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"--probe: "* ]]
	done
	run "$TOOL" -p "$JOB_PID" -o "$BATS_TEST_TMPDIR/t.json" --probe 'libflex.so:'
	[[ "$output" == *"empty SYMBOL_GLOB"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/t.json" ]
}

@test "malformed --probes file: exit 2, the message names file:line" {
	start_job
	f=$BATS_TEST_TMPDIR/site.probes
	printf '# a comment\nlibflex.so* flex::getNumDevices name=ok\n\nlibflex.so* flex::query arg9=x\n' >"$f"
	run "$TOOL" -p "$JOB_PID" -o "$BATS_TEST_TMPDIR/t.json" --probes "$f"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"$f:4: "*"arg9"* ]]
	printf 'libflex.so* flex::getNumDevices type=sometimes\n' >"$f"
	run "$TOOL" list -v -p "$JOB_PID" --probes "$f"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"$f:1: "* ]]
	[ ! -e "$BATS_TEST_TMPDIR/t.json" ]
}

@test "missing or unreadable --probes file: exit 1, the message names the file" {
	start_job
	run "$TOOL" -p "$JOB_PID" -o "$BATS_TEST_TMPDIR/t.json" --probes "$BATS_TEST_TMPDIR/nope.probes"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$BATS_TEST_TMPDIR/nope.probes: "*"No such file or directory"* ]]
	run "$TOOL" -p "$JOB_PID" -o "$BATS_TEST_TMPDIR/t.json" --probes "$BATS_TEST_TMPDIR"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$BATS_TEST_TMPDIR: "*"Is a directory"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/t.json" ]
}

# --- the runtime library -----------------------------------------------------------------------

@test "runtime library deleted on disk after the job started: traced through map_files" {
	rt=$BATS_TEST_TMPDIR/rt
	copy_runtime "$rt"
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	"$rt/mock-spyre-job" --wait-go --linger --quiet --ready-file "$BATS_TEST_TMPDIR/job.ready" \
		--counts "$BATS_TEST_TMPDIR/counts.json" --iters 20 \
		>"$BATS_TEST_TMPDIR/job.out" 2>"$BATS_TEST_TMPDIR/job.err" &
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
	rm "$rt/libflex.so" "$rt/libspyre_comms.so.1" "$rt/torch_spyre/_C.so"
	grep -q "$rt/libflex.so (deleted)" /proc/"$JOB_PID"/maps
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/counts.json"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	$VERIFY "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json" --pid "$JOB_PID"
}

# start_unreadable_job: a job whose libflex.so was made mode 000 after it started; root without
# CAP_DAC_OVERRIDE ($NODAC) cannot open it, not even through /proc/PID/map_files
start_unreadable_job() {
	RT=$BATS_TEST_TMPDIR/rt
	copy_runtime "$RT"
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	"$RT/mock-spyre-job" --wait-go --linger --quiet --ready-file "$BATS_TEST_TMPDIR/job.ready" \
		>"$BATS_TEST_TMPDIR/job.out" 2>"$BATS_TEST_TMPDIR/job.err" &
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
	chmod 000 "$RT/libflex.so"
}

@test "unreadable runtime library: list says which library and why" {
	start_unreadable_job
	run $NODAC "$TOOL" list -v -p "$JOB_PID"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"NOT RESOLVED: cannot read $RT/libflex.so: Permission denied"* ]]
	[[ "$output" == *"spyreAllocate"* ]]	# _C.so's probes still resolve
}

@test "unreadable runtime library, only its probes: exit 5 naming the library and the error" {
	start_unreadable_job
	run $NODAC "$TOOL" -p "$JOB_PID" -d 0.3 -q -o "$BATS_TEST_TMPDIR/t.json" --no-default \
		--probe 'libflex.so*:flex::*'
	echo "$output"
	[ "$status" -eq 5 ]
	[ ! -e "$BATS_TEST_TMPDIR/t.json" ]
	[[ "$output" == *"$RT/libflex.so"*"Permission denied"* ]]
}

@test "unreadable runtime library, default table: the rest is traced, with a warning" {
	start_unreadable_job
	run $NODAC "$TOOL" -p "$JOB_PID" -d 0.3 -q -o "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	# _C.so's and libspyre_comms' probes, the exception unwinder's (libgcc_s) and the catch's
	# (libstdc++): nothing of libflex
	[ "$(json_get "$BATS_TEST_TMPDIR/t.json" \
		'sorted({p["library"].split("/")[-1].split(".so")[0] for p in d["spyreProbes"]})')" = \
	  "['_C', 'libgcc_s', 'libspyre_comms', 'libstdc++']" ]
	[[ "$output" == *"$RT/libflex.so"*"Permission denied"* ]]
}

@test "unreadable runtime library, fleet mode on one job (-p --window): the rest is traced, with a warning" {
	start_unreadable_job
	run $NODAC "$TOOL" -p "$JOB_PID" --window 1s --period 1s -d 1.5 -q \
		--output-dir "$BATS_TEST_TMPDIR/out"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"$RT/libflex.so"*"Permission denied"* ]]
}

# --- the output file ---------------------------------------------------------------------------

@test "output is a symlink: exit 7, not followed, with or without --force" {
	start_job
	echo keep >"$BATS_TEST_TMPDIR/target.txt"
	ln -s "$BATS_TEST_TMPDIR/target.txt" "$BATS_TEST_TMPDIR/t.json"
	ln -s "$BATS_TEST_TMPDIR/created-through-link" "$BATS_TEST_TMPDIR/dangling.json"
	for f in "" --force; do
		trace_briefly $f -o "$BATS_TEST_TMPDIR/t.json"
		[ "$status" -eq 7 ]
		[[ "$output" == *"cannot create $BATS_TEST_TMPDIR/t.json"* ]]
		[ -L "$BATS_TEST_TMPDIR/t.json" ]
		[ "$(cat "$BATS_TEST_TMPDIR/target.txt")" = keep ]
		trace_briefly $f -o "$BATS_TEST_TMPDIR/dangling.json"
		[ "$status" -eq 7 ]
		[ -L "$BATS_TEST_TMPDIR/dangling.json" ]
		[ ! -e "$BATS_TEST_TMPDIR/created-through-link" ]
	done
}

@test "output exists: exit 7 without --force (untouched), replaced with --force" {
	start_job
	echo keep >"$BATS_TEST_TMPDIR/t.json"
	ln "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/other-name"
	trace_briefly -o "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 7 ]
	[[ "$output" == *"File exists (--force replaces it; or -o another name)"* ]]
	[ "$(cat "$BATS_TEST_TMPDIR/t.json")" = keep ]
	trace_briefly --force -o "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 0 ]
	$VERIFY "$BATS_TEST_TMPDIR/t.json"
	# replaced, not written through: the file's other name still has the old content
	[ "$(cat "$BATS_TEST_TMPDIR/other-name")" = keep ]
	# --force does not replace what is not a regular file
	mkdir "$BATS_TEST_TMPDIR/dir.json"
	trace_briefly --force -o "$BATS_TEST_TMPDIR/dir.json"
	[ "$status" -eq 7 ]
	[ -d "$BATS_TEST_TMPDIR/dir.json" ]
	# nor is a directory that does not exist created
	trace_briefly -o "$BATS_TEST_TMPDIR/no/such/dir/t.json"
	[ "$status" -eq 7 ]
}

@test "output file mode is 0600 whatever the umask, owned by root without sudo" {
	start_job
	(umask 000 && "$TOOL" -p "$JOB_PID" -d 0.3 -q -o "$BATS_TEST_TMPDIR/t.json")
	(umask 000 && "$TOOL" -p "$JOB_PID" -d 0.3 -q -o "$BATS_TEST_TMPDIR/t.json.gz")
	[ "$(stat -c %a:%u:%g "$BATS_TEST_TMPDIR/t.json")" = 600:0:0 ]
	[ "$(stat -c %a:%u:%g "$BATS_TEST_TMPDIR/t.json.gz")" = 600:0:0 ]
}

@test "output is handed to SUDO_UID/SUDO_GID" {
	start_job
	env SUDO_UID=65534 SUDO_GID=65534 "$TOOL" -p "$JOB_PID" -d 0.3 -q \
		-o "$BATS_TEST_TMPDIR/t.json"
	[ "$(stat -c %a:%u:%g "$BATS_TEST_TMPDIR/t.json")" = 600:65534:65534 ]
	$VERIFY "$BATS_TEST_TMPDIR/t.json"
	# a malformed SUDO_UID is ignored, not trusted
	env SUDO_UID=65534x SUDO_GID=65534 "$TOOL" -p "$JOB_PID" -d 0.3 -q \
		-o "$BATS_TEST_TMPDIR/t2.json"
	[ "$(stat -c %u:%g "$BATS_TEST_TMPDIR/t2.json")" = 0:0 ]
}

# --- privileges --------------------------------------------------------------------------------

@test "not root: exit 4 with a clear message" {
	start_job
	run setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$TOOL" -p "$JOB_PID" -o /tmp/spyre-e2e-nobody-$$.json
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"needs root (or CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE)"* ]]
	[ ! -e /tmp/spyre-e2e-nobody-$$.json ]
	run setpriv --reuid=65534 --regid=65534 --clear-groups "$TOOL" list -p "$JOB_PID"
	[ "$status" -eq 4 ]
	[[ "$output" == *"needs root"* ]]
}

@test "a process the tracer may not read (-p 1 as nobody, CAP_SYS_ADMIN alone): exit 4, not 1" {
	# CAP_SYS_ADMIN passes the privilege check; PID 1's maps are root's: the kernel says no
	run setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=+sys_admin \
		--ambient-caps=+sys_admin "$TOOL" -p 1 -o /tmp/spyre-e2e-nobody-$$.json
	echo "$output"
	[ "$status" -eq 4 ]
	[[ "$output" == *"cannot read the mappings of 1: Permission denied"* ]]
	[ ! -e /tmp/spyre-e2e-nobody-$$.json ]
	run setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=+sys_admin \
		--ambient-caps=+sys_admin "$TOOL" list -p 1
	echo "$output"
	[ "$status" -eq 4 ]
}

@test "-p TID, a thread of the job: said, and the job's process traced; exact call counts" {
	start_job --threads 2
	tid=$(ls /proc/"$JOB_PID"/task | grep -vx "$JOB_PID" | head -1)
	[ -n "$tid" ]
	rm -f "$BATS_TEST_TMPDIR/tracer.ready"
	"$TOOL" -p "$tid" -o "$BATS_TEST_TMPDIR/t.json" --ready-file "$BATS_TEST_TMPDIR/tracer.ready" \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_ready "$BATS_TEST_TMPDIR/tracer.ready" "$TRACER_PID" ||
		{ cat "$BATS_TEST_TMPDIR/tracer.err"; false; }
	run_phase
	stop_tracer
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$TRACER_RC" -eq 0 ]
	grep -q "$tid is a thread of process $JOB_PID: tracing process $JOB_PID" \
		"$BATS_TEST_TMPDIR/tracer.err"
	! grep -q "cannot attach" "$BATS_TEST_TMPDIR/tracer.err"
	lost_once "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
	run "$TOOL" list -p "$tid"
	[ "$status" -eq 0 ]
	[[ "$output" == *"$tid is a thread of process $JOB_PID: listing process $JOB_PID"* ]]
}

@test "--probes with a typo of a built-in table's name: exit 2, did you mean" {
	run "$TOOL" -p $$ -o "$BATS_TEST_TMPDIR/t.json" --probes torhc
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"torhc: no such file, nor a built-in table (spyre, torch); did you mean torch?"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/t.json" ]
}
