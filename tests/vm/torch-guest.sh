#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# PID 1 of `make vm-next-torch` (opt-in, never in `make test`), after tests/vm/torch-init.sh has
# switch_rooted into the Debian bookworm root of tools/vm/rootfs.sh (Debian's python3-torch and
# bpftrace, the static spyre-bpftrace) on the 7.3 kernel, where BPF does the returns.
#
# Issue 25's per-call numbers side by side in one run, on real PyTorch: bench/torchmm.py (torch.mm
# on 8x8 matrices, one thread; the calling thread's CPU time per call, median of its reps) with
# at::_ops::mm::call traced by
#   ours      spyre-bpftrace, default (return sites; `-v` must say the returns are done by BPF)
#   sstep     the same with SPYRE_NO_EMULATED_RETURNS=1 (return sites single-stepped)
#   uret      spyre-bpftrace --uretprobes
#   bpftrace  bpftrace doing comparable work (bench/run.sh's: entry time in a map, a line per
#             call printed at the uretprobe)
#   empty     an empty bpftrace uprobe + uretprobe pair
# and untraced, and the kinds that split the cost (run(), below: tracers stopped for the phase,
# bench/emptyprobe's empty programs, a variant build); spyre.rounds= rounds (default 5), the
# order reversed every other round (spyre.reps=, spyre.repms=: torchmm.py's --reps, --rep-ms,
# default 5 and 300). Each phase's counters go to /out/phases.txt with its result, the summary
# (tests/vm/torch_report.py) to /out/results.txt; /out reaches the host as tests/vm/init.sh
# sends it (base64 tar.gz on the second serial port), the verdict to QEMU's isa-debug-exit port.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t bpf bpf /sys/fs/bpf
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
OUT=/out
rm -rf $OUT
mkdir -p $OUT
TOOL=/opt/spyre/spyre-bpftrace
export SPYRE_BPFTRACE_MAX_OVERHEAD=none	# every call counted (tests/e2e/helpers.bash)
PROBE='libtorch_cpu.so*:at::_ops::mm::call'
SYM=_ZN2at4_ops2mm4callERKNS_6TensorES4_
W=/tmp/w
mkdir -p $W

log() {
	echo "torch-guest: $*"
	echo "$*" >>$OUT/guest.log
}

cmdline() {
	local v
	v=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^spyre\.$1=//p" | tail -n 1)
	echo "${v:-$2}"
}

