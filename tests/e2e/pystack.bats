#!/usr/bin/env bats
# Python stacks (issue 26): --python and py=1 on Debian's python3-torch (CPython 3.11), attached
# by PID. The job (tests/e2e/pystack_job.py) records the line and function of each of its call
# sites with inspect; the innermost frame of each traced op must name exactly that call site
# (tests/e2e/check_pystack.py). A job that is not Python: one message, no stack, no crash.

load pystack-helpers

CHECK_PYLINE="python3 $ROOT/tests/e2e/check_pyline.py"

TROOT=$BUILD/trixie-root	# Debian trixie with python3 (tools/debian-root.sh)

# py_traced TRACER OPTIONS: the job held before its calls, the tracer attached, the calls made,
# the tracer stopped while the job still lives (its code objects are read from it), the job let
# go. Both must succeed.
py_traced() {
	need_torch
	local d=$BATS_TEST_TMPDIR
	"$TORCH_PY" "$PYJOB" --ready "$d/job.ready" --go "$d/go" --linger "$d/linger" \
		--out "$d/calls.json" >"$d/job.out" 2>"$d/job.err" &
	JOB_PID=$!
	wait_for "$d/job.ready" 60	# importing torch takes seconds
	start_tracer -o "$d/t.json" --driver off "$@"
	touch "$d/go"
	wait_for "$d/calls.json" 60 || { cat "$d/job.err"; return 1; }
	sleep 0.3	# the last spans' stage reaches the ring within 20 ms; drained every 10 ms
	stop_tracer
	touch "$d/linger"
	wait_child "$JOB_PID" 60
	JOB_RC=$CHILD_RC
	JOB_PID=
	cat "$d/job.err" "$d/tracer.out" "$d/tracer.err"
	[ "$JOB_RC" -eq 0 ]
	[ "$TRACER_RC" -eq 0 ]
	run "$TOOL" check "$d/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "--python with --probe on aten ops: each op's args.python is the exact line and function of the script that called it, args.pystack up to <module>" {
	py_traced --no-default --python --probe "$MM" --probe "$ADD"
	# and the python_function spans around them, as the profiler's with_stack lays them out
	check_lines --op aten::mm=aten::mm --op aten::add=aten::add --spans
	# one stack checked whole: the nested function, its caller, main, the module; every call
	# carried its stack, each named
	check_lines --op aten::mm=aten::mm --op aten::add=aten::add --whole-stack "$PYJOB"
}

@test "--probes torch --python: the op layer's aten::mm and aten::add_Tensor name their call sites exactly" {
	py_traced --probes torch --python
	check_lines --op aten::mm=aten::mm --op aten::add_Tensor=aten::add
}

@test "py=1 in a probe table: only that probe's calls carry a stack; py=1 on an instant is refused" {
	local t=$BATS_TEST_TMPDIR/py.probes
	printf '%s\n' 'libtorch_cpu.so* at::_ops::mm::call name=aten::mm py=1' \
		'libtorch_cpu.so* at::_ops::add_Tensor::call name=aten::add' >"$t"
	py_traced --no-default --probes "$t"
	check_lines --op aten::mm=aten::mm
	$CHECK_PYLINE none "$BATS_TEST_TMPDIR/t.json" aten::add
	printf '%s\n' 'libtorch_cpu.so* at::_ops::mm::call type=instant py=1' >"$t"
	run "$TOOL" list -v -p 1 --no-default --probes "$t"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"py=1 needs a span"* ]]
}

@test "py=1 with str= on one probe (string, stack and call in one ring record), a job idle after its calls, then gone: each call has its string and its line" {
	local d=$BATS_TEST_TMPDIR
	cat >"$d/opens.py" <<'PY'
import os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
while not os.path.exists(sys.argv[2]): time.sleep(0.01)
for _ in range(5):
    open("/etc/hostname").close()
time.sleep(0.3)  # idle: its calls must not wait in the thread's batch until its exit
PY
	printf '%s\n' 'libc.so* open64 name=open str=arg1:c py=1' >"$d/open.probes"
	/usr/bin/python3 "$d/opens.py" "$d/job.ready" "$d/go" &
	JOB_PID=$!
	wait_for "$d/job.ready" 30
	start_tracer -o "$d/t.json" --driver off --no-default --probes "$d/open.probes"
	touch "$d/go"
	wait_child "$TRACER_PID" 30	# it stops when the job exits
	TRACER_PID=
	[ "$CHILD_RC" -eq 0 ]
	wait_child "$JOB_PID" 30
	JOB_PID=
	$CHECK_PYLINE calls "$d/t.json" open --arg name=/etc/hostname --site "$d/opens.py:5 <module>" \
		--count 5
}

