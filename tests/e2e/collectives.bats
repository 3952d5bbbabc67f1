#!/usr/bin/env bats
# Collectives and ranks, end to end: the mock job's process group (c10d::SpyreCCLBackend over
# libspyre_comms) traced per rank, against each rank's own counts; distributedInfo from the
# environment torchrun gives (two ranks) or from getRank/getSize (a world of one).

load helpers

# check_rank TRACE COUNTS PCI: the collective spans equal the rank's calls, the comms ops carry
# bytes and dtype, and distributedInfo names the rank (PCI: its AIU_WORLD_RANK_<r>, or "")
check_rank() {
	python3 - "$@" <<'PY'
import collections, json, sys
d = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2])); pci = sys.argv[3]
x = [e for e in d["traceEvents"] if e["ph"] == "X" and e["pid"] == c["pid"]]
n = collections.Counter(e["name"] for e in x)
ops = ("allgather", "allreduce", "barrier", "broadcast", "gather", "reduce", "send", "recv")
for op in ops:
    for sym in ("c10d::SpyreCCLBackend::" + op, "spyre_comms::Context::" + op):
        assert n[sym] == c["calls"][sym], (sym, n[sym], c["calls"][sym])
assert n["c10d::SpyreCCLWork::wait"] == c["calls"]["c10d::SpyreCCLWork::wait"], n
assert sum(n["c10d::SpyreCCLBackend::" + op] for op in ops) > 0, n
# the Tensor read through arg3: 8 INT64 words (dtype 3); root 0, the ring's peer
for e in x:
    if e["name"].startswith("spyre_comms::Context::") and e["name"].split("::")[-1] in ops \
            and not e["name"].endswith("barrier"):
        a = e["args"]
        assert a["bytes"] == 64 and a["dtype"] == 3, e
        if e["name"].split("::")[-1] in ("broadcast", "gather", "reduce"):
            assert a["root"] == 0, e
        if e["name"].endswith("::send"):
            assert a["peer"] == (c["rank"] + 1) % c["world_size"], e
di = d["distributedInfo"]
assert di["backend"] == "spyre_ccl" and di["rank"] == c["rank"] and \
    di["world_size"] == c["world_size"], (di, c["rank"], c["world_size"])
assert di.get("pci_bus_id", "") == pci, di
PY
}

@test "two ranks: each rank's trace has its collectives and its rank in distributedInfo" {
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	"$MOCK" --world-size 2 --wait-go --linger --quiet --iters 21 --threads 1 \
		--ready-file "$BATS_TEST_TMPDIR/job.ready" --counts "$BATS_TEST_TMPDIR/c.json" \
		>"$BATS_TEST_TMPDIR/job.out" 2>"$BATS_TEST_TMPDIR/job.err" &
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
	mapfile -t ranks <"$BATS_TEST_TMPDIR/job.ready"
	[ "${#ranks[@]}" -eq 2 ]
	local r tracers=()
	for r in 0 1; do
		rm -f "$BATS_TEST_TMPDIR/tracer$r.ready"
		"$TOOL" -p "${ranks[$r]}" -o "$BATS_TEST_TMPDIR/t$r.json" \
			--ready-file "$BATS_TEST_TMPDIR/tracer$r.ready" \
			>"$BATS_TEST_TMPDIR/tracer$r.out" 2>&1 &
		tracers+=($!)
		wait_ready "$BATS_TEST_TMPDIR/tracer$r.ready" "${tracers[$r]}"
	done
	kill -USR1 "$JOB_PID"	# the launcher hands the go to both ranks
	wait_for "$BATS_TEST_TMPDIR/c.json.r0" 120
	wait_for "$BATS_TEST_TMPDIR/c.json.r1" 120
	for r in 0 1; do
		kill -INT "${tracers[$r]}"
		wait "${tracers[$r]}"
	done
	stop_job
	[ "$JOB_RC" -eq 0 ]
	check_rank "$BATS_TEST_TMPDIR/t0.json" "$BATS_TEST_TMPDIR/c.json.r0" 0000:1a:00.0
	check_rank "$BATS_TEST_TMPDIR/t1.json" "$BATS_TEST_TMPDIR/c.json.r1" 0000:1b:00.0
}

@test "a world of one without torchrun's environment: rank and size from getRank/getSize" {
	start_job --world-size 1 --iters 14 --threads 1
	! tr '\0' '\n' </proc/"$JOB_PID"/environ | grep -q '^RANK='
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	check_rank "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" ""
}
