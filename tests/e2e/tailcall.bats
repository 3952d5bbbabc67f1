#!/usr/bin/env bats
# Tail calls: a traced function that ends in `jmp other` (what -O2 makes of `return other(...)`)
# is still running until other returns. Its span must end where its caller gets control back,
# with the value the caller gets, whether other is untraced, traced (then nested inside), in
# another library (through the PLT) or reached through a chain of tail jumps. The job
# (tests/progs/tailjob) writes its own view: the ids each launch returned and how long the
# tail-called function worked on each.

load helpers

TAILJOB=$BUILD/tests/tailjob
N=40
LAUNCHES="tail_launch tail_launch_traced tail_launch_plt tail_launch_chain"

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
		    tail_launch_indirect:rt_dispatch tail_release:free@plt; do
		fn=${pair%%:*} callee=${pair#*:}
		body=$(echo "$dis" | awk -v f="<$fn>:" '$2 == f {p = 1; next} /^$/ {p = 0} p')
		echo "$fn: $body"
		echo "$body" | grep -qE "jmp +[0-9a-f]+ <$callee>"
		if echo "$body" | grep -qE "\bret\b"; then return 1; fi
	done
	# ... and rt_dispatch leaves through a register: what cannot be followed
	echo "$dis" | awk '$2 == "<rt_dispatch>:" {p = 1; next} /^$/ {p = 0} p' |
		grep -qE "jmp +\*%r[a-z0-9]+$"
}

@test "list: every launch's tail jump is followed, and what it costs is named per probe" {
	write_probes
	start_tailjob
	run "$TOOL" list -p "$JOB_PID" --no-default --probes "$BATS_TEST_TMPDIR/tail.probes"
	echo "$output"
	[ "$status" -eq 0 ]
	for fn in $LAUNCHES tail_wait tail_submit; do
		echo "$output" | grep -A4 "^    $fn  *$fn " |
			grep -q "tail calls: 1 jump followed into [12] functions\?: 1 more return site probed, each hit by every call of"
	done
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
             "tail_wait"):
    s = spans(name)
    want = truth[name]
    calls = len(want["ret"])
    assert len(s) == calls == (5 * n if name == "tail_wait" else n), (name, len(s), calls)
    p = probes[name]
    assert p["tailExits"] == 0 and p["unwound"] == 0 and p["unmatchedReturns"] == 0, p
    assert p["tailJumpsFollowed"] == 1 and p["tailJumpsNotFollowed"] == 0, p
    # the caller's value, in the job's order
    got = [e["args"]["op"] for e in s]
    assert got == want["ret"], (name, got[:5], want["ret"][:5])
    # the span ends after the tail-called function's work: it covers it (us vs ns)
    for e, w in zip(s, want["work_ns"]):
        assert e["dur"] * 1000 >= w, (name, e, w)
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
assert len(launches) == 4 * n, len(launches)	# tail_launch_indirect is not in this table
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
for name in ("tail_launch", "tail_launch_traced", "tail_launch_plt", "tail_launch_chain"):
    s = sorted((e for e in d["traceEvents"] if e.get("ph") == "X" and e["name"] == name),
               key=lambda e: e["ts"])
    assert [e["args"]["op"] for e in s] == truth[name]["ret"], (name, s[:2])
print("ok")
PY
}
