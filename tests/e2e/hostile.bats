#!/usr/bin/env bats
# A hostile process cannot hang, bloat or fool the tracer (issue 43). The tracer runs as root,
# in fleet mode against every process of a node: what a traced process shows it (its Python code
# objects, the files it maps, their names) is chosen by that process. Each test makes its own
# crafted target (tests/progs/hostile/) and bounds the tracer's time and peak RSS
# (/usr/bin/time -v) under it.

load fault-helpers

LINETABLE=$ROOT/tests/progs/hostile/linetable.py
CRAFT="python3 $ROOT/tests/progs/hostile/craft_elf.py"
MAPFILES=$BUILD/tests/mapfiles
PY=/usr/bin/python3	# Debian's CPython 3.11: exports _PyRuntime, --python reads it

# start_pyjob SIZE DEPTH MODE: tests/progs/hostile/linetable.py started, set up and calling;
# sets JOB_PID
start_pyjob() {
	local d=$BATS_TEST_TMPDIR
	"$PY" "$LINETABLE" "$d/job.ready" "$d/go" "$@" >"$d/job.out" 2>"$d/job.err" &
	JOB_PID=$!
	wait_for "$d/job.ready" 30
}

# start_mapjob FILE...: tests/progs/hostile/mapfiles.c with the first page of each FILE mapped;
# sets JOB_PID
start_mapjob() {
	local d=$BATS_TEST_TMPDIR
	"$MAPFILES" "$d/job.ready" "$d/go" "$@" >"$d/job.out" 2>"$d/job.err" &
	JOB_PID=$!
	wait_for "$d/job.ready" 30 || { cat "$d/job.err"; return 1; }
}

# start_job_env VAR=VALUE...: the mock job (a world of one: getRank/getSize answer 0 and 1) held
# before its phase with exactly that environment; sets JOB_PID
start_job_env() {
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	env -i "$@" "$MOCK" --world-size 1 --iters 5 --threads 1 --wait-go --linger --quiet \
		--ready-file "$BATS_TEST_TMPDIR/job.ready" --counts "$BATS_TEST_TMPDIR/counts.json" \
		>"$BATS_TEST_TMPDIR/job.out" 2>"$BATS_TEST_TMPDIR/job.err" &
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
}

# traced_timed SECONDS ARGS...: the tracer on JOB_PID under /usr/bin/time -v, its ready file
# waited for, the job let go; fails unless the tracer ends by itself within SECONDS (then killed)
# and exits 0. Its peak RSS in kB in RSS_KB, its wall time in WALL_S.
traced_timed() {
	local d=$BATS_TEST_TMPDIR limit=$1
	shift
	/usr/bin/time -v -o "$d/time.txt" "$TOOL" -p "$JOB_PID" --ready-file "$d/tracer.ready" \
		-o "$d/t.json" "$@" >"$d/tracer.out" 2>"$d/tracer.err" &
	TRACER_PID=$!
	wait_ready "$d/tracer.ready" "$TRACER_PID" 60 || { cat "$d/tracer.err"; return 1; }
	touch "$d/go"
	wait_child "$TRACER_PID" "$limit" || { cat "$d/tracer.err"; return 1; }
	TRACER_PID=
	cat "$d/tracer.out" "$d/tracer.err" "$d/time.txt"
	[ "$CHILD_RC" -eq 0 ]
	RSS_KB=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$d/time.txt")
	WALL_S=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$d/time.txt" |
		awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print int(s) }')
	echo "peak RSS ${RSS_KB} kB, ${WALL_S} s"
}

# --- Python code objects -----------------------------------------------------------------------

@test "Python frames whose line table is 1 MiB of bytes the decoder skips, 16 deep, called in a loop: --python -d 3 ends by itself within 30 s, line tables counted too long, peak RSS bounded" {
	start_pyjob $((1 << 20)) 16 same
	printf '%s\n' 'libc.so* getpid name=getpid py=1' >"$BATS_TEST_TMPDIR/p.probes"
	# before: 65,536 records a batch, each 16 frames of 1 MiB scanned: still running at 648 s
	traced_timed 30 --python -d 3 --no-default --probes "$BATS_TEST_TMPDIR/p.probes"
	[ "$WALL_S" -le 30 ]
	[ "$RSS_KB" -lt 200000 ]
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	# the frames are there, named, with no line ("?"); the tables counted
	[ "$(json_get "$BATS_TEST_TMPDIR/t.json" 'd["spyreStats"]["pythonLineTablesTooLong"] >= 1')" = True ]
	[ "$(json_get "$BATS_TEST_TMPDIR/t.json" 'sum(1 for e in d["traceEvents"] if e.get("name") == "getpid" and ":? leaf" in e.get("args", {}).get("python", ""))' )" -gt 0 ]
	grep -q "line table longer than 256 KiB" "$BATS_TEST_TMPDIR/tracer.out"
}

