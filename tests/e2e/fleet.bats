#!/usr/bin/env bats
# Fleet mode: system-wide tracing, sampling, duty-cycle windows, rotation, Prometheus output.

load helpers

CHECK_FLEET="python3 $ROOT/tests/e2e/check_fleet.py"

setup() {
	OUT=$BATS_TEST_TMPDIR/out
	EXTRA_PIDS=()
}

teardown() {
	for p in "${EXTRA_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	[ -n "${TRACER_PID:-}" ] && kill -KILL "$TRACER_PID" 2>/dev/null
	[ -n "${JOB_PID:-}" ] && kill -KILL "$JOB_PID" 2>/dev/null
	true
}

# bg_job NAME [MOCK OPTIONS]: a job that runs phases until killed; its pid in EXTRA_PIDS
bg_job() {
	local name=$1
	shift
	"$MOCK" --quiet --phases 1000000 --ready-file "$BATS_TEST_TMPDIR/$name.ready" "$@" \
		>/dev/null 2>&1 &
	EXTRA_PIDS+=($!)
	wait_for "$BATS_TEST_TMPDIR/$name.ready"
}

# sites_armed all|none: whether all (or none) of list.txt's probe sites in JOB_PID hold a
# breakpoint now; ARMED and TOTAL
sites_armed() {
	read -r ARMED TOTAL < <(python3 "$ROOT/tests/e2e/probe_sites.py" "$JOB_PID" \
		< "$BATS_TEST_TMPDIR/list.txt")
	if [ "$1" = all ]; then [ "$ARMED" -eq "$TOTAL" ]; else [ "$ARMED" -eq 0 ]; fi
}

# a prometheus parser from Debian (python3-prometheus-client), not whatever python3 is first
PYPROM=/usr/bin/python3

@test "system-wide: several jobs and one started later are all traced, each named" {
	bg_job a --iters 20
	bg_job b --iters 20
	"$TOOL" -a -o "$BATS_TEST_TMPDIR/t.json" --ready-file "$BATS_TEST_TMPDIR/tr.ready" -q \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_for "$BATS_TEST_TMPDIR/tr.ready"
	# a job started after the tracer: traced too (uprobes on the library file apply to
	# every process that maps it; the rescan names it)
	"$MOCK" --quiet --phases 1000000 --iters 20 --counts "$BATS_TEST_TMPDIR/late.json" \
		>/dev/null 2>&1 &
	EXTRA_PIDS+=($!)
	wait_for "$BATS_TEST_TMPDIR/late.json.3" 60	# three whole phases under tracing
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	$CHECK_FLEET system-wide "$BATS_TEST_TMPDIR/t.json" "${EXTRA_PIDS[@]}"
	"$TOOL" check "$BATS_TEST_TMPDIR/t.json"
}

@test "--sample-every N records 1 in N calls, and the trace says so" {
	start_job --iters 4000 --kernels 3 --compute-us 0 --bytes 256
	start_tracer --sample-every 10 -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	$CHECK_FLEET sampled "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" 10
	grep -q '"sampleEvery":10' "$BATS_TEST_TMPDIR/t.json"
}

@test "--rate-cap limits the events per process" {
	start_job --iters 2000 --kernels 2 --compute-us 0 --bytes 64 --threads 2
	# from before the tracer attached until it stopped: every event it could record falls in
	# there (bash's SECONDS counts whole seconds and undercounted a 2 s phase as 1)
	t0=$(date +%s%N)
	start_tracer --rate-cap 2000 -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	elapsed=$(( $(date +%s%N) - t0 ))
	$CHECK_FLEET rate-cap "$BATS_TEST_TMPDIR/t.json" "$elapsed" 2000
	# what the cap left out is counted, per probe: events + dropsRateCap (+ any other loss) ==
	# the job's calls, exactly
	lost_once "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
}

