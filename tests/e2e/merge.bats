#!/usr/bin/env bats
# merge, end to end: a trace of the mock job and a Kineto-style trace of the same run, written
# with real CLOCK_REALTIME stamps taken around the traced phase, line up in the merged file.

load helpers

# kineto_trace OUT PID BEFORE_NS AFTER_NS: what the PyTorch profiler would have written for a
# ProfilerStep spanning [BEFORE, AFTER], with its own device 0 (a kernel and its arrow)
kineto_trace() {
	python3 - "$@" <<'PY'
import json, sys
out, pid, before, after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
trimester = 7889238 * 10**9          # Kineto floors its base to 3-month intervals
base = before // trimester * trimester
us = lambda ns: round((ns - base) / 1000, 3)
ev = [
    {"name": "process_name", "ph": "M", "ts": us(before), "pid": pid, "tid": 0,
     "args": {"name": "python3"}},
    {"name": "process_name", "ph": "M", "ts": us(before), "pid": 0, "tid": 0,
     "args": {"name": "Spyre 0"}},
    {"name": "thread_name", "ph": "M", "ts": us(before), "pid": 0, "tid": 7,
     "args": {"name": "stream 7"}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": pid, "tid": pid,
     "ts": us(before), "dur": round((after - before) / 1000, 3), "args": {"External id": 1}},
    {"ph": "X", "cat": "privateuse1_runtime", "name": "aiuLaunchComputeStream", "pid": pid,
     "tid": pid, "ts": us(before) + 1, "dur": 2.0, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "Kernel", "pid": 0, "tid": 7, "ts": us(before) + 4,
     "dur": 3.0, "args": {"correlation": 1, "device": 0, "stream": 7}},
    {"ph": "s", "id": 1, "pid": pid, "tid": pid, "ts": us(before) + 1, "cat": "ac2g",
     "name": "ac2g"},
    {"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": us(before) + 4, "cat": "ac2g",
     "name": "ac2g", "bp": "e"},
]
json.dump({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "IBM Spyre"}],
           "displayTimeUnit": "ms", "baseTimeNanoseconds": base, "traceEvents": ev,
           "traceName": out}, open(out, "w"), indent=1)
PY
}

now_ns() {
	python3 -c 'import time; print(time.time_ns())'
}

@test "merge lines our spans up inside the Kineto step that ran them" {
	start_job --threads 2 --streams 2 --iters 20
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	local before after
	before=$(now_ns)
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/counts.json" 120
	after=$(now_ns)
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	kineto_trace "$BATS_TEST_TMPDIR/k.json" "$JOB_PID" "$before" "$after"

	run "$TOOL" merge "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/k.json" \
		-o "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"our device pid 0 is Kineto's too: now pid 1"* ]]
	[[ "$output" == *"correlation ids clash"* ]]
	python3 - "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/k.json" "$BATS_TEST_TMPDIR/m.json" \
		"$JOB_PID" <<'PY'
import json, sys
t, k, m = (json.load(open(p)) for p in sys.argv[1:4])
pid = int(sys.argv[4])
ns = lambda us: round(us * 1000)
mg = m["spyreMerged"]
assert mg["shiftNs"] == t["spyreTracer"]["realtimeBaseNs"] - k["baseTimeNanoseconds"], mg
assert m["baseTimeNanoseconds"] == k["baseTimeNanoseconds"]
assert m["deviceProperties"] == k["deviceProperties"]
ev = m["traceEvents"]
step = next(e for e in ev if e["name"] == "ProfilerStep#1")
lo, hi = ns(step["ts"]), ns(step["ts"] + step["dur"])
# merge writes Kineto's events first, then ours
ours = [e for e in ev[len(k["traceEvents"]):] if e["ph"] == "X" and e["pid"] == pid]
assert len(ours) > 100, len(ours)
# the phase ran between the two clock reads: so do all our calls (2 ms for clock noise)
slack = 2_000_000
bad = [e for e in ours if ns(e["ts"]) < lo - slack or ns(e["ts"] + e["dur"]) > hi + slack]
assert not bad, (lo, hi, bad[:3])
# relative order is kept exactly: each span moved by the same number of ns
orig = sorted(ns(e["ts"]) for e in t["traceEvents"] if e["ph"] == "X" and e["pid"] == pid)
moved = sorted(ns(e["ts"]) for e in ours)
assert [b - a for a, b in zip(orig, moved)] == [mg["shiftNs"]] * len(orig)
# our device moved off Kineto's device 0; Kineto's kernel stayed
dev = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy")]
assert {e["pid"] for e in dev} == {0, 1}, {e["pid"] for e in dev}
assert [e["name"] for e in dev if e["pid"] == 0] == ["Kernel"]
names = {(e["pid"], e["name"]): e["args"]["name"] for e in ev if e["ph"] == "M"
         and e["name"] == "process_name"}
assert names[(pid, "process_name")] == "python3", names
assert names[(1, "process_name")] == "Spyre 0 (spyre-bpftrace)", names
# arrows still join each launch to its device span after the id shift
launch = {e["args"]["correlation"]: e for e in ours if "correlation" in e.get("args", {})}
flows = {}
for e in ev:
    if e["ph"] in "sf" and e["pid"] in (pid, 1):
        flows.setdefault(e["id"], {})[e["ph"]] = e
for corr, l in launch.items():
    f = flows[corr]
    assert f["s"]["tid"] == l["tid"] and f["f"]["pid"] == 1, (corr, f)
PY
	run "$TOOL" check "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	# usage errors and a refused overwrite
	run "$TOOL" merge "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/k.json"
	[ "$status" -eq 2 ]
	run "$TOOL" merge "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/k.json" \
		-o "$BATS_TEST_TMPDIR/m.json"
	[ "$status" -eq 7 ]
	run "$TOOL" merge "$BATS_TEST_TMPDIR/k.json" "$BATS_TEST_TMPDIR/t.json" \
		-o "$BATS_TEST_TMPDIR/m2.json"
	[ "$status" -eq 1 ]
	[[ "$output" == *"give ours first"* ]]
}
