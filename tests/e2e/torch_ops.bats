#!/usr/bin/env bats
# PyTorch's op layer (issue 15): the built-in table `--probes torch` on a real CPU training job
# (tests/e2e/torch_train.py, Debian's python3-torch), attached by PID. Every event of the ~3,000
# at::_ops::*::call probes is named after its op (aten::addmm, not "call"), names are one per
# function in the trace and the summary, and the counts per iteration are what the model
# implies (tests/e2e/check_torch_ops.py).
#
# The whole op layer is ~3,000 probes: the first test needs a tracer without the 512-probe cap
# (branch scale). The second one stays under it.

load helpers

TORCH_PY=/usr/bin/python3	# Debian's python with python3-torch, whatever python3 is on PATH
TRAIN=$ROOT/tests/e2e/torch_train.py

need_torch() {
	"$TORCH_PY" -c 'import torch' 2>/dev/null || skip "no python3-torch for $TORCH_PY"
}

# the untraced run's results, once per file
train_untraced() {
	local f=$BATS_FILE_TMPDIR/untraced.json
	[ -e "$f" ] && return 0
	touch "$BATS_FILE_TMPDIR/go"
	"$TORCH_PY" "$TRAIN" --ready "$BATS_FILE_TMPDIR/u.ready" --go "$BATS_FILE_TMPDIR/go" \
		--out "$f"
}

# start_train: the training job, held before its first iteration; sets JOB_PID
start_train() {
	rm -f "$BATS_TEST_TMPDIR/job.ready" "$BATS_TEST_TMPDIR/go" "$BATS_TEST_TMPDIR/counts.json"
	"$TORCH_PY" "$TRAIN" --ready "$BATS_TEST_TMPDIR/job.ready" --go "$BATS_TEST_TMPDIR/go" \
		--out "$BATS_TEST_TMPDIR/counts.json" \
		>"$BATS_TEST_TMPDIR/job.out" 2>"$BATS_TEST_TMPDIR/job.err" &
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready" 60	# importing torch takes seconds
}

# train_traced TOOL OPTIONS: start the job, attach, let it train; the tracer stops when the job
# exits. Both must succeed, the weights must be the untraced run's, the trace clean.
train_traced() {
	need_torch
	train_untraced
	start_train
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" "$@"
	touch "$BATS_TEST_TMPDIR/go"
	wait_child "$JOB_PID" 300 || { cat "$BATS_TEST_TMPDIR/job.err"; return 1; }
	JOB_RC=$CHILD_RC
	JOB_PID=
	wait_child "$TRACER_PID" 60 || { cat "$BATS_TEST_TMPDIR/tracer.err"; return 1; }
	TRACER_RC=$CHILD_RC
	TRACER_PID=
	cat "$BATS_TEST_TMPDIR/job.err" "$BATS_TEST_TMPDIR/tracer.out" "$BATS_TEST_TMPDIR/tracer.err"
	[ "$JOB_RC" -eq 0 ]
	[ "$TRACER_RC" -eq 0 ]
	[ "$(counts_field "$BATS_TEST_TMPDIR/counts.json" checksum)" = \
	  "$(counts_field "$BATS_FILE_TMPDIR/untraced.json" checksum)" ]
	$VERIFY "$BATS_TEST_TMPDIR/t.json"
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	# iteration times side by side (medians, µs): what the probes cost this job
	python3 -c 'import json,statistics,sys
u, t = (statistics.median(json.load(open(f))["iterNs"][1:]) / 1e3 for f in sys.argv[1:])
print(f"iteration: untraced {u:.0f} us, traced {t:.0f} us ({t / u:.1f}x)")' \
		"$BATS_FILE_TMPDIR/untraced.json" "$BATS_TEST_TMPDIR/counts.json"
}

# trace_py EXPR: a Python expression over this test's trace `d`
trace_py() {
	python3 -c 'import json,sys,collections; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
		"$BATS_TEST_TMPDIR/t.json" "$1"
}