# alive PID: PID runs (an exited child stays a zombie until waited for: kill -0 succeeds on it).
# Builtins only, as wait_for: the polls run while the job's phase is measured, and a fork, an
# exec and an exit every 0.1 s (sed, cut, sleep: what they were) each switch the guest's one CPU
# away from the job and back, which under TCG flushes QEMU's TLB and jump cache: job CPU time
# charged to whatever phase is running (issue 25).
alive() {
	local st
	read -r st 2>/dev/null </proc/$1/stat || return 1
	st=${st##*) }
	[ "${st:0:1}" != Z ]
}

# nap: 0.1 s without a fork (read's timeout on a FIFO nobody writes)
NAPFIFO=/tmp/nap.fifo
mkfifo $NAPFIFO
exec 9<>$NAPFIFO
nap() { read -r -t 0.1 -u 9 _ || true; }

# wait_for FILE SECONDS [PID] [TEXT]: until FILE exists (and holds TEXT), or PID has exited
wait_for() {
	local f=$1 n=$(($2 * 10)) l
	while :; do
		if [ -e "$f" ]; then
			[ -z "${4:-}" ] && return 0
			while read -r l; do
				[[ $l == *"$4"* ]] && return 0
			done <"$f"
		fi
		n=$((n - 1))
		[ $n -le 0 ] && { log "timed out waiting for $f"; return 1; }
		[ -n "${3:-}" ] && ! alive "$3" && { log "$3 exited before $f"; return 1; }
		nap
	done
}

send_out() {
	stty -F /dev/ttyS1 raw -echo 2>/dev/null
	{
		echo "==SPYRE-OUT-BEGIN=="
		tar -C $OUT -czf - . | base64
		echo "==SPYRE-OUT-END=="
	} >/dev/ttyS1
}

finish() {
	local status=$1
	dmesg >$OUT/dmesg.txt
	send_out
	sync
	log "done, status $status"
	echo "==SPYRE-STATUS=$status==" >/dev/ttyS1
	printf "\\$(printf %03o "$status")" | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
	echo o >/proc/sysrq-trigger
	sleep 10
}

ROUNDS=$(cmdline rounds 5)
REPS=$(cmdline reps 5)
REPMS=$(cmdline repms 300)
# spyre.kinds=a,b: a subset (the summary prints what it has; untraced is needed)
KINDS=$(cmdline kinds \
	untraced,empty,empty_stop,ours,ours_stop,uret,lim_emu,lim_uret,sstep,bpftrace | tr , ' ')
# spyre.bpfstats=0: without the kernel's BPF run-time statistics (on by default: they add two
# clock reads to every program run, of every tracer alike)
BPFSTATS=$(cmdline bpfstats 1)
# (no sysctl in a minbase root: procps is not there)
[ "$BPFSTATS" = 1 ] && echo 1 >/proc/sys/kernel/bpf_stats_enabled
{
	echo "kernel=$(uname -r)"
	echo "lockdown=$(cat /sys/kernel/security/lockdown 2>/dev/null)"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "mem_kb=$(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo)"
	echo "tool=$($TOOL --version 2>&1 | head -1)"
	echo "bpftrace=$(bpftrace --version 2>&1 | head -1)"
	echo "python=$(python3 --version 2>&1)"
	echo "rounds=$ROUNDS reps=$REPS rep_ms=$REPMS" \
		"bpf_stats=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null)"
} >$OUT/env.txt
log "kernel $(uname -r); $ROUNDS rounds of $KINDS; torch.mm 8x8, $REPS x $REPMS ms per phase"

# With two CPUs or more (VM_SMP=2), the job has CPU 0 to itself and this script, the tracers
# and their consumers run on CPU 1, as on a machine with a core to spare: the job's thread
# time is then the probes' cost without the tracers' user space interleaved on its CPU
# (spyre.pin=0: no pinning)
NCPU=$(nproc)
PIN=$(cmdline pin 1)
JOBCPU=
if [ "$NCPU" -ge 2 ] && [ "$PIN" = 1 ]; then
	taskset -pc 1 $$ >/dev/null
	JOBCPU="taskset -c 0"
fi
echo "cpus=$NCPU pinned=$([ -n "$JOBCPU" ] && echo "job on 0, tracers on 1" || echo no)" \
	>>$OUT/env.txt
t0=$(cut -d. -f1 /proc/uptime)
$JOBCPU python3 /opt/spyre/torchmm.py --reps "$REPS" --rep-ms "$REPMS" --ready-file $W/tm.ready \
	--result $W/tm.res >$OUT/torchmm.out 2>&1 &
JOB=$!
wait_for $W/tm.ready 900 $JOB || { cat $OUT/torchmm.out; finish 1; }
log "torch loaded and warm in $(($(cut -d. -f1 /proc/uptime) - t0)) s"
echo "torch=$(python3 -c 'import torch; print(torch.__version__)' 2>&1)" >>$OUT/env.txt
LIB=$(awk '$6 ~ /libtorch_cpu\.so/ { print $6; exit }' /proc/$JOB/maps)
log "libtorch_cpu: $LIB"
$TOOL list -v -p $JOB --no-default --probe "$PROBE" >$OUT/list.txt 2>&1
cat $OUT/list.txt
# the empty programs of bench/emptyprobe.c on the offsets `list` prints: the entry and the
# return instructions (not the tail jumps: --ret-emu does rets only; they are rarely taken)
OFF=$(grep -o 'libtorch_cpu\.so[.0-9]*+0x[0-9a-f]*' $OUT/list.txt | head -n 1 | sed 's/.*+//')
NRET=$(sed -n 's/^ *returns: \([0-9]*\) return instruction.*/\1/p' $OUT/list.txt | head -n 1)
RETS=$(sed -n 's/^ *returns: [0-9]* return instruction.* at \(.*\)$/\1/p' $OUT/list.txt |
	head -n 1 | sed 's/, /\n/g' | head -n "${NRET:-0}" | sed 's/.*+//' | paste -sd,)
EP=/opt/spyre/emptyprobe
log "entry at +$OFF, return instructions at +$RETS;" \
	"emptyprobe: $([ -x $EP ] && echo yes || echo no)"

cat >$W/bt.bt <<EOF
BEGIN { printf("READY\n"); }
uprobe:$LIB:$SYM { @ts[tid] = nsecs; }
uretprobe:$LIB:$SYM /@ts[tid]/ {
	printf("%s %d %d\n", "mm", @ts[tid], nsecs - @ts[tid]);
	delete(@ts[tid]);
}
EOF
cat >$W/empty.bt <<EOF
BEGIN { printf("READY\n"); }
uprobe:$LIB:$SYM { }
uretprobe:$LIB:$SYM { }
EOF
cp $W/bt.bt $W/empty.bt $OUT/

# snap PID: one line of counters, key=value, for the job's thread and the tracer PID (none:
# 0), taken before and after each phase (outside its timed repetitions); the summary divides
# the differences by the phase's calls:
#   job_vcs job_nvcs  the job thread's voluntary and involuntary context switches
#   job_minflt        its process's minor faults
#   tr_ns tr_vcs      the tracer's CPU time (all its threads, ns) and its voluntary switches
#                     (sleeps: a wakeup each)
#   bpf_ns bpf_cnt    run_time_ns and run_cnt of the tracer's BPF programs (fdinfo of its
#                     program fds; kernel.bpf_stats_enabled), per program (id, ns, runs)
#                     in $f.bpf0 (before) and $f.bpf1 (after)
#   intr              interrupts taken by the guest (/proc/stat; by kind in $f.bpf[01].irq)
snap() {
	local tr=$1 a b v n ns=0 vcs=0 bns=0 bcnt=0 fd
	while read -r a b; do
		case $a in
		voluntary_ctxt_switches:) v=$b ;;
		nonvoluntary_ctxt_switches:) n=$b ;;
		esac
	done </proc/$JOB/task/$JOB/status
	printf 'job_vcs=%s job_nvcs=%s job_minflt=%s ' "$v" "$n" \
		"$(sed 's/.*) //' /proc/$JOB/stat | cut -d' ' -f8)"
	if [ "$tr" != 0 ] && [ -d /proc/$tr ]; then
		for t in /proc/$tr/task/*; do
			read -r a b <$t/schedstat && ns=$((ns + a))
			vcs=$((vcs + $(sed -n 's/^voluntary_ctxt_switches:\s*//p' $t/status)))
		done
		for fd in /proc/$tr/fd/*; do
			[ "$(readlink $fd 2>/dev/null)" = anon_inode:bpf-prog ] || continue
			a=$(awk '$1 == "prog_id:" { i = $2 } $1 == "run_time_ns:" { t = $2 }
				$1 == "run_cnt:" { c = $2 } END { print i + 0, t + 0, c + 0 }' \
				/proc/$tr/fdinfo/${fd##*/})
			echo "$a" >>$SNAPBPF
			set -- $a
			bns=$((bns + $2))
			bcnt=$((bcnt + $3))
		done
	fi
	cat /proc/interrupts /proc/softirqs >$SNAPBPF.irq 2>/dev/null
	printf 'tr_ns=%s tr_vcs=%s bpf_ns=%s bpf_cnt=%s intr=%s\n' $ns $vcs $bns $bcnt \
		"$(awk '$1 == "intr" { print $2 }' /proc/stat)"
}

