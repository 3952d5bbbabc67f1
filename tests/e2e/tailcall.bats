#!/usr/bin/env bats
# Tail calls: a traced function that ends in `jmp other` (what -O2 makes of `return other(...)`)
# is still running until other returns. Its span must end where its caller gets control back,
# with the value the caller gets, whether other is untraced, traced (then nested inside), in
# another library (through the PLT), reached through a chain of tail jumps or by a conditional
# jump (jcc), and an allocator's pointer must reach the device memory ledger. The job
# (tests/progs/tailjob) writes its own view: the ids each launch returned and how long the
# tail-called function worked on each.

load helpers

TAILJOB=$BUILD/tests/tailjob
N=40
LAUNCHES="tail_launch tail_launch_traced tail_launch_plt tail_launch_chain"
# odd sizes take its jne into rt_enqueue, even ones its jmp into rt_enqueue_hi, whose ids have
# bit 40 set (tail.h's TAIL_HI_ID): a span's ret= says which branch its call took
COND=tail_launch_cond

# start_tailjob: the job, held before its work; sets JOB_PID
start_tailjob() {
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	"$TAILJOB" "$BATS_TEST_TMPDIR/job.ready" "$N" "$BATS_TEST_TMPDIR/done.json" \
		>"$BATS_TEST_TMPDIR/job.out" 2>"$BATS_TEST_TMPDIR/job.err" &
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
}

