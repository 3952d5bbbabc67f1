#!/usr/bin/env bats
# IBM's aiu-trace-analyzer (acelyzer) ingests our traces as Kineto/PyTorch ("TORCH" dialect)
# traces without errors, and its categorizer classifies every kind of device event we write.
# Runs only when AIU_TRACE_ANALYZER names a checkout of github.com/IBM/aiu-trace-analyzer
# (v1.0.2 and v1.2.0 tested; it needs python3-numpy and python3-pandas; not installed by
# `make deps`, since the analyzer itself cannot be fetched where CI runs):
#   AIU_TRACE_ANALYZER=/path/to/aiu-trace-analyzer bats tests/e2e/analyzer.bats
# AIU_PYTHON picks the interpreter (default: the first python3 that imports numpy and pandas).
# v1.2.0 needs Python 3.12 for one construct (quotes inside f-string fields); on bookworm's 3.11
# the tests run a copy with only those quotes swapped (tests/e2e/py311_fstrings.py).

load helpers

setup_file() {
	[ -f "${AIU_TRACE_ANALYZER:-/nonexistent}/src/aiu_trace_analyzer/__init__.py" ] || return 0
	local py
	for py in ${AIU_PYTHON:-} python3 /usr/bin/python3; do
		if "$py" -c 'import numpy, pandas' 2>/dev/null; then
			"$py" "$BATS_TEST_DIRNAME/py311_fstrings.py" "$AIU_TRACE_ANALYZER" \
				"$BATS_FILE_TMPDIR/analyzer" >&3
			return
		fi
	done
}

setup() {
	if [ -z "${AIU_TRACE_ANALYZER:-}" ]; then
		skip "AIU_TRACE_ANALYZER is not set (point it at an aiu-trace-analyzer checkout)"
	fi
	if [ ! -f "$AIU_TRACE_ANALYZER/src/aiu_trace_analyzer/__init__.py" ]; then
		skip "AIU_TRACE_ANALYZER=$AIU_TRACE_ANALYZER is not an aiu-trace-analyzer checkout"
	fi
	APY=
	for py in ${AIU_PYTHON:-} python3 /usr/bin/python3; do
		if "$py" -c 'import numpy, pandas' 2>/dev/null; then
			APY=$py
			break
		fi
	done
	[ -n "$APY" ] || skip "no python3 with numpy and pandas (apt install python3-numpy python3-pandas)"
	ANALYZER=$BATS_FILE_TMPDIR/analyzer
	export PYTHONPATH="$ANALYZER/src${PYTHONPATH:+:$PYTHONPATH}"
}

# acelyzer IN OUT [OPTIONS]: run the analyzer, output (stdout+stderr) in $BATS_TEST_TMPDIR/ana.log
acelyzer() {
	local in=$1 out=$2
	shift 2
	(cd "$BATS_TEST_TMPDIR" && "$APY" "$ANALYZER/bin/acelyzer.py" -i "$in" -o "$out" "$@") \
		>"$BATS_TEST_TMPDIR/ana.log" 2>&1
}

# problems_in_log: analyzer log lines that are warnings or errors, except the ones that say
# nothing about the input: no compiler log given, and --tb's note that one device has no
# distributed view
problems_in_log() {
	grep -v ' INFO ' "$BATS_TEST_TMPDIR/ana.log" | grep -E 'WARN|ERROR|Error|Traceback|assert' |
		grep -v -e 'no compiler log provided' -e 'no compiler log/inductor' -e 'Only 1 AIU is used' || true
}

trace_mock() {
	start_job --threads 2 --streams 2 --iters 30
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/counts.json" 120
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
}

@test "aiu-trace-analyzer reads a trace of the mock job as TORCH, keeps every event, no warnings" {
	trace_mock
	local t=$BATS_TEST_TMPDIR/t.json
	# the dialect is decided by the analyzer's own ingestion code
	"$APY" - "$t" <<'PY'
import sys
from aiu_trace_analyzer.ingest.ingestion import JsonFileEventTraceIngest
from aiu_trace_analyzer.types import GlobalIngestData
ing = JsonFileEventTraceIngest(sys.argv[1])
name = GlobalIngestData.get_dialect(ing.jobhash).get("NAME")
assert name == "TORCH", name
PY
	for opts in "" "--flow" "--tb" "-O warn"; do
		echo "# acelyzer $opts"
		acelyzer "$t" "$BATS_TEST_TMPDIR/out.json" $opts || { cat "$BATS_TEST_TMPDIR/ana.log"; return 1; }
		run problems_in_log
		echo "$output"
		[ -z "$output" ]
	done
	acelyzer "$t" "$BATS_TEST_TMPDIR/out.json"
	grep -q 'Return code= 0' "$BATS_TEST_TMPDIR/ana.log"
	# nothing dropped on the way: zero-length spans or overlaps would be skipped or moved
	python3 - "$t" "$BATS_TEST_TMPDIR/out.json" <<'PY'
import collections, json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
count = lambda d, ph: collections.Counter((e["ph"], e.get("cat"), e["name"], e["pid"], e["tid"])
                                          for e in d["traceEvents"] if e["ph"] in ph)
ca, cb = count(a, "X"), count(b, "X")
assert ca == cb, {k: (ca[k], cb[k]) for k in set(ca) | set(cb) if ca[k] != cb[k]}
# flow arrows: ours are kept (more, never fewer). v1.2 adds its own for each kernel whose
# args.correlation equals an 's' id; our ids never equal a correlation (device.h), so it adds none
fa, fb = count(a, "sf"), count(b, "sf")
assert all(fb[k] >= v for k, v in fa.items()), {k: (v, fb[k]) for k, v in fa.items() if fb[k] < v}
assert sum(v for k, v in cb.items() if k[1] == "kernel") > 0
assert len(b["deviceProperties"]) == 1, b["deviceProperties"]
PY
}

