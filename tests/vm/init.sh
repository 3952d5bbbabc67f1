#!/bin/busybox sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# PID 1 of the QEMU guest (tools/vm/build-initramfs.sh installs it as /init).
#
# Runs the test steps named by spyre.steps= on the kernel command line against a stock Debian
# kernel, collects every result file in /out, and ships /out to the host as a base64 tar.gz on
# the second serial port (/dev/ttyS1) between marker lines. The host checks the traces (python3
# is not in the guest). Last, the step status goes to QEMU's isa-debug-exit port, so QEMU exits
# with (status << 1) | 1. If this script dies, the kernel panics and QEMU exits with 0.
# Guests of other architectures (s390x, pseries) have neither a second serial port nor that
# port: there /out goes to a virtio-serial port, followed by a "==SPYRE-STATUS=N==" line.

/bin/busybox --install -s /bin
export PATH=/bin:/opt/spyre
OUT=/out
TOOL=/opt/spyre/spyre-bpftrace
MOCK=/opt/spyre/mock/mock-spyre-job
# every call counted: no overhead budget (tests/e2e/helpers.bash)
export SPYRE_BPFTRACE_MAX_OVERHEAD=none
MOCK_EXTRA=

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
mkdir -p $OUT

log() {
	echo "vm-guest: $*"
	echo "$*" >>$OUT/guest.log
}

# cmdline VAR DEFAULT: value of spyre.VAR= on the kernel command line
cmdline() {
	local v
	v=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^spyre\.$1=//p" | tail -n 1)
	echo "${v:-$2}"
}

# wait_for FILE SECONDS [PID]: until FILE exists, or PID has exited (TCG is slow: deadlines
# are generous)
wait_for() {
	local f=$1 n=$(($2 * 10))
	while [ ! -e "$f" ]; do
		n=$((n - 1))
		[ $n -le 0 ] && { log "timed out waiting for $f"; return 1; }
		[ -n "$3" ] && ! kill -0 "$3" 2>/dev/null && { log "$3 exited before $f"; return 1; }
		usleep 100000
	done
}

# kill_wait PID SIGNAL: signal PID (our child) and return its exit status
kill_wait() {
	kill -"$2" "$1" 2>/dev/null
	wait "$1"
}

# fail_traced NAME TRACER JOB: stop both, show what the tracer said (the console reaches the
# host even when the guest never finishes)
fail_traced() {
	kill_wait $2 KILL
	kill_wait $3 KILL
	log "$1: tracer stderr:"
	tail -n 20 $OUT/$1.tracer.err
}

# run_traced NAME [TOOL OPTIONS]: start the mock job held before its phase, attach the tracer by
# PID, run one phase, stop both. Leaves NAME.{trace.json,counts.json,pid,tracer.*,job.*} in /out.
run_traced() {
	local name=$1 job tracer rc
	shift
	rm -f /tmp/$name.ready /tmp/$name.tracer.ready
	$MOCK --wait-go --linger --quiet --threads 2 --streams 2 --iters "$(cmdline iters 8)" \
		--compute-us 20 --ready-file /tmp/$name.ready --counts $OUT/$name.counts.json \
		$MOCK_EXTRA \
		>$OUT/$name.job.out 2>$OUT/$name.job.err &
	job=$!
	echo $job >$OUT/$name.pid
	wait_for /tmp/$name.ready 30 $job || { kill_wait $job KILL; return 1; }
	[ "$(cmdline verbose 0)" = 1 ] && set -- -v "$@"
	$TOOL -p $job --ready-file /tmp/$name.tracer.ready -o $OUT/$name.trace.json $URET "$@" \
		>$OUT/$name.tracer.out 2>$OUT/$name.tracer.err &
	tracer=$!
	if ! wait_for /tmp/$name.tracer.ready 60 $tracer; then
		fail_traced $name $tracer $job
		return 1
	fi
	kill -USR1 $job
	if ! wait_for $OUT/$name.counts.json 60 $job; then
		fail_traced $name $tracer $job
		return 1
	fi
	kill_wait $tracer INT
	rc=$?
	[ $rc -eq 0 ] || log "$name: tracer exited with $rc"
	kill_wait $job TERM || { log "$name: job exited with $?"; rc=1; }
	return $rc
}