@test "py=1 on an allocator (mem=alloc): the blocks still live at the end name the line that allocated them (summary, spyreMemory), the freed ones are gone" {
	need_torch
	local d=$BATS_TEST_TMPDIR
	printf '%s\n' 'libc10.so* c10::alloc_cpu name=allocCpu mem=alloc ptr=ret size=arg1 py=1' \
		'libc10.so* c10::free_cpu name=freeCpu mem=free ptr=arg1 type=instant' >"$d/mem.probes"
	"$TORCH_PY" "$ROOT/tests/e2e/pystack_mem.py" --ready "$d/job.ready" --go "$d/go" \
		--linger "$d/linger" --out "$d/mem.json" >"$d/job.out" 2>"$d/job.err" &
	JOB_PID=$!
	wait_for "$d/job.ready" 60
	start_tracer -o "$d/t.json" --driver off --no-default --probes "$d/mem.probes"
	touch "$d/go"
	wait_for "$d/mem.json" 60
	sleep 0.3
	stop_tracer
	touch "$d/linger"
	wait_child "$JOB_PID" 60
	JOB_PID=
	cat "$d/tracer.out" "$d/tracer.err"
	[ "$TRACER_RC" -eq 0 ]
	local where
	where="$(counts_field "$d/mem.json" file):$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kept"]["line"])' "$d/mem.json") allocate"
	grep -E "^ +3 x 19.5 KiB +pid $(counts_field "$d/mem.json" pid) device 0  allocCpu .* from $where\$" "$d/tracer.out"
	[ "$(grep -c ' from ' "$d/tracer.out")" -eq 1 ]	# the freed line's blocks are not live
	$CHECK_PYLINE memory "$d/t.json" "$where" --blocks 3 --bytes 20000
	run "$TOOL" check "$d/t.json"
	[ "$status" -eq 0 ]
}

@test "--python under --sample-every: the calls recorded still name their exact lines" {
	py_traced --no-default --python --sample-every 3 --probe "$MM" --probe "$ADD"
	check_lines --op aten::mm=aten::mm --op aten::add=aten::add --sampled
}

@test "--python with -- CMD: the interpreter is found once the launched command has exec'd it; exact lines" {
	need_torch
	local d=$BATS_TEST_TMPDIR
	touch "$d/linger"
	"$TOOL" --no-default --python --driver off --probe "$MM" -o "$d/t.json" -- \
		"$TORCH_PY" "$PYJOB" --ready "$d/job.ready" --go "$d/go" --linger "$d/linger" \
		--out "$d/calls.json" >"$d/tracer.out" 2>"$d/tracer.err" &
	TRACER_PID=$!
	wait_for "$d/job.ready" 60
	# torch (libtorch_cpu.so) was dlopen'ed: the tracer's rescan (every second) attaches to it
	wait_until 120 all_armed "$(cat "$d/job.ready")" --no-default --probe "$MM"
	touch "$d/go"
	wait_child "$TRACER_PID" 120
	TRACER_PID=
	cat "$d/tracer.out" "$d/tracer.err"
	[ "$CHILD_RC" -eq 0 ]
	# no "not Python" said of the child before its exec (the tracer's own image then)
	! grep -q "Python stacks: process" "$d/tracer.err"
	check_lines --op aten::mm=aten::mm
	run "$TOOL" check "$d/t.json"
	[ "$status" -eq 0 ]
}

