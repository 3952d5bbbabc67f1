#!/usr/bin/env bats
# IBM's aiu-trace-analyzer (acelyzer) ingests our traces as Kineto/PyTorch ("TORCH" dialect)
# traces without errors. Runs only when AIU_TRACE_ANALYZER names a checkout of
# github.com/IBM/aiu-trace-analyzer (v1.0.2 tested; it needs python3-numpy and python3-pandas):
#   AIU_TRACE_ANALYZER=/path/to/aiu-trace-analyzer bats tests/e2e/analyzer.bats
# AIU_PYTHON picks the interpreter (default: the first python3 that imports numpy and pandas).

load helpers

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
	export PYTHONPATH="$AIU_TRACE_ANALYZER/src${PYTHONPATH:+:$PYTHONPATH}"
}

# acelyzer IN OUT [OPTIONS]: run the analyzer, output (stdout+stderr) in $BATS_TEST_TMPDIR/ana.log
acelyzer() {
	local in=$1 out=$2
	shift 2
	(cd "$BATS_TEST_TMPDIR" && "$APY" "$AIU_TRACE_ANALYZER/bin/acelyzer.py" -i "$in" -o "$out" "$@") \
		>"$BATS_TEST_TMPDIR/ana.log" 2>&1
}

# problems_in_log: analyzer log lines that are warnings or errors, except the ones that say
# nothing about the input: no compiler log given, and --tb's note that one device has no
# distributed view
problems_in_log() {
	grep -v ' INFO ' "$BATS_TEST_TMPDIR/ana.log" | grep -E 'WARN|ERROR|Error|Traceback|assert' |
		grep -v -e 'no compiler log provided' -e 'Only 1 AIU is used' || true
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
count = lambda d: collections.Counter((e["ph"], e.get("cat"), e["name"], e["pid"], e["tid"])
                                      for e in d["traceEvents"] if e["ph"] in "Xsf")
ca, cb = count(a), count(b)
assert ca == cb, {k: (ca[k], cb[k]) for k in set(ca) | set(cb) if ca[k] != cb[k]}
assert sum(v for k, v in cb.items() if k[1] == "kernel") > 0
assert len(b["deviceProperties"]) == 1, b["deviceProperties"]
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
assert {"aten::linear", "aiuLaunchControlBlocks", "Spyre compute"} <= names, names
assert len(d["deviceProperties"]) == 1
PY
}
