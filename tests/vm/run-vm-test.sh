#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The tracer on a second kernel: boot the guest built by `make vm-build` (a stock Debian kernel
# under QEMU TCG), let tests/vm/init.sh trace the mock job there, then check the traces it
# sends back on this host, with the same verifier as the host's end-to-end tests.
#
# Steps (VM_STEPS, comma-separated, default: all that this build supports):
#   install  (first) the tool's package VM_DEB installed in the guest with busybox's dpkg: the
#           steps after it run the installed tool; dpkg's record of it is the package's
#   remove  (last) dpkg -r leaves none of the package's files (checked in the guest) and no
#           installed package in dpkg's status
#   core    default probes by PID: CO-RE against the guest kernel's BTF (6.1, not the 6.18 of
#           the checked-in vmlinux.h), exact call counts, nesting, thread names
#   unwind  the job throws C++ exceptions through traced calls: return sites (the default)
#           leave its stack alone, it lives on and the calls left are counted as unwound
#   uretunwind  the same with --uretprobes: the unwind guard keeps it alive (the host's
#           kernel is locked down and cannot have the guard)
#   throwjob  tests/progs/throwjob.cpp (exceptions through 1, 2, 20 and 80 nested traced calls,
#           pthread_cancel, pthread_exit), dynamic and with the unwinder linked in: the job's
#           result is the untraced one, every unwound call counted (spyre.tjrounds=N rounds);
#           and one that aborts inside a traced call: the tracer reports SIGABRT, exit 9
#   args6   a six-argument function's sixth argument recorded right (s390x: from the stack)
#   entryonly  where the start-up self-test finds return sites broken (s390x under QEMU 7.2;
#           not a default step: docs/vm-test.md): the job throwing through traced calls
#           lives, span probes record entries and say why
#   vfio    the guest binds QEMU's edu PCI device to vfio-pci (fitness for the next step)
#   kprobe  --driver kprobe: VFIO ioctl spans from kprobes, on the edu device's real VFIO
#           group, decoded and nested in the runtime spans
#   fentry, tracepoint  the same through the driver tier's other two paths
#   nofentry  the VFIO modules loaded on a kernel where fentry fails (s390x: no BPF JIT;
#           ppc64le 6.12: no BPF trampolines): the driver tier falls back to kprobes, the
#           trace is as for core
#   fleet   system-wide with sampling: two running jobs and a later one all traced and
#           named; `spyre-bpftrace check` passes on the trace in the guest
#   untraced  (after core) the job without a tracer: the same checksum as traced
#   list    `spyre-bpftrace list -p`: the mock's probes resolve
#   launch  launch mode (`spyre-bpftrace -- mock-spyre-job`): counts as for core
#   sstep   (`make vm-next`) core with SPYRE_NO_EMULATED_RETURNS=1: the single-stepped fallback
#   entries  tests/progs/entryjob.c: functions that begin with each mov/lea form; results equal
#           untraced, every call a span, the entries done by BPF where the kernel allows it
#   twotracers  two tracers on one job: both traces whole, only the first does rets in BPF
#   ustack  native stacks (--ustack) of tests/progs/stackjob: each call's frames, from the traced
#           function at its entry up to main, where the kernel walks user stacks (x86-64 frame
#           pointers, ppc64le's back chain); s390x: the first frame and the caller from r14
#           (tests/vm/check_ustack.py)
#   perf    opt-in, never by default (`make vm-perf-s390x`, `make vm-perf-ppc64le`: a guest
#           with the bench): per-call cost of our traced call against the empty probes of
#           the same mechanism, as ratios (tests/vm/perf_report.py prints them)
# VM_ARGS: more kernel arguments, e.g. the guest's debugging knobs spyre.verbose=1 (tracer -v)
# and spyre.nomulti=1 (SPYRE_NO_UPROBE_MULTI=1), spyre.noguard=1 (SPYRE_NO_UNWIND_GUARD=1),
# spyre.iters=N (mock iterations, default 8).
# VMDIR: the guest to boot (default $BUILD/vm; `make vm2-test` boots $BUILD/vm2, a 6.12 kernel).
# VM_MACHINE, VM_TOOL: another architecture's guest and its static tool (`make vm-s390x`,
# mk/vm.mk). VM_DEB: the Debian package that guest installs instead (its initramfs has no loose
# tool; steps install and remove).
# VM_EXPECT, comma-separated: emulated: the probed rets (and some mov/lea entries) were done by
# BPF (`make vm-next`); refused: this kernel refuses a uprobe program that writes its registers,
# so they were single-stepped, said so; lockdown: the guest ran under lockdown=integrity; multi: the kernel has uprobe_multi links, so the tracer must use
# them (and the registration warm-up) in the core and unwind steps; selftest: the tracer's
# start-up self-test of return sites runs there (s390x, ppc64le) and must pass (core, unwind).
# Exit status 0 when every step passed. Results stay in $VMDIR/run for a look afterwards, a failed
# run's also in $VMDIR/failed/TIME (the newest three).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
VMDIR=${VMDIR:-$BUILD/vm}
RUN=$VMDIR/run
VERIFY="python3 $ROOT/tests/e2e/verify_trace.py"

