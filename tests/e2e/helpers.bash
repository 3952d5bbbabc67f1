# Shared setup for the end-to-end tests (run as root by `make e2e`).
# Handshakes go through files the programs write when ready; waiting polls for them with a
# deadline, never a fixed sleep.

ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
TOOL=$BUILD/spyre-bpftrace
MOCK=$BUILD/mock/mock-spyre-job
VERIFY="python3 $ROOT/tests/e2e/verify_trace.py"
# The tests count every call: no overhead budget (its windows would leave calls out) unless a
# test asks for one with --max-overhead (cost.bats, budget tests)
export SPYRE_BPFTRACE_MAX_OVERHEAD=none

# wait_for FILE [SECONDS]: until FILE exists
wait_for() {
	local f=$1 deadline=$((SECONDS + ${2:-120}))
	while [ ! -e "$f" ]; do
		if [ $SECONDS -ge $deadline ]; then
			echo "timed out waiting for $f" >&2
			return 1
		fi
		sleep 0.02
	done
}

# wait_until SECONDS CMD...: poll CMD until it succeeds
wait_until() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] || { echo "timed out waiting for: $*" >&2; return 1; }
		sleep 0.02
	done
}

# prom_windows FILE: the windows closed so far, as FILE (--prom-file) counts them; 0 before one
prom_windows() {
	local n
	n=$(awk '$1 == "spyre_windows_total" { print $2; exit }' "$1" 2>/dev/null)
	echo "${n:-0}"
}

# wait_windows FILE N: until N windows have closed. Each window attaches to every process: on a
# loaded machine that took most of a second, and `-d 2.5` with 1 s windows closed only one
wait_windows() {
	local deadline=$((SECONDS + 120))
	until [ "$(prom_windows "$1")" -ge "$2" ]; do
		[ $SECONDS -lt $deadline ] ||
			{ echo "windows did not advance: $(prom_windows "$1")"; return 1; }
		sleep 0.2
	done
}

# ended PID: PID is gone, or a zombie (a child of this shell stays one, still reached by
# kill -0, until it is waited for)
ended() {
	! kill -0 "$1" 2>/dev/null || [ "$(sed 's/.*) \(.\).*/\1/' /proc/"$1"/stat 2>/dev/null)" = Z ]
}

# wait_ready FILE PID [SECONDS]: until PID has written FILE; fails at once if PID is gone (a
# tracer that refused its options does not hold the test up for the whole deadline)
wait_ready() {
	local f=$1 p=$2 deadline=$((SECONDS + ${3:-120}))
	while [ ! -e "$f" ]; do
		if ended "$p"; then
			[ -e "$f" ] && return 0
			echo "pid $p ended before writing $f" >&2
			return 1
		fi
		if [ $SECONDS -ge $deadline ]; then
			echo "timed out waiting for $f" >&2
			return 1
		fi
		sleep 0.02
	done
}

# wait_gone PID [SECONDS]: until the (non-child) process PID has exited
wait_gone() {
	local p=$1 deadline=$((SECONDS + ${2:-30}))
	while kill -0 "$p" 2>/dev/null; do
		[ $SECONDS -ge $deadline ] && { echo "pid $p still alive" >&2; return 1; }
		sleep 0.02
	done
}

# start_job [MOCK OPTIONS]: start the mock job held before its first phase; sets JOB_PID
# json_get FILE EXPR: evaluate a Python expression over the parsed JSON `d` of FILE
json_get() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

start_job() {
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	"$MOCK" --wait-go --linger --quiet --ready-file "$BATS_TEST_TMPDIR/job.ready" \
		--counts "$BATS_TEST_TMPDIR/counts.json" "$@" \
		>"$BATS_TEST_TMPDIR/job.out" 2>"$BATS_TEST_TMPDIR/job.err" &
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
}

# run_phase [N]: let the job run phase N (of several; none: its only phase) and wait for the
# counts file the job writes at the end of it
run_phase() {
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/counts.json${1:+.$1}" 120
}

