#!/usr/bin/env bats
# The probe-table keys that read user memory and the device evidence of void launches, on real
# -O2 code (tests/progs/keysjob.cpp): every value in the trace is one the job computed.

load helpers

CHECK_KEYS="python3 $ROOT/tests/e2e/check_keys.py"
CHECK_COLL="python3 $ROOT/tests/e2e/check_collectives.py"

KEYSJOB=$BUILD/tests/keysjob

# trace_keys [ENV=1]: trace keysjob with the keys' table into $BATS_TEST_TMPDIR/t.json and
# check every value against what the job computed (ENV forces a per-thread stack path)
trace_keys() {
	cat > "$BATS_TEST_TMPDIR/keys.probes" <<'P'
libkeysjob.so make_result sret[0]=a:u sret[8]=b:x
libkeysjob.so set_kernel dev=kname str=arg1
libkeysjob.so launch dev=launch op=compute stream=arg1 bytes=arg2[8] arg2[0]=key:u
libkeysjob.so sync_stream dev=sync stream=arg1
libkeysjob.so query_stream dev=query stream=arg1 ret=done:u
libkeysjob.so get_rank dist=rank
libkeysjob.so get_size dist=size
P
	rm -f "$BATS_TEST_TMPDIR/t.json"
	env "$@" RANK=1 WORLD_SIZE=2 AIU_WORLD_RANK_1=0000:1b:00.0 "$TOOL" --no-default \
		--probes "$BATS_TEST_TMPDIR/keys.probes" -o "$BATS_TEST_TMPDIR/t.json" -- \
		"$KEYSJOB" > "$BATS_TEST_TMPDIR/out" 2>&1 || { cat "$BATS_TEST_TMPDIR/out"; return 1; }
	$CHECK_KEYS values "$BATS_TEST_TMPDIR/t.json"
}

@test "dereferences, a std::string, kernel names, sync ends and the rank reach the trace exactly" {
	trace_keys
}

@test "the string and dereference records survive every per-thread stack path" {
	# staged is the default here; the ring buffer directly, and the hash map fallback
	trace_keys SPYRE_NO_STAGE=1
	trace_keys SPYRE_NO_TASK_STORAGE=1
}

@test "without RANK in its environment, a job's rank and world size come from getRank/getSize" {
	printf '%s\n' "libkeysjob.so get_rank dist=rank" "libkeysjob.so get_size dist=size" \
		> "$BATS_TEST_TMPDIR/dist.probes"
	run env -u RANK -u WORLD_SIZE "$TOOL" --no-default --probes "$BATS_TEST_TMPDIR/dist.probes" \
		-o "$BATS_TEST_TMPDIR/t.json" -- "$KEYSJOB"
	echo "$output"
	[ "$status" -eq 0 ]
	$CHECK_COLL dist "$BATS_TEST_TMPDIR/t.json" 5 8
	# and none at all when nothing says
	run env -u RANK -u WORLD_SIZE "$TOOL" --no-default --probe 'libkeysjob.so:launch' \
		-o "$BATS_TEST_TMPDIR/n.json" -- "$KEYSJOB"
	[ "$status" -eq 0 ]
	$CHECK_COLL dist "$BATS_TEST_TMPDIR/n.json" --none
}

@test "a synchronize that tail-jumps to the real one: evidence at the real one's return, none where the jump ends the span" {
	# sync_forward ends in `jmp sync_stream`: followed (the default), its span ends where
	# sync_stream returns, after the wait: every launch before it has completed
	printf '%s\n' "libkeysjob.so launch dev=launch op=compute stream=arg1" \
		"libkeysjob.so sync_forward dev=sync stream=arg1" > "$BATS_TEST_TMPDIR/fwd.probes"
	run "$TOOL" --no-default --probes "$BATS_TEST_TMPDIR/fwd.probes" \
		-o "$BATS_TEST_TMPDIR/t.json" -- "$KEYSJOB" forward
	echo "$output"
	[ "$status" -eq 0 ]
	$CHECK_KEYS sync-ends "$BATS_TEST_TMPDIR/t.json" followed
	# not followed, its span ends at the jump, before sync_stream waited: no evidence
	SPYRE_NO_TAIL_FOLLOW=1 run "$TOOL" --no-default --probes "$BATS_TEST_TMPDIR/fwd.probes" \
		-o "$BATS_TEST_TMPDIR/t1.json" -- "$KEYSJOB" forward
	[ "$status" -eq 0 ]
	$CHECK_KEYS sync-ends "$BATS_TEST_TMPDIR/t1.json" cut
	# with the real synchronize probed too, every launch ends at one
	echo "libkeysjob.so sync_stream dev=sync stream=arg1" >> "$BATS_TEST_TMPDIR/fwd.probes"
	SPYRE_NO_TAIL_FOLLOW=1 run "$TOOL" --no-default --probes "$BATS_TEST_TMPDIR/fwd.probes" \
		-o "$BATS_TEST_TMPDIR/t2.json" -- "$KEYSJOB" forward
	[ "$status" -eq 0 ]
	$CHECK_KEYS sync-ends "$BATS_TEST_TMPDIR/t2.json" real
}

@test "a dereference of an unreadable address reads 0 and is counted per probe" {
	# arg1 is the address of a 4-byte static in the job's small .bss: 4000 bytes past it is
	# past the last page the executable maps (the heap starts at a random distance beyond)
	cat > "$BATS_TEST_TMPDIR/bad.probes" <<'P'
libkeysjob.so sync_stream type=instant arg1[4000]=far:u
P
	run "$TOOL" --no-default --probes "$BATS_TEST_TMPDIR/bad.probes" \
		-o "$BATS_TEST_TMPDIR/t.json" -- "$KEYSJOB"
	echo "$output"
	[ "$status" -eq 0 ]
	$CHECK_KEYS deref-fault "$BATS_TEST_TMPDIR/t.json"
	[[ "$output" == *"memory reads that faulted: sync_stream: 3 "* ]]
}
