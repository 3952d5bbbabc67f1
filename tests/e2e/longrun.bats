#!/usr/bin/env bats
# A day on a real job (issue 37): every trace file bounded (--max-size), the run going on in
# numbered files (--switch-output), SIGHUP, a status line that says how far the run is and how
# much it wrote. Ground truth: the mock job's own counts of its calls.

load fault-helpers

PARTS="python3 $ROOT/tests/e2e/check_parts.py"

# status_lines: how many status lines the tracer printed so far
status_lines() {
	grep -c ' ev/s, ' "$BATS_TEST_TMPDIR/tracer.err" || true
}

status_lines_reach() {
	[ "$(status_lines)" -ge "$1" ]
}

# parts DIR: the run's files in order
parts() {
	ls "$1"/t.[0-9][0-9][0-9].json | sort
}

@test "--switch-output: a full-rate run under a 1 MiB --max-size goes on in numbered files, each under the bound, check-clean, each call in exactly one file, memory carried over" {
	start_job --iters 3000 --compute-us 0 --leak 2
	mkdir "$BATS_TEST_TMPDIR/run"
	start_tracer -o "$BATS_TEST_TMPDIR/run/t.json" --max-size 1M --switch-output
	run_phase
	stop_tracer INT
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$TRACER_RC" -eq 0 ]
	[ ! -e "$BATS_TEST_TMPDIR/run/t.json" ]	# every file numbered, the first too
	mapfile -t files < <(parts "$BATS_TEST_TMPDIR/run")
	[ "${#files[@]}" -ge 3 ]
	for f in "${files[@]}"; do
		"$TOOL" check "$f"	# flows paired, device spans whole, names, in each file alone
	done
	$PARTS $((1 << 20)) "$BATS_TEST_TMPDIR/counts.json" "${files[@]}"
	grep -q "^output: ${#files[@]} files of at most 1.0 MiB (--max-size, --switch-output)" \
		"$BATS_TEST_TMPDIR/tracer.out"
	# the last line says where the whole run is
	tail -n 1 "$BATS_TEST_TMPDIR/tracer.err" | grep -Eq "wrote ${files[0]} \.\.\. ${files[-1]} \(${#files[@]} files, [0-9,]+ events, [0-9.]+ MiB\)"
}

@test "--max-size without --switch-output: the trace stops at the bound (exit 0, said), the file under it and check-clean, what came after counted" {
	start_job --iters 3000 --compute-us 0
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --max-size 1M
	kill -USR1 "$JOB_PID"
	wait_child "$TRACER_PID" 120
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$CHILD_RC" -eq 0 ]
	# the summary counts what was not written
	n=$(json_get "$BATS_TEST_TMPDIR/t.json" 'd["spyreFile"]["recordsNotWritten"]')
	grep -q "^output: stopped at --max-size 1.0 MiB: $n records after it not written" \
		"$BATS_TEST_TMPDIR/tracer.out"
	kill -0 "$JOB_PID"	# the job goes on untraced
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/t.json")" -le $((1 << 20)) ]
	"$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	grep -q "t.json reached --max-size 1.0 MiB: stopping" "$BATS_TEST_TMPDIR/tracer.err"
	tail -n 1 "$BATS_TEST_TMPDIR/tracer.err" | grep -Eq "wrote $BATS_TEST_TMPDIR/t.json \([0-9,]+ events, [0-9.]+ KiB\); stopped at --max-size, [0-9,]+ records after it not written"
	[ "$(json_get "$BATS_TEST_TMPDIR/t.json" 'd["spyreFile"]["endedBy"]')" = max-size ]
	[ "$(json_get "$BATS_TEST_TMPDIR/t.json" 'd["spyreFile"]["last"]')" = True ]
}

@test "--max-size's default is said at the start: 256 MiB, then stopping" {
	start_job
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	grep -q "writing $BATS_TEST_TMPDIR/t.json (at most 256.0 MiB a file, --max-size; then stopping" \
		"$BATS_TEST_TMPDIR/tracer.err"
	[ "$(json_get "$BATS_TEST_TMPDIR/t.json" 'd["spyreFile"]["maxSize"]')" -eq $((256 << 20)) ]
}