# plain_traced PYTHON TRACER OPTIONS: tests/e2e/pystack_plain.py under interpreter PYTHON, traced
# with a probe on libc's getpid as py_traced does. With PY_CHROOT=DIR: PYTHON (a path in DIR) runs
# under `chroot DIR`, the script and its handshake files in DIR's /tmp/pystack-bats, named as the
# job sees them; its record is copied back to the test's directory.
plain_traced() {
	local py=$1 d=$BATS_TEST_TMPDIR j=$BATS_TEST_TMPDIR script=$ROOT/tests/e2e/pystack_plain.py
	local -a pre=()
	shift
	if [ -n "${PY_CHROOT:-}" ]; then
		j=/tmp/pystack-bats
		d=$PY_CHROOT$j
		rm -rf "$d"
		mkdir -p "$d"
		cp "$script" "$ROOT/tests/e2e/jobsync.py" "$d/"
		script=$j/pystack_plain.py
		pre=(chroot "$PY_CHROOT")
	fi
	rm -f "$d/job.ready" "$d/go" "$d/linger" "$d/calls.json" "$BATS_TEST_TMPDIR/t.json"
	"${pre[@]}" "$py" "$script" --ready "$j/job.ready" --go "$j/go" \
		--linger "$j/linger" --out "$j/calls.json" >"$BATS_TEST_TMPDIR/job.out" \
		2>"$BATS_TEST_TMPDIR/job.err" &
	JOB_PID=$!
	PLAIN_PID=$JOB_PID
	wait_for "$d/job.ready" 30
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --driver off --no-default \
		--probe 'libc.so*:getpid' "$@"
	touch "$d/go"
	wait_for "$d/calls.json" 30 || { cat "$BATS_TEST_TMPDIR/job.err"; return 1; }
	sleep 0.3
	stop_tracer
	touch "$d/linger"
	wait_child "$JOB_PID" 30
	JOB_PID=
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$CHILD_RC" -eq 0 ]
	[ "$TRACER_RC" -eq 0 ]
	[ "$d" = "$BATS_TEST_TMPDIR" ] || cp "$d/job.ready" "$d/calls.json" "$BATS_TEST_TMPDIR/"
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 0 ]
}

@test "--python on other CPython builds (pyenv's, libpython shared): 3.11.7, 3.12.1, 3.13.0 name exact lines; 3.10 says once it is not supported yet, and carries no stack" {
	local pyenv=${PYENV_ROOT:-/root/.pyenv}/versions v py n=0
	for v in 3.10 3.11 3.12 3.13; do
		py=$(ls -d "$pyenv/$v".*/bin/python$v 2>/dev/null | tail -1)
		[ -x "$py" ] || continue
		n=$((n + 1))
		plain_traced "$py" --python
		if [ $v != 3.10 ]; then
			check_lines --op getpid=getpid
			! grep -q "Python stacks\|not supported" "$BATS_TEST_TMPDIR/tracer.err"
		else
			[ "$(grep -c "Python $v (.*libpython$v.so[.0-9]*): stacks not supported yet (CPython 3.11-3.13 only); its calls carry no Python stack" "$BATS_TEST_TMPDIR/tracer.err")" -eq 1 ]
			! grep -q '"pystack"' "$BATS_TEST_TMPDIR/t.json"
			grep -q '"name":"getpid"' "$BATS_TEST_TMPDIR/t.json"
		fi
	done
	[ $n -gt 0 ] || skip "no pyenv interpreters under $pyenv"
}

