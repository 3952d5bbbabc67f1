# Helpers of the fault and bad-input tests (faults.bats, badinput.bats), on top of helpers.bash.

load helpers

PROBE_SITES="python3 $ROOT/tests/e2e/probe_sites.py"

# tests/progs/flexhelper.cpp, built by `make all` beside the mock runtime
FLEXHELPER=$BUILD/tests/flexhelper

# start_helper MODE ARGS...: start flexhelper held before its work; sets JOB_PID
start_helper() {
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	"$FLEXHELPER" "$BATS_TEST_TMPDIR/job.ready" "$@" \
		>"$BATS_TEST_TMPDIR/job.out" 2>"$BATS_TEST_TMPDIR/job.err" &
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
}

# wait_size FILE BYTES [SECONDS]: until FILE has grown to BYTES
wait_size() {
	local deadline=$((SECONDS + ${3:-60}))
	while [ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -lt "$2" ]; do
		[ $SECONDS -lt $deadline ] || { echo "$1 did not grow to $2 bytes" >&2; return 1; }
		sleep 0.02
	done
}

# bpf_prog_ids PID: ids of the BPF programs PID holds open
bpf_prog_ids() {
	grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u
}

# bpf_progs_gone IDS...: none of these BPF programs exists any more
bpf_progs_gone() {
	local id
	for id in "$@"; do
		bpftool prog show id "$id" >/dev/null 2>&1 && return 1
	done
	return 0
}

# armed_sites PID LISTFILE: how many of the probe sites in LISTFILE (output of `list`) hold a
# breakpoint in PID
armed_sites() {
	$PROBE_SITES "$1" <"$2" | awk '{print $1}'
}

# proc_state PID: the one-letter state of PID (Z for a zombie)
proc_state() {
	sed 's/.*) \(.\).*/\1/' /proc/"$1"/stat 2>/dev/null
}

# EXTRA_PIDS: more processes a test started; MOUNTS: mount points it made. Both are cleaned up.
EXTRA_PIDS=()
MOUNTS=()

teardown() {
	local p m
	[ -n "${TRACER_PID:-}" ] && kill -KILL "$TRACER_PID" 2>/dev/null
	for p in "${EXTRA_PIDS[@]}"; do
		kill -CONT "$p" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
	done
	[ -n "${JOB_PID:-}" ] && kill -KILL "$JOB_PID" 2>/dev/null
	for m in "${MOUNTS[@]}"; do
		umount -l "$m" 2>/dev/null
	done
	true
}