@test "--switch-output --max-files 2: only the last two files of the run are kept" {
	start_job --iters 3000 --compute-us 0
	mkdir "$BATS_TEST_TMPDIR/run"
	start_tracer -o "$BATS_TEST_TMPDIR/run/t.json" --max-size 1M --switch-output --max-files 2
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	mapfile -t files < <(parts "$BATS_TEST_TMPDIR/run")
	[ "${#files[@]}" -eq 2 ]
	last=$(json_get "${files[1]}" 'd["spyreFile"]["index"]')
	[ "$last" -ge 2 ]
	[ "$(json_get "${files[0]}" 'd["spyreFile"]["index"]')" -eq $((last - 1)) ]
	for f in "${files[@]}"; do "$TOOL" check "$f"; done
	# the last line names what is kept
	tail -n 1 "$BATS_TEST_TMPDIR/tracer.err" | grep -Eq "wrote ${files[0]} \.\.\. ${files[1]} \(the last 2 of $((last + 1)) files, "
}

@test "SIGHUP ends a trace as SIGINT does: written whole, summary, exit 0" {
	start_job --iters 100000 --compute-us 0
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	kill -USR1 "$JOB_PID"
	wait_until 30 grep -q '"ph":"X"' "$BATS_TEST_TMPDIR/t.json"
	stop_tracer HUP
	[ "$TRACER_RC" -eq 0 ]
	"$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	grep -Eq '^ +[0-9,]+ .*  spyreLaunchJobPlan$' "$BATS_TEST_TMPDIR/tracer.out"
}

@test "SIGHUP is ignored by a tracer started under nohup; SIGINT still ends it" {
	start_job
	rm -f "$BATS_TEST_TMPDIR/tracer.ready"
	nohup "$TOOL" -p "$JOB_PID" -o "$BATS_TEST_TMPDIR/t.json" --status \
		--ready-file "$BATS_TEST_TMPDIR/tracer.ready" \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_ready "$BATS_TEST_TMPDIR/tracer.ready" "$TRACER_PID"
	wait_until 30 status_lines_reach 1
	kill -HUP "$TRACER_PID"
	# two status lines more after the HUP: it went on tracing
	n=$(status_lines)
	wait_until 30 status_lines_reach $((n + 2))
	kill -0 "$TRACER_PID"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	"$TOOL" check "$BATS_TEST_TMPDIR/t.json"
}

@test "--status in a log: elapsed and left of -d, events, bytes written and their rate, the file and its bound" {
	start_job --iters 100000 --compute-us 0
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --status -d 60
	kill -USR1 "$JOB_PID"
	wait_until 60 grep -Eq '^spyre-bpftrace: 0:[0-9]{2} \(0:[0-9]{2} left\), [0-9]+ events, [0-9]+ ev/s, [0-9.]+ (B|KiB|MiB) \([0-9.]+ (B|KiB|MiB)/s\), file 1 of at most 256.0 MiB, [0-9]+ drops, [0-9]+ unwound, [0-9]+ probes' "$BATS_TEST_TMPDIR/tracer.err"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
}

@test "the status line on an 80-column terminal: each redraw fits, clears what was there, no stale wrapped rows" {
	command -v tmux >/dev/null || skip "tmux not installed (make deps-test installs it)"
	start_job --iters 100000 --compute-us 0
	kill -USR1 "$JOB_PID"
	sock=$BATS_TEST_TMPDIR/tmux.sock
	tmux -S "$sock" new-session -d -x 80 -y 10 \
		"'$TOOL' -p $JOB_PID -o '$BATS_TEST_TMPDIR/t.json' -q; echo done >'$BATS_TEST_TMPDIR/done'; sleep 60"
	tmux -S "$sock" pipe-pane -o "cat >>'$BATS_TEST_TMPDIR/raw'"
	# three redraws
	wait_until 60 sh -c "[ \$(tr '\r' '\n' <'$BATS_TEST_TMPDIR/raw' | grep -c 'ev/s') -ge 3 ]"
	tmux -S "$sock" send-keys C-c
	wait_for "$BATS_TEST_TMPDIR/done" 30
	tmux -S "$sock" kill-server
	python3 "$ROOT/tests/e2e/check_longrun.py" status-draws "$BATS_TEST_TMPDIR/raw"
}

# dumps: the flight recorder's files, oldest first
dumps() {
	ls "$BATS_TEST_TMPDIR"/run/t.2*Z.json 2>/dev/null | sort
}

# ended_by FILE: why a flight-recorder file was written
ended_by() {
	json_get "$1" 'd["spyreFile"]["endedBy"]'
}

