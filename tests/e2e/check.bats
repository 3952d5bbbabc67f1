#!/usr/bin/env bats
# check and recover, end to end: a real trace of the mock job is clean, and a trace whose
# tracer was SIGKILLed can be closed and then passes check.

load helpers

CHECK_CHECK="python3 $ROOT/tests/e2e/check_check.py"

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
	$CHECK_CHECK recovered "$BATS_TEST_TMPDIR/t.recovered.json"
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

# cut_sample OUT PATTERN K: the sample trace cut K bytes into the first PATTERN
cut_sample() {
	local f=$ROOT/tests/fixtures/traces/spyre-sample.json off
	off=$(grep -bo "$2" "$f" | head -1 | cut -d: -f1)
	head -c $((off + $3)) "$f" > "$1"
}

@test "a trace cut inside a string: check points at recover, which closes it" {
	# cut in the middle of the second event's name: the first event is whole
	cut_sample "$BATS_TEST_TMPDIR/cut.json" aiuLaunchComputeStream 5
	run "$TOOL" check "$BATS_TEST_TMPDIR/cut.json"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"in a string (cut short: \`spyre-bpftrace recover FILE\` closes it)"* ]]
	run "$TOOL" recover "$BATS_TEST_TMPDIR/cut.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"cut.recovered.json (1 events kept, "* ]]
	run "$TOOL" check "$BATS_TEST_TMPDIR/cut.recovered.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"cut.recovered.json: 1 events, 0 problems"* ]]
}

@test "check takes several files and a directory, with a total; --json says the same as JSON" {
	local fx=$ROOT/tests/fixtures/traces d=$BATS_TEST_TMPDIR/fleet
	mkdir "$d"
	cp "$fx/clean.json" "$d/w1.json"
	gzip -c "$fx/overlap.json" > "$d/w2.json.gz"
	echo "not a trace" > "$d/notes.txt"	# not *.json: not checked
	run "$TOOL" check "$d"
	echo "$output"
	[ "$status" -eq 8 ]
	[[ "$output" == *"check: $d/w1.json: 20 events, 0 problems"* ]]
	[[ "$output" == *"check: $d/w2.json.gz: 11 events, 2 problems"* ]]
	[[ "$output" == *"check: 2 files, 31 events, 2 problems (1 files with problems, "* ]]
	[[ "$output" == *"problems, 0 unreadable)"* ]]
	run "$TOOL" check "$fx/clean.json" "$fx/spyre-sample.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"check: 2 files, 42 events, 0 problems (0 files with problems, "* ]]
	# a file that cannot be read is an error, whatever the others hold
	run "$TOOL" check "$fx/clean.json" "$d/missing.json"
	[ "$status" -eq 1 ]

	"$TOOL" check --json "$d" "$d/missing.json" > "$BATS_TEST_TMPDIR/c.json" || true
	$CHECK_CHECK json "$BATS_TEST_TMPDIR/c.json" "$d"
}

@test "a second recover offers --force and -o; --force replaces, -o writes elsewhere, -o DIR says so" {
	cut_sample "$BATS_TEST_TMPDIR/t.json" aiuLaunchComputeStream 5
	run "$TOOL" recover "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 0 ]
	run "$TOOL" recover "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 7 ]
	[[ "$output" == *"t.recovered.json: File exists (--force replaces it; or -o another"* ]]
	echo keep > "$BATS_TEST_TMPDIR/t.recovered.json"
	run "$TOOL" recover --force "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 0 ]
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.recovered.json"
	[ "$status" -eq 0 ]
	run "$TOOL" recover "$BATS_TEST_TMPDIR/t.json" -o "$BATS_TEST_TMPDIR/other.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"wrote $BATS_TEST_TMPDIR/other.json (1 events kept"* ]]
	mkdir "$BATS_TEST_TMPDIR/dir"
	run "$TOOL" recover "$BATS_TEST_TMPDIR/t.json" -o "$BATS_TEST_TMPDIR/dir" --force
	echo "$output"
	[ "$status" -eq 7 ]
	[[ "$output" == *"dir: Is a directory (-o names the file to write, not its directory)"* ]]
	[[ "$output" != *"File exists"* ]]
	# nothing left behind beside them
	[ "$(ls "$BATS_TEST_TMPDIR" | sort | tr '\n' ' ')" = \
	  "dir other.json t.json t.recovered.json " ]
	# from a pipe: no name to put the copy beside, so -o is needed
	local f=$BATS_TEST_TMPDIR/t.json
	for how in "cat '$f' | '$TOOL' recover /dev/stdin" "'$TOOL' recover /dev/stdin < '$f'"; do
		run sh -c "$how"
		[ "$status" -eq 2 ]
		[[ "$output" == *"/dev/stdin is not a trace file's name (a pipe?): give -o OUT"* ]]
		[ ! -e /dev/stdin.recovered.json ]
	done
	cat "$BATS_TEST_TMPDIR/t.json" | "$TOOL" recover /dev/stdin -o "$BATS_TEST_TMPDIR/p.json"
	"$TOOL" check "$BATS_TEST_TMPDIR/p.json"
}

@test "a trace over 2 GiB is checked whole in bounded memory: max RSS under an eighth of its size" {
	# the sample's events again and again, each copy later in time, spans padded to 4 KB (fewer
	# events: the run stays short); made and read in a pipe, no disk but check's spill files
	TMPDIR=$BATS_TEST_TMPDIR $CHECK_CHECK big "$ROOT" "$TOOL" "$BATS_TEST_TMPDIR"
}