# Debian trixie's python3 (CPython 3.13.5 when written: its own build, python3.13 with libpython
# linked in, exporting _PyRuntime itself), in a trixie root made once under $BUILD by
# tools/debian-root.sh trixie (debootstrap --variant=minbase --include=python3 from this machine's
# apt mirror; 220 MB, made in 36 s on the project's 2-core build VM, 2026-12-06, 83 s while a build
# ran; then reused: the test takes 1 s). The job runs under chroot, traced from the host by PID:
# its libc and interpreter are the root's files, which the process's maps name by their host
# paths; the tracer opens them through /proc/PID/map_files. Skipped only when debootstrap failed
# and the mirror cannot be reached.
@test "--python on Debian trixie's python3 (CPython 3.13) in a debootstrap'd trixie chroot, traced from the host: exact lines of its getpid calls" {
	run sh "$ROOT/tools/debian-root.sh" trixie "$TROOT" python3
	echo "$output"
	[ "$status" -ne 77 ] || skip "no trixie root: ${output##*$'\n'}"
	[ "$status" -eq 0 ]
	chroot "$TROOT" /usr/bin/python3 -c 'import sys; print(sys.version)'
	[ "$(chroot "$TROOT" /usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = 3.13 ]
	PY_CHROOT=$TROOT plain_traced /usr/bin/python3 --python
	# the PID the job sees in its root is the one traced
	[ "$(cat "$BATS_TEST_TMPDIR/job.ready")" = "$PLAIN_PID" ]
	check_lines --op getpid=getpid
	! grep -q "Python stacks\|not supported" "$BATS_TEST_TMPDIR/tracer.err"
	# the probe sat on the root's libc (trixie's glibc), not the host's
	grep -q "\"$TROOT/usr/lib/[^\"]*/libc.so.6\"" "$BATS_TEST_TMPDIR/t.json"
	rm -rf "$TROOT/tmp/pystack-bats"
}

@test "--python on a job that is not Python: one clear message, no stacks, the trace as without" {
	start_job
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --python
	run_phase
	stop_tracer
	cat "$BATS_TEST_TMPDIR/tracer.err"
	[ "$TRACER_RC" -eq 0 ]
	[ "$(grep -c 'Python stacks: process' "$BATS_TEST_TMPDIR/tracer.err")" -eq 1 ]
	grep -q "Python stacks: process $JOB_PID: no python3\* or libpython3\* mapped; its calls carry no Python stack" \
		"$BATS_TEST_TMPDIR/tracer.err"
	! grep -q '"pystack"' "$BATS_TEST_TMPDIR/t.json"
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
	stop_job
}

@test "--python with -f: the Python workers the target starts after the attach name their exact lines, each its own" {
	need_torch
	local d=$BATS_TEST_TMPDIR i
	# the target: a launcher that imports torch (as torchrun does) and starts two workers
	cat >"$d/launcher.py" <<PY
import os, subprocess, sys, time
import torch
open("$d/launcher.pid", "w").write(str(os.getpid()))
while not os.path.exists("$d/start"):
    time.sleep(0.01)
ws = [subprocess.Popen([sys.executable, "$PYJOB", "--ready", "$d/w%d.ready" % i, "--go", "$d/go",
                        "--linger", "$d/linger", "--out", "$d/calls%d.json" % i,
                        "--iters", "20"]) for i in (1, 2)]
sys.exit(max(w.wait() for w in ws))
PY
	"$TORCH_PY" "$d/launcher.py" >"$d/job.out" 2>"$d/job.err" &
	JOB_PID=$!
	wait_for "$d/launcher.pid" 30
	start_tracer -o "$d/t.json" --driver off -f --python --no-default --probe "$MM" \
		--probe "$ADD"
	touch "$d/start"
	wait_for "$d/w1.ready" 60 && wait_for "$d/w2.ready" 60
	# a rescan (every second) finds the workers while they import torch
	for i in 1 2; do
		wait_until 120 all_armed "$(cat "$d/w$i.ready")" --no-default --probe "$MM" \
			--probe "$ADD"
	done
	touch "$d/go"
	wait_for "$d/calls1.json" 60 && wait_for "$d/calls2.json" 60
	sleep 0.3
	stop_tracer
	touch "$d/linger"
	wait_child "$JOB_PID" 60
	JOB_PID=
	cat "$d/job.err" "$d/tracer.out" "$d/tracer.err"
	[ "$TRACER_RC" -eq 0 ] && [ "$CHILD_RC" -eq 0 ]
	# each worker's events alone, against its own record of its call sites
	for i in 1 2; do
		python3 "$ROOT/tests/e2e/check_pystack.py" "$d/t.json" "$d/calls$i.json" --own-pid \
			--op aten::mm=aten::mm --op aten::add=aten::add
	done
}

@test "--python in fleet mode (-a): the Python job found on the node names its exact lines" {
	need_torch
	local d=$BATS_TEST_TMPDIR
	"$TORCH_PY" "$PYJOB" --ready "$d/job.ready" --go "$d/go" --linger "$d/linger" \
		--out "$d/calls.json" >"$d/job.out" 2>"$d/job.err" &
	JOB_PID=$!
	wait_for "$d/job.ready" 60
	"$TOOL" -a --python --no-default --probe "$MM" --probe "$ADD" -o "$d/t.json" \
		--ready-file "$d/tr.ready" >"$d/tracer.out" 2>"$d/tracer.err" &
	TRACER_PID=$!
	wait_ready "$d/tr.ready" "$TRACER_PID"
	touch "$d/go"
	wait_for "$d/calls.json" 60
	sleep 0.3
	stop_tracer
	touch "$d/linger"
	wait_child "$JOB_PID" 60
	JOB_PID=
	cat "$d/tracer.err"
	[ "$TRACER_RC" -eq 0 ]
	python3 "$ROOT/tests/e2e/check_pystack.py" "$d/t.json" "$d/calls.json" --own-pid \
		--op aten::mm=aten::mm --op aten::add=aten::add
}