# Step "install" (first; the cross guests, `make vm-s390x`): the tool's Debian package, from
# /opt/spyre/pkg, installed with busybox's dpkg as a fleet node would install it; the steps
# after it run the installed /usr/sbin/spyre-bpftrace. The host checks the version dpkg
# recorded against the package's.
step_install() {
	local deb
	deb=$(ls /opt/spyre/pkg/spyre-bpftrace_*.deb 2>/dev/null | head -n 1)
	[ -n "$deb" ] || { log "install: no package in /opt/spyre/pkg"; return 1; }
	mkdir -p /var/lib/dpkg/info
	touch /var/lib/dpkg/status
	dpkg -i "$deb" >$OUT/install.out 2>&1 || { cat $OUT/install.out; return 1; }
	cp /var/lib/dpkg/status $OUT/install.dpkg-status
	TOOL=/usr/sbin/spyre-bpftrace
	$TOOL --version >$OUT/install.version 2>&1
}

# Step "remove" (last, after "install"): dpkg -r takes away every file the package installed
step_remove() {
	local f left=
	cp /var/lib/dpkg/info/spyre-bpftrace.list $OUT/remove.list || return 1
	dpkg -r spyre-bpftrace >$OUT/remove.out 2>&1 || { cat $OUT/remove.out; return 1; }
	cp /var/lib/dpkg/status $OUT/remove.dpkg-status
	while read -r f; do
		[ -d "$f" ] || [ ! -e "$f" ] || left="$left $f"
	done <$OUT/remove.list
	[ -z "$left" ] || { log "remove: left behind:$left"; return 1; }
}

# Step "core": the default probes on this kernel's BTF, nothing else. -v: the tracer names the
# BPF data paths it chose (task storage, staging), which the host checks.
step_core() {
	run_traced core -v
}

# Step "unwind": the job catches std::bad_alloc thrown out of the traced allocate every other
# iteration. The default return sites leave the stack alone: the job lives on any kernel.
step_unwind() {
	MOCK_EXTRA="--oom-every 2" run_traced unwind -v
}

# Step "sstep": core with SPYRE_NO_EMULATED_RETURNS=1, on a kernel that would let the programs
# do the returns (`make vm-next`): the single-stepped fallback keeps every count
step_sstep() {
	local rc
	export SPYRE_NO_EMULATED_RETURNS=1
	run_traced sstep -v
	rc=$?
	unset SPYRE_NO_EMULATED_RETURNS
	return $rc
}

# Step "entries": tests/progs/entryjob.c, whose traced functions begin with each mov and lea form
# (`make vm-next`: done by the entry program), untraced first for the checksum; the job exits by
# itself, the tracer when its target is gone
step_entries() {
	local job tracer rc=0
	rm -f /tmp/ej.ready /tmp/ej.u.ready /tmp/ej.tracer.ready
	/opt/spyre/entryjob /tmp/ej.u.ready $OUT/entries.untraced.json >/dev/null 2>&1 &
	job=$!
	wait_for /tmp/ej.u.ready 30 $job || return 1
	kill -USR1 $job
	wait $job || { log "entries: untraced job exited with $?"; return 1; }
	/opt/spyre/entryjob /tmp/ej.ready $OUT/entries.counts.json \
		>$OUT/entries.job.out 2>$OUT/entries.job.err &
	job=$!
	wait_for /tmp/ej.ready 30 $job || { kill_wait $job KILL; return 1; }
	$TOOL -p $job --ready-file /tmp/ej.tracer.ready -o $OUT/entries.trace.json -v \
		--no-default --probe 'entryjob:ej_*' >$OUT/entries.tracer.out \
		2>$OUT/entries.tracer.err &
	tracer=$!
	wait_for /tmp/ej.tracer.ready 60 $tracer || { fail_traced entries $tracer $job; return 1; }
	kill -USR1 $job
	wait $job || { rc=$?; log "entries: job exited with $rc"; }
	wait $tracer || { log "entries: tracer exited with $?"; rc=1; }
	return $rc
}

