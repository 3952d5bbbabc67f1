# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# Section 8 of bench/run.sh (sourced; alone: BENCH_ONLY=fleet bash bench/run.sh): fleet mode on
# a saturated node. FLEET_JOBS (32) mock jobs, each running phases until killed, on this
# machine's 2 CPUs; `-a --sample-every 100 --window 2s --period 4s -d 20` three ways, one after
# the other on the same jobs:
#   plain      the tracer as a shell starts it
#   unit       as deploy/spyre-bpftrace.service runs it: its Nice= and CPUWeight=, the jobs in a
#              slice of their own (CPUWeight=100), as systemd places them (a cgroup v1
#              cpu.shares of WEIGHT * 1024 / 100, as systemd maps it, or cgroup v2 cpu.weight);
#              FLEET_UNIT_NICE and FLEET_UNIT_WEIGHT set others
#   unit+20%   the same with --max-overhead 20: each window's cost bounded inside it
# Per run: the windows, each window's traced time, attach and detach (from -v), how late the
# first window's probes came (tracer start -> first attach done), events lost in the ring, and
# the tool's overhead figure per window (each file's metadata; its jobs are the ones that made
# traced calls). FLEET_TOOL: another build of the tool to run (an A/B of two builds).

FLEET_JOBS=${FLEET_JOBS:-32}
# the unit's own values (none given: systemd's defaults, nice 0 and weight 100)
fleet_unit_value() {
	sed -n "s/^$1=//p" "$ROOT/deploy/spyre-bpftrace.service" | tail -1 | grep . || echo "$2"
}
FLEET_UNIT_NICE=${FLEET_UNIT_NICE:-$(fleet_unit_value Nice 0)}
FLEET_UNIT_WEIGHT=${FLEET_UNIT_WEIGHT:-$(fleet_unit_value CPUWeight 100)}

# fleet_cgroup NAME WEIGHT: a cpu cgroup of that CPUWeight (cgroup v2 cpu.weight, or v1
# cpu.shares = WEIGHT * 1024 / 100 as systemd maps it); its procs file, or nothing
fleet_cgroup() {
	local g
	if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers
	then
		g=/sys/fs/cgroup/$1
		mkdir -p "$g" 2>/dev/null && echo "$2" >"$g/cpu.weight" 2>/dev/null &&
			echo "$g/cgroup.procs" && return 0
	fi
	g=/sys/fs/cgroup/cpu/$1
	if [ -d /sys/fs/cgroup/cpu ] && mkdir -p "$g" 2>/dev/null &&
		echo $(($2 * 1024 / 100)) >"$g/cpu.shares" 2>/dev/null; then
		echo "$g/cgroup.procs"
	fi
	return 0
}

# fleet_run NAME WORK [--unit] [TOOL OPTIONS]: one run; "key=value ..." on stdout
fleet_run() {
	local name=$1 work=$2 unit=
	shift 2
	[ "${1:-}" = --unit ] && { unit=1; shift; }
	local out=$work/$name procs t0
	rm -rf "$out"
	mkdir -p "$out"
	procs=$([ -z "$unit" ] || fleet_cgroup spyre-bench-tracer "$FLEET_UNIT_WEIGHT")
	t0=$(date +%s.%N)
	# the unit's cgroup and nice taken before the exec: the start is theirs too
	timeout 300 sh -c 'p=$1; shift; [ -n "$p" ] && echo $$ >"$p"; exec "$@"' sh "$procs" \
		${unit:+nice -n "$FLEET_UNIT_NICE"} "${FLEET_TOOL:-$TOOL}" -a --sample-every 100 --window 2s --period 4s -d 20 \
		--output-dir "$out/d" --ready-file "$out/ready" -v "$@" >"$out/out.txt" 2>"$out/err.txt" ||
		echo "exit=$? "
	python3 - "$out" "$t0" <<'PY'
import glob, gzip, json, re, sys, os
out, t0 = sys.argv[1], float(sys.argv[2])
err = open(os.path.join(out, "err.txt")).read()
wins = [tuple(float(x) for x in m.groups()) for m in re.finditer(
    r"window \d+: attach ([0-9.]+) ms, traced ([0-9.]+) s, detach ([0-9.]+) ms", err)]
ovh, drops = [], 0
ready = os.path.getmtime(os.path.join(out, "ready")) if os.path.exists(
    os.path.join(out, "ready")) else None
for f in sorted(glob.glob(os.path.join(out, "d", "*.json*"))):
    d = json.load(gzip.open(f, "rt") if f.endswith(".gz") else open(f))
    s = d["spyreStats"]
    ovh.append(s.get("estOverheadPct"))
    drops += s.get("drops", 0)
fmt = lambda v: ",".join("%.2f" % x for x in v) or "-"
print("first_ready_s=%s windows=%d traced_s=%s attach_ms=%s detach_ms=%s drops=%d overhead_pct=%s" % (
    "-" if ready is None else "%.1f" % (ready - t0), len(wins), fmt([w[1] for w in wins]), fmt([w[0] for w in wins]),
    fmt([w[2] for w in wins]), drops,
    ",".join("?" if o is None else "%.0f" % o for o in ovh) or "-"))
PY
}

fleetbench() {
	local work=$WORK/fleet pids=() i jobs
	mkdir -p "$work"
	for ((i = 0; i < FLEET_JOBS; i++)); do
		"$MOCK" --quiet --phases 1000000 --ready-file "$work/job$i.ready" >/dev/null 2>&1 &
		pids+=($!)
	done
	for ((i = 0; i < FLEET_JOBS; i++)); do wait_file "$work/job$i.ready" 120 || break; done
	say "== 8. Fleet mode on a saturated node: $FLEET_JOBS mock jobs on $(nproc) CPUs," \
		"-a --sample-every 100 --window 2s --period 4s -d 20 (5 windows of 2 s traced time) =="
	say "   plain:    $(fleet_run plain "$work")"
	# as systemd places them: the jobs in a slice of their own (CPUWeight=100), the tracer in
	# its service's (20)
	jobs=$(fleet_cgroup spyre-bench-jobs 100)
	for i in "${pids[@]}"; do [ -z "$jobs" ] || echo "$i" >"$jobs"; done
	say "   unit (nice $FLEET_UNIT_NICE, CPUWeight $FLEET_UNIT_WEIGHT, the jobs' slice 100):"
	say "             $(fleet_run unit "$work" --unit)"
	say "   unit+20%: $(fleet_run unit20 "$work" --unit --max-overhead 20)"
	kill "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	for i in spyre-bench-tracer spyre-bench-jobs; do
		rmdir "/sys/fs/cgroup/$i" "/sys/fs/cgroup/cpu/$i" 2>/dev/null || true
	done
}
