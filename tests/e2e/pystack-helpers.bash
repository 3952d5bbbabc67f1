# The Python-stack tests' shared pieces (pystack.bats, pytorch-trixie.bats), on top of
# torch-helpers.bash (TORCH_PY, need_torch): the job, the two aten probes, the line check.

load torch-helpers

PYJOB=$ROOT/tests/e2e/pystack_job.py
MM='libtorch_cpu.so*:at::_ops::mm::call:aten::mm'
ADD='libtorch_cpu.so*:at::_ops::add_Tensor::call:aten::add'

# check_lines OPTIONS: the trace against the job's record of its call sites (check_pystack.py)
check_lines() {
	python3 "$ROOT/tests/e2e/check_pystack.py" "$BATS_TEST_TMPDIR/t.json" \
		"$BATS_TEST_TMPDIR/calls.json" "$@"
}

# all_armed PID [PROBE OPTIONS]: every probe site that `list -v -p PID` names for those options
# holds a breakpoint in PID (probe_sites.py): the tracer's rescan has attached to a library the
# job loaded after the attach (a condition to wait for, not a second to sleep)
all_armed() {
	local pid=$1 counts
	shift
	counts=$("$TOOL" list -v -p "$pid" "$@" 2>/dev/null |
		 python3 "$ROOT/tests/e2e/probe_sites.py" "$pid") || return 1
	set -- $counts
	[ "$2" -gt 0 ] && [ "$1" -eq "$2" ]
}