# Step "ustack": native stacks (--ustack) of tests/progs/stackjob's known call chains, traced by
# PID: leaf_mix (a leaf without a frame) <- compute <- run_round <- main, and libstackrt.so's
# dev_alloc <- layer_ok | layer_leaky <- run_round <- main. The job exits by itself, the tracer
# when its target is gone; the host checks the frames for the guest's architecture
# (tests/vm/check_ustack.py).
step_ustack() {
	local job tracer rc=0
	uname -m >$OUT/ustack.machine
	rm -f /tmp/us.ready /tmp/us.tracer.ready
	/opt/spyre/stackjob /tmp/us.ready $OUT/ustack.counts.json 20 3 \
		>$OUT/ustack.job.out 2>$OUT/ustack.job.err &
	job=$!
	echo $job >$OUT/ustack.pid
	wait_for /tmp/us.ready 30 $job || { kill_wait $job KILL; return 1; }
	$TOOL -p $job --ready-file /tmp/us.tracer.ready -o $OUT/ustack.trace.json -v \
		--no-default --ustack --probe 'stackjob:leaf_mix' --probe 'libstackrt.so:dev_alloc' \
		>$OUT/ustack.tracer.out 2>$OUT/ustack.tracer.err &
	tracer=$!
	wait_for /tmp/us.tracer.ready 60 $tracer || { fail_traced ustack $tracer $job; return 1; }
	kill -USR1 $job
	wait $job || { rc=$?; log "ustack: job exited with $rc"; }
	wait $tracer || { log "ustack: tracer exited with $?"; rc=1; }
	return $rc
}

# Step "twotracers": two tracers by PID on one job, the second started while the first runs:
# only one may do the probed instructions in BPF (two would each return from one ret)
step_twotracers() {
	local job t1 t2 rc=0
	rm -f /tmp/tt.ready /tmp/tt.1.ready /tmp/tt.2.ready
	$MOCK --wait-go --linger --quiet --threads 2 --streams 2 --iters "$(cmdline iters 8)" \
		--compute-us 20 --oom-every 2 --ready-file /tmp/tt.ready \
		--counts $OUT/twotracers.counts.json >$OUT/twotracers.job.out \
		2>$OUT/twotracers.job.err &
	job=$!
	echo $job >$OUT/twotracers.pid
	wait_for /tmp/tt.ready 30 $job || { kill_wait $job KILL; return 1; }
	$TOOL -p $job --ready-file /tmp/tt.1.ready -o $OUT/twotracers.trace.json -v \
		>$OUT/twotracers.tracer.out 2>$OUT/twotracers.tracer.err &
	t1=$!
	wait_for /tmp/tt.1.ready 60 $t1 || { fail_traced twotracers $t1 $job; return 1; }
	$TOOL -p $job --ready-file /tmp/tt.2.ready -o $OUT/twotracers2.trace.json -v \
		>$OUT/twotracers2.tracer.out 2>$OUT/twotracers2.tracer.err &
	t2=$!
	wait_for /tmp/tt.2.ready 60 $t2 || { kill_wait $t1 KILL; fail_traced twotracers2 $t2 $job;
		return 1; }
	kill -USR1 $job
	wait_for $OUT/twotracers.counts.json 60 $job || rc=1
	kill_wait $t2 INT || { log "twotracers: the second tracer exited with $?"; rc=1; }
	kill_wait $t1 INT || { log "twotracers: the first tracer exited with $?"; rc=1; }
	kill_wait $job TERM || { log "twotracers: job exited with $?"; rc=1; }
	return $rc
}

# Step "uretunwind": the same with --uretprobes, where the unwind guard puts the return
# addresses back (6.1 and 6.12 without lockdown let it write user memory; the host cannot).
step_uretunwind() {
	MOCK_EXTRA="--oom-every 2" run_traced uretunwind -v --uretprobes
}

