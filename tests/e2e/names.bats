#!/usr/bin/env bats
# Display names (issue 15): two functions never share one, in the trace or in the summary.

load helpers

LIB=$BUILD/tests/libfixture.so

# trace_count TRACE NAME: the events named NAME in TRACE
trace_count() {
	python3 -c 'import json,sys; print(sum(e["name"] == sys.argv[2] for e in json.load(open(sys.argv[1]))["traceEvents"]))' "$1" "$2"
}

@test "one library mapped from two files: one name for its function, each event and summary row says which file" {
	# two copies of the fixture library (same basename, other inodes and paths), both loaded
	# by one process that calls fixture_c_entry 3 times in copy a and 5 times in copy b
	mkdir "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	cp "$LIB" "$BATS_TEST_TMPDIR/a/"
	cp "$LIB" "$BATS_TEST_TMPDIR/b/"
	python3 - "$BATS_TEST_TMPDIR" >"$BATS_TEST_TMPDIR/job.out" 2>&1 <<'PY' &
import ctypes, os, sys, time
d = sys.argv[1]
libs = {k: ctypes.CDLL(f"{d}/{k}/libfixture.so") for k in "ab"}
open(f"{d}/job.ready.tmp", "w").write(f"{os.getpid()}\n")
os.rename(f"{d}/job.ready.tmp", f"{d}/job.ready")
while not os.path.exists(f"{d}/go"):
    time.sleep(0.01)
for k, n in (("a", 3), ("b", 5)):
    for i in range(n):
        libs[k].fixture_c_entry(i)
PY
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --no-default --probe 'libfixture.so:fixture_c_entry'
	touch "$BATS_TEST_TMPDIR/go"
	wait_child "$JOB_PID" 30
	JOB_PID=
	wait_child "$TRACER_PID" 30
	TRACER_PID=
	cat "$BATS_TEST_TMPDIR/tracer.out" "$BATS_TEST_TMPDIR/tracer.err"
	[ "$CHILD_RC" -eq 0 ]
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	python3 "$ROOT/tests/e2e/check_trace.py" files "$BATS_TEST_TMPDIR/t.json" \
		"$BATS_TEST_TMPDIR/tracer.out" fixture_c_entry "$BATS_TEST_TMPDIR/a/libfixture.so=3" \
		"$BATS_TEST_TMPDIR/b/libfixture.so=5"
}

@test "a library glob matches the library's DT_SONAME: libstdc++.so.6 is libstdc++.so.6.0.30, by PID and in launch mode" {
	# the fixture library's DT_SONAME is libfixture.so.1; by PID, loaded as libfixture.so
	python3 - "$BATS_TEST_TMPDIR" "$LIB" >"$BATS_TEST_TMPDIR/job.out" 2>&1 <<'PY' &
import ctypes, os, sys, time
d, lib = sys.argv[1:]
f = ctypes.CDLL(lib)
open(f"{d}/job.ready.tmp", "w").write(f"{os.getpid()}\n")
os.rename(f"{d}/job.ready.tmp", f"{d}/job.ready")
while not os.path.exists(f"{d}/go"):
    time.sleep(0.01)
for i in range(7):
    f.fixture_c_entry(i)
PY
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
	run "$TOOL" list -v -p "$JOB_PID" --no-default --probe 'libfixture.so.1:fixture_c_entry' \
		--probe 'libfixture.so.2:fixture_c_entry'
	echo "$output"
	[ "$status" -eq 10 ]
	[[ "$output" == *"libfixture.so.1 fixture_c_entry "*"-> resolved: 1 function in libfixture.so"* ]]
	[[ "$output" == *"no mapped library matches 'libfixture.so.2'"*"near misses: libfixture.so.1"* ]]
	[[ "$output" == *"libfixture.so (soname libfixture.so.1): 1 probe"* ]]
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --no-default \
		--probe 'libfixture.so.1:fixture_c_entry'
	touch "$BATS_TEST_TMPDIR/go"
	wait_child "$JOB_PID" 30
	JOB_PID=
	wait_child "$TRACER_PID" 30
	TRACER_PID=
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$CHILD_RC" -eq 0 ]
	[ "$(trace_count "$BATS_TEST_TMPDIR/t.json" fixture_c_entry)" -eq 7 ]
	# launch mode, the names ldd prints: throwjob links libstdc++.so.6 (the file
	# libstdc++.so.6.0.30) and throws 5 exceptions a round through __cxa_throw
	[ "$(basename "$(readlink -f "$(ldd "$BUILD/tests/throwjob" | awk '/libstdc\+\+/ {print $3}')")")" != libstdc++.so.6 ]
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	"$TOOL" -q -o "$BATS_TEST_TMPDIR/l.json" --no-default --probe 'libstdc++.so.6:__cxa_throw' \
		-- "$BUILD/tests/throwjob" "$BATS_TEST_TMPDIR/job.ready" \
		"$BATS_TEST_TMPDIR/counts.json" normal 10 >"$BATS_TEST_TMPDIR/l.out" 2>&1 &
	TRACER_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
	kill -USR1 "$(cat "$BATS_TEST_TMPDIR/job.ready")"
	wait_child "$TRACER_PID" 60
	TRACER_PID=
	cat "$BATS_TEST_TMPDIR/l.out"
	[ "$CHILD_RC" -eq 0 ]
	[ "$(trace_count "$BATS_TEST_TMPDIR/l.json" __cxa_throw)" -eq 50 ]
}