@test "the analyzer's categorizer classifies every kind of device event, runtime calls by name" {
	"$APY" -c 'import aiu_trace_analyzer.pipeline.categorize' 2>/dev/null ||
		skip "this analyzer version has no event categorizer (added after v1.0.2)"
	trace_mock
	"$APY" - "$BATS_TEST_TMPDIR/t.json" <<'PY'
import collections, sys
from aiu_trace_analyzer.ingest.ingestion import JsonFileEventTraceIngest
from aiu_trace_analyzer.pipeline.categorize import EventCategorizerContext
from aiu_trace_analyzer.pipeline.tools import PipelineContextTool as pct
ctx = EventCategorizerContext()
classes = collections.defaultdict(collections.Counter)
acc = collections.Counter()
names = collections.Counter()
for ev in JsonFileEventTraceIngest(sys.argv[1]):
    if ev.get("ph") != "X":
        continue
    names[ev["name"]] += 1
    classes[ev["cat"]][str(ctx.classify_event(ev))] += 1
    acc[ev["cat"], pct.is_acc_event(ev)] += 1
    for name, category in (("aiuMalloc", "acc_malloc"),
                           ("aiuLaunchComputeStream", "acc_launch_compute_stream"),
                           ("aiuScheduleWait", "acc_schedule_wait")):
        assert (ev["name"] == name) == pct.is_category(ev, category), (ev["name"], category)
for name in ("aiuMalloc", "aiuLaunchComputeStream", "aiuScheduleWait"):
    assert names[name] > 0, name
# every device event in its class: compute kernels, copies in and out, nothing left as OTHER
dev = {cat: dict(c) for cat, c in classes.items() if cat in ("kernel", "gpu_memcpy")}
print(dev)
assert set(dev["kernel"]) == {"COMPUTE_EXEC"}, dev
assert set(dev["gpu_memcpy"]) == {"DATA_IN", "DATA_OUT"}, dev
assert names["Memcpy (HtoD)"] == dev["gpu_memcpy"]["DATA_IN"], names
assert names["Memcpy (DtoH)"] == dev["gpu_memcpy"]["DATA_OUT"], names
# device events count as accelerator events, host runtime calls do not
assert acc["kernel", False] == acc["gpu_memcpy", False] == 0, acc
assert acc["privateuse1_runtime", True] == 0, acc
PY
}

@test "what check rejects, the analyzer fails on: an X event before ts 0" {
	trace_mock
	python3 - "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/neg.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
x = next(e for e in d["traceEvents"] if e["ph"] == "X" and e["cat"] == "privateuse1_runtime")
x["ts"] = -5.0
json.dump(d, open(sys.argv[2], "w"))
PY
	run "$TOOL" check "$BATS_TEST_TMPDIR/neg.json"
	[ "$status" -eq 8 ]
	[[ "$output" == *"[negative-ts]"* ]]
	run acelyzer "$BATS_TEST_TMPDIR/neg.json" "$BATS_TEST_TMPDIR/out.json"
	[ "$status" -ne 0 ]
	grep -q AssertionError "$BATS_TEST_TMPDIR/ana.log"
}

@test "aiu-trace-analyzer reads a merged trace (ours + a Kineto trace) without errors" {
	local fx=$ROOT/tests/fixtures/traces
	run "$TOOL" merge "$fx/spyre-sample.json" "$fx/kineto-sample.json" -o "$BATS_TEST_TMPDIR/m.json"
	[ "$status" -eq 0 ]
	acelyzer "$BATS_TEST_TMPDIR/m.json" "$BATS_TEST_TMPDIR/out.json" --flow ||
		{ cat "$BATS_TEST_TMPDIR/ana.log"; return 1; }
	run problems_in_log
	echo "$output"
	[ -z "$output" ]
	python3 - "$BATS_TEST_TMPDIR/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = {e["name"] for e in d["traceEvents"]}
# both sides made it through: Kineto's python ops and our runtime and device spans
assert {"aten::linear", "aiuLaunchComputeStream", "embedding_fwd#0"} <= names, names
assert len(d["deviceProperties"]) == 1
PY
}
