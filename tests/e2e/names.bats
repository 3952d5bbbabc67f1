#!/usr/bin/env bats
# Display names (issue 15): two functions never share one, in the trace or in the summary.

load helpers

LIB=$BUILD/tests/libfixture.so

@test "one library mapped from two files: each copy's events and summary row say which file" {
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
	python3 - "$BATS_TEST_TMPDIR" <<'PY'
import collections, json, re, sys
d = sys.argv[1]
t = json.load(open(f"{d}/t.json"))
probes = {p["name"]: p for p in t["spyreProbes"]}
assert len(probes) == 2 == len(t["spyreProbes"]), probes.keys()
want = {f"{d}/a/libfixture.so": 3, f"{d}/b/libfixture.so": 5}
events = collections.Counter(e["name"] for e in t["traceEvents"] if e["ph"] == "X")
plain = probes["fixture_c_entry"]
other = next(p for n, p in probes.items() if n != "fixture_c_entry")
# the second copy resolved names its file; the first keeps the plain name
assert other["name"] == f"fixture_c_entry ({other['library']})", other
assert other["sharedName"] == "fixture_c_entry" and "sharedName" not in plain
assert {plain["library"], other["library"]} == set(want)
for p in (plain, other):
    assert p["events"] == events[p["name"]] == want[p["library"]], (p, events)
# the summary: one row each, with its count, and the renamed one explained
rows = {}
for line in open(f"{d}/tracer.out"):
    m = re.match(r"(fixture_c_entry.*?)\s+(\d+)\s+\S+\s+\S+\s+\S+\s+\S+$", line.rstrip())
    if m:
        rows[m.group(1)] = int(m.group(2))
assert rows == {p["name"]: want[p["library"]] for p in (plain, other)}, rows
summary = open(f"{d}/tracer.out").read()
assert (f"renamed: {other['name']} is fixture_c_entry in {other['library']} "
        f"(fixture_c_entry is fixture_c_entry in {plain['library']})") in summary, summary
PY
}
