#!/usr/bin/env bats
# The probe-table keys that read user memory and the device evidence of void launches, on real
# -O2 code (tests/progs/keysjob.cpp): every value in the trace is one the job computed.

load helpers

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
	python3 - "$BATS_TEST_TMPDIR/t.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e["ph"] == "X"]
host = lambda n: [e for e in ev if e["name"] == n and e["pid"] != 0]
# a class returned by value: its first words, read through the hidden result pointer
assert [e["args"] for e in host("make_result")] == \
    [{"a": 3 * i, "b": "0x1234"} for i in range(3)], host("make_result")
# a longer std::string keeps its last 60 chars after "...": the "#<step>" join key survives
long = "/var/tmp/sdsc_" + "k" * 70 + "/inner/bundle.mlir#2"
names = ["fused_add#0", "fused_add#1", "..." + long[-60:]]
assert [e["args"]["name"] for e in host("set_kernel")] == names
launches = host("launch")
assert [e["args"]["key"] for e in launches] == [100, 101, 102]
assert [e["args"]["kernel"] for e in launches] == names
dev = sorted((e for e in ev if e["pid"] == 0), key=lambda e: e["ts"])
# void launches without a key, named by their kernels: the first two ended by the synchronize
# after them, the last by the query that said true (the one that said false is no evidence)
assert [e["name"] for e in dev] == names, dev
assert [e["args"]["end"] for e in dev] == ["synchronize", "synchronize", "query"], dev
queries = host("query_stream")
assert [q["args"]["done"] for q in queries] == [0, 1], queries
# at the true query's return (both ends rounded to ns in the file)
assert abs(dev[2]["ts"] + dev[2]["dur"] - queries[1]["ts"] - queries[1]["dur"]) < 0.0025, \
    (dev[2], queries)
assert [e["args"]["correlation"] for e in dev] == \
    [e["args"]["correlation"] for e in launches]
syncs = host("sync_stream")
for dv, s in zip(dev[:2], syncs):
    assert dv["ts"] + dv["dur"] <= s["ts"] + s["dur"] + 0.002, (dv, s)
flows = [e for e in d["traceEvents"] if e["ph"] in "sf"]
assert len(flows) == 6, flows
# the environment wins over getRank()/getSize()
assert d["distributedInfo"] == {"backend": "spyre_ccl", "rank": 1, "world_size": 2,
                                "pci_bus_id": "0000:1b:00.0"}, d.get("distributedInfo")
assert d["spyreStats"]["deviceSpans"] == 3, d["spyreStats"]
assert not any(p.get("derefFaults") for p in d["spyreProbes"]), d["spyreProbes"]
PY
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
	python3 - "$BATS_TEST_TMPDIR/t.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["distributedInfo"] == {"backend": "spyre_ccl", "rank": 5, "world_size": 8}, \
    d.get("distributedInfo")
PY
	# and none at all when nothing says
	run env -u RANK -u WORLD_SIZE "$TOOL" --no-default --probe 'libkeysjob.so:launch' \
		-o "$BATS_TEST_TMPDIR/n.json" -- "$KEYSJOB"
	[ "$status" -eq 0 ]
	python3 -c 'import json, sys; assert "distributedInfo" not in json.load(open(sys.argv[1]))' \
		"$BATS_TEST_TMPDIR/n.json"
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
	python3 - "$BATS_TEST_TMPDIR/t.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = [p for p in d["spyreProbes"] if p["name"] == "sync_forward"][0]
assert p["tailExits"] == 0 and p["tailJumpsFollowed"] == 1, p
assert d["spyreStats"]["deviceSpans"] == 4, d["spyreStats"]
assert d["spyreStats"]["launchesInFlight"] == 0, d["spyreStats"]
dev = [e for e in d["traceEvents"] if e["ph"] == "X" and e["pid"] == 0]
assert all(e["args"]["end"] == "synchronize" for e in dev), dev
PY
	# not followed, its span ends at the jump, before sync_stream waited: no evidence
	SPYRE_NO_TAIL_FOLLOW=1 run "$TOOL" --no-default --probes "$BATS_TEST_TMPDIR/fwd.probes" \
		-o "$BATS_TEST_TMPDIR/t1.json" -- "$KEYSJOB" forward
	[ "$status" -eq 0 ]
	python3 - "$BATS_TEST_TMPDIR/t1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = [p for p in d["spyreProbes"] if p["name"] == "sync_forward"][0]
assert p["tailExits"] == 1, p
assert d["spyreStats"]["deviceSpans"] == 0, d["spyreStats"]
assert d["spyreStats"]["launchesInFlight"] == 4, d["spyreStats"]
PY
	# with the real synchronize probed too, every launch ends at one
	echo "libkeysjob.so sync_stream dev=sync stream=arg1" >> "$BATS_TEST_TMPDIR/fwd.probes"
	SPYRE_NO_TAIL_FOLLOW=1 run "$TOOL" --no-default --probes "$BATS_TEST_TMPDIR/fwd.probes" \
		-o "$BATS_TEST_TMPDIR/t2.json" -- "$KEYSJOB" forward
	[ "$status" -eq 0 ]
	python3 - "$BATS_TEST_TMPDIR/t2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["spyreStats"]["deviceSpans"] == 4, d["spyreStats"]
assert d["spyreStats"]["launchesInFlight"] == 0, d["spyreStats"]
dev = [e for e in d["traceEvents"] if e["ph"] == "X" and e["pid"] == 0]
assert all(e["args"]["end"] == "synchronize" for e in dev), dev
PY
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
	python3 - "$BATS_TEST_TMPDIR/t.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e["ph"] == "i" and e["name"] == "sync_stream"]
assert len(ev) == 3 and all(e["args"]["far"] == 0 for e in ev), ev
p = [p for p in d["spyreProbes"] if p["name"] == "sync_stream"][0]
assert p["derefFaults"] == 3, p
PY
	[[ "$output" == *"memory reads that faulted: sync_stream: 3 "* ]]
}
