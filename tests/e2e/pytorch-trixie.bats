#!/usr/bin/env bats
# Python stacks (issue 26) on real PyTorch under CPython 3.13: Debian trixie's python3-torch
# (PyTorch 2.6.0+debian under python3.13 3.13.5 when written) in a debootstrap'd trixie root,
# the job (tests/e2e/pystack_job.py, which records each of its call sites' line and function with
# inspect) run under chroot and traced from the host by PID. Each aten op's innermost frame must
# name exactly the line that called it (tests/e2e/check_pystack.py): co_filename is the path the
# job sees in its root, which is also the one it records.
#
# The root is made once, by tools/debian-root.sh trixie with python3,python3-torch (debootstrap
# --variant=minbase from this machine's apt mirror), kept as $BUILD/trixie-torch-root and reused:
# 1.3 GB (197 packages, 216 MB of .debs, dropped once installed), made in 105-115 s on the
# project's 2-core build VM, 2026-12-06, with other work running (the file from scratch: 2 min 4 s).
# Then the tests take 5-9 s each (the second attaches about 20,000 uprobes: 3,151 functions).
# Skipped only when debootstrap failed and the mirror cannot be reached (debian-root.sh exit 77).
# The job runs under a plain chroot with no /proc mounted in it, as in pystack.bats: importing
# torch says "Error in cpuinfo: failed to parse processor information from /proc/cpuinfo" (stderr)
# and UCX "failed to get boot id" (stdout), and runs on (the job pins OMP/BLAS to one thread).

load pystack-helpers

TTROOT=$BUILD/trixie-torch-root	# Debian trixie with python3 and python3-torch

setup_file() {
	local rc=0
	sh "$ROOT/tools/debian-root.sh" trixie "$TTROOT" python3,python3-torch \
		>"$BATS_FILE_TMPDIR/root.out" 2>&1 || rc=$?
	echo "$rc" >"$BATS_FILE_TMPDIR/root.rc"
}

# need_root: the root made by setup_file; skip when the mirror could not be reached
need_root() {
	local rc
	rc=$(cat "$BATS_FILE_TMPDIR/root.rc")
	cat "$BATS_FILE_TMPDIR/root.out"
	[ "$rc" -ne 77 ] || skip "no trixie root: $(tail -1 "$BATS_FILE_TMPDIR/root.out")"
	[ "$rc" -eq 0 ]
}

# chroot_torch_traced TRACER OPTIONS: pystack_job.py under chroot "$TTROOT" /usr/bin/python3, its
# script and handshake files in the root's /tmp/pytorch-bats/N (named as the job sees them), held
# before its calls while the tracer attaches to it by PID from the host; the calls made, the
# tracer stopped while the job still lives (its code objects are read from it), the job let go.
# Its record is copied to the test's directory; the job's and the tracer's status must be 0 and
# `check` clean.
chroot_torch_traced() {
	local j=/tmp/pytorch-bats/$BATS_TEST_NUMBER d t=$BATS_TEST_TMPDIR pid
	d=$TTROOT$j
	rm -rf "$d"
	mkdir -p "$d"
	cp "$ROOT/tests/e2e/pystack_job.py" "$ROOT/tests/e2e/jobsync.py" "$d/"
	chroot "$TTROOT" /usr/bin/python3 "$j/pystack_job.py" --ready "$j/job.ready" --go "$j/go" \
		--linger "$j/linger" --out "$j/calls.json" >"$t/job.out" 2>"$t/job.err" &
	JOB_PID=$!
	wait_for "$d/job.ready" 60	# importing torch takes seconds
	start_tracer -o "$t/t.json" --driver off "$@"
	touch "$d/go"
	wait_for "$d/calls.json" 60 || { cat "$t/job.err"; return 1; }
	sleep 0.3	# the last spans' stage reaches the ring within 20 ms; drained every 10 ms
	stop_tracer
	touch "$d/linger"
	wait_child "$JOB_PID" 60
	JOB_RC=$CHILD_RC
	pid=$JOB_PID
	JOB_PID=
	cat "$t/job.err" "$t/tracer.out" "$t/tracer.err"
	[ "$JOB_RC" -eq 0 ]
	[ "$TRACER_RC" -eq 0 ]
	cp "$d/job.ready" "$d/calls.json" "$t/"
	rm -rf "$d"
	# the PID the job sees in its root is the one traced (chroot execs python3)
	[ "$(cat "$t/job.ready")" = "$pid" ]
	[ "$(json_get "$t/calls.json" 'd["file"]')" = "$j/pystack_job.py" ]
	run "$TOOL" check "$t/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

# versions: CPython 3.13 and PyTorch 2.x in the root (its last line: importing torch without /proc
# has UCX print "failed to get boot id" on stdout)
versions() {
	local v
	v=$(chroot "$TTROOT" /usr/bin/python3 -c 'import sys, torch; print(sys.version.split()[0], torch.__version__)' 2>/dev/null | tail -1)
	echo "CPython, PyTorch: $v"
	[[ "$v" == "3.13."*" 2."* ]]
}

@test "--python on Debian trixie's python3-torch (PyTorch 2.6, CPython 3.13) in a debootstrap'd chroot, traced from the host: each aten::mm and aten::add names its exact line and function, pystack up to <module>" {
	need_root
	versions
	chroot_torch_traced --no-default --python --probe "$MM" --probe "$ADD"
	check_lines --op aten::mm=aten::mm --op aten::add=aten::add --spans
	# one stack checked whole (the nested function, its caller, main, the module, each a line of
	# the job's file as it sees it); every call carried its stack, each named: 100 ops
	check_lines --op aten::mm=aten::mm --op aten::add=aten::add \
		--whole-stack "/tmp/pytorch-bats/$BATS_TEST_NUMBER/pystack_job.py" --ops 100
	! grep -q "Python stacks\|not supported" "$BATS_TEST_TMPDIR/tracer.err"
	# the probes sat on the root's libtorch_cpu (2.6), not on any of the host's
	grep -q "\"$TTROOT/usr/lib/[^\"]*/libtorch_cpu.so.2[.0-9]*\"" "$BATS_TEST_TMPDIR/t.json"
}

@test "--probes torch --python on trixie's PyTorch 2.6 under CPython 3.13: the whole table resolves; aten::mm and aten::add_Tensor name their call sites exactly" {
	need_root
	versions
	chroot_torch_traced --probes torch --python
	check_lines --op aten::mm=aten::mm --op aten::add_Tensor=aten::add --spans
	# every line of the table resolved in the job (3,144 at::_ops::*::call in 2.6.0+debian), each
	# function its own entry in spyreProbes
	python3 "$ROOT/tests/e2e/check_trace.py" table "$BATS_TEST_TMPDIR/t.json" 2000 \
		torch::autograd::Engine::execute torch::autograd::Engine::evaluate_function \
		c10::alloc_cpu c10::free_cpu at::_ops::mm::call at::_ops::add_Tensor::call
}