@test "SIGTERM reaches a tracer draining frames of 256 KiB line tables (the longest read), 16 deep: it ends within 10 s" {
	start_pyjob $((256 << 10)) 16 same
	printf '%s\n' 'libc.so* getpid name=getpid py=1' >"$BATS_TEST_TMPDIR/p.probes"
	local d=$BATS_TEST_TMPDIR
	"$TOOL" -p "$JOB_PID" --ready-file "$d/tracer.ready" -o "$d/t.json" --python --no-default \
		--probes "$d/p.probes" >"$d/tracer.out" 2>"$d/tracer.err" &
	TRACER_PID=$!
	wait_ready "$d/tracer.ready" "$TRACER_PID" 60 || { cat "$d/tracer.err"; return 1; }
	touch "$d/go"
	wait_until 30 grep -q '"getpid"' "$d/t.json" 2>/dev/null || sleep 2
	kill -TERM "$TRACER_PID"
	local t0=$SECONDS
	wait_child "$TRACER_PID" 10 || { cat "$d/tracer.err"; return 1; }
	TRACER_PID=
	cat "$d/tracer.err"
	echo "ended $((SECONDS - t0)) s after SIGTERM"
	[ "$CHILD_RC" -eq 0 ]
	run "$TOOL" check "$d/t.json"
	[ "$status" -eq 0 ]
}

@test "a new code object on every call, each pointing at one 255 KiB line table: the code cache stays bounded (peak RSS < 120 MB over 2,000 code objects), evictions counted" {
	start_pyjob $((255 << 10)) 1 new
	printf '%s\n' 'libc.so* getpid name=getpid py=1' >"$BATS_TEST_TMPDIR/p.probes"
	# the job calls every ~1 ms: by 8 s over 2,000 code objects (before: each copied, 500 MB)
	traced_timed 60 --python -d 8 --no-default --probes "$BATS_TEST_TMPDIR/p.probes"
	local codes
	codes=$(json_get "$BATS_TEST_TMPDIR/t.json" 'd["spyreStats"]["pythonCodeObjects"]')
	echo "code objects: $codes"
	[ "$codes" -gt 1000 ]
	[ "$(json_get "$BATS_TEST_TMPDIR/t.json" 'd["spyreStats"]["pythonCodesEvicted"]')" -gt 0 ]
	[ "$RSS_KB" -lt 120000 ]
	grep -q "forgotten at the code cache.s bound" "$BATS_TEST_TMPDIR/tracer.out"
}

# --- files the target maps ---------------------------------------------------------------------

@test "a mapped 128 MB sparse file claiming 2,000,000 section headers (8 KB on disk): no --ustack, peak RSS < 100 MB, traced as usual" {
	local d=$BATS_TEST_TMPDIR
	$CRAFT sections "$d/libsections.so" 2000000
	start_mapjob "$d/libsections.so"
	printf '%s\n' 'libc.so* getpid name=getpid' >"$d/p.probes"
	# before: its DT_SONAME read through libelf, which allocated every header: 541 MB, 8 s
	traced_timed 30 -d 1 --no-default --probes "$d/p.probes"
	[ "$RSS_KB" -lt 100000 ]
	[ "$(json_get "$d/t.json" 'sum(1 for e in d["traceEvents"] if e.get("name") == "getpid")')" -gt 0 ]
}

@test "a mapped 400 MB sparse note section with --ustack: its notes read by bounded preads, peak RSS < 100 MB, -d 1 ends within 15 s" {
	local d=$BATS_TEST_TMPDIR
	$CRAFT note "$d/libnotes.so" $((400 << 20))
	start_mapjob "$d/libnotes.so"
	printf '%s\n' 'libc.so* getpid name=getpid' >"$d/p.probes"
	# before: the section read whole for its build id: 437 MB, 38 s on a loaded machine
	traced_timed 60 -d 1 --ustack --no-default --probes "$d/p.probes"
	[ "$RSS_KB" -lt 100000 ]
	[ "$WALL_S" -le 15 ]
	[ "$(json_get "$d/t.json" 'sum(1 for e in d["traceEvents"] if e.get("name") == "getpid")')" -gt 0 ]
}

