#!/usr/bin/env bats
# Device memory over time, end to end: the ledger against the mock job's own counters, a job
# that leaks on purpose, frees of blocks allocated before the attach, the counter tracks in the
# trace, and the fleet metrics.

load helpers

# mem_check TRACE COUNTS [UNKNOWN_FREES]: the ledger of the traced phase holds exactly what the
# job says it did, and the trace's events and counter track agree with it. Each allocation goes
# through both of torch-spyre's overloads, allocate(size_t) calling allocate(size_t, directive):
# the inner one books the block, the outer one returning it is nested (nestedAllocs), once per
# allocation; an allocation of 0 bytes (a null DataPtr) is neither booked nor failed.
mem_check() {
	python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))
unknown = int(sys.argv[3]) if len(sys.argv) > 3 else 0
calls = c["calls"]
allocs = calls["spyre::SpyreAllocator::allocate"] - \
    c["thrown"]["spyre::SpyreAllocator::allocate"] - c["emptyAllocs"]
frees = calls["spyre::SpyreAllocator::ReportAndDelete"] - unknown
assert d["spyreMemory"]["nestedAllocs"] == allocs, (d["spyreMemory"]["nestedAllocs"], allocs)
procs = d["spyreMemory"]["processes"]
assert [p["pid"] for p in procs] == [c["pid"]], procs
devs = procs[0]["devices"]
assert [x["device"] for x in devs] == [0], devs
a = devs[0]["allocated"]
leaked = sum(b["bytes"] for b in c["leaked"])
want = {"allocs": allocs, "frees": frees, "bytesAllocated": c["bytes"]["allocated"],
        "unknownFrees": unknown, "failedAllocs": 0, "freesMissed": 0, "current": leaked}
got = {k: a[k] for k in want}
assert got == want, (got, want)
# frees of blocks from before the attach are not in bytesFreed: only what it allocated
assert a["bytesAllocated"] - a["bytesFreed"] == leaked, a
ev = d["traceEvents"]
mem = [e for e in ev if e["name"] == "[memory]"]
assert len(mem) == allocs + frees, (len(mem), allocs, frees)
for e in mem:
    assert e["ph"] == "i" and e["s"] == "t" and e["cat"] == "cpu_instant_event", e
    assert e["pid"] == c["pid"] and e["tid"] != e["pid"], e
    x = e["args"]
    assert x["Device Type"] == 20 and x["Device Id"] == 0 and x["Addr"] > 0, e
    assert x["Total Reserved"] == x["Total Allocated"] >= 0, e
assert sum(e["args"]["Bytes"] for e in mem) == leaked - 0, "bytes do not add up"
cnt = sorted((e for e in ev if e["ph"] == "C" and e["name"] == "Spyre memory (device 0)"),
             key=lambda e: e["ts"])
assert len(cnt) == allocs + frees, len(cnt)
assert all(e["tid"] == 0 and e["pid"] == c["pid"] for e in cnt)
vals = [e["args"]["allocated"] for e in cnt]
assert min(vals) >= 0 and vals[-1] == leaked, vals[-5:]
assert max(vals) == a["peak"], (max(vals), a["peak"])
peak_ts = [e["ts"] for e in cnt if e["args"]["allocated"] == a["peak"]][0]
assert abs(peak_ts - a["peakTs"]) < 0.002, (peak_ts, a["peakTs"])
PY
}

@test "every allocation and free is in the ledger, exactly as the job counted them, sampled or not" {
	start_job --threads 3 --iters 40 --bytes 12345
	# --sample-every records 1 call in 7: never an allocator's (memory must add up)
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --sample-every 7
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	mem_check "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
	python3 - "$BATS_TEST_TMPDIR/t.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
a = d["spyreMemory"]["processes"][0]["devices"][0]["allocated"]
# each thread holds its two buffers at most: 2..6 of them live at once
assert 2 * 12345 <= a["peak"] <= 6 * 12345, a
assert a["current"] == 0 and a["bytesAllocated"] == 3 * 40 * 2 * 12345, a
assert d["spyreMemory"]["processes"][0]["liveGroups"] == [], d["spyreMemory"]
PY
	grep -q "pid $JOB_PID device 0: peak .*, 0 B still allocated; 240 allocs, 240 frees" \
		"$BATS_TEST_TMPDIR/tracer.out"
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	stop_job
}