# start_tracer [TOOL OPTIONS]: attach to JOB_PID, wait until probes are live; sets TRACER_PID
start_tracer() {
	rm -f "$BATS_TEST_TMPDIR/tracer.ready"
	"$TOOL" -p "$JOB_PID" --ready-file "$BATS_TEST_TMPDIR/tracer.ready" "$@" \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_ready "$BATS_TEST_TMPDIR/tracer.ready" "$TRACER_PID" ||
		{ cat "$BATS_TEST_TMPDIR/tracer.err"; return 1; }
}

# stop_tracer [SIGNAL]: stop it and keep its exit status in TRACER_RC (one that stopped by
# itself already, a write error say, is reaped all the same: on a loaded machine the test may
# come here after that)
stop_tracer() {
	kill -"${1:-INT}" "$TRACER_PID" 2>/dev/null || ended "$TRACER_PID"
	TRACER_RC=0
	wait "$TRACER_PID" || TRACER_RC=$?
}

# stop_job: SIGTERM and its exit status in JOB_RC
stop_job() {
	kill -TERM "$JOB_PID"
	JOB_RC=0
	wait "$JOB_PID" || JOB_RC=$?
}

# counts_field FILE KEY: a top-level value of a counts file
counts_field() {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

teardown() {
	[ -n "${TRACER_PID:-}" ] && kill -KILL "$TRACER_PID" 2>/dev/null
	[ -n "${JOB_PID:-}" ] && kill -KILL "$JOB_PID" 2>/dev/null
	true
}

# wait_child PID [SECONDS]: wait, with a deadline, for a child of this shell to end (a tracer
# that stops by itself when its target exits, a job that finishes its work); its exit status,
# 128+N when signal N killed it, in CHILD_RC
wait_child() {
	local p=$1 deadline=$((SECONDS + ${2:-30}))
	until ended "$p"; do
		[ $SECONDS -ge $deadline ] && { echo "pid $p still running" >&2; return 1; }
		sleep 0.02
	done
	CHILD_RC=0
	wait "$p" || CHILD_RC=$?
}

# lost_once TRACE [COUNTS]: each call of each probe counted once (issue 23): as its event (a
# span, or an event marked unwound) or as one loss of one kind, so per probe events + losses ==
# hits, exactly; with COUNTS (a job's counts file: {"calls": {symbol: n}}), hits == the job's
# calls too. The sum is every kind the metadata names: one left out fails a test that has it,
# one counted twice (once: too deep, and again unwound) fails too.
lost_once() {
	python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
calls = json.load(open(sys.argv[2]))["calls"] if len(sys.argv) > 2 else {}
ev = [e for e in d["traceEvents"] if e.get("ph") in ("X", "i")]
for p in d["spyreProbes"]:
    if p.get("type") in ("unwind", "catch"):
        continue    # their hits are exceptions, not calls
    lost = (p["dropsRingFull"] + p["dropsTooDeep"] + p["dropsNoStack"] + p["sampledOut"] +
            p["dropsRateCap"] + p["noReturn"])
    assert p["events"] + lost == p["hits"], p
    if p["symbol"] in calls:
        assert p["hits"] == calls[p["symbol"]], (p, calls[p["symbol"]])
    if p["dropsRingFull"]:
        continue    # a dropped event may be an unwound one: the counts below are not known
    # each unwound call and each call with no return is in the trace, once, so marked
    mine = [e for e in ev if e["name"] == p["name"]]
    unwound = [e for e in mine if e.get("args", {}).get("unwound") is True]
    noret = [e for e in mine if e.get("args", {}).get("noReturn") is True]
    assert len(unwound) == p["unwound"], (p, len(unwound))
    assert len(noret) == p["noReturn"], (p, len(noret))
    assert all(e["ph"] == "i" for e in noret), noret[:3]
PY
}