# Step "throwjob": tests/progs/throwjob.cpp, as on the host (exceptions.bats): C++
# exceptions through 1, 2, 20 and 80 nested traced calls, pthread_cancel and pthread_exit inside
# traced calls, ROUNDS times; dynamic and with the unwinder linked in. The untraced run first,
# for the checksum. The job exits by itself, the tracer when its target is gone.
throwjob_run() {
	local name=$1 prog=$2 rounds=$(cmdline tjrounds 20) job tracer rc=0
	shift 2
	rm -f /tmp/$name.ready /tmp/$name.u.ready /tmp/$name.tracer.ready
	$prog /tmp/$name.u.ready $OUT/$name.untraced.json normal $rounds >/dev/null 2>&1 &
	job=$!
	wait_for /tmp/$name.u.ready 30 $job || return 1
	kill -USR1 $job
	wait $job || { log "$name: untraced job exited with $?"; return 1; }
	$prog /tmp/$name.ready $OUT/$name.counts.json normal $rounds \
		>$OUT/$name.job.out 2>$OUT/$name.job.err &
	job=$!
	echo $job >$OUT/$name.pid
	wait_for /tmp/$name.ready 30 $job || { kill_wait $job KILL; return 1; }
	$TOOL -p $job --ready-file /tmp/$name.tracer.ready -o $OUT/$name.trace.json -v \
		--probe 'throwjob*:tj_*' "$@" >$OUT/$name.tracer.out 2>$OUT/$name.tracer.err &
	tracer=$!
	if ! wait_for /tmp/$name.tracer.ready 60 $tracer; then
		fail_traced $name $tracer $job
		return 1
	fi
	kill -USR1 $job
	wait $job || { rc=$?; log "$name: job exited with $rc"; }
	wait $tracer || { log "$name: tracer exited with $?"; rc=1; }
	return $rc
}

# throwjob_abort: the job aborts inside a traced call; the tracer must say so and exit 9
throwjob_abort() {
	local job tracer rc
	rm -f /tmp/tja.ready /tmp/tja.tracer.ready
	/opt/spyre/throwjob /tmp/tja.ready $OUT/tjabort.counts.json abort \
		>$OUT/tjabort.job.out 2>$OUT/tjabort.job.err &
	job=$!
	wait_for /tmp/tja.ready 30 $job || { kill_wait $job KILL; return 1; }
	$TOOL -p $job --ready-file /tmp/tja.tracer.ready -o $OUT/tjabort.trace.json \
		--probe 'throwjob*:tj_*' >$OUT/tjabort.tracer.out 2>$OUT/tjabort.tracer.err &
	tracer=$!
	wait_for /tmp/tja.tracer.ready 60 $tracer || { fail_traced tjabort $tracer $job; return 1; }
	kill -USR1 $job
	wait $job
	wait $tracer
	rc=$?
	echo $rc >$OUT/tjabort.tracer.rc
	[ $rc -eq 9 ] || { log "tjabort: tracer exited with $rc, not 9"; return 1; }
}

step_throwjob() {
	throwjob_run throwjob /opt/spyre/throwjob &&
		throwjob_run throwjob-static /opt/spyre/throwjob-static --no-default &&
		throwjob_abort
}

# Step "nofentry": the VFIO modules loaded (their functions in kallsyms, no device needed), the
# default driver tier on a kernel where fentry cannot work (Debian's s390x: no BPF JIT, the load
# is refused; ppc64le before 6.13: no BPF trampolines, the attach is refused): fentry, tried
# first, fails, and the tracer must fall back to kprobes and trace as in "core".
step_nofentry() {
	. /opt/spyre/vfio-setup.sh
	vfio_load_modules >>$OUT/nofentry.modules.log 2>&1 || return 1
	run_traced nofentry -v
}

# Step "fleet": system-wide mode with sampling (-a --sample-every 4) over two running jobs and
# one started after the tracer, until the late one has run two whole phases traced; then the
# tool's own `check` on that trace.
step_fleet() {
	local tracer pids= p rc i
	for i in 1 2; do
		rm -f /tmp/fleet$i.ready
		$MOCK --quiet --phases 1000000 --threads 1 --iters 4 \
			--ready-file /tmp/fleet$i.ready >/dev/null 2>&1 &
		pids="$pids $!"
		wait_for /tmp/fleet$i.ready 30 $! || { kill $pids; return 1; }
	done
	rm -f /tmp/fleet.tracer.ready
	$TOOL -a --sample-every 4 -q -o $OUT/fleet.trace.json $URET \
		--ready-file /tmp/fleet.tracer.ready >$OUT/fleet.tracer.out 2>$OUT/fleet.tracer.err &
	tracer=$!
	wait_for /tmp/fleet.tracer.ready 60 $tracer || { kill -KILL $tracer $pids; return 1; }
	$MOCK --quiet --phases 1000000 --threads 1 --iters 4 --counts /tmp/fleet.late.json \
		>/dev/null 2>&1 &
	pids="$pids $!"
	echo $pids >$OUT/fleet.pids
	wait_for /tmp/fleet.late.json.3 60 $tracer
	rc=$?
	kill_wait $tracer INT || { log "fleet: tracer exited with $?"; rc=1; }
	for p in $pids; do kill_wait $p KILL; done
	[ $rc -eq 0 ] && $TOOL check $OUT/fleet.trace.json >$OUT/fleet.check.out 2>&1
}

