#!/bin/sh
# The main job, as a user would run it: start the mock Spyre job, attach to it by PID while it
# runs, trace for a few seconds, write the trace, and say how to open it.
# usage: tools/demo.sh [BUILD_DIR] [SECONDS]
set -eu
build=${1:-build}
secs=${2:-3}
out=${DEMO_OUT:-$PWD/spyre-demo-trace.json}
tmp=$(mktemp -d)
job=
cleanup() {
	[ -n "$job" ] && kill "$job" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# a training-like job that keeps running until told to stop
"$build/mock/mock-spyre-job" --threads 2 --streams 2 --iters 200 --phases 100000 --quiet \
	--ready-file "$tmp/ready" &
job=$!
deadline=$(( $(date +%s) + 30 ))
while [ ! -e "$tmp/ready" ]; do
	[ "$(date +%s)" -lt "$deadline" ] || { echo "demo: the mock job did not start" >&2; exit 1; }
	sleep 0.05
done
echo "demo: mock Spyre job running as pid $job; attaching for ${secs}s"
rm -f "$out"
"$build/spyre-bpftrace" -p "$job" -d "$secs" -o "$out" --status
"$build/spyre-bpftrace" check "$out"
kill "$job"
wait "$job" || true
job=
echo
echo "demo: trace written to $out"
echo "demo: open it at https://ui.perfetto.dev (Open trace file) or in chrome://tracing"
