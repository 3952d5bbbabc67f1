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
# and untraced; spyre.rounds= rounds (default 5), the order reversed every other round
# (spyre.reps=, spyre.repms=: torchmm.py's --reps, --rep-ms, default 5 and 300). The summary
# (the Python at the end) goes to /out/results.txt; /out reaches the host as
# tests/vm/init.sh sends it (base64 tar.gz on the second serial port), the verdict to QEMU's
# isa-debug-exit port.
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

# alive PID: PID runs (an exited child stays a zombie until waited for: kill -0 succeeds on it)
alive() {
	[ -r /proc/$1/stat ] && [ "$(sed 's/.*) //' /proc/$1/stat | cut -c1)" != Z ]
}

# wait_for FILE SECONDS [PID] [TEXT]: until FILE exists (and holds TEXT), or PID has exited
wait_for() {
	local f=$1 n=$(($2 * 10))
	while [ ! -e "$f" ] || { [ -n "${4:-}" ] && ! grep -q "$4" "$f"; }; do
		n=$((n - 1))
		[ $n -le 0 ] && { log "timed out waiting for $f"; return 1; }
		[ -n "${3:-}" ] && ! alive "$3" && { log "$3 exited before $f"; return 1; }
		sleep 0.1
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
# spyre.kinds=a,b: a subset, for debugging (the summary needs them all)
KINDS=$(cmdline kinds untraced,ours,sstep,uret,bpftrace,empty | tr , ' ')
{
	echo "kernel=$(uname -r)"
	echo "lockdown=$(cat /sys/kernel/security/lockdown 2>/dev/null)"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "mem_kb=$(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo)"
	echo "tool=$($TOOL --version 2>&1 | head -1)"
	echo "bpftrace=$(bpftrace --version 2>&1 | head -1)"
	echo "python=$(python3 --version 2>&1)"
	echo "rounds=$ROUNDS reps=$REPS rep_ms=$REPMS"
} >$OUT/env.txt
log "kernel $(uname -r); $ROUNDS rounds of $KINDS; torch.mm 8x8, $REPS x $REPMS ms per phase"

t0=$(cut -d. -f1 /proc/uptime)
python3 /opt/spyre/torchmm.py --reps "$REPS" --rep-ms "$REPMS" --ready-file $W/tm.ready \
	--result $W/tm.res >$OUT/torchmm.out 2>&1 &
JOB=$!
wait_for $W/tm.ready 900 $JOB || { cat $OUT/torchmm.out; finish 1; }
log "torch loaded and warm in $(($(cut -d. -f1 /proc/uptime) - t0)) s"
echo "torch=$(python3 -c 'import torch; print(torch.__version__)' 2>&1)" >>$OUT/env.txt
LIB=$(awk '$6 ~ /libtorch_cpu\.so/ { print $6; exit }' /proc/$JOB/maps)
log "libtorch_cpu: $LIB"
$TOOL list -p $JOB --no-default --probe "$PROBE" >$OUT/list.txt 2>&1
cat $OUT/list.txt

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

# phase FILE: one phase of the job (SIGUSR1), its result line into FILE
K=0
phase() {
	K=$((K + 1))
	kill -USR1 $JOB
	wait_for $W/tm.res.$K 600 $JOB && cp $W/tm.res.$K "$1"
}

# run KIND ROUND: start KIND's tracer (none for untraced), one phase, stop it
status=0
run() {
	local kind=$1 r=$2 tr= rc=0 f=$OUT/$1.$2 hits= t
	local ours=("$TOOL" -p $JOB --no-default --probe "$PROBE" --driver off -v --force
		-o $W/t.json --ready-file $W/tr.ready)
	rm -f $W/tr.ready
	case $kind in
	ours) "${ours[@]}" >$f.out 2>$f.err & tr=$! ;;
	sstep) SPYRE_NO_EMULATED_RETURNS=1 "${ours[@]}" >$f.out 2>$f.err & tr=$! ;;
	uret) "${ours[@]}" --uretprobes >$f.out 2>$f.err & tr=$! ;;
	bpftrace) bpftrace -B line -p $JOB $W/bt.bt >$W/bt.out 2>$f.err & tr=$! ;;
	empty) bpftrace -B line -p $JOB $W/empty.bt >$W/bt.out 2>$f.err & tr=$! ;;
	esac
	alive $JOB || { log "the job has exited"; return 1; }
	t=$(cut -d' ' -f1 /proc/uptime)
	if [ -n "$tr" ]; then
		case $kind in
		bpftrace | empty) wait_for $W/bt.out 300 $tr READY ;;
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
	phase $f.res || {
		log "$kind round $r: the phase failed"
		tail -5 $f.err $OUT/torchmm.out 2>/dev/null
		[ -n "$tr" ] && { kill -KILL $tr; wait $tr; }
		return 1
	}
	if [ -n "$tr" ]; then
		kill -INT $tr
		n=600
		while alive $tr && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
		alive $tr && { log "$kind round $r: the tracer ignored SIGINT for 60 s"; kill -KILL $tr; }
		wait $tr || rc=$?
		[ $rc -eq 0 ] || { log "$kind round $r: tracer exit $rc"; tail -5 $f.err; return 1; }
	fi
	case $kind in
	ours | sstep | uret)
		hits=$(sed -n 's/.*events, \([0-9]*\) probe hits.*/\1/p' $f.out | head -1) ;;
	bpftrace)
		hits=$(grep -c '^mm ' $W/bt.out)
		head -3 $W/bt.out >$f.out ;;
	esac
	rm -f $W/bt.out $W/t.json
	echo "round=$r kind=$kind hits=${hits:--} $(cat $f.res)" >>$OUT/phases.txt
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
grep -q 'done by BPF' $OUT/returns-ours.txt || { log "ours: returns not done by BPF"; status=1; }
python3 - $OUT/phases.txt $OUT/env.txt >$OUT/results.txt 2>&1 <<'EOF' || status=1
import statistics, sys
rows = []
for line in open(sys.argv[1]):
    d = dict(kv.split("=", 1) for kv in line.split())
    rows.append(d)