@test "empty tensors: allocate(0) through both overloads is in the trace, not a failed allocation" {
	# every 3rd iteration of each thread starts with allocate(0): 2 threads x 10 of 30
	start_job --threads 2 --iters 30 --bytes 12345 --empty-every 3
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	[ "$(counts_field "$BATS_TEST_TMPDIR/counts.json" emptyAllocs)" -eq 20 ]
	# the ledger: 120 blocks, 120 nested returns of them, no failure (mem_check)
	mem_check "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
	python3 - "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))
a = d["spyreMemory"]["processes"][0]["devices"][0]["allocated"]
assert (a["allocs"], a["frees"], a["failedAllocs"]) == (120, 120, 0), a
assert d["spyreMemory"]["nestedAllocs"] == 120, d["spyreMemory"]
# both overloads traced, one span each per call (140 = 120 + 20 empty), the empty ones with
# their size 0
sym = "spyre::SpyreAllocator::allocate"
probes = [p for p in d["spyreProbes"] if p["symbol"] == sym]
assert len(probes) == 2 and all(p["events"] == c["calls"][sym] == 140 for p in probes), probes
for p in probes:
    ev = [e for e in d["traceEvents"] if e["ph"] == "X" and e["name"] == p["name"]]
    assert sum(e["args"]["bytes"] == 0 for e in ev) == 20, p["name"]
    assert sum(e["args"]["bytes"] == 12345 for e in ev) == 120, p["name"]
PY
	stop_job
}

@test "an allocation that throws std::bad_alloc: in the trace, unwound, with its size; not in the ledger" {
	# every 4th iteration asks for SIZE_MAX first, which throws out of the traced allocate
	start_job --threads 2 --iters 40 --bytes 12345 --oom-every 4
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	# the ledger holds exactly the allocations that returned (mem_check: thrown ones left out)
	mem_check "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
	python3 - "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))
# the bad_alloc leaves flex's allocate (aiuMalloc) and torch-spyre's around it (spyreAllocate,
# the ledger's probe): each call that threw is in the trace, in both
# (allocate's overloads are named by their parameters: the inner one, allocate(size_t,
# directive), is where the ledger books)
inner = "spyreAllocate(unsigned long, flex::AllocationDirective const&)"
for sym, name in (("flex::FlexAllocator::allocate", "aiuMalloc"),
                  ("spyre::SpyreAllocator::allocate", inner)):
    thrown = c["thrown"][sym]
    assert thrown == 2 * 10, c["thrown"]
    m = [e for e in d["traceEvents"] if e.get("name") == name and e.get("ph") == "X"]
    bad = [e for e in m if e["args"].get("unwound") is True]
    # each one that threw: the size asked for, no pointer (it returned none); the last one's
    # too, as the next allocation of its thread finds it unwound
    assert len(bad) == thrown, (name, len(bad), thrown)
    assert all(e["args"]["bytes"] == 2**64 - 1 and "ptr" not in e["args"] for e in bad), bad[:2]
    assert all(e["args"]["bytes"] == 12345 for e in m if e not in bad), name
    assert len(m) == c["calls"][sym], (name, len(m), c["calls"][sym])
    p = next(p for p in d["spyreProbes"] if p["name"] == name)
    assert p["unwound"] == thrown and p["noReturn"] == 0 and p["events"] == len(m), p
a = d["spyreMemory"]["processes"][0]["devices"][0]["allocated"]
assert a["peak"] <= 6 * 12345 and a["failedAllocs"] == 0, a
PY
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	stop_job
}

