# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# shellcheck shell=bash
# Section 7 of bench/run.sh (sourced: its helpers spawn, stop, kv, median, calc, start_job):
# attach, detach and tracer memory against the number of probes, on Debian's PyTorch
# (libtorch_cpu.so, bench/torchmm.py held idle between phases). Three tables of about 10, 500
# and 5,000 functions, alternated within each round, so that a drift of the machine weighs on
# all three; the uprobe tier only (--driver off). Alone: BENCH_ONLY=scale bash bench/run.sh
#
#   attach: start -> ready file (resolve, return-site analysis, BPF load, links), benchctl
#   detach: SIGINT -> exit (links closed, the last records drained, the trace closed)
#   RSS:    the tracer's peak resident set (wait4's ru_maxrss)
# and, from -v, the links alone and the second load of a table past the first load's room.

# the tables: ~10, ~500 and ~5,000 functions of libtorch_cpu.so
SCALE_NAMES=(s10 s500 s5000)
declare -A SCALE_PROBES=(
	[s10]="at::_ops::add[m_]*::call"
	[s500]="at::_ops::[a-d]*::call"
	[s5000]="at::_ops::*::call at::native::*"
)
declare -A SC

# scale_args NAME: the tool's probe options of table NAME
scale_args() {
	local g
	for g in ${SCALE_PROBES[$1]}; do printf -- "--probe\nlibtorch_cpu.so*:%s\n" "$g"; done
}

scalebench() {
	local py=/usr/bin/python3 job pid n r args listing s0 s1 ms extra
	local -A A=() D=() M=() L=() G=()
	if ! "$py" -c 'import torch' 2>/dev/null; then
		SC[skip]="no torch in $py (make deps installs python3-torch)"
		return 0
	fi
	start_job sc 60 "$py" "$ROOT/bench/torchmm.py"
	job=$JOB pid=$JOB_PID
	for n in "${SCALE_NAMES[@]}"; do
		mapfile -t args < <(scale_args "$n")
		listing=$("$TOOL" list -p "$pid" --no-default "${args[@]}")
		SC[$n.fns]=$(sed -n 's/.* resolved to \([0-9]*\) functions$/\1/p' <<<"$listing")
		SC[$n.uprobes]=$(sed -n 's/^limits: .* take \([0-9]*\) uprobes.*/\1/p' <<<"$listing")
		# resolution alone (list), with and without the return-site analysis (--uretprobes)
		for r in sites uret; do
			extra=()
			[ $r = uret ] && extra=(--uretprobes)
			s0=$(date +%s%N)
			"$TOOL" list -p "$pid" --no-default "${args[@]}" "${extra[@]}" >/dev/null
			s1=$(date +%s%N)
			SC[$n.list_$r]=$(calc "printf \"%.1f\", ($s1 - $s0) / 1e6")
		done
	done
	for r in $(seq "$ROUNDS"); do
		for n in "${SCALE_NAMES[@]}"; do
			mapfile -t args < <(scale_args "$n")
			rm -f "$WORK/sc-tr.rf"
			spawn sc-tr --mark "ready:$WORK/sc-tr.rf" -- "$TOOL" -v -p "$pid" --no-default \
				"${args[@]}" --driver off --ready-file "$WORK/sc-tr.rf" \
				-o "$WORK/sc.json" --force -q
			stop sc-tr "$SP_PID"
			A[$n]+=" $(kv "$WORK/sc-tr.out" ready_ns)"
			D[$n]+=" $(kv "$WORK/sc-tr.out" stop_ns)"
			M[$n]+=" $(kv "$WORK/sc-tr.out" maxrss_kb)"
			ms=$(sed -n 's/.* probes attached in \([0-9.]*\) ms.*/\1/p' "$WORK/sc-tr.stderr")
			L[$n]+=" ${ms:-nan}"
			ms=$(sed -n 's/.* loaded again with room for .* in \([0-9.]*\) ms/\1/p' \
				"$WORK/sc-tr.stderr")
			G[$n]+=" ${ms:-0}"
			grep -q 'uprobe_multi links' "$WORK/sc-tr.stderr" && SC[links]="uprobe_multi" ||
				SC[links]="perf-event"
		done
	done
	kill -TERM "$job"; wait "$job" || true; untrack "$job"
	rm -f "$WORK/sc.json"
	for n in "${SCALE_NAMES[@]}"; do
		# shellcheck disable=SC2086
		{
			SC[$n.attach]=$(calc "printf \"%.1f\", $(median ${A[$n]}) / 1e6")
			SC[$n.detach]=$(calc "printf \"%.1f\", $(median ${D[$n]}) / 1e6")
			SC[$n.rss]=$(calc "printf \"%.1f\", $(median ${M[$n]}) / 1024")
			SC[$n.links]=$(median ${L[$n]})
			SC[$n.reload]=$(median ${G[$n]})
		}
	done
}

say "== 7. probe count: attach, detach, tracer RSS on Debian's PyTorch (libtorch_cpu.so, job idle), --driver off, median of $ROUNDS rounds =="
scalebench
if [ -n "${SC[skip]:-}" ]; then
	say "   skipped: ${SC[skip]}"
else
	printf '   %-38s %9s %8s %10s %10s %10s %10s %10s %10s\n' "table (libtorch_cpu.so globs)" \
		functions uprobes "attach ms" "links ms" "reload ms" "detach ms" "max RSS MB" \
		"list ms"
	for n in "${SCALE_NAMES[@]}"; do
		printf '   %-38s %9s %8s %10s %10s %10s %10s %10s %10s\n' "${SCALE_PROBES[$n]}" \
			"${SC[$n.fns]}" "${SC[$n.uprobes]}" "${SC[$n.attach]}" "${SC[$n.links]}" \
			"${SC[$n.reload]}" "${SC[$n.detach]}" "${SC[$n.rss]}" "${SC[$n.list_sites]}"
	done
	say "   ${SC[links]} links; attach = start -> ready file, links = the link calls alone (-v), reload = the BPF"
	say "   object loaded again with room for a table past 1024 functions; list = resolution alone,"
	say "   return sites found: ${SC[s5000.list_sites]} ms for the 5,000 table, ${SC[s5000.list_uret]} ms without the analysis (--uretprobes)"
fi
say ""