# Step "untraced": the job as in run_traced, without a tracer: the host compares its checksum
# (a function of the options only) with the traced run's, so tracing changed none of its results.
step_untraced() {
	$MOCK --quiet --threads 2 --streams 2 --iters "$(cmdline iters 8)" --compute-us 20 \
		--counts $OUT/untraced.counts.json >$OUT/untraced.job.out 2>$OUT/untraced.job.err
}

# Step "list": which probes resolve in a running job (the job held before its phase).
step_list() {
	local job rc
	rm -f /tmp/list.ready
	$MOCK --wait-go --quiet --ready-file /tmp/list.ready >/dev/null 2>&1 &
	job=$!
	wait_for /tmp/list.ready 30 $job || { kill_wait $job KILL; return 1; }
	$TOOL list -v -p $job >$OUT/list.out 2>$OUT/list.err
	rc=$?
	kill_wait $job KILL
	return $rc
}

# Step "launch": launch mode, the job traced from its first call.
step_launch() {
	$TOOL -q -o $OUT/launch.trace.json $URET -- $MOCK --quiet --threads 1 --streams 1 --iters 2 \
		--counts $OUT/launch.counts.json >$OUT/launch.tracer.out 2>$OUT/launch.tracer.err
}

# Step "args6": throwjob's tj_args6(i, 2, 3, 4, 5, 0x6000 + i), its first and sixth arguments
# recorded (the sixth: a register on x86-64 and ppc64le, on the stack on s390x).
step_args6() {
	local job tracer
	echo 'throwjob* tj_args6 arg1=a:u arg6=f:x' >/tmp/args6.probes
	rm -f /tmp/args6.ready /tmp/args6.tracer.ready
	/opt/spyre/throwjob /tmp/args6.ready $OUT/args6.counts.json normal 20 \
		>$OUT/args6.job.out 2>$OUT/args6.job.err &
	job=$!
	wait_for /tmp/args6.ready 30 $job || { kill_wait $job KILL; return 1; }
	$TOOL -p $job --ready-file /tmp/args6.tracer.ready -o $OUT/args6.trace.json \
		--no-default --probes /tmp/args6.probes >$OUT/args6.tracer.out 2>$OUT/args6.tracer.err &
	tracer=$!
	wait_for /tmp/args6.tracer.ready 60 $tracer || { fail_traced args6 $tracer $job; return 1; }
	kill -USR1 $job
	wait $job || return 1
	wait $tracer
}

# Step "entryonly": where the start-up self-test finds that a probed return does not return
# (s390x under QEMU 7.2), the default still never harms the job: return sites off, the
# allocations that throw through traced calls are caught, the job lives, span probes record
# their entries.
step_entryonly() {
	URET= MOCK_EXTRA="--oom-every 2" run_traced entryonly -v
}

# Step "perf" (opt-in: `make vm-perf-s390x`, `make vm-perf-ppc64le`; never a default step, TCG
# timing): callbench (bench/callbench.c) with --interleave, batches of its two identical
# functions bench_call and bench_ref alternating; per comparison OURS/LIMIT of spyre.perf= the
# tracer on one function and the empty probes of the same mechanism on the other in one phase,
# then the two swapped; an untraced phase first in each of spyre.perfrounds= rounds. Offsets and
# return sites are those `spyre-bpftrace list` prints. The results are callbench's own
# (/out/perf.N.*); the host computes the ratios (tests/vm/perf_report.py).
PB=/opt/spyre/bench
PERF_LIB=$PB/libbench-nocf.so