# phase FILE: one phase of the job (SIGUSR1), its result line into FILE
K=0
phase() {
	K=$((K + 1))
	kill -USR1 $JOB
	wait_for $W/tm.res.$K 600 $JOB && cp $W/tm.res.$K "$1"
}

# run KIND ROUND: start KIND's tracer (none for untraced), one phase, stop it
#   ours       spyre-bpftrace, default (returns done by BPF)
#   ours_stop  the same, its process stopped (SIGSTOP) for the phase: its programs run and fill
#              the ring, nothing drains it; ours - ours_stop is what the consumer costs the job
#   ours_alt   the default with $TOOL.alt, a variant build (VM_ALT_TOOL of tools/vm/rootfs.sh),
#              to try a change side by side
#   ours_batch the default under SCHED_BATCH (chrt --batch 0): its wakeups do not preempt the
#              job; alt_batch: ours_alt so
#   sstep      the default with SPYRE_NO_EMULATED_RETURNS=1
#   uret       --uretprobes
#   lim_emu    bench/emptyprobe --multi: empty programs on the entry and the return
#              instructions, the latter doing the return (our default's mechanism, no work)
#   lim_uret   bench/emptyprobe --multi: an empty uprobe + uretprobe (uprobe_multi links)
#   lim_pe     bench/emptyprobe: the same on perf-event links (bpftrace's kind of link)
#   bpftrace   bpftrace doing comparable work
#   empty      an empty bpftrace uprobe + uretprobe pair; empty_stop: stopped for the phase
status=0
run() {
	local kind=$1 r=$2 tr=0 rc=0 f=$OUT/$1.$2 hits= t s0 s1
	local ours=("$TOOL" -p $JOB --no-default --probe "$PROBE" --driver off -v --force
		-o $W/t.json --ready-file $W/tr.ready)
	local ep=($EP -p $JOB -b "$LIB" -o "$OFF" --ready-file $W/tr.ready)
	rm -f $W/tr.ready
	case $kind in
	ours | ours_stop) "${ours[@]}" >$f.out 2>$f.err & tr=$! ;;
	ours_alt) "$TOOL.alt" "${ours[@]:1}" >$f.out 2>$f.err & tr=$! ;;
	ours_batch) chrt --batch 0 "${ours[@]}" >$f.out 2>$f.err & tr=$! ;;
	alt_batch) chrt --batch 0 "$TOOL.alt" "${ours[@]:1}" >$f.out 2>$f.err & tr=$! ;;
	sstep) SPYRE_NO_EMULATED_RETURNS=1 "${ours[@]}" >$f.out 2>$f.err & tr=$! ;;
	uret) "${ours[@]}" --uretprobes >$f.out 2>$f.err & tr=$! ;;
	lim_emu) "${ep[@]}" --multi --ret-site "$RETS" --ret-emu >$f.out 2>$f.err & tr=$! ;;
	lim_uret) "${ep[@]}" --multi >$f.out 2>$f.err & tr=$! ;;
	lim_pe) "${ep[@]}" >$f.out 2>$f.err & tr=$! ;;
	bpftrace) bpftrace -B line -p $JOB $W/bt.bt >$W/bt.out 2>$f.err & tr=$! ;;
	empty | empty_stop) bpftrace -B line -p $JOB $W/empty.bt >$W/bt.out 2>$f.err & tr=$! ;;
	untraced) ;;
	*) log "unknown kind $kind"; return 1 ;;
	esac
	alive $JOB || { log "the job has exited"; return 1; }
	t=$(cut -d' ' -f1 /proc/uptime)
	if [ $tr != 0 ]; then
		case $kind in
		bpftrace | empty*) wait_for $W/bt.out 300 $tr READY ;;
		*) wait_for $W/tr.ready 300 $tr ;;
		esac || {
			log "$kind round $r: the tracer did not start"
			tail -5 $f.err $W/bt.out 2>/dev/null
			kill -KILL $tr
			wait $tr
			return 1
		}
		echo "round=$r kind=$kind start_s=$(awk -v t="$t" '{ print $1 - t }' /proc/uptime)" \
			>>$OUT/starts.txt
	fi
	case $kind in *_stop) kill -STOP $tr ;; esac
	SNAPBPF=$f.bpf0
	s0=$(snap $tr)
	phase $f.res || {
		log "$kind round $r: the phase failed"
		tail -5 $f.err $OUT/torchmm.out 2>/dev/null
		[ $tr != 0 ] && { kill -KILL $tr; wait $tr; }
		return 1
	}
	SNAPBPF=$f.bpf1
	s1=$(snap $tr)
	if [ $tr != 0 ]; then
		case $kind in *_stop) kill -CONT $tr ;; esac
		kill -INT $tr
		n=600
		while alive $tr && [ $n -gt 0 ]; do nap; n=$((n - 1)); done
		alive $tr && { log "$kind round $r: the tracer ignored SIGINT for 60 s"; kill -KILL $tr; }
		wait $tr || rc=$?
		# bpftrace 0.17 now and then hangs on its way out here (its phase was measured
		# already): said, not a failure of the run; ours must exit 0
		case $kind:$rc in
		empty*:137 | bpftrace:137) log "$kind round $r: bpftrace killed on exit"; rc=0 ;;
		esac
		[ $rc -eq 0 ] || { log "$kind round $r: tracer exit $rc"; tail -5 $f.err; return 1; }
	fi
	case $kind in
	ours* | alt_batch | sstep | uret)
		hits=$(sed -n 's/.*events, \([0-9,]*\) probe hits.*/\1/p' $f.out | head -1 | tr -d ,) ;;
	bpftrace)
		hits=$(grep -c '^mm ' $W/bt.out)
		head -3 $W/bt.out >$f.out ;;
	esac
	rm -f $W/bt.out $W/t.json
	# the counters before (b_) and after (a_) the phase
	echo "round=$r kind=$kind hits=${hits:--} $(cat $f.res)" \
		"$(echo $s0 | sed 's/\([a-z_]*\)=/b_\1=/g') $(echo $s1 | sed 's/\([a-z_]*\)=/a_\1=/g')" \
		>>$OUT/phases.txt
	log "round $r $kind: $(sed -n 's/.*cpu_median_ns=\([0-9.]*\).*/\1/p' $f.res) ns/call," \
		"hits ${hits:--}"
}

for r in $(seq "$ROUNDS"); do
	order=$KINDS
	[ $((r % 2)) -eq 0 ] && order=$(echo $KINDS | tr ' ' '\n' | tac | tr '\n' ' ')
	for kind in $order; do
		run $kind $r || status=1
	done
done
kill -TERM $JOB
wait $JOB

# the returns: done by BPF by default, single-stepped with SPYRE_NO_EMULATED_RETURNS=1
grep -h 'returns at return sites' $OUT/ours.*.out $OUT/ours.*.err 2>/dev/null | sort -u \
	>$OUT/returns-ours.txt
grep -h 'returns at return sites' $OUT/sstep.*.out $OUT/sstep.*.err 2>/dev/null | sort -u \
	>$OUT/returns-sstep.txt
case " $KINDS " in
*" ours "*) grep -q 'done by BPF' $OUT/returns-ours.txt ||
	{ log "ours: returns not done by BPF"; status=1; } ;;
esac
python3 /opt/spyre/torch_report.py $OUT >$OUT/results.txt 2>&1 || status=1
cat $OUT/results.txt
log "total $(($(cut -d. -f1 /proc/uptime) - t0)) s"
finish $status
