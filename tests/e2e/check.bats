#!/usr/bin/env bats
# check and recover, end to end: a real trace of the mock job is clean, and a trace whose
# tracer was SIGKILLed can be closed and then passes check.

load helpers

@test "a trace of the mock job passes check" {
	start_job --phases 2 --threads 3 --streams 2 --iters 40
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase 1
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"t.json: "*" events, 0 problems"* ]]
	# and check does find problems: the same trace with a B event added
	sed 's/"ph":"X"/"ph":"B"/' "$BATS_TEST_TMPDIR/t.json" > "$BATS_TEST_TMPDIR/bad.json"
	run "$TOOL" check "$BATS_TEST_TMPDIR/bad.json"
	[ "$status" -eq 8 ]
	[[ "$output" == *"[bad-ph]"* ]]
}

@test "a trace cut by SIGKILL is recovered, passes check and json.load, keeps its names; the job lives on" {
	start_job --threads 2 --streams 2 --iters 15000
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	kill -USR1 "$JOB_PID"	# phase 1 runs for seconds; kill the tracer in the middle of it
	local deadline=$((SECONDS + 60))
	while [ "$(stat -c %s "$BATS_TEST_TMPDIR/t.json")" -lt 600000 ]; do
		[ $SECONDS -lt $deadline ] || { echo "trace did not grow" >&2; return 1; }
		sleep 0.05
	done
	stop_tracer KILL
	[ "$TRACER_RC" -eq 137 ]
	[ ! -e "$BATS_TEST_TMPDIR/counts.json" ]	# really mid-phase
	# the cut file is not JSON yet: check says so and points at recover
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 1 ]
	[[ "$output" == *"recover"* ]]

	run "$TOOL" recover "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"wrote $BATS_TEST_TMPDIR/t.recovered.json ("*" events kept, "*" bytes dropped)"* ]]
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.recovered.json"
	echo "$output"
	[ "$status" -eq 0 ]
	python3 - "$BATS_TEST_TMPDIR/t.recovered.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["spyreRecovered"] is True
assert sum(1 for e in d["traceEvents"] if e["ph"] == "X") > 1000, len(d["traceEvents"])
# names are written when first known, not at the end: every track of the cut trace has one
pn = {e["pid"]: e["args"]["name"] for e in d["traceEvents"]
      if e["ph"] == "M" and e["name"] == "process_name"}
tn = {(e["pid"], e["tid"]): e["args"]["name"] for e in d["traceEvents"]
      if e["ph"] == "M" and e["name"] == "thread_name"}
tracks = {(e["pid"], e["tid"]) for e in d["traceEvents"] if e["ph"] == "X"}
missing = sorted(t for t in tracks if t not in tn or t[0] not in pn)
assert not missing, (missing, pn, tn)
assert pn[0] == "Spyre 0", pn
assert sorted(tn[t] for t in tracks if t[0] != 0) == ["train-0", "train-1"], tn
assert {n for (p, t), n in tn.items() if p == 0} >= {"Stream 0", "Stream 1"}, tn
assert any(n.startswith("mock-spyre") for n in pn.values()), pn
PY
	# a second recover refuses to overwrite the copy; recovering the copy finds it complete
	run "$TOOL" recover "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 7 ]
	run "$TOOL" recover "$BATS_TEST_TMPDIR/t.recovered.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"complete"* ]]

	# the job was not hurt: it finishes the phase untraced
	kill -0 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/counts.json" 120
	kill -0 "$JOB_PID"
	stop_job
	[ "$JOB_RC" -eq 0 ]
}