env = open(sys.argv[2]).read().strip()
kinds = ["untraced", "empty", "ours", "sstep", "uret", "bpftrace"]
label = {
    "untraced": "untraced",
    "empty": "bpftrace, empty uprobe+uretprobe pair",
    "ours": "spyre-bpftrace (default: returns done by BPF)",
    "sstep": "spyre-bpftrace, SPYRE_NO_EMULATED_RETURNS=1",
    "uret": "spyre-bpftrace --uretprobes",
    "bpftrace": "bpftrace, entry time + printf at uretprobe",
}
by = {}
for d in rows:
    by.setdefault(int(d["round"]), {})[d["kind"]] = d
rounds = sorted(r for r in by if all(k in by[r] for k in kinds))
if not rounds:
    sys.exit("no complete round")
ns = lambda r, k: float(by[r][k]["cpu_median_ns"])
add = {k: [ns(r, k) - ns(r, "untraced") for r in rounds] for k in kinds}
med = {k: statistics.median(ns(r, k) for r in rounds) for k in kinds}
print(env)
print("complete rounds: %d" % len(rounds))
print("%-48s %12s %14s %10s" % ("CPU time of the calling thread", "ns/call", "added ns/call",
                                 "hits/calls"))
for k in kinds:
    last = by[rounds[-1]][k]
    hc = "-" if last["hits"] == "-" else "%s/%s" % (last["hits"], last["calls"])
    print("%-48s %12.0f %14s %10s" % (label[k], med[k],
          "-" if k == "untraced" else "%.0f" % statistics.median(add[k]), hc))
def ratio(a, b):
    per = [x / y for x, y in zip(add[a], add[b]) if y > 0]
    return ("%.2f" % statistics.median(per)) if per else "n/a", \
        ("%.2f" % (statistics.median(add[a]) / statistics.median(add[b])))
for a, b in [("ours", "empty"), ("bpftrace", "ours"), ("sstep", "ours"), ("uret", "ours"),
             ("uret", "empty"), ("bpftrace", "empty")]:
    r1, r2 = ratio(a, b)
    print("added cost %s/%s: %s (median of per-round ratios), %s (ratio of medians)" %
          (a, b, r1, r2))
EOF
cat $OUT/results.txt
log "total $(($(cut -d. -f1 /proc/uptime) - t0)) s"
finish $status