@test "a mapped file named with terminal escapes (python3, ESC ] 0 ; ... BEL, ESC [ 2 J): --python's warning names it with its control bytes escaped, none reaches the terminal" {
	local d=$BATS_TEST_TMPDIR f
	f=$d/$(printf 'python3\033]0;pwned\a\033[2J')
	echo "not an interpreter" >"$f"
	start_mapjob "$f"
	printf '%s\n' 'libc.so* getpid name=getpid py=1' >"$d/p.probes"
	traced_timed 30 -d 0.5 --python --no-default --probes "$d/p.probes"
	# the warning is there, the bytes are not (before: ESC and BEL raw, as the process named it)
	grep -F 'python3\x1b]0;pwned\x07\x1b[2J' "$d/tracer.err"
	! LC_ALL=C grep -q "$(printf '[\033\007]')" "$d/tracer.err"
	! LC_ALL=C grep -q "$(printf '[\033\007]')" "$d/tracer.out"
}

@test "a variable that the tracer's 256 KiB read of /proc/PID/environ cuts is not taken (AIU_WORLD_SIZE=12345 read as 12)" {
	# the environment: padding (in three variables: exec takes 128 KiB a string at most), then
	# AIU_WORLD_SIZE=12345 (the Spyre stack's world size, which the tracer reads when torchrun's
	# WORLD_SIZE is not there), the cap falling right after "AIU_WORLD_SIZE=12"
	local cut=AIU_WORLD_SIZE=12 x100k n
	n=$((262144 - ${#cut} - 2 * 100004 - 4))
	x100k=$(head -c 100000 /dev/zero | tr '\0' x)
	start_job_env "P1=$x100k" "P2=$x100k" "P3=$(head -c "$n" /dev/zero | tr '\0' x)" \
		AIU_WORLD_SIZE=12345
	[ "$(head -c 262144 /proc/"$JOB_PID"/environ | tail -c ${#cut})" = "$cut" ]
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	# a world of one: its size from getSize, not from a cut variable
	[ "$(json_get "$BATS_TEST_TMPDIR/t.json" 'd["distributedInfo"]["world_size"]')" -eq 1 ]
	[ "$(json_get "$BATS_TEST_TMPDIR/t.json" 'd["distributedInfo"]["rank"]')" -eq 0 ]
}

# reuse_pid PID CMD...: CMD started as process PID (the kernel's last pid set to PID - 1 before
# the fork; another process may take it first on a busy machine: tried again); IMPOSTOR its pid
reuse_pid() {
	local pid=$1 i
	shift
	for i in $(seq 100); do
		echo $((pid - 1)) >/proc/sys/kernel/ns_last_pid
		"$@" &
		IMPOSTOR=$!
		EXTRA_PIDS+=("$IMPOSTOR")
		[ "$IMPOSTOR" -eq "$pid" ] && return 0
		kill "$IMPOSTOR"
		wait "$IMPOSTOR" 2>/dev/null || true
	done
	echo "pid $pid could not be had again" >&2
	return 1
}

# start_held_tracer VAR ARGS...: the tracer on JOB_PID with the tests' hold VAR (common/process.h)
# at $BATS_TEST_TMPDIR/hold; TRACER_PID
start_held_tracer() {
	local var=$1
	shift
	env "$var=$BATS_TEST_TMPDIR/hold" "$TOOL" -p "$JOB_PID" -o "$BATS_TEST_TMPDIR/t.json" "$@" \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
}

@test "the target ends during the attach and its pid goes to another process: the tracer ends with the target, not with the impostor" {
	start_job
	start_held_tracer SPYRE_TEST_HOLD_ATTACH -d 300 -q --ready-file "$BATS_TEST_TMPDIR/tracer.ready"
	wait_ready "$BATS_TEST_TMPDIR/hold.held" "$TRACER_PID" 120	# resolved, not attached
	stop_job
	reuse_pid "$JOB_PID" sleep 600
	touch "$BATS_TEST_TMPDIR/hold.go"
	# the target's end, seen at once (it was watching the impostor until -d: 300 s)
	wait_child "$TRACER_PID" 120
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$CHILD_RC" -eq 0 ]
	[ "$(json_get "$BATS_TEST_TMPDIR/t.json" 'd["spyreStats"]["targetExited"]')" = True ]
	kill -0 "$IMPOSTOR"
}

@test "the target ends and its pid goes to another process while the tracer closes the trace: its names stay the target's" {
	cp /bin/sleep "$BATS_TEST_TMPDIR/impostor"
	start_job --threads 2
	start_held_tracer SPYRE_TEST_HOLD_END --ready-file "$BATS_TEST_TMPDIR/tracer.ready"
	wait_ready "$BATS_TEST_TMPDIR/tracer.ready" "$TRACER_PID" 120
	run_phase
	stop_job
	wait_ready "$BATS_TEST_TMPDIR/hold.held" "$TRACER_PID" 120	# the end seen, names not read
	reuse_pid "$JOB_PID" "$BATS_TEST_TMPDIR/impostor" 600
	[ "$(cat /proc/"$JOB_PID"/comm)" = impostor ]
	touch "$BATS_TEST_TMPDIR/hold.go"
	wait_child "$TRACER_PID" 120
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$CHILD_RC" -eq 0 ]
	python3 "$ROOT/tests/e2e/check_faults.py" pid-reused "$BATS_TEST_TMPDIR/t.json" "$JOB_PID" \
		mock-spyre-job impostor
}

# --- False stacks -------------------------------------------------------------------------------

DLSWAP=$BUILD/tests/dlswap
CHECK_USTACK="python3 $ROOT/tests/e2e/check_ustack.py"

@test "a file that claims libc's build id, mapped below libc: libc's frames are named from libc, in its process and in another" {
	local d=$BATS_TEST_TMPDIR libc
	libc=$(awk '$6 ~ /\/libc\.so\.6$/ { print $6; exit }' /proc/self/maps)
	mkdir -p "$d/forged"
	# libm's code under libc's name and build id (its symbols would name libc's offsets)
	$CRAFT forge "$d/forged/libc.so.6" "$(dirname "$libc")/libm.so.6" "$libc"
	[ "$(readelf -n "$d/forged/libc.so.6" | grep 'Build ID')" = \
		"$(readelf -n "$libc" | grep 'Build ID')" ]
	MAPFILES_AT=0x200000000 start_mapjob "$d/forged/libc.so.6"
	grep -q "^200000000-.*$d/forged/libc.so.6" "/proc/$JOB_PID/maps"
	printf '%s\n' 'libc.so* getpid name=getpid' >"$d/p.probes"
	traced_timed 30 -d 1 --no-default --probes "$d/p.probes" --ustack
	# every one named getpid in libc (before: libc.so.6+0xd54e0, from the forged file)
	$CHECK_USTACK first-frames "$d/t.json" "getpid+0x0 (libc.so.6)"

	# -a: a second process, plain, traced beside the one that maps the forged file (scanned
	# first: its pid is lower); its frames named from its own files (before: from the first
	# file met with that build id, in any process)
	EXTRA_PIDS+=("$JOB_PID")
	rm -f "$d/job.ready" "$d/go"
	start_mapjob
	touch "$d/go"
	"$TOOL" -a -d 2 --no-default --probes "$d/p.probes" --ustack -o "$d/a.json" -q \
		2>"$d/a.err" || { cat "$d/a.err"; false; }
	$CHECK_USTACK first-frames "$d/a.json" "getpid+0x0 (libc.so.6)" --pid "$JOB_PID"
}

@test "a library unloaded and another loaded at its address: callers are named from the new one once the mappings are read again (1 s)" {
	local d=$BATS_TEST_TMPDIR/sw
	mkdir -p "$d"
	cp "$BUILD/tests/libswapa.so" "$BUILD/tests/libswapb.so" "$d/"
	"$DLSWAP" "$d" >"$d/job.out" 2>"$d/job.err" &
	JOB_PID=$!
	wait_for "$d/ready" 30
	printf '%s\n' 'libc.so* getpid name=getpid' >"$d/p.probes"
	start_tracer --no-default --probes "$d/p.probes" --ustack -o "$d/t.json" --no-status
	touch "$d/go"
	# swap_a's calls traced (in the file: it is flushed every second), then the swap, then
	# 2,500 of swap_b's (USTACK_RESCAN_MS: 1 s)
	wait_until 60 grep -q '"getpid"' "$d/t.json"
	touch "$d/swap"
	wait_for "$d/swapped" 30
	cat "$d/swapped"
	# at the same address, or the test tests nothing
	[ "$(cut -d' ' -f1 "$d/swapped")" = "$(cut -d' ' -f2 "$d/swapped")" ]
	wait_until 120 sh -c "[ \"\$(cat '$d/count' 2>/dev/null || echo 0)\" -ge 2500 ]"
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	$CHECK_USTACK swap "$d/t.json"
}