@test "a job that leaks: the report names exactly the leaked blocks, and who allocated them" {
	start_job --threads 2 --iters 30 --bytes 20000 --leak 5
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	mem_check "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
	python3 - "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))
p = d["spyreMemory"]["processes"][0]
want = sorted((int(b["addr"], 16), b["bytes"]) for b in c["leaked"])
got = sorted((int(b["addr"], 16), b["bytes"]) for b in p["liveBlocks"])
assert len(want) == 5 and got == want, (got, want)
# allocate(size_t, directive), where the ledger books: allocate's overloads are named by
# their parameters
inner = "spyreAllocate(unsigned long, flex::AllocationDirective const&)"
assert all(b["probe"] == inner for b in p["liveBlocks"]), p["liveBlocks"]
ts = [b["ts"] for b in p["liveBlocks"]]
assert ts == sorted(ts), "not oldest first"
names = {e["tid"]: e["args"]["name"] for e in d["traceEvents"]
         if e["ph"] == "M" and e["name"] == "thread_name"}
assert {names[b["tid"]] for b in p["liveBlocks"]} == {"train-0"}, p["liveBlocks"]
g = p["liveGroups"]
assert len(g) == 1 and g[0]["count"] == 5 and g[0]["bytes"] == 20000, g
assert g[0]["probe"] == inner and g[0]["thread"] == "train-0", g
assert p["liveBlocksNotListed"] == 0
PY
	grep -q "still allocated at the end, oldest first (5 blocks in 1 group)" \
		"$BATS_TEST_TMPDIR/tracer.out"
	grep -Eq "^ +5 x 19.5 KiB +pid $JOB_PID device 0  spyreAllocate\(unsigned long, \
flex::AllocationDirective const&\)  thread train-0 " \
		"$BATS_TEST_TMPDIR/tracer.out"
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 0 ]
	# report, from the saved trace: the same leak by site, and the ledger's peak and end
	run "$TOOL" report "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	grep -q "^  still allocated at the end in pid $JOB_PID, by where it was allocated:$" <<<"$output"
	grep -q "^    5 x 20,000 B: spyreAllocate(unsigned long, flex::AllocationDirective const&)$" \
		<<<"$output"
	grep -q "^  pid $JOB_PID device 0: peak .* B at .*, 100,000 B allocated at the end; " <<<"$output"
	stop_job
}

@test "frees of blocks allocated before the attach are counted, never negative bytes" {
	# phase 1 untraced leaks 4 blocks; phase 2 frees them first, then leaks 4 of its own
	start_job --threads 2 --iters 20 --bytes 8192 --leak 4 --phases 2
	run_phase 1
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase 2
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	mem_check "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json.2" 4
	grep -q "4 frees of unknown pointers" "$BATS_TEST_TMPDIR/tracer.out"
	grep -q "allocations made before tracing started are not known" "$BATS_TEST_TMPDIR/tracer.out"
	stop_job
}

# a prometheus parser from Debian (python3-prometheus-client), as fleet.bats uses
PYPROM=/usr/bin/python3

@test "fleet mode: per-process current and peak device memory in the Prometheus file" {
	[ -x "$PYPROM" ] && "$PYPROM" -c 'import prometheus_client' || skip "python3-prometheus-client missing"
	start_job --threads 2 --iters 25 --bytes 40000 --leak 3
	"$TOOL" -p "$JOB_PID" --window 30s --period 30s --prom-file "$BATS_TEST_TMPDIR/spyre.prom" \
		--output-dir "$BATS_TEST_TMPDIR/out" -q --ready-file "$BATS_TEST_TMPDIR/tracer.ready" \
		>"$BATS_TEST_TMPDIR/tracer.out" 2>"$BATS_TEST_TMPDIR/tracer.err" &
	TRACER_PID=$!
	wait_ready "$BATS_TEST_TMPDIR/tracer.ready" "$TRACER_PID"
	run_phase
	stop_tracer TERM
	[ "$TRACER_RC" -eq 0 ]
	"$PYPROM" - "$BATS_TEST_TMPDIR/spyre.prom" "$JOB_PID" "$BATS_TEST_TMPDIR/counts.json" <<'PY'
import json, sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
pid = sys.argv[2]; c = json.load(open(sys.argv[3]))
def one(name):
    s = [s for s in fams[name].samples if s.labels.get("pid") == pid]
    assert len(s) == 1, (name, s)
    return s[0]
cur = one("spyre_device_memory_bytes"); peak = one("spyre_device_memory_peak_bytes")
assert cur.labels == {"pid": pid, "comm": "mock-spyre-job", "device": "0",
                      "kind": "allocated"}, cur.labels
assert cur.value == 3 * 40000 == sum(b["bytes"] for b in c["leaked"]), cur
# two threads, two buffers each at most, plus what is leaked by then
assert 2 * 40000 <= peak.value <= 4 * 40000 + 3 * 40000, peak
assert fams["spyre_device_memory_bytes"].type == "gauge"
PY
	stop_job
}