@test "--probes torch on a CPU training job: every op named aten::OP (cat cpu_op), one name per function, counts per iteration as the model implies, weights as untraced" {
	train_traced --probes torch --driver off
	python3 "$ROOT/tests/e2e/check_torch_ops.py" "$BATS_TEST_TMPDIR/t.json" \
		"$BATS_TEST_TMPDIR/counts.json" --summary "$BATS_TEST_TMPDIR/tracer.out"
	# the whole run was traced: the summary's addmm row counts every forward of every layer
	local iters layers
	iters=$(counts_field "$BATS_TEST_TMPDIR/counts.json" iters)
	layers=$(counts_field "$BATS_TEST_TMPDIR/counts.json" layers)
	grep -E "^ +$((iters * layers)) +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+  aten::addmm$" \
		"$BATS_TEST_TMPDIR/tracer.out"
}

@test "--probe with a {1} template and a fixed name on a glob: one name per function in the trace and the summary, renamed ones explained" {
	# under 512 probes: the ops starting with l or r (~380) by template (a '*' captures, a
	# literal does not: l{1}), the *mm ops (11) under one fixed name
	train_traced --no-default --driver off \
		--probe 'libtorch_cpu.so*:at::_ops::l*::call:aten::l{1}' \
		--probe 'libtorch_cpu.so*:at::_ops::r*::call:aten::r{1}' \
		--probe 'libtorch_cpu.so*:at::_ops::*mm::call:mmop'
	local iters layers relus
	iters=$(counts_field "$BATS_TEST_TMPDIR/counts.json" iters)
	layers=$(counts_field "$BATS_TEST_TMPDIR/counts.json" layers)
	relus=$(counts_field "$BATS_TEST_TMPDIR/counts.json" relus)
	[ "$(trace_py 'collections.Counter(e["name"] for e in d["traceEvents"] if e["ph"] == "X")["aten::linear"]')" -eq $((iters * layers)) ]
	[ "$(trace_py 'collections.Counter(e["name"] for e in d["traceEvents"] if e["ph"] == "X")["aten::relu"]')" -eq $((iters * relus)) ]
	# names: all distinct; one *mm function keeps "mmop", the others say which they are
	[ "$(trace_py 'max(collections.Counter(p["name"] for p in d["spyreProbes"]).values())')" -eq 1 ]
	[ "$(trace_py 'sorted(p["name"] == "mmop" or (p["name"] == "mmop (%s)" % p["symbol"] and p["sharedName"] == "mmop") for p in d["spyreProbes"] if p["symbol"].endswith("mm::call"))')" = \
	  "$(python3 -c 'print([True] * 11)')" ]
	[ "$(trace_py 'sum(p["name"] == "mmop" for p in d["spyreProbes"])')" -eq 1 ]
	# addmm and mm, both traced, under names of their own in the trace and in the summary
	[ "$(trace_py 'len({e["name"] for e in d["traceEvents"] if e["ph"] == "X" and e["name"].startswith("mmop")})')" -eq 2 ]
	[ "$(grep -Ec '^ +[0-9,]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+  mmop' \
		"$BATS_TEST_TMPDIR/tracer.out")" -eq 2 ]
	grep -E '^renamed: mmop \(at::_ops::(add)?mm::call\) is at::_ops::(add)?mm::call in /.*libtorch_cpu.so[^ ]* \(mmop is at::_ops::[a-z_]*mm::call in /.*libtorch_cpu.so[^ ]*\)$' \
		"$BATS_TEST_TMPDIR/tracer.out"
}

@test "--probes: a built-in table's name wins over a file of that name (with a note), ./NAME is the file, an unknown name is an error naming the tables" {
	start_job
	cd "$BATS_TEST_TMPDIR"
	echo 'libflex.so* flex::RuntimeStream::synchronize name=fromFile' >torch
	run "$TOOL" list -v -p "$JOB_PID" --no-default --probes torch
	echo "$output"
	[ "$status" -eq 5 ]	# no PyTorch in the mock job
	[[ "$output" == *"--probes torch is the built-in table; the file is ./torch"* ]]
	[[ "$output" == *"at::_ops::*::call"* ]]
	run "$TOOL" list -v -p "$JOB_PID" --no-default --probes ./torch
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"fromFile"* ]]
	run "$TOOL" list -p "$JOB_PID" --no-default --probes trch
	echo "$output"
	[ "$status" -eq 2 ]	# a usage error, with the name it most likely meant
	[[ "$output" == *"trch: no such file, nor a built-in table (spyre, torch); did you mean torch?"* ]]
}