# perf_start KIND FN: attach KIND to bench_FN of the job, until it is ready; PERF_PID
perf_start() {
	local kind=$1 off sites
	eval "off=\$PERF_OFF_$2 sites=\$PERF_RS_$2"
	rm -f /tmp/$kind.ready
	case $kind in
	ours | ours_uret | ours_sstep)
		set -- --no-default --probe "libbench*:bench_$2" --driver off
		[ $kind = ours_uret ] && set -- "$@" --uretprobes
		# ours_sstep: the default with the kernel single-stepping its returns, where the
		# kernel would let the programs do them
		[ $kind = ours_sstep ] && export SPYRE_NO_EMULATED_RETURNS=1
		$TOOL -p $PERF_JOB -v "$@" --ready-file /tmp/$kind.ready -o /tmp/$kind.json \
			>/dev/null 2>$OUT/perf.$kind.err &
		unset SPYRE_NO_EMULATED_RETURNS
		;;
	lim_entry | lim_sites | lim_emu | lim_uret)
		set -- --multi -p $PERF_JOB -b $PERF_LIB -o $off
		[ $kind = lim_entry ] && set -- "$@" --no-ret
		[ $kind = lim_sites ] && set -- "$@" --ret-site $sites
		[ $kind = lim_emu ] && set -- "$@" --ret-site $sites --ret-emu
		$PB/emptyprobe "$@" --ready-file /tmp/$kind.ready 2>$OUT/perf.$kind.err &
		;;
	*) log "perf: unknown kind $kind"; return 1 ;;
	esac
	PERF_PID=$!
	wait_for /tmp/$kind.ready 120 $PERF_PID || { kill_wait $PERF_PID KILL; return 1; }
}

# perf_phase LABEL: one callbench phase, its result to /out/perf.N.LABEL
perf_phase() {
	PERF_K=$((PERF_K + 1))
	kill -USR1 $PERF_JOB
	wait_for /tmp/cb.res.$PERF_K 300 $PERF_JOB || return 1
	cp /tmp/cb.res.$PERF_K $OUT/perf.$PERF_K.$1
}

# perf_list FN: bench_FN's entry offset and return sites (PERF_OFF_FN, PERF_RS_FN)
perf_list() {
	$TOOL list -v -p $PERF_JOB --no-default --probe "libbench*:bench_$1" >$OUT/perf.list.$1 \
		2>&1 || return 1
	eval "PERF_OFF_$1=$(grep -o 'libbench-nocf.so+0x[0-9a-f]*' $OUT/perf.list.$1 |
		head -n 1 | sed 's/.*+//')"
	eval "PERF_RS_$1=$(sed -n 's/^ *returns: [0-9]* return instruction.* at \(.*\)$/\1/p' \
		$OUT/perf.list.$1 | head -n 1 | sed 's/, /,/g; s/[^,]*+//g')"
	eval "[ -n \"\$PERF_OFF_$1\" ]"
}

step_perf() {
	local rounds=$(cmdline perfrounds 5) pairs=$(cmdline perf) r p a b fa fb pa pb rc=0
	[ -x $PB/callbench-nocf ] || { log "perf: no bench in this initramfs (make vm-perf-*)"; return 1; }
	[ -n "$pairs" ] || { log "perf: no comparisons (spyre.perf=OURS/LIMIT,...)"; return 1; }
	rm -f /tmp/cb.*
	$PB/callbench-nocf --interleave --reps "$(cmdline perfreps 15)" \
		--rep-ms "$(cmdline perfms 100)" --ready-file /tmp/cb.ready --result /tmp/cb.res \
		2>$OUT/perf.callbench.err &
	PERF_JOB=$!
	PERF_K=0
	wait_for /tmp/cb.ready 30 $PERF_JOB || { kill_wait $PERF_JOB KILL; return 1; }
	perf_list call && perf_list ref || { log "perf: bench_call/bench_ref not resolved"; rc=1; }
	echo "rounds=$rounds pairs=$pairs off_call=$PERF_OFF_call rs_call=$PERF_RS_call" \
		"off_ref=$PERF_OFF_ref rs_ref=$PERF_RS_ref" >$OUT/perf.meta
	for r in $(seq $rounds); do
		[ $rc -eq 0 ] || break
		perf_phase untraced || { rc=1; break; }
		for p in $(echo $pairs | tr , ' '); do
			a=${p%/*} b=${p#*/}
			for fa in call ref; do
				if [ $fa = call ]; then fb=ref; else fb=call; fi
				perf_start $b $fb || { rc=1; break 2; }
				pb=$PERF_PID
				perf_start $a $fa || { kill_wait $pb INT; rc=1; break 2; }
				pa=$PERF_PID
				perf_phase $a.$b.$fa || rc=1
				kill_wait $pa INT || { log "perf: $a exited with $?"; rc=1; }
				kill_wait $pb INT || { log "perf: $b exited with $?"; rc=1; }
				rm -f /tmp/$a.json
				[ $rc -eq 0 ] || break 2
			done
		done
		[ $rc -eq 0 ] && log "perf: round $r done"
	done
	kill_wait $PERF_JOB TERM || { log "perf: callbench exited with $?"; rc=1; }
	return $rc
}

