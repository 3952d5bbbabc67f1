#!/usr/bin/env bats
# Launch mode (`-- CMD`) probes the program's own functions, not only its libraries: a PIE
# program, one with its C++ runtime linked in, a statically linked non-PIE one (no program
# interpreter, no library at all), and the Python interpreter's own symbols. The ground truth
# is the job's own count of its calls (tests/progs/throwjob.cpp writes it), or the number of
# calls a Python script makes through ctypes.

load helpers

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
	python3 - "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" <<'PY'
import collections, json, sys
t, c = (json.load(open(p)) for p in sys.argv[1:])
spans = collections.Counter(e["name"] for e in t["traceEvents"] if e["ph"] == "X")
for f in ("tj_leaf", "tj_catch"):
    assert c["calls"][f] == 20 and spans[f] == c["calls"][f], (f, spans, c["calls"])
PY
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
	python3 - "$BATS_TEST_TMPDIR" <<'PY'
import json, sys
d = sys.argv[1]
n = {k: sum(e["name"] == "Py_GetVersion" for e in json.load(open(f"{d}/p{k}.json"))["traceEvents"])
     for k in (0, 17)}
assert n[17] - n[0] == 17, n
PY
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
	python3 - "$BATS_TEST_TMPDIR" <<'PY'
import json, sys
d = sys.argv[1]
n = {k: sum(e["name"] == "Py_GetVersion" for e in json.load(open(f"{d}/p{k}.json"))["traceEvents"])
     for k in (0, 9)}
assert n[9] - n[0] == 9, n
PY
}