# the static build both x86 guests run; a cross build's own tool is static already
VM_TOOL=${VM_TOOL:-$BUILD/vm/spyre-bpftrace}
for f in "$VMDIR/vmlinux" "$VMDIR/initramfs.cpio.gz" "${VM_DEB:-$VM_TOOL}"; do
	[ -s "$f" ] || { echo "vm-test: $f missing: run 'make vm-build'" >&2; exit 1; }
done

if [ -z "${VM_STEPS:-}" ]; then
	VM_STEPS=core,unwind,uretunwind,throwjob,ustack,vfio
	# The driver steps need two features that land separately: say which one is missing.
	if ! "$VM_TOOL" --help 2>&1 | grep -q -- '--driver'; then
		echo "vm-test: spyre-bpftrace has no --driver option yet: driver steps not run"
	elif ! grep -rqs FLEX_VFIO_GROUP "$BUILD"/mock/*.so "$BUILD/mock/mock-spyre-job"; then
		echo "vm-test: the mock runtime has no VFIO mode (FLEX_VFIO_GROUP) yet:" \
			"driver steps not run"
	else
		VM_STEPS=$VM_STEPS,kprobe,fentry,tracepoint
	fi
fi

expect() {
	case ",${VM_EXPECT:-}," in *",$1,"*) return 0 ;; esac
	return 1
}

passed=0
failed=0
pass() { echo "ok - $1"; passed=$((passed + 1)); }
fail() { echo "not ok - $1"; failed=$((failed + 1)); }

# show_step STEP: the guest's own files of a failed step
show_step() {
	local f
	for f in "$RUN/out/$1".*; do
		case $f in *.json) continue ;; esac
		[ -s "$f" ] && { echo "--- $(basename "$f")"; tail -n 20 "$f"; }
	done
}

start=$SECONDS
echo "vm-test: booting $(cat "$VMDIR/kver" 2>/dev/null) under QEMU TCG, steps $VM_STEPS"
rm -rf "$RUN"
guest_rc=0
# the bound is for a hung guest: at load 15 on this 2-core machine the driver steps alone took
# over 300 s under TCG (twice), where the whole default run takes 190-340 s unloaded
VM_TIMEOUT=${VM_TIMEOUT:-1200} sh "$ROOT/tools/vm/run-qemu.sh" "$VMDIR/vmlinux" \
	"$VMDIR/initramfs.cpio.gz" "$RUN" "spyre.steps=$VM_STEPS" ${VM_ARGS:-} || guest_rc=$?
echo "vm-test: guest finished in $((SECONDS - start)) s with status $guest_rc"
if [ $guest_rc -ge 124 ]; then
	echo "vm-test: FAILED: no result from the guest (see $RUN/console.log)" >&2
	echo "vm-test: 0 passed, 1 failed"
	exit 1
fi
cat "$RUN/out/guest.log"

check_step() {
	local step=$1
	if [ "$(cat "$RUN/out/$step.status" 2>/dev/null)" != ok ]; then
		echo "vm-test: the guest reports step $step failed" >&2
		show_step "$step" >&2
		return 1
	fi
	if expect multi && [ -s "$RUN/out/$step.tracer.err" ] &&
		{ ! grep -q 'uprobe_multi links' "$RUN/out/$step.tracer.err" ||
			grep -q '(0 uprobes kept the registration lock warm)' \
				"$RUN/out/$step.tracer.err"; }; then
		echo "$step: not on uprobe_multi links with the warm-up:" >&2
		grep 'links;\|lock warm' "$RUN/out/$step.tracer.err" >&2
		return 1
	fi
	# the self-test's probed return came back right, so the steps below ran on return sites
	if expect selftest && { [ $step = core ] || [ $step = unwind ]; } &&
		! grep -q 'return-site self-test: passed' "$RUN/out/$step.tracer.err"; then
		echo "$step: the return-site self-test did not pass:" >&2
		grep 'self-test' "$RUN/out/$step.tracer.err" >&2
		return 1
	fi
	# who did the probed rets and entries: BPF where the kernel lets a uprobe program write
	# its registers (`make vm-next`), else the kernel's single step, said with the reason
	local t emu="python3 $ROOT/tests/vm/check_emulation.py"
	for t in "$RUN/out/$step".trace.json "$RUN/out/$step"-static.trace.json; do
		# (uretunwind: --uretprobes, no return sites to speak of)
		[ -s "$t" ] && [ $step != sstep ] && [ $step != entries ] &&
			[ $step != uretunwind ] || continue
		if expect emulated; then
			$emu "$t" --want bpf || return 1
		elif expect refused; then
			$emu "$t" --want kernel-single-step \
				--reason-has 'refuses a uprobe program that writes its registers' ||
				return 1
		fi
	done
	if expect lockdown && ! grep -q '\[integrity\]' "$RUN/out/lockdown"; then
		echo "$step: the guest is not under lockdown=integrity: $(cat "$RUN/out/lockdown")" >&2
		return 1
	fi
	case $step in
	entries)
		# the job's own results, traced, are the untraced ones; each function's calls
		# are spans; the entries were done by BPF where the kernel allows it (all but
		# ej_arg's, into an argument register), else single-stepped
		local nbpf=0
		expect emulated && nbpf=12
		python3 - "$RUN/out/entries.counts.json" "$RUN/out/entries.untraced.json" \
			"$RUN/out/entries.trace.json" $nbpf <<'PY' || return 1
import collections, json, sys
c, u, t = (json.load(open(f)) for f in sys.argv[1:4])
n = collections.Counter(e["name"] for e in t["traceEvents"] if e["ph"] == "X")
bad = []
if c["checksum"] != u["checksum"] or c["mismatches"]:
    bad.append("results: traced %s (%d wrong), untraced %s" %
               (c["checksum"], c["mismatches"], u["checksum"]))
bad += ["%s: %d spans, %d calls" % (k, n[k], v) for k, v in c["calls"].items() if n[k] != v]
if t["spyreStats"].get("entriesDoneByBpf", 0) != int(sys.argv[4]):
    bad.append("entriesDoneByBpf %s, not %s" % (t["spyreStats"].get("entriesDoneByBpf"),
                                                sys.argv[4]))
sys.exit("entries: " + "; ".join(bad) if bad else 0)
PY
		;;
	twotracers)
		# both traces hold every call; the first tracer did the rets in BPF, the second
		# saw its programs and left them to the kernel
		$VERIFY "$RUN/out/twotracers.trace.json" --counts "$RUN/out/twotracers.counts.json" \
			--pid "$(cat "$RUN/out/twotracers.pid")" &&
			$VERIFY "$RUN/out/twotracers2.trace.json" \
				--counts "$RUN/out/twotracers.counts.json" \
				--pid "$(cat "$RUN/out/twotracers.pid")" &&
			$emu "$RUN/out/twotracers2.trace.json" --want kernel-single-step \
				--reason-has 'another spyre-bpftrace on this machine' || return 1
		;;
	sstep)
		# the same kernel with SPYRE_NO_EMULATED_RETURNS=1: single-stepped, every count kept
		$VERIFY "$RUN/out/sstep.trace.json" --counts "$RUN/out/sstep.counts.json" \
			--pid "$(cat "$RUN/out/sstep.pid")" &&
			$emu "$RUN/out/sstep.trace.json" --want kernel-single-step \
				--reason-has SPYRE_NO_EMULATED_RETURNS
		;;
	install)
		[ -n "${VM_DEB:-}" ] || { echo "install: no VM_DEB to compare with" >&2; return 1; }
		# dpkg installed this package: its name, version and architecture, and the tool
		# it put in /usr/sbin is this commit's (0.1+gitDATE.HASH[+dirty]: HASH)
		local ver arch hash rec
		ver=$(dpkg-deb -f "$VM_DEB" Version)
		arch=$(dpkg-deb -f "$VM_DEB" Architecture)
		hash=${ver##*.}
		hash=${hash%+dirty}
		rec=$(awk -v RS= '/^Package: spyre-bpftrace\n/' "$RUN/out/install.dpkg-status")
		grep -qx "Version: $ver" <<<"$rec" && grep -qx "Architecture: $arch" <<<"$rec" &&
			grep -qx "Status: install ok installed" <<<"$rec" || {
			echo "install: dpkg's record is not $VM_DEB ($ver, $arch) installed:" >&2
			cat "$RUN/out/install.dpkg-status" >&2
			return 1
		}
		grep -q "^spyre-bpftrace $hash" "$RUN/out/install.version" || {
			echo "install: the installed tool is not commit $hash:" >&2
			cat "$RUN/out/install.version" >&2
			return 1
		}
		;;
	remove)
		# dpkg -r keeps the record of a package's conffiles (ours has none), never "installed"
		! awk -v RS= '/^Package: spyre-bpftrace\n/' "$RUN/out/remove.dpkg-status" |
			grep -qx "Status: install ok installed" || {
			echo "remove: dpkg still has the package installed:" >&2
			cat "$RUN/out/remove.dpkg-status" >&2
			return 1
		}
		;;
	core)
		$VERIFY "$RUN/out/core.trace.json" --counts "$RUN/out/core.counts.json" \
			--pid "$(cat "$RUN/out/core.pid")" || return 1
		# the ledger's pointers come through SpyreAllocator::allocate's hidden result
		# pointer (x86-64 rdi, s390x r2, ppc64le r3): a wrong register books 0 (failed),
		# garbage (frees missed) or nothing a free finds (unknown frees of blocks it made)
		python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e["ph"] == "X"]
inner = "spyreAllocate(unsigned long, flex::AllocationDirective const&)"	# allocate(size_t, directive)
allocs = sum(e["name"] == inner and not e["args"].get("unwound") for e in ev)
frees = sum(e["name"] == "spyreFree" for e in d["traceEvents"])
a = d["spyreMemory"]["processes"][0]["devices"][0]["allocated"]
ok = (allocs > 10 and a["allocs"] == allocs and a["failedAllocs"] == 0 and
      a["freesMissed"] == 0 and a["frees"] + a["unknownFrees"] == frees and
      a["frees"] >= allocs - 16)
sys.exit(0 if ok else "core: ledger off: %d allocations, %d frees traced, %s"
         % (allocs, frees, a))' \
			"$RUN/out/core.trace.json" || return 1
		# 6.1 lets uprobe programs use task storage: the fast path, not the fallback
		grep -q 'call stacks in task storage, spans staged per thread' \
			"$RUN/out/core.tracer.err" || {
			echo "core: not the task-storage path:" >&2
			grep 'per-thread call stacks' "$RUN/out/core.tracer.err" >&2
			return 1
		}
		;;
	unwind | uretunwind)
		if [ $step = unwind ]; then
			want='returns seen by uprobes on return instructions'
		else
			want='returns seen by uretprobes, C++ exception unwind guard on'
		fi
		grep -q "$want" "$RUN/out/$step.tracer.err" || {
			echo "$step: not '$want':" >&2
			grep 'returns seen by' "$RUN/out/$step.tracer.err" >&2
			return 1
		}
		# the job survived its exceptions (run_traced checks its exit status), every
		# call is in the trace but the ones that threw, and exactly those are unwound
		$VERIFY "$RUN/out/$step.trace.json" --counts "$RUN/out/$step.counts.json" \
			--pid "$(cat "$RUN/out/$step.pid")" || return 1
		python3 -c 'import json, sys
# each bad_alloc leaves flex's allocate and torch-spyre's: the job counts both
n = json.load(open(sys.argv[1]))["thrown"]["flex::FlexAllocator::allocate"]
p = {x["symbol"]: x for x in json.load(open(sys.argv[2]))["spyreProbes"]}
u = p["flex::FlexAllocator::allocate"]["unwound"]
sys.exit(0 if n >= 4 and u == n else "%s: %d thrown, %d unwound" % (sys.argv[3], n, u))' \
			"$RUN/out/$step.counts.json" "$RUN/out/$step.trace.json" $step
		;;
	throwjob)
		for j in throwjob throwjob-static; do
			python3 -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
bad = [k for k in ("checksum", "caught", "cancelled", "exited", "calls", "unwound")
       if a.get(k) != b.get(k)]
sys.exit("%s: traced run differs from untraced in %s" % (sys.argv[3], bad) if bad else 0)' \
				"$RUN/out/$j.counts.json" "$RUN/out/$j.untraced.json" $j || return 1
			$VERIFY "$RUN/out/$j.trace.json" || return 1
			python3 "$ROOT/tests/e2e/check_unwound.py" "$RUN/out/$j.trace.json" \
				"$RUN/out/$j.counts.json" --return-probe sites --signal 0 \
				--exit-code 0 --only tj_level --only tj_catch --only tj_leaf \
				--only tj_cancel_wait --only tj_exit_inside || return 1
		done
		# the job that aborts inside a traced call: reported, exit 9 (checked in the guest)
		grep -q 'killed by SIGABRT' "$RUN/out/tjabort.tracer.err" &&
			python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["spyreStats"]
sys.exit(0 if s["targetSignal"] == 6 else "tjabort: %s" % s)' "$RUN/out/tjabort.trace.json"
		;;
	nofentry)
		$VERIFY "$RUN/out/nofentry.trace.json" --counts "$RUN/out/nofentry.counts.json" \
			--pid "$(cat "$RUN/out/nofentry.pid")" || return 1
		grep -q 'driver tier: kprobe' "$RUN/out/nofentry.tracer.err" || {
			echo "nofentry: not the kprobe fallback:" >&2
			grep 'driver tier' "$RUN/out/nofentry.tracer.err" >&2
			return 1
		}
		;;
	fleet)
		# every job traced (sampled: some of its calls) and named; `check` passed in the guest
		/usr/bin/python3 - "$RUN/out/fleet.trace.json" $(cat "$RUN/out/fleet.pids") <<'PY'
import collections, json, sys
d = json.load(open(sys.argv[1])); pids = [int(p) for p in sys.argv[2:]]
n = collections.Counter(e["pid"] for e in d["traceEvents"]
                        if e["ph"] == "X" and e.get("cat") == "privateuse1_runtime")
names = {e["pid"]: e["args"]["name"] for e in d["traceEvents"]
         if e["ph"] == "M" and e["name"] == "process_name"}
bad = [p for p in pids if n[p] < 10 or names.get(p) != "mock-spyre-job"]
sys.exit("fleet: jobs not traced or not named: %s (spans %s, names %s)" % (bad, n, names)
         if bad else 0)
PY
		;;
	untraced)
		# the same options traced (core) and not: the job computed the same results
		python3 -c 'import json, sys
a, b = (json.load(open(f))["checksum"] for f in sys.argv[1:])
sys.exit(0 if a == b else "untraced: checksum %s, traced %s" % (a, b))' \
			"$RUN/out/untraced.counts.json" "$RUN/out/core.counts.json"
		;;
	list)
		grep -q 'flex::RuntimeStream::launchOperationH2D' "$RUN/out/list.out" &&
			! grep -q 'NOT RESOLVED.*libflex' "$RUN/out/list.out" || {
			echo "list: libflex.so's probes not resolved:" >&2
			cat "$RUN/out/list.out" >&2
			return 1
		}
		;;
	launch)
		# the setup calls come before the job's counted phase: one device, traced too; its
		# one pool stream and its default stream are destroyed after it
		$VERIFY "$RUN/out/launch.trace.json" --counts "$RUN/out/launch.counts.json" \
			--extra flex::initializeRuntime=1 --extra flex::getNumDevices=1 \
			--extra flex::RuntimeStream::~RuntimeStream=2
		;;
	args6)
		python3 "$ROOT/tests/e2e/check_args6.py" "$RUN/out/args6.trace.json" 20
		;;
	ustack)
		python3 "$ROOT/tests/vm/check_ustack.py" "$RUN/out/ustack.trace.json" \
			"$RUN/out/ustack.counts.json" "$(cat "$RUN/out/ustack.machine")"
		;;
	entryonly)
		# the job lived through its exceptions (run_traced checks its exit status); the
		# self-test turned return sites off, every span probe says so, and the allocations
		# are all there
		python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
d = json.load(open(sys.argv[2]))
p = {x["symbol"]: x for x in d["spyreProbes"]}
a = p["flex::FlexAllocator::allocate"]
assert c["thrown"]["flex::FlexAllocator::allocate"] >= 4, c["thrown"]
assert a["returnProbe"] == "none" and "self-test" in a["entriesOnlyReason"], a
assert a["events"] == c["calls"]["flex::FlexAllocator::allocate"], (a, c["calls"])
assert d["spyreStats"]["entryOnlyProbes"] >= 10, d["spyreStats"]
assert "went on at the instruction after it" in d["spyreStats"]["returnSitesOff"], d["spyreStats"]' \
			"$RUN/out/entryonly.counts.json" "$RUN/out/entryonly.trace.json" || return 1
		grep -q 'return sites off: the start-up self-test' "$RUN/out/entryonly.tracer.err" &&
			grep -q 'record entries only' "$RUN/out/entryonly.tracer.err"
		;;
	perf)
		python3 "$ROOT/tests/vm/perf_report.py" "$RUN/out"
		;;
	vfio)
		grep -q 'bound to vfio-pci' "$RUN/out/vfio.log"
		;;
	kprobe | fentry | tracepoint)
		[ -s "$RUN/out/$step.vfio-group" ] || { echo "$step: ran without VFIO" >&2; return 1; }
		$VERIFY "$RUN/out/$step.trace.json" --counts "$RUN/out/$step.counts.json" \
			--pid "$(cat "$RUN/out/$step.pid")" &&
			python3 "$ROOT/tests/vm/verify_driver.py" "$RUN/out/$step.trace.json" \
				--path "$step" --counts "$RUN/out/$step.counts.json" \
				--group "$(cat "$RUN/out/$step.vfio-group")" &&
			# launch mode: the setup ioctls too; the job's shutdown resets the device
			# from flex::shutdownRuntime, which the default table does not probe
			python3 "$ROOT/tests/vm/verify_driver.py" "$RUN/out/$step-launch.trace.json" \
				--path "$step" --group "$(cat "$RUN/out/$step.vfio-group")" \
				--require VFIO_GROUP_SET_CONTAINER \
				--require VFIO_SET_IOMMU --require VFIO_GROUP_GET_DEVICE_FD \
				--require VFIO_DEVICE_GET_REGION_INFO --require VFIO_IOMMU_MAP_DMA \
				--unprobed VFIO_DEVICE_RESET
		;;
	*)
		echo "vm-test: unknown step $step" >&2
		return 1
		;;
	esac
}

for step in ${VM_STEPS//,/ }; do
	if check_step "$step"; then
		pass "vm $step on $(cat "$RUN/out/kernel")"
	else
		fail "vm $step on $(cat "$RUN/out/kernel" 2>/dev/null)"
	fi
done
# the guest's own verdict must agree (e.g. a step that failed after writing its status)
if [ $guest_rc -ne 0 ] && [ $failed -eq 0 ]; then
	fail "guest exit status $guest_rc"
fi
echo "vm-test: total $((SECONDS - start)) s"
echo "vm-test: $passed passed, $failed failed"
# A failed run's files outlive the next run (which starts with `rm -rf $RUN`): a step that fails
# once in many runs is explained from its own files, not from a rerun's. The newest 3 are kept.
if [ $failed -ne 0 ]; then
	kept=$VMDIR/failed/$(date -u +%Y%m%dT%H%M%S)
	mkdir -p "$VMDIR/failed" && cp -a "$RUN" "$kept" &&
		echo "vm-test: this run's files kept in $kept" >&2
	ls -1d "$VMDIR"/failed/* 2>/dev/null | head -n -3 | xargs -r rm -rf
fi
[ $failed -eq 0 ]