# Step "vfio": the edu device bound to vfio-pci with a usable /dev/vfio/N (what the VFIO driver
# tier traces). Independent of the tracer: it shows the guest is fit for the kprobe step.
step_vfio() {
	. /opt/spyre/vfio-setup.sh
	vfio_setup >>$OUT/vfio.log 2>&1
	cat $OUT/vfio.log
	[ -s /tmp/vfio-group ]
}

# Steps "kprobe", "fentry", "tracepoint": the VFIO driver tier forced onto one path, on the real
# VFIO group of the edu device when the "vfio" step could set it up.
step_driver() {
	local path=$1 rc
	if ! $TOOL --help 2>&1 | grep -q -- '--driver'; then
		log "$path: this spyre-bpftrace has no --driver option"
		echo skipped >$OUT/$path.skipped
		return 1
	fi
	[ -e /tmp/vfio-group ] || step_vfio >/dev/null
	if [ -s /tmp/vfio-group ]; then
		export FLEX_DEVICE=VFIO FLEX_VFIO_GROUP=$(cat /tmp/vfio-group)
		echo "$FLEX_VFIO_GROUP" >$OUT/$path.vfio-group
	fi
	run_traced $path --driver $path
	rc=$?
	# launch mode traces the runtime's setup too: group, device and container ioctls
	$TOOL --driver $path -q -o $OUT/$path-launch.trace.json -- $MOCK --quiet \
		--threads 1 --streams 1 --iters 2 --counts $OUT/$path-launch.counts.json \
		>$OUT/$path-launch.tracer.out 2>$OUT/$path-launch.tracer.err ||
		{ log "$path: launch mode failed"; rc=1; }
	unset FLEX_DEVICE FLEX_VFIO_GROUP
	return $rc
}

step_kprobe() {
	step_driver kprobe
}

step_fentry() {
	step_driver fentry
}

step_tracepoint() {
	step_driver tracepoint
}

# the results channel: the first virtio-serial port if the guest has one, else ttyS1
DATA=$(ls /dev/vport*p* 2>/dev/null | head -n 1)
DATA=${DATA:-/dev/ttyS1}

# send_out: ship /out to the host on $DATA. A tty is put in raw mode so no byte is translated;
# closing it waits until the UART has sent everything.
send_out() {
	[ $DATA = /dev/ttyS1 ] && stty -F $DATA raw -echo 2>/dev/null
	{
		echo "==SPYRE-OUT-BEGIN=="
		tar -C $OUT -czf - . | base64
		echo "==SPYRE-OUT-END=="
	} >$DATA
}

# spyre.uretprobes=1: the steps that throw nothing use --uretprobes
URET=
[ "$(cmdline uretprobes 0)" = 1 ] && URET=--uretprobes

# debugging knobs (VM_ARGS="spyre.nomulti=1 spyre.verbose=1" make vm-test)
[ "$(cmdline nomulti 0)" = 1 ] && export SPYRE_NO_UPROBE_MULTI=1
[ "$(cmdline noguard 0)" = 1 ] && export SPYRE_NO_UNWIND_GUARD=1

status=0
uname -r >$OUT/kernel
cat /sys/kernel/security/lockdown >$OUT/lockdown 2>/dev/null
log "kernel $(uname -r), steps: $(cmdline steps core)"
for step in $(cmdline steps core | tr ',' ' '); do
	start=$(cut -d. -f1 /proc/uptime)
	if step_$step; then
		log "step $step: ok ($(($(cut -d. -f1 /proc/uptime) - start)) s)"
		echo ok >$OUT/$step.status
	else
		log "step $step: FAILED"
		echo failed >$OUT/$step.status
		status=1
	fi
done
dmesg >$OUT/dmesg.txt
send_out
sync
log "done, status $status"
# the verdict as a line too: under lockdown /dev/port is refused, and the guest powers off
echo "==SPYRE-STATUS=$status==" >$DATA
if [ $DATA = /dev/ttyS1 ]; then
	# isa-debug-exit at 0xf4 (244): QEMU exits at once with (status << 1) | 1
	printf "\\$(printf %03o $status)" | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
fi
poweroff -f
