#!/usr/bin/env bats
# Device memory over time, end to end: the ledger against the mock job's own counters, a job
# that leaks on purpose, frees of blocks allocated before the attach, the counter tracks in the
# trace, and the fleet metrics.

load helpers

CHECK_MEMORY="python3 $ROOT/tests/e2e/check_memory.py"

# mem_check TRACE COUNTS [UNKNOWN_FREES]: the ledger of the traced phase holds exactly what the
# job says it did, and the trace's events and counter track agree with it. Each allocation goes
# through both of torch-spyre's overloads, allocate(size_t) calling allocate(size_t, directive):
# the inner one books the block, the outer one returning it is nested (nestedAllocs), once per
# allocation; an allocation of 0 bytes (a null DataPtr) is neither booked nor failed.
mem_check() {
	$CHECK_MEMORY ledger "$1" "$2" ${3:+--unknown-frees "$3"}
}

@test "every allocation and free is in the ledger, exactly as the job counted them, sampled or not" {
	start_job --threads 3 --iters 40 --bytes 12345
	# --sample-every records 1 call in 7: never an allocator's (memory must add up)
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --sample-every 7
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	mem_check "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
	# each thread holds its two buffers at most: 2..6 of them live at once
	$CHECK_MEMORY sampled "$BATS_TEST_TMPDIR/t.json" 3 40 12345
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
	$CHECK_MEMORY empty "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
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
	$CHECK_MEMORY oom "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
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
	$CHECK_MEMORY leak "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json"
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