@test "windows: probes attached only inside windows, one rotated file each, disk bound" {
	start_job --iters 50 --phases 1000000
	kill -USR1 "$JOB_PID"	# start a phase; with --wait-go the job waits for the next go after it
	# the job's probe sites (entries and return sites; the unwinder's, in libgcc_s, only
	# where the kernel allows the unwind guard), listed before the window opens
	"$TOOL" list -v -p "$JOB_PID" | grep -v ' _Unwind_' > "$BATS_TEST_TMPDIR/list.txt"
	"$TOOL" -a --window 2s --period 5s --output-dir "$OUT" --max-files 2 \
		--prom-file "$BATS_TEST_TMPDIR/spyre.prom" -q --ready-file "$BATS_TEST_TMPDIR/tr.ready" \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_for "$BATS_TEST_TMPDIR/tr.ready"
	# inside a window every probe site of the job holds a breakpoint, between windows none
	# does. Each is looked for until a look falls inside a window (between two): single looks
	# failed on a loaded machine, where one took most of a 1 s window (14 of 40 armed: the
	# window closed meanwhile), one came after a 2 s window (0 of 138) and one after the
	# next window had opened (40 of 40)
	wait_until 120 sites_armed all
	echo "armed $ARMED of $TOTAL probe sites"
	[ "$TOTAL" -gt 5 ]
	wait_for "$BATS_TEST_TMPDIR/spyre.prom" 120	# a window has closed
	wait_until 120 sites_armed none
	# four windows later, rotation has kept two files
	wait_windows "$BATS_TEST_TMPDIR/spyre.prom" 4
	[ "$(ls "$OUT" | wc -l)" -le 2 ]
	stop_tracer TERM
	[ "$TRACER_RC" -eq 0 ]
	for f in "$OUT"/*.json.gz; do "$TOOL" check "$f"; done
	[ "$(ls "$OUT" | wc -l)" -le 2 ]
}

@test "a window's length is traced time, its attach and detach are told; -d keeps whole windows" {
	start_job --iters 50 --phases 1000000
	kill -USR1 "$JOB_PID"
	# windows at 0, 2 and 4 s; one at 6 s would be cut at 6.5 s: not begun
	"$TOOL" -p "$JOB_PID" --window 1s --period 2s -d 6.5 --output-dir "$OUT" -v \
		--prom-file "$BATS_TEST_TMPDIR/spyre.prom" \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err"
	grep -E "window [0-9]+: attach [0-9.]+ ms, traced [0-9.]+ s, detach [0-9.]+ ms" \
		"$BATS_TEST_TMPDIR/tracer.err"
	[ "$(grep -Ec "window [0-9]+: attach" "$BATS_TEST_TMPDIR/tracer.err")" -eq 3 ]
	[ "$(ls "$OUT" | wc -l)" -eq 3 ]
	$CHECK_FLEET window-times "$BATS_TEST_TMPDIR/spyre.prom" "$BATS_TEST_TMPDIR/tracer.err"
	stop_job
}

@test "--max-overhead in fleet mode holds each window's cost: paused inside it, its figure within" {
	# two jobs at the mock's every-probe cost (~+260 % traced all the time): each window is
	# paused once its jobs' extra CPU time is over 20 % of what they used untraced. Sampled:
	# the jobs are weighed from the window's attach, not from an event that comes late
	bg_job a
	bg_job b
	"$TOOL" -a --sample-every 100 --window 3s --period 3s --max-overhead 20 --output-dir "$OUT" -v \
		--prom-file "$BATS_TEST_TMPDIR/spyre.prom" \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_windows "$BATS_TEST_TMPDIR/spyre.prom" 2
	stop_tracer INT
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$TRACER_RC" -eq 0 ]
	grep -Eq "window 1: attach [0-9.]+ ms, traced [0-9.]+ s, detach [0-9.]+ ms; paused [0-9.]+ s in [0-9]+ windows? \(--max-overhead 20%\)" \
		"$BATS_TEST_TMPDIR/tracer.err"
	local files=("$OUT"/*.json.gz)
	[ "${#files[@]}" -ge 2 ]
	# the two whole windows (a third one cut by the stop may be over: its first 200 ms are)
	for f in "${files[0]}" "${files[1]}"; do
		"$TOOL" check "$f"
		python3 "$ROOT/tests/e2e/check_budget.py" --fleet --paused --device --max-pct 25 "$f"
	done
	# -a has no target process: no targetPid (it read 2^64 - 1)
	$CHECK_FLEET no-target-pid "${files[0]}"
	# a window's traced time (as spyre_window_duration_seconds) leaves the pauses out
	local traced
	for w in 1 2; do
		traced=$(sed -En "s/.*window $w: attach [0-9.]+ ms, traced ([0-9.]+) s.*/\1/p" \
			"$BATS_TEST_TMPDIR/tracer.err")
		awk -v t="$traced" 'BEGIN { exit !(t > 0 && t < 2.5) }'
	done
}

# tracer_nice N: the tracer's main thread runs at nice N now
tracer_nice() {
	[ "$(awk '{ print $19 }' "/proc/$TRACER_PID/task/$TRACER_PID/stat")" = "$1" ]
}

