#!/usr/bin/env bats
# IBM's aiu-trace-analyzer (acelyzer) ingests our traces as Kineto/PyTorch ("TORCH" dialect)
# traces without errors, and its categorizer classifies every kind of device event we write.
# Runs only when AIU_TRACE_ANALYZER names a checkout of github.com/IBM/aiu-trace-analyzer
# (v1.0.2, v1.2.0 and its main branch of 2026-05, v1.2.0-4-gb156e40, tested), as
# `make check-analyzer AIU_TRACE_ANALYZER=/path/to/aiu-trace-analyzer` does, or
#   AIU_TRACE_ANALYZER=/path/to/aiu-trace-analyzer bats tests/e2e/analyzer.bats
# (tests/e2e/analyzer-helpers.bash: the Python it needs). The statistics it computes, against
# report's: tests/analyzer/stats.bats.

load helpers
load analyzer-helpers

CHECK_ANA="python3 $ROOT/tests/e2e/check_analyzer.py"

setup_file() {
	analyzer_setup_file
}

setup() {
	BG_PIDS=()
	analyzer_setup
}

# acelyzer IN OUT [OPTIONS]: run the analyzer, output (stdout+stderr) in $BATS_TEST_TMPDIR/ana.log
acelyzer() {
	local in=$1 out=$2
	shift 2
	(cd "$BATS_TEST_TMPDIR" && "$APY" "$ANALYZER/bin/acelyzer.py" -i "$in" -o "$out" "$@") \
		>"$BATS_TEST_TMPDIR/ana.log" 2>&1
}

teardown() {
	local p

	for p in "${BG_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	[ -n "${TRACER_PID:-}" ] && kill -KILL "$TRACER_PID" 2>/dev/null
	[ -n "${JOB_PID:-}" ] && kill -KILL "$JOB_PID" 2>/dev/null
	true
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
	# nothing dropped on the way: zero-length spans or overlaps would be skipped or moved. The
	# analyzer drops the digits of device events' names (embedding_fwd#0 -> embedding_fwd#),
	# keeping the name in args.orig_name
	$CHECK_ANA kept "$t" "$BATS_TEST_TMPDIR/out.json"
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
	python3 "$ROOT/tests/e2e/make_trace.py" negative-ts "$BATS_TEST_TMPDIR/t.json" \
		"$BATS_TEST_TMPDIR/neg.json"
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
	$CHECK_ANA merged "$BATS_TEST_TMPDIR/out.json"
}

# --- arrows of several processes in one file: ids of ours, unique in the file ------------------

# kept_arrows IN OUT [N [PID:K...]]: the analyzer's output OUT has every X event of IN (by its
# original name; v1.2.0 skips zero-length ones, later versions keep them) and IN's ac2g arrows,
# each id still one start and one finish at the same places (so on the same slices), and no
# arrow of its own; with N, IN has N arrows, K of them from PID
kept_arrows() {
	$CHECK_ANA arrows "$@"
}

# arrow_problems: problems_in_log but v1.2.0's warning that it skipped zero-length spans, which
# a window of busy jobs can hold (later versions keep them)
arrow_problems() {
	problems_in_log | grep -v 'with zero duration' || true
}

# bg_job NAME [MOCK OPTIONS]: a job that runs phases until killed (as fleet.bats's); its pid in
# BG_PIDS
bg_job() {
	local name=$1
	shift
	"$MOCK" --quiet --phases 1000000 --ready-file "$BATS_TEST_TMPDIR/$name.ready" "$@" \
		>/dev/null 2>&1 &
	BG_PIDS+=($!)
	wait_for "$BATS_TEST_TMPDIR/$name.ready"
}

@test "the analyzer's --flow keeps every arrow of a fleet window over three jobs, one per id, adds none" {
	bg_job a --iters 20 --bytes 16384
	bg_job b --iters 20 --bytes 32768
	bg_job c --iters 20 --bytes 65536
	# fleet.bats's window: three alike jobs launching at once, ids of ours in one file
	# its first window's file (names sort by time): a window stopped early may follow it
	"$TOOL" -a --sample-every 10 --window 2s --period 4s --output-dir "$BATS_TEST_TMPDIR/out" \
		--prom-file "$BATS_TEST_TMPDIR/spyre.prom" -q >/dev/null \
		2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_windows "$BATS_TEST_TMPDIR/spyre.prom" 1
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	local files=("$BATS_TEST_TMPDIR"/out/*.json.gz) w=$BATS_TEST_TMPDIR/w.json
	[ "${#files[@]}" -ge 1 ]
	gzip -dc "${files[0]}" >"$w"
	python3 "$ROOT/tests/e2e/verify_flows.py" "$w" --bytes "${BG_PIDS[0]}:16384" \
		--bytes "${BG_PIDS[1]}:32768" --bytes "${BG_PIDS[2]}:65536" \
		--min-arrows "${BG_PIDS[0]}:5" --min-arrows "${BG_PIDS[1]}:5" \
		--min-arrows "${BG_PIDS[2]}:5"
	"$TOOL" check "$w"
	acelyzer "$w" "$BATS_TEST_TMPDIR/out.json" --flow ||
		{ cat "$BATS_TEST_TMPDIR/ana.log"; return 1; }
	grep -q 'Return code= 0' "$BATS_TEST_TMPDIR/ana.log"
	run arrow_problems
	echo "$output"
	[ -z "$output" ]
	kept_arrows "$w" "$BATS_TEST_TMPDIR/out.json"
}

# trace_rank N: a fresh mock job (its op ids count from 1) traced for one phase into rN.json
# (as merge.bats's); its pid in RANK_PID
trace_rank() {
	start_job --threads 2 --streams 2 --iters 10 --bytes $((4096 * $1))
	start_tracer -o "$BATS_TEST_TMPDIR/r$1.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	rm -f "$BATS_TEST_TMPDIR/counts.json"
	RANK_PID=$JOB_PID
}

@test "the analyzer's --flow keeps all 300 arrows of three ranks' traces merged, one per id, adds none" {
	local p=() r t=$BATS_TEST_TMPDIR
	for r in 1 2 3; do
		trace_rank $r
		p+=("$RANK_PID")
	done
	run "$TOOL" merge "$t/r2.json" "$t/r1.json" -o "$t/m21.json"
	[ "$status" -eq 0 ]
	run "$TOOL" merge "$t/r3.json" "$t/m21.json" -o "$t/m.json"
	[ "$status" -eq 0 ]
	python3 "$ROOT/tests/e2e/verify_flows.py" "$t/m.json" \
		--bytes "${p[0]}:4096" --bytes "${p[1]}:8192" --bytes "${p[2]}:12288"
	"$TOOL" check "$t/m.json"
	acelyzer "$t/m.json" "$t/out.json" --flow || { cat "$t/ana.log"; return 1; }
	grep -q 'Return code= 0' "$t/ana.log"
	run arrow_problems
	echo "$output"
	[ -z "$output" ]
	# each rank: 2 threads x 10 iterations x (1 HtoD + 3 kernels + 1 DtoH) launches
	kept_arrows "$t/m.json" "$t/out.json" 300 "${p[0]}:100" "${p[1]}:100" "${p[2]}:100"
}