# trace_tailjob PROBES_FILE [TOOL OPTIONS]: trace the job's work with that table only
trace_tailjob() {
	local probes=$1
	shift
	start_tailjob
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --no-default --probes "$probes" "$@"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json" 120
	stop_tracer INT
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	[ "$JOB_RC" -eq 0 ]
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

write_probes() {
	cat >"$BATS_TEST_TMPDIR/tail.probes" <<'P'
libtailrt.so	tail_launch		arg1=bytes:u ret=op:u
libtailrt.so	tail_launch_traced	arg1=bytes:u ret=op:u
libtailrt.so	tail_launch_plt		arg1=bytes:u ret=op:u
libtailrt.so	tail_launch_chain	arg1=bytes:u ret=op:u
libtailrt.so	tail_launch_indirect	arg1=bytes:u ret=op:u
libtailrt.so	tail_launch_cond	arg1=bytes:u ret=op:u
libtailrt.so	tail_submit		arg1=bytes:u ret=op:u
libtailrt.so	tail_wait		arg1=id:u ret=op:u
libtailrt.so	tail_complete		type=instant arg1=op:u
libtailrt.so	tail_release		arg1=ptr:x
P
}

@test "the test runtime's launch functions end in the tail jumps this file relies on" {
	# objdump: each launch and the wait end in a jmp to their callee (same library, or the
	# PLT stub of libtailb.so's function); tail_submit (traced) jumps on to rt_enqueue
	dis=$(objdump -d --no-show-raw-insn "$BUILD/tests/libtailrt.so")
	for pair in tail_launch:rt_enqueue tail_launch_traced:tail_submit \
		    tail_launch_plt:tailb_enqueue@plt tail_launch_chain:rt_stage \
		    rt_stage:rt_enqueue tail_submit:rt_enqueue tail_wait:rt_query \
		    tail_launch_indirect:rt_dispatch tail_release:free@plt \
		    tail_alloc:rt_alloc tail_free:rt_free $COND:rt_enqueue_hi; do
		fn=${pair%%:*} callee=${pair#*:}
		body=$(echo "$dis" | awk -v f="<$fn>:" '$2 == f {p = 1; next} /^$/ {p = 0} p')
		echo "$fn: $body"
		echo "$body" | grep -qE "jmp +[0-9a-f]+ <$callee>"
		if echo "$body" | grep -qE "\bret\b"; then return 1; fi
	done
	# the conditional one: its jne lands in another function, not in a part of its own
	echo "$dis" | awk -v f="<$COND>:" '$2 == f {p = 1; next} /^$/ {p = 0} p' |
		grep -qE "jne +[0-9a-f]+ <rt_enqueue>"
	# the allocator and its free return by themselves: were they to jump on into malloc or
	# free, the chain would end in the C runtime, not followed, and no pointer would be seen
	for fn in rt_alloc rt_free; do
		body=$(echo "$dis" | awk -v f="<$fn>:" '$2 == f {p = 1; next} /^$/ {p = 0} p')
		echo "$body" | grep -qE "\bret\b"
		if echo "$body" | grep -qE "jmp +[0-9a-f]+ <(malloc|free)@plt>"; then return 1; fi
	done
	# ... and rt_dispatch leaves through a register: what cannot be followed
	echo "$dis" | awk '$2 == "<rt_dispatch>:" {p = 1; next} /^$/ {p = 0} p' |
		grep -qE "jmp +\*%r[a-z0-9]+$"
}

@test "list: every launch's tail jump is followed, and what it costs is named per probe" {
	write_probes
	start_tailjob
	run "$TOOL" list -v -p "$JOB_PID" --no-default --probes "$BATS_TEST_TMPDIR/tail.probes"
	echo "$output"
	[ "$status" -eq 0 ]
	for fn in $LAUNCHES tail_wait tail_submit; do
		echo "$output" | grep -A4 "^    $fn  *$fn " |
			grep -q "tail calls: 1 jump followed into [12] functions\?: 1 more return site probed, each hit by every call of"
	done
	# the jcc and the jmp after it: two jumps, each into a function of its own
	echo "$output" | grep -A4 "^    $COND  *$COND " |
		grep -q "tail calls: 2 jumps followed into 2 functions: 2 more return sites probed"
	# the PLT jump lands in the second library, which gets return sites and no probe
	echo "$output" | grep -q "libtailb.so: no probe, 1 return site of tail-called functions"
	# the ones that cannot be followed say so, and why; no other does
	[ "$(echo "$output" | grep -c "NOT followed")" -eq 2 ]
	echo "$output" | grep -A4 "^    tail_launch_indirect " |
		grep -q "tail calls: 1 jump NOT followed (the span ends at the jump, ret unknown): a function it jumps to has jumps through a register"
	# a jump into the C runtime is not followed: free's returns would trap on every free
	echo "$output" | grep -A4 "^    tail_release " |
		grep -q "tail calls: 1 jump NOT followed (the span ends at the jump, ret unknown): it jumps into the C/C++ runtime"
	! echo "$output" | grep -q "libc.so.6: no probe"
	stop_job
}

@test "spans of tail-calling functions: one per call, the caller's return value, covering the callee's work, traced callee nested" {
	write_probes
	trace_tailjob "$BATS_TEST_TMPDIR/tail.probes"
	lost_once "$BATS_TEST_TMPDIR/t.json"
	python3 - "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/done.json" "$N" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
truth = json.load(open(sys.argv[2]))
n = int(sys.argv[3])
ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
def spans(name):
    return sorted((e for e in ev if e["name"] == name), key=lambda e: e["ts"])
probes = {p["name"]: p for p in d["spyreProbes"]}
for name in ("tail_launch", "tail_launch_traced", "tail_launch_plt", "tail_launch_chain",
             "tail_launch_cond", "tail_wait"):
    s = spans(name)
    want = truth[name]
    calls = len(want["ret"])
    assert len(s) == calls == (6 * n if name == "tail_wait" else n), (name, len(s), calls)
    p = probes[name]
    assert p["tailExits"] == 0 and p["unwound"] == 0 and p["unmatchedReturns"] == 0, p
    # tail_launch_cond: its jne and the jmp after it
    jumps = 2 if name == "tail_launch_cond" else 1
    assert p["tailJumpsFollowed"] == jumps and p["tailJumpsNotFollowed"] == 0, p
    # the caller's value, in the job's order
    got = [e["args"]["op"] for e in s]
    assert got == want["ret"], (name, got[:5], want["ret"][:5])
    # the span ends after the tail-called function's work: it covers it (us vs ns)
    for e, w in zip(s, want["work_ns"]):
        assert e["dur"] * 1000 >= w, (name, e, w)
# the conditional tail call: half the calls left by the taken jne (odd sizes: rt_enqueue's ids),
# half by the jmp after the jne not taken (rt_enqueue_hi's); each span has its own branch's id
hi = 1 << 40
cond = spans("tail_launch_cond")
assert sum(e["args"]["op"] & hi != 0 for e in cond) == n // 2, [e["args"] for e in cond[:4]]
for e in cond:
    assert (e["args"]["op"] & hi == 0) == (e["args"]["bytes"] % 2 == 1), e
# the jump into a function that leaves through a register: not followed, the span ends at
# the jump as before, each such end counted, the reason in the metadata
s, p = spans("tail_launch_indirect"), probes["tail_launch_indirect"]
assert len(s) == n and p["tailExits"] == n and p["unwound"] == 0, (len(s), p)
assert p["tailJumpsNotFollowed"] == 1 and "register" in p["tailNotFollowedReason"], p
assert all(e["args"]["op"] == 0 for e in s), s[:3]
# ... and the summary names it, with its count and why
out = open(sys.argv[1].rsplit("/", 1)[0] + "/tracer.out").read()
line = "tail exits: tail_launch_indirect: %d calls ended at a tail jump not followed" % n
assert line in out and "register" in out.split(line, 1)[1].split("\n", 1)[0], out
# the only other: the jump into free (every call of free would trap)
assert out.count("tail exits: ") == 2, out
assert "tail exits: tail_release: %d calls" % probes["tail_release"]["tailExits"] in out, out
assert "C/C++ runtime" in out.split("tail exits: tail_release: ", 1)[1].split("\n", 1)[0], out
# the traced callee: inside its caller, ending at the same return, with the same value
outer, inner = spans("tail_launch_traced"), spans("tail_submit")
assert len(inner) == n, len(inner)
for o, i in zip(outer, inner):
    assert o["ts"] <= i["ts"] and i["ts"] + i["dur"] <= o["ts"] + o["dur"] + 0.002, (o, i)
    assert i["args"]["op"] == o["args"]["op"], (o, i)
    assert i["args"]["bytes"] == 3 * o["args"]["bytes"], (o, i)
print("ok")
PY
}

@test "device spans of launches that tail-call the function returning the op id: one per launch" {
	cat >"$BATS_TEST_TMPDIR/dev.probes" <<'P'
libtailrt.so	tail_launch		arg1=bytes:u dev=launch op=compute key=ret
libtailrt.so	tail_launch_traced	arg1=bytes:u dev=launch op=compute key=ret
libtailrt.so	tail_launch_plt		arg1=bytes:u dev=launch op=compute key=ret
libtailrt.so	tail_launch_chain	arg1=bytes:u dev=launch op=compute key=ret
libtailrt.so	tail_launch_cond	arg1=bytes:u dev=launch op=compute key=ret
libtailrt.so	tail_complete		type=instant arg1=op:u dev=complete key=arg1
P
	trace_tailjob "$BATS_TEST_TMPDIR/dev.probes"
	python3 - "$BATS_TEST_TMPDIR/t.json" "$N" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
ev = d["traceEvents"]
launches = [e for e in ev if e.get("ph") == "X" and e["name"].startswith("tail_launch")]
dev = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
assert len(launches) == 5 * n, len(launches)	# tail_launch_indirect is not in this table
assert len(dev) == len(launches), (len(dev), len(launches), d.get("spyreStats"))
corr = sorted(e["args"]["correlation"] for e in launches)
assert corr == sorted(e["args"]["correlation"] for e in dev), "launches and device spans differ"
print("ok")
PY
}

@test "launch mode (-- CMD): tail jumps into a library not loaded yet are followed too" {
	write_probes
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	"$TOOL" --no-default --probes "$BATS_TEST_TMPDIR/tail.probes" -o "$BATS_TEST_TMPDIR/t.json" \
		-- "$TAILJOB" "$BATS_TEST_TMPDIR/job.ready" 10 "$BATS_TEST_TMPDIR/done.json" \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
	JOB_PID=$(cat "$BATS_TEST_TMPDIR/job.ready")
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/done.json" 120
	kill -TERM "$JOB_PID"
	wait_child "$TRACER_PID" 60
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$CHILD_RC" -eq 0 ]
	python3 - "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/done.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
truth = json.load(open(sys.argv[2]))
for name in ("tail_launch", "tail_launch_traced", "tail_launch_plt", "tail_launch_chain",
             "tail_launch_cond"):
    s = sorted((e for e in d["traceEvents"] if e.get("ph") == "X" and e["name"] == name),
               key=lambda e: e["ts"])
    assert [e["args"]["op"] for e in s] == truth[name]["ret"], (name, s[:2])
print("ok")
PY
}

@test "an allocator that returns through a tail jump: the ledger books each pointer its caller got, each freed" {
	# tail_alloc is `jmp rt_alloc`, tail_free `jmp rt_free`: the pointer exists only at
	# rt_alloc's return, which the followed jump probes. Were the span to end at the jump, its
	# ptr=ret would be 0: no allocation booked (failedAllocs), each free of an unknown pointer
	cat >"$BATS_TEST_TMPDIR/mem.probes" <<'P'
libtailrt.so	tail_alloc	arg1=bytes:u ret=ptr:x mem=alloc ptr=ret size=arg1
libtailrt.so	tail_free	arg1=ptr:x mem=free ptr=arg1
P
	trace_tailjob "$BATS_TEST_TMPDIR/mem.probes"
	lost_once "$BATS_TEST_TMPDIR/t.json"
	python3 - "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/done.json" "$N" "$JOB_PID" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
truth = json.load(open(sys.argv[2]))["tail_alloc"]
n, pid = int(sys.argv[3]), int(sys.argv[4])
num = lambda v: int(v, 16) if isinstance(v, str) else v
assert len(truth["ret"]) == n and len(set(truth["ret"])) > 1, truth
m = d["spyreMemory"]
assert m["allocsWithoutPointer"] == 0 and m["nestedAllocs"] == 0, m
procs = m["processes"]
assert [x["pid"] for x in procs] == [pid], procs
devs = procs[0]["devices"]
assert [x["device"] for x in devs] == [0], devs
a = devs[0]["allocated"]
# the job's own calls: every allocation booked with its pointer, every free found its block
want = {"allocs": n, "frees": n, "failedAllocs": 0, "freesMissed": 0, "unknownFrees": 0,
        "bytesAllocated": sum(truth["bytes"]), "bytesFreed": sum(truth["bytes"]), "current": 0}
assert {k: a[k] for k in want} == want, (a, want)
assert procs[0]["liveBlocks"] == [], procs[0]["liveBlocks"]
# the pointers the job got, in its order, in the spans (ret=) and the profiler's events
ev = sorted((e for e in d["traceEvents"] if e.get("ph") in ("X", "i")), key=lambda e: e["ts"])
spans = [e for e in ev if e["name"] == "tail_alloc"]
assert [num(e["args"]["ptr"]) for e in spans] == truth["ret"], (spans[:2], truth["ret"][:2])
assert [e["args"]["bytes"] for e in spans] == truth["bytes"], spans[:2]
mem = [e["args"] for e in ev if e["name"] == "[memory]"]
booked = [(x["Addr"], x["Bytes"]) for x in mem if x["Bytes"] > 0]
freed = [(x["Addr"], -x["Bytes"]) for x in mem if x["Bytes"] < 0]
assert booked == freed == list(zip(truth["ret"], truth["bytes"])), (booked[:2], freed[:2])
probes = {p["name"]: p for p in d["spyreProbes"]}
for name in ("tail_alloc", "tail_free"):
    p = probes[name]
    assert p["hits"] == p["events"] == n, p
    assert p["tailJumpsFollowed"] == 1 and p["tailExits"] == 0 and p["unwound"] == 0, p
print("ok")
PY
}