# recorder_run MOCK_OPTIONS -- TRACER_OPTIONS: the job's one phase under the flight recorder,
# then Ctrl-C; every file written check-clean
recorder_run() {
	local mock=() opt
	while [ "$1" != -- ]; do mock+=("$1"); shift; done
	shift
	start_job "${mock[@]}"
	mkdir -p "$BATS_TEST_TMPDIR/run"
	start_tracer -o "$BATS_TEST_TMPDIR/run/t.json" --flight-recorder 60s "$@"
	run_phase
	stop_tracer INT
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$TRACER_RC" -eq 0 ]
	mapfile -t files < <(dumps)
	for f in "${files[@]}"; do
		"$TOOL" check "$f"	# flows paired, device spans whole, names
	done
}

@test "--flight-recorder: SIGUSR1 writes the last DUR, named by the time; the end writes it again; nothing on disk before" {
	start_job --iters 100000 --compute-us 0
	mkdir -p "$BATS_TEST_TMPDIR/run"
	start_tracer -o "$BATS_TEST_TMPDIR/run/t.json" --flight-recorder 1s --status
	kill -USR1 "$JOB_PID"
	# more than a second of the job traced
	wait_until 60 grep -Eq '^spyre-bpftrace: 0:0[2-9].* [1-9][0-9]* events' \
		"$BATS_TEST_TMPDIR/tracer.err"
	[ -z "$(dumps)" ]
	kill -USR1 "$TRACER_PID"
	wait_until 30 sh -c "ls '$BATS_TEST_TMPDIR'/run/t.2*Z.json >/dev/null 2>&1"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	mapfile -t files < <(dumps)
	[ "${#files[@]}" -eq 2 ]
	[ "$(ended_by "${files[0]}")" = SIGUSR1 ]
	[ "$(ended_by "${files[1]}")" = exit ]
	for f in "${files[@]}"; do
		"$TOOL" check "$f"
		[[ "$f" =~ /t\.[0-9]{8}T[0-9]{6}\.[0-9]{3}Z\.json$ ]]
		# what it holds reaches no further back than the last DUR and a slice (1.25 s)
		python3 "$ROOT/tests/e2e/check_longrun.py" flight "$f"
	done
	[ "$(json_get "${files[1]}" 'd["spyreFile"]["previous"]')" = "${files[0]}" ]
	tail -n 1 "$BATS_TEST_TMPDIR/tracer.err" | grep -q "flight recorder: 2 files written, the last ${files[1]}"
}

@test "--trigger 'spyreStreamSynchronize>50ms': one file for the slow call, holding it, then the end's" {
	recorder_run --iters 4 --compute-us 60000 -- --trigger 'spyreStreamSynchronize>50ms'
	[ "${#files[@]}" -eq 2 ]
	[[ "$(ended_by "${files[0]}")" == "trigger: spyreStreamSynchronize took "*" ms (over 50.000 ms; thread "* ]]
	[ "$(ended_by "${files[1]}")" = exit ]
	[ "$(json_get "${files[0]}" 'max(e["dur"] for e in d["traceEvents"] if e.get("name") == "spyreStreamSynchronize")' | cut -d. -f1)" -gt 50000 ]
}

@test "--trigger exception: one file when a C++ exception leaves a traced call, holding the unwound call" {
	recorder_run --iters 20 --oom-every 10 --compute-us 0 -- --trigger exception
	[ "${#files[@]}" -eq 2 ]
	[[ "$(ended_by "${files[0]}")" == "trigger: a C++ exception left "* ]]
	[ "$(json_get "${files[0]}" 'sum(1 for e in d["traceEvents"] if e.get("args", {}).get("unwound") is True)')" -ge 1 ]
}

@test "--trigger memory>SIZE: one file when a process's device memory goes over SIZE, its counters from the ledger" {
	# train-0 keeps 5 inputs of 64 KiB: 320 KiB and more live at the phase's end
	recorder_run --iters 20 --leak 5 --compute-us 0 -- --trigger 'memory>300K'
	[ "${#files[@]}" -eq 2 ]
	[[ "$(ended_by "${files[0]}")" == "trigger: device memory of pid $JOB_PID on device 0 at "*" bytes (over 307200)" ]]
	[ "$(json_get "${files[0]}" 'max(e["args"]["allocated"] for e in d["traceEvents"] if e.get("ph") == "C" and e["name"] == "Spyre memory (device 0)")')" -gt 307200 ]
}

@test "--trigger needs --flight-recorder; a malformed one is a usage error" {
	run "$TOOL" -p $$ --trigger exception
	[ "$status" -eq 2 ]
	[[ "$output" == *"--trigger needs --flight-recorder DUR"* ]]
	run "$TOOL" -p $$ --flight-recorder 10s --trigger 'slow'
	[ "$status" -eq 2 ]
	[[ "$output" == *"--trigger wants NAME>DUR"* ]]
}
