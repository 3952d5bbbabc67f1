#!/usr/bin/env bats
# Collectives and ranks, end to end: the mock job's process group (c10d::SpyreCCLBackend over
# libspyre_comms) traced per rank, against each rank's own counts; distributedInfo from the
# environment torchrun gives (two ranks), from getRank/getSize (a world of one), or from both;
# the two ranks' traces merged into one.

load helpers

# check_rank TRACE COUNTS PCI ITERS: the collective spans equal the rank's calls, each comms op
# carries what the job passed it, read from the argument torch-spyre passes it in (bytes and
# dtype of its input tensor, op, root, peer, tag), and distributedInfo names the rank (PCI: its
# AIU_WORLD_RANK_<r>, or "")
check_rank() {
	python3 - "$@" <<'PY'
import collections, json, sys
d = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2])); pci = sys.argv[3]
iters = int(sys.argv[4])
x = [e for e in d["traceEvents"] if e["ph"] == "X" and e["pid"] == c["pid"]]
n = collections.Counter(e["name"] for e in x)
ops = ("allgather", "allreduce", "barrier", "broadcast", "gather", "reduce", "send", "recv")
for op in ops:
    for sym in ("c10d::SpyreCCLBackend::" + op, "spyre_comms::Context::" + op):
        assert n[sym] == c["calls"][sym], (sym, n[sym], c["calls"][sym])
assert n["c10d::SpyreCCLWork::wait"] == c["calls"]["c10d::SpyreCCLWork::wait"], n
assert sum(n["c10d::SpyreCCLBackend::" + op] for op in ops) > 0, n
# What run_collective passes: 8 INT64 words (dtype 3), the reduction SUM (0), the last rank as
# root (1 of 2: not the op's 0), send to the next rank and receive from the previous one, the
# iteration as tag. allgather and gather take the outputs' vector first: their bytes come from
# the input in arg4, which a table reading arg3 (the vector) gets wrong.
rank, ws = c["rank"], c["world_size"]
tensor = {"bytes": 64, "dtype": 3}
want = {"allgather": tensor, "allreduce": dict(tensor, op=0), "barrier": {},
        "broadcast": dict(tensor, root=ws - 1), "gather": dict(tensor, root=ws - 1),
        "reduce": dict(tensor, op=0, root=ws - 1),
        "send": dict(tensor, peer=(rank + 1) % ws), "recv": dict(tensor, peer=(rank - 1) % ws)}
tags = [i for i in range(iters) if ws > 1 and i % 7 == 6]
for op in ops:
    ev = [e for e in x if e["name"] == "spyre_comms::Context::" + op]
    got = [{k: e["args"][k] for k in want[op]} for e in ev]
    assert got == [want[op]] * c["calls"]["spyre_comms::Context::" + op], (op, got, want[op])
    if op in ("send", "recv"):
        assert sorted(e["args"]["tag"] for e in ev) == tags, (op, ev)
di = d["distributedInfo"]
assert di["backend"] == "spyre_ccl" and di["rank"] == rank and di["world_size"] == ws, \
    (di, rank, ws)
assert di.get("pci_bus_id", "") == pci, di
PY
}

# trace_two_ranks: a job of two ranks, each traced by a tracer of its own into t<r>.json, 21
# iterations (three of each kind of collective); the ranks' counts in c.json.r<r>, their pids
# in RANKS
trace_two_ranks() {
	rm -f "$BATS_TEST_TMPDIR/job.ready"
	"$MOCK" --world-size 2 --wait-go --linger --quiet --iters 21 --threads 1 \
		--ready-file "$BATS_TEST_TMPDIR/job.ready" --counts "$BATS_TEST_TMPDIR/c.json" \
		>"$BATS_TEST_TMPDIR/job.out" 2>"$BATS_TEST_TMPDIR/job.err" &
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready"
	mapfile -t RANKS <"$BATS_TEST_TMPDIR/job.ready"
	[ "${#RANKS[@]}" -eq 2 ]
	local r tracers=()
	for r in 0 1; do
		rm -f "$BATS_TEST_TMPDIR/tracer$r.ready"
		"$TOOL" -p "${RANKS[$r]}" -o "$BATS_TEST_TMPDIR/t$r.json" \
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
}

@test "two ranks: each rank's trace has its collectives, with their arguments, and its rank" {
	trace_two_ranks
	check_rank "$BATS_TEST_TMPDIR/t0.json" "$BATS_TEST_TMPDIR/c.json.r0" 0000:1a:00.0 21
	check_rank "$BATS_TEST_TMPDIR/t1.json" "$BATS_TEST_TMPDIR/c.json.r1" 0000:1b:00.0 21
}