@test "inside a window the tracer runs at nice -10, at its own nice between windows" {
	# a late tracer keeps the jobs' probes on longer (fleet.c): on a saturated node at nice 5 a
	# "2 s" window traced 38.7 s
	bg_job a
	nice -n 5 "$TOOL" -a --window 1s --period 3s --output-dir "$OUT" -q \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_until 60 tracer_nice -10
	wait_until 60 tracer_nice 5
	wait_until 60 tracer_nice -10
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	! grep -q "cannot raise the tracer's priority" "$BATS_TEST_TMPDIR/tracer.err"
}

@test "fleet windows over three jobs: one arrow per id, each from its job's launch to its job's span" {
	# alike jobs launch alike, at once: their launches carry no op id (void, as flex's), and
	# the tracer gives each one its own (args.correlation), never the id of another job's
	# launch in the same file. Each copies its own byte count, so a span of the wrong job is
	# seen
	bg_job a --iters 20 --bytes 16384
	bg_job b --iters 20 --bytes 32768
	bg_job c --iters 20 --bytes 65536
	# the first window's file (names sort by time): a window stopped early may follow it
	"$TOOL" -a --sample-every 10 --window 2s --period 4s --output-dir "$OUT" -q \
		--prom-file "$BATS_TEST_TMPDIR/spyre.prom" \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_windows "$BATS_TEST_TMPDIR/spyre.prom" 1
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	local files=("$OUT"/*.json*)
	[ "${#files[@]}" -ge 1 ]
	gzip -dc "${files[0]}" >"$BATS_TEST_TMPDIR/w.json" 2>/dev/null ||
		cp "${files[0]}" "$BATS_TEST_TMPDIR/w.json"
	$CHECK_FLEET job-ids "$BATS_TEST_TMPDIR/w.json" "${EXTRA_PIDS[@]}"
	python3 "$ROOT/tests/e2e/verify_flows.py" "$BATS_TEST_TMPDIR/w.json" \
		--bytes "${EXTRA_PIDS[0]}:16384" --bytes "${EXTRA_PIDS[1]}:32768" \
		--bytes "${EXTRA_PIDS[2]}:65536" --min-arrows "${EXTRA_PIDS[0]}:5" \
		--min-arrows "${EXTRA_PIDS[1]}:5" --min-arrows "${EXTRA_PIDS[2]}:5"
	"$TOOL" check "${files[0]}"
}

@test "with -v each window says what the output directory holds after rotation" {
	bg_job v --iters 20
	"$TOOL" -a --window 1s --period 1s --output-dir "$OUT" --max-files 1 -v -q \
		--prom-file "$BATS_TEST_TMPDIR/spyre.prom" >/dev/null \
		2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_windows "$BATS_TEST_TMPDIR/spyre.prom" 2
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	grep -E "holds [0-9]+ trace files?, [0-9]+ bytes" "$BATS_TEST_TMPDIR/tracer.err"
	# the last one is what is left: one file, its size
	last=$(grep -E "holds [0-9]+ trace files?," "$BATS_TEST_TMPDIR/tracer.err" | tail -n 1)
	size=$(stat -c %s "$OUT"/*)
	echo "$last; on disk: $size"
	[[ "$last" == *"$OUT holds 1 trace file, $size bytes ("* ]]
	# two windows or more: the earlier files were deleted on the way
	grep -Eq "holds 1 trace file, [0-9]+ bytes \([1-9][0-9]* deleted\)" "$BATS_TEST_TMPDIR/tracer.err"
}

@test "the Prometheus textfile parses and has per-job, per-function series" {
	[ -x "$PYPROM" ] && "$PYPROM" -c 'import prometheus_client' || skip "python3-prometheus-client missing"
	bg_job p --iters 20
	"$TOOL" -a --window 1s --period 1s --output-dir "$OUT" --prom-file "$BATS_TEST_TMPDIR/spyre.prom" \
		-q >/dev/null 2>&1 &
	TRACER_PID=$!
	wait_windows "$BATS_TEST_TMPDIR/spyre.prom" 2
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	"$PYPROM" - "$BATS_TEST_TMPDIR/spyre.prom" "${EXTRA_PIDS[0]}" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
pid = sys.argv[2]
calls = [s for s in fams["spyre_calls"].samples if s.labels.get("pid") == pid]
assert calls, fams["spyre_calls"].samples[:3]
funcs = {s.labels["function"] for s in calls}
assert {"aiuMalloc", "aiuLaunchComputeStream"} <= funcs, funcs
assert all(s.labels.get("comm") == "mock-spyre-job" for s in calls), open(sys.argv[1]).read()[:3000]
assert fams["spyre_windows"].samples[0].value >= 2
PY
	# the run's counts: each window's summary line summed (output/facts.c renders both), as the
	# windows' traces say them
	$CHECK_FLEET prom-counts "$BATS_TEST_TMPDIR/spyre.prom" "$OUT"
}
