#!/bin/bash
# What the built-in torch table (--probes torch: ~3,000 op-layer probes, autograd, the CPU
# allocator) costs a small CPU training job: tests/e2e/torch_train.py untraced and traced by
# PID, side by side, ROUNDS rounds in alternating order; medians of the per-iteration times
# (iteration 0 left out). As root, after `make all`:
#
#   bench/torch-ops.sh [ROUNDS [ITERS [LAYERS]]]      (defaults 5, 200, 3)
#
# TRACE_OPTS adds tracer options (e.g. --uretprobes).
# Prints one line per phase and the summary: untraced and traced medians (µs), the ratio, the
# added time per traced event (events per iteration from the trace).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOL=${BUILD:-$ROOT/build}/spyre-bpftrace
PY=/usr/bin/python3
ROUNDS=${1:-5} ITERS=${2:-200} LAYERS=${3:-3}
read -ra TOPTS <<<"${TRACE_OPTS:-}"
W=$(mktemp -d /tmp/torch-ops.XXXXXX)
trap 'rm -rf "$W"' EXIT

# phase KIND N: one run of the job, traced when KIND is traced; its median iteration (µs)
phase() {
	local kind=$1 n=$2 pid tpid
	rm -f "$W/ready" "$W/go" "$W/tr.ready"
	"$PY" "$ROOT/tests/e2e/torch_train.py" --ready "$W/ready" --go "$W/go" \
		--out "$W/$kind.$n.json" --iters "$ITERS" --layers "$LAYERS" &
	pid=$!
	until [ -e "$W/ready" ]; do sleep 0.05; done
	if [ "$kind" = traced ]; then
		"$TOOL" -p "$pid" --no-default --probes torch --driver off -q --force \
			-o "$W/t.json" --ready-file "$W/tr.ready" "${TOPTS[@]}" 2>"$W/tr.err" &
		tpid=$!
		until [ -e "$W/tr.ready" ]; do sleep 0.05; done
	fi
	touch "$W/go"
	wait "$pid"
	[ "$kind" = traced ] && wait "$tpid"
	"$PY" -c 'import json,statistics,sys
print("%.1f" % (statistics.median(json.load(open(sys.argv[1]))["iterNs"][1:]) / 1e3))' \
		"$W/$kind.$n.json"
}

declare -a U T
for r in $(seq "$ROUNDS"); do
	order="untraced traced"
	((r % 2)) || order="traced untraced"
	for kind in $order; do
		v=$(phase "$kind" "$r")
		echo "round $r $kind: $v us per iteration"
		if [ "$kind" = traced ]; then T+=("$v"); else U+=("$v"); fi
	done
done
"$PY" - "$W/t.json" "$ITERS" "${U[*]}" "${T[*]}" <<'EOF'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
ev = sum(1 for e in d["traceEvents"] if e.get("ph") in ("X", "i") and
         e.get("cat") in ("cpu_op", "cpu_memory"))
per = ev / int(sys.argv[2])
u = statistics.median(map(float, sys.argv[3].split()))
t = statistics.median(map(float, sys.argv[4].split()))
print(f"untraced {u:.0f} us, traced {t:.0f} us per iteration ({t / u:.2f}x); "
      f"{per:.0f} events per iteration, {(t - u) / per:.1f} us added per event")
EOF