@test "two ranks' traces merged: both ranks' collectives, each rank's distributedInfo by pid, and report's table of them" {
	trace_two_ranks
	# the later trace first (merge.bats): the earlier one's time base keeps every ts >= 0
	run "$TOOL" merge "$BATS_TEST_TMPDIR/t1.json" "$BATS_TEST_TMPDIR/t0.json" \
		-o "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	python3 - "$BATS_TEST_TMPDIR/m.json" "$BATS_TEST_TMPDIR/c.json.r0" \
		"$BATS_TEST_TMPDIR/c.json.r1" <<'PY'
import collections, json, sys
m = json.load(open(sys.argv[1])); cs = [json.load(open(p)) for p in sys.argv[2:4]]
n = collections.Counter((e["pid"], e["name"]) for e in m["traceEvents"] if e["ph"] == "X")
ops = ("allgather", "allreduce", "barrier", "broadcast", "gather", "reduce", "send", "recv")
for c in cs:
    for op in ops:
        for sym in ("c10d::SpyreCCLBackend::" + op, "spyre_comms::Context::" + op):
            assert n[(c["pid"], sym)] == c["calls"][sym], (c["rank"], sym, n[(c["pid"], sym)])
# each rank by its pid; distributedInfo is the second input's (rank 0's), as before
by_pid = {e["pid"]: e for e in m["spyreDistributedInfo"]}
assert len(by_pid) == 2, m["spyreDistributedInfo"]
for c, pci in zip(cs, ("0000:1a:00.0", "0000:1b:00.0")):
    e = by_pid[c["pid"]]
    assert (e["backend"], e["rank"], e["world_size"], e["pci_bus_id"]) == \
        ("spyre_ccl", c["rank"], 2, pci), e
assert m["distributedInfo"]["rank"] == 0, m["distributedInfo"]
PY
	run "$TOOL" check "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	[ "$status" -eq 0 ]
	# report: each rank's collectives by op, against the rank's own calls, in the merged
	# trace (ranks by pid) and in one rank's (its distributedInfo)
	run "$TOOL" report --json "$BATS_TEST_TMPDIR/m.json" "$BATS_TEST_TMPDIR/t1.json"
	[ "$status" -eq 0 ]
	python3 - "$output" "$BATS_TEST_TMPDIR/c.json.r0" "$BATS_TEST_TMPDIR/c.json.r1" <<'PY'
import json, sys
files = json.loads(sys.argv[1])["files"]
cs = [json.load(open(p)) for p in sys.argv[2:4]]
ops = ("allgather", "allreduce", "barrier", "broadcast", "gather", "reduce", "send", "recv")
def check(f, ranks):
    got = {(x["rank"], x["pid"], x["op"]): x for x in f["collectives"]}
    want = {(c["rank"], c["pid"], op) for c in ranks for op in ops
            if c["calls"]["spyre_comms::Context::" + op]}
    assert set(got) == want, (set(got) ^ want)
    for c in ranks:
        for op in ops:
            x = got.get((c["rank"], c["pid"], op))
            n = c["calls"]["spyre_comms::Context::" + op]
            if not n:
                continue
            # 8 INT64 words a call (check_rank); a barrier moves none
            assert x["count"] == n and x["bytes"] == (0 if op == "barrier" else 64 * n), x
            assert x["totalNs"] > 0, x
check(files[0], cs)
check(files[1], cs[1:])
PY
	# each rank's collectives against its devices' kernels, computed apart from the trace
	"$TOOL" report --json "$BATS_TEST_TMPDIR/m.json" >"$BATS_TEST_TMPDIR/r.json"
	python3 "$ROOT/tests/e2e/check_overlap.py" "$BATS_TEST_TMPDIR/r.json" \
		"$BATS_TEST_TMPDIR/m.json"
	run "$TOOL" report "$BATS_TEST_TMPDIR/m.json"
	echo "$output"
	grep -Eq "^ +1 +${RANKS[1]} +3 +192 +[0-9.]+ +[0-9.]+  allreduce$" <<<"$output"
	grep -Eq "^ +1 +${RANKS[1]} +[0-9.]+ +[0-9.]+ +[0-9.]+%$" <<<"$output"
}

@test "a world of one without torchrun's environment: rank and size from getRank/getSize" {
	# the Spyre stack's card of each rank is there: getRank's rank names it
	export AIU_WORLD_RANK_0=0000:1a:00.0 AIU_WORLD_RANK_1=0000:1b:00.0
	start_job --world-size 1 --iters 14 --threads 1
	! tr '\0' '\n' </proc/"$JOB_PID"/environ | grep -q '^RANK='
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	check_rank "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" 0000:1a:00.0 14
}

@test "RANK without a world size in the environment: the size from getSize, the rank from RANK" {
	# the job's world is one (no WORLD_SIZE); the tracer takes RANK from the environment and
	# fills only what it lacks from the probes: getRank's answer is not needed
	export RANK=0
	start_job --world-size 1 --iters 14 --threads 1
	tr '\0' '\n' </proc/"$JOB_PID"/environ | grep -qx 'RANK=0'
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	check_rank "$BATS_TEST_TMPDIR/t.json" "$BATS_TEST_TMPDIR/counts.json" "" 14
}

@test "AIU_WORLD_SIZE gives the world size where torchrun's WORLD_SIZE is missing" {
	# no process group at all (no getRank/getSize calls): everything from the environment, as
	# a Spyre job started without torchrun has it
	export RANK=1 AIU_WORLD_SIZE=4 AIU_WORLD_RANK_1=0000:1b:00.0
	start_job --iters 5 --threads 1
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	python3 - "$BATS_TEST_TMPDIR/t.json" <<'PY'
import json, sys
di = json.load(open(sys.argv[1]))["distributedInfo"]
assert di == {"backend": "spyre_ccl", "rank": 1, "world_size": 4,
              "pci_bus_id": "0000:1b:00.0"}, di
PY
}
