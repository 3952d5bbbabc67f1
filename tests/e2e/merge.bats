#!/usr/bin/env bats
# merge, end to end: a trace of the mock job and a Kineto-style trace of the same run, written
# with real CLOCK_REALTIME stamps taken around the traced phase, line up in the merged file.

load helpers

# kineto_trace OUT PID BEFORE_NS AFTER_NS [CORR]: what the PyTorch profiler would have written
# for a ProfilerStep spanning [BEFORE, AFTER], with its own device 0 (a kernel and its arrow,
# correlation and arrow id CORR, 1 by default)
kineto_trace() {
	python3 - "$@" <<'PY'
import json, sys
out, pid, before, after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
corr = int(sys.argv[5]) if len(sys.argv) > 5 else 1
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
     "tid": pid, "ts": us(before) + 1, "dur": 2.0, "args": {"correlation": corr}},
    {"ph": "X", "cat": "kernel", "name": "Kernel", "pid": 0, "tid": 7, "ts": us(before) + 4,
     "dur": 3.0, "args": {"correlation": corr, "device": 0, "stream": 7}},
    {"ph": "s", "id": corr, "pid": pid, "tid": pid, "ts": us(before) + 1, "cat": "ac2g",
     "name": "ac2g"},
    {"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": us(before) + 4, "cat": "ac2g",
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
	# Kineto's op has the correlation of our first launch: ours must move off it
	local corr
	corr=$(python3 -c 'import json, sys
print(min(e["args"]["correlation"] for e in json.load(open(sys.argv[1]))["traceEvents"]
          if "correlation" in e.get("args", {})))' "$BATS_TEST_TMPDIR/t.json")
	kineto_trace "$BATS_TEST_TMPDIR/k.json" "$JOB_PID" "$before" "$after" "$corr"

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
PY
	# arrows still join each launch to its device span (ours on pid 1) after the id shift
	n=$(python3 -c 'import json, sys
print(sum(e["ph"] == "X" and e["name"] in ("aiuDataTransferHtoD", "aiuDataTransferDtoH",
          "aiuLaunchComputeStream") for e in json.load(open(sys.argv[1]))["traceEvents"]))' \
		"$BATS_TEST_TMPDIR/t.json")
	python3 "$ROOT/tests/e2e/verify_flows.py" "$BATS_TEST_TMPDIR/m.json" --min-arrows "$JOB_PID:$n"
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

# trace_rank N: a fresh mock job (its op ids count from 1) traced for one phase into rN.json;
# its pid in RANK_PID
trace_rank() {
	# a rank as torchrun starts it: RANK and WORLD_SIZE in its environment (distributedInfo)
	export RANK=$(($1 - 1)) WORLD_SIZE=3
	start_job --threads 2 --streams 2 --iters 10 --bytes $((4096 * $1))
	unset RANK WORLD_SIZE
	start_tracer -o "$BATS_TEST_TMPDIR/r$1.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	rm -f "$BATS_TEST_TMPDIR/counts.json"
	RANK_PID=$JOB_PID
}

@test "merge of two ranks' traces: the same op ids and arrow ids in both, one arrow per id after" {
	trace_rank 1
	local p1=$RANK_PID
	trace_rank 2
	local p2=$RANK_PID
	python3 - "$BATS_TEST_TMPDIR/r1.json" "$BATS_TEST_TMPDIR/r2.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["traceEvents"] for p in sys.argv[1:3])
ids = lambda ev: {e["id"] for e in ev if e["ph"] == "s"}
corr = lambda ev: {e["args"]["correlation"] for e in ev if "correlation" in e.get("args", {})}
# both tracers numbered their launches and arrows from the same base: the ids collide (the
# case under test)
assert len(ids(a) & ids(b)) > 50 and len(corr(a) & corr(b)) > 50
PY
	# the later one first: the other's time base is the merged one's, and an earlier base
	# keeps every ts at or after 0
	run "$TOOL" merge "$BATS_TEST_TMPDIR/r2.json" "$BATS_TEST_TMPDIR/r1.json" \
		-o "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"arrow ids clash"* ]]
	# our correlations move just past the other rank's correlations, not past its arrow ids;
	# our arrow ids just past its arrow ids. Every id stays below 2^53, exact as a double
	python3 - "$BATS_TEST_TMPDIR/r2.json" "$BATS_TEST_TMPDIR/r1.json" \
		"$BATS_TEST_TMPDIR/m.json" <<'PY'
import json, sys
r2, r1, m = (json.load(open(p)) for p in sys.argv[1:4])
corr = lambda d: [e["args"]["correlation"] for e in d["traceEvents"]
                  if "correlation" in e.get("args", {})]
ids = lambda d: [e["id"] for e in d["traceEvents"] if e["ph"] in "sf"]
mg = m["spyreMerged"]
assert mg["correlationOffset"] == max(corr(r1)) + 1 - min(corr(r2)), (mg, max(corr(r1)))
assert mg["flowIdOffset"] == max(ids(r1)) + 1 - min(ids(r2)), (mg, max(ids(r1)))
assert max(corr(m) + ids(m)) < 2**53, max(corr(m) + ids(m))
PY
	# every arrow of both ranks joins its own rank's launch to its own rank's copy
	python3 "$ROOT/tests/e2e/verify_flows.py" "$BATS_TEST_TMPDIR/m.json" \
		--bytes "$p1:4096" --bytes "$p2:8192" --min-arrows "$p1:100" --min-arrows "$p2:100"
	run "$TOOL" check "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "merge of three ranks' traces, two at a time either way: 300 arrows, one per id, each in its own rank" {
	local p=() r
	for r in 1 2 3; do
		trace_rank $r
		p+=("$RANK_PID")
	done
	# merge takes two traces: a third rank onto two merged ranks, and a rank onto two merged
	# ranks given first (the merged trace as ours). The later base first, as above
	local t=$BATS_TEST_TMPDIR
	run "$TOOL" merge "$t/r2.json" "$t/r1.json" -o "$t/m21.json"
	[ "$status" -eq 0 ]
	run "$TOOL" merge "$t/r3.json" "$t/m21.json" -o "$t/m3.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"arrow ids clash"* ]]
	run "$TOOL" merge "$t/r3.json" "$t/r2.json" -o "$t/m32.json"
	[ "$status" -eq 0 ]
	run "$TOOL" merge "$t/m32.json" "$t/r1.json" -o "$t/m3b.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"arrow ids clash"* ]]
	for m in m3 m3b; do
		echo "# $m"
		# each rank: 2 threads x 10 iterations x (1 HtoD + 3 kernels + 1 DtoH) launches, each
		# with its arrow, as in its own trace; its device spans on a device pid of its own
		python3 - "$t/$m.json" "$t/r1.json" "$t/r2.json" "$t/r3.json" "${p[@]}" <<'PY'
import collections, json, sys
m = json.load(open(sys.argv[1]))["traceEvents"]
ranks = [json.load(open(f))["traceEvents"] for f in sys.argv[2:5]]
pids = [int(x) for x in sys.argv[5:8]]
s = [e for e in m if e["ph"] == "s"]
f = [e for e in m if e["ph"] == "f"]
assert len(s) == len(f) == 300, (len(s), len(f))
assert len({e["id"] for e in s}) == len({e["id"] for e in f}) == 300
assert {e["id"] for e in s} == {e["id"] for e in f}
assert max(e["id"] for e in s) < 2**53
n = collections.Counter(e["pid"] for e in s)
assert n == {p: 100 for p in pids}, n
assert all(sum(e["ph"] == "s" for e in r) == 100 for r in ranks)
# the device pid each rank's arrows end on, by id
end = {e["id"]: e["pid"] for e in f}
dev = {p: {end[e["id"]] for e in s if e["pid"] == p} for p in pids}
print("device pids", dev)
assert all(len(d) == 1 for d in dev.values()) and len(set.union(*dev.values())) == 3, dev
corr = [e["args"]["correlation"] for e in m if e["ph"] == "X" and e["pid"] in pids
        and "correlation" in e.get("args", {})]
assert len(corr) == len(set(corr)) == 300, (len(corr), len(set(corr)))
# the three device processes are told apart by name: a moved one names its rank
dname = {e["pid"]: e["args"]["name"] for e in m if e["ph"] == "M" and
         e["name"] == "process_name" and e["pid"] in set.union(*dev.values())}
print("device names", dname)
assert len(set(dname.values())) == 3 and sum("rank" in v for v in dname.values()) == 2, dname
PY
		# and every arrow joins its own rank's launch to its own rank's copy or kernel
		python3 "$ROOT/tests/e2e/verify_flows.py" "$t/$m.json" \
			--bytes "${p[0]}:4096" --bytes "${p[1]}:8192" --bytes "${p[2]}:12288" \
			--min-arrows "${p[0]}:100" --min-arrows "${p[1]}:100" \
			--min-arrows "${p[2]}:100"
		run "$TOOL" check "$t/$m.json"
		echo "$output"
		[ "$status" -eq 0 ]
	done
}

# --- real code: Debian's PyTorch profiles itself (legacy export) while we trace it -------------

TORCH_PY=/usr/bin/python3	# Debian's python with python3-torch, whatever python3 is on PATH
# the ops the profiler records, probed where the dispatcher enters them, named like the profiler
TORCH_OPS=(linear addmm relu mse_loss mm t sum)

# profiled_torch_run: trace tests/e2e/torch_profiled.py by PID while it profiles itself; the
# job's files land in $BATS_TEST_TMPDIR/job (profile.json, job.json), our trace in t.json
profiled_torch_run() {
	"$TORCH_PY" -c 'import torch' 2>/dev/null || skip "no python3-torch for $TORCH_PY"
	local probes=() op
	for op in "${TORCH_OPS[@]}"; do
		probes+=(--probe "libtorch_cpu.so*:at::_ops::$op::call:aten::$op")
	done
	"$TORCH_PY" "$ROOT/tests/e2e/torch_profiled.py" --ready "$BATS_TEST_TMPDIR/job.ready" \
		--go "$BATS_TEST_TMPDIR/job.go" --out "$BATS_TEST_TMPDIR/job" --iters 25 \
		>"$BATS_TEST_TMPDIR/job.out" 2>&1 &
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready" 60
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --no-default "${probes[@]}" "$@"
	touch "$BATS_TEST_TMPDIR/job.go"
	# the tracer ends with its target
	wait_child "$JOB_PID" 120
	JOB_RC=$CHILD_RC
	wait_child "$TRACER_PID" 30
	TRACER_RC=$CHILD_RC
	[ "$JOB_RC" -eq 0 ]
	[ "$TRACER_RC" -eq 0 ]
}

@test "merge with a legacy PyTorch profiler export: refused without its start time, saying what is missing" {
	profiled_torch_run
	run "$TOOL" merge "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/job/profile.json" \
		-o "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"legacy PyTorch export"* ]]
	[[ "$output" == *"--profiler-start NS"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/m.json" ]
}

@test "merge with a legacy PyTorch profiler export: clocks fitted on the shared ops, threads paired, check clean" {
	profiled_torch_run
	local start
	start=$(counts_field "$BATS_TEST_TMPDIR/job/job.json" profilerStartNs)
	# the profiler's own export does not pass check: it rounds ts and dur to whole µs apart
	run "$TOOL" check "$BATS_TEST_TMPDIR/job/profile.json"
	[ "$status" -eq 8 ]
	run "$TOOL" merge "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/job/profile.json" \
		-o "$BATS_TEST_TMPDIR/m.json" --profiler-start "$start"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"fitted on"* ]]
	run "$TOOL" check "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	python3 - "$BATS_TEST_TMPDIR/m.json" "$BATS_TEST_TMPDIR/t.json" \
		"$BATS_TEST_TMPDIR/job/job.json" "${TORCH_OPS[@]}" <<'PY'
import collections, json, sys
m, ours, job = (json.load(open(p)) for p in sys.argv[1:4])
ops = {"aten::" + o for o in sys.argv[4:]}
info = m["spyreMerged"]
fit = info["legacyProfiler"]
print(json.dumps(info))
assert info["kinetoTimestamps"] == "legacy"
# the profiler's "CPU functions" are the job, its thread 1 the job's training thread
assert fit["pid"] == job["pid"], fit
assert fit["threads"] == [{"from": 1, "to": job["tid"]}], fit
# its ts 0 lies after the job's stamp and before enabling returned (~0.5 ms here)
assert job["profilerStartNs"] <= fit["zeroNs"] <= job["profilerEnabledNs"] + 1000, fit
ev = m["traceEvents"]
mine = [e for e in ev if e["ph"] == "X" and e.get("cat") == "privateuse1_runtime"]
theirs = [e for e in ev if e["ph"] == "X" and e.get("cat") != "privateuse1_runtime" and
          e["name"] in ops]
n_ours = sum(1 for e in ours["traceEvents"] if e["ph"] == "X")
assert len(mine) == n_ours > 0, (len(mine), n_ours)
# the profiler's spans of those ops voted for the fit (25 iterations stay under the 4000
# that vote), and every op of ours holds the profiler's span of the same op (same thread)
assert fit["consideredOps"] < 4000, fit
assert fit["fittedOps"] >= 0.95 * n_ours, (fit, n_ours)
by_name = collections.defaultdict(list)
for e in theirs:
    by_name[e["name"], e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
inside = 0
# judged to the legacy export's precision: its ts and dur are whole µs, so its span of an op
# can start up to 1 µs before the op did; an op shorter than that (aten::t, ~1 µs) then begins
# a few ns inside the profiler's span (1 of ~450 ops in ~1 run of 10, old builds too)
for e in mine:
    a, b = e["ts"], e["ts"] + e["dur"]
    ok = any(a <= s + 1 and t <= b + 1 for s, t in by_name[e["name"], e["tid"]])
    inside += ok
    if not ok:
        print("not inside:", e, min(by_name[e["name"], e["tid"]], key=lambda st: abs(st[0] - a)))
assert inside == len(mine), (inside, len(mine))
# per iteration as the model implies: two Linear layers -> two aten::linear and aten::addmm
iters = job["iters"]
count = collections.Counter(e["name"] for e in mine)
assert count["aten::linear"] == count["aten::addmm"] == 2 * iters, count
assert count["aten::mse_loss"] == iters, count
# nothing of ours had to go to a track of its own
assert info["nesting"]["ownTracks"] == 0, info
PY
}

@test "merge with a legacy PyTorch profiler export of a --python trace: our python_function spans kept, check clean" {
	profiled_torch_run --python
	local start
	start=$(counts_field "$BATS_TEST_TMPDIR/job/job.json" profilerStartNs)
	run "$TOOL" merge "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/job/profile.json" \
		-o "$BATS_TEST_TMPDIR/m.json" --profiler-start "$start"
	echo "$output"
	[ "$status" -eq 0 ]
	run "$TOOL" check "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	python3 - "$BATS_TEST_TMPDIR/m.json" "$BATS_TEST_TMPDIR/t.json" <<'PY'
import json, sys
m, ours = (json.load(open(p)) for p in sys.argv[1:3])
py = lambda d: [e for e in d["traceEvents"] if e["ph"] == "X" and e.get("cat") == "python_function"]
n = ours["spyreStats"]["pythonFunctionSpans"]
print("python_function spans: ours %d, merged %d" % (n, len(py(m))))
# every one of ours in the merged trace, each frame of the training loop among them
assert n > 0 and len(py(ours)) == n == len(py(m)), (n, len(py(ours)), len(py(m)))
assert any("torch_profiled.py(" in e["name"] for e in py(m)), [e["name"] for e in py(m)][:5]
PY
}

# shifted IN OUT NS: our trace IN with its clock anchors NS later (as if traced then)
shifted() {
	python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ns = int(sys.argv[3])
d["baseTimeNanoseconds"] += ns
d["spyreTracer"]["realtimeBaseNs"] += ns
json.dump(d, open(sys.argv[2], "w"))
PY
}

@test "merge of traces 29 days apart is refused either way round, saying how far apart" {
	local s=$ROOT/tests/fixtures/traces/spyre-sample.json l=$BATS_TEST_TMPDIR/later.json
	shifted "$s" "$l" $((29 * 86400 * 10**9))
	run "$TOOL" merge "$l" "$s" -o "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"the traces are 29.0 days apart (ours after the other's): not one run"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/m.json" ]
	run "$TOOL" merge "$s" "$l" -o "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"29.0 days apart (ours before the other's)"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/m.json" ]
}

@test "merge of two of our traces names the second as ours; -o is required, says its help; -o DIR" {
	local s=$ROOT/tests/fixtures/traces/spyre-sample.json l=$BATS_TEST_TMPDIR/later.json
	shifted "$s" "$l" 1000000000
	run "$TOOL" merge "$l" "$s" -o "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"wrote $BATS_TEST_TMPDIR/m.json (22 + 16 spyre-bpftrace events, the second"* ]]
	[[ "$output" == *"trace's first); the first trace's moved by +1.000000 s onto the second's"* ]]
	[[ "$output" == *"our correlation ids clash with the second trace's"* ]]
	[[ "$output" != *Kineto* ]]
	run "$TOOL" check "$BATS_TEST_TMPDIR/m.json"
	[ "$status" -eq 0 ]

	run "$TOOL" merge --help
	[[ "$output" == *"merge: the merged trace (required)"* ]]
	run "$TOOL" merge "$l" "$s"
	[ "$status" -eq 2 ]

	mkdir "$BATS_TEST_TMPDIR/dir"
	run "$TOOL" merge "$l" "$s" -o "$BATS_TEST_TMPDIR/dir" --force
	echo "$output"
	[ "$status" -eq 7 ]
	[[ "$output" == *"dir: Is a directory (-o names the file to write, not its directory)"* ]]
}

@test "merge of a trace over 2 GiB in bounded memory: max RSS under an eighth of its size, every event written" {
	# the sample's events again and again, each copy later in time, spans padded to 4 KB;
	# gzip -1 on disk (22 MB): merge reads each input twice, so not from a pipe
	local d=$BATS_TEST_TMPDIR
	python3 "$ROOT/tests/e2e/big_trace.py" "$ROOT/tests/fixtures/traces/spyre-sample.json" \
		2.2e9 --pad 4000 --count "$d/count" | gzip -1 >"$d/big.json.gz"
	python3 - "$TOOL" "$d" "$ROOT/tests/fixtures/traces/kineto-sample.json" <<'PY'
import resource, subprocess, sys
tool, d, kineto = sys.argv[1:4]
size = 2_200_000_000   # past 2 GiB, which merge refused to load
out = subprocess.run([tool, "merge", d + "/big.json.gz", kineto, "-o", d + "/m.json.gz"],
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
n = int(open(d + "/count").read())
print(out.stdout, "max RSS %.0f MB for %.0f MB" % (rss / 1e6, size / 1e6))
assert out.returncode == 0, out.returncode
assert n > 500_000, n
# every event of both: ours less the 4 track names the Kineto sample names itself
assert "(21 Kineto + %d spyre-bpftrace events)" % (n - 4) in out.stdout, (out.stdout, n)
assert rss < size / 8, rss
PY
	# every event there, and no problem but the Kineto sample's own (its marker's pid "")
	run "$TOOL" check "$d/m.json.gz"
	echo "$output"
	[[ "$output" == *": $(( $(cat "$d/count") - 4 + 21 )) events, 2 problems"* ]]
	[ "$(grep -c "(Record Window End, pid , tid , .*\[bad-pid-tid\]" <<<"$output")" -eq 2 ]
}
