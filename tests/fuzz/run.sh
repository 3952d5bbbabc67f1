#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Run libFuzzer targets for a bounded time each; exit non-zero if any of them fails.
#
#   run.sh [-t SECONDS] [-b BINDIR] [-o OUTDIR] TARGET...      fuzz (TARGET: elfsym, procmaps, ...)
#   run.sh -r [-b BINDIR] TARGET FILE...                        replay inputs once (regressions)
#
# New corpus entries and crash artifacts go to OUTDIR (under build/), never into the repo: the
# checked-in seeds in tests/fuzz/corpus/TARGET are only read.
set -u

here=$(cd "$(dirname "$0")" && pwd)
secs=20
bindir=build/fuzz
outdir=
replay=0
# One slow unit is a finding too (the demangler), but must not eat the whole time budget.
unit_timeout=${FUZZ_UNIT_TIMEOUT:-10}

while getopts t:b:o:r opt; do
	case $opt in
	t) secs=$OPTARG ;;
	b) bindir=$OPTARG ;;
	o) outdir=$OPTARG ;;
	r) replay=1 ;;
	*) echo "usage: $0 [-t SECONDS] [-b BINDIR] [-o OUTDIR] [-r] TARGET..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "$0: no target given" >&2; exit 2; }
[ -n "$outdir" ] || outdir=$bindir/out

if [ $replay = 1 ]; then
	t=$1
	shift
	exec "$bindir/fuzz_$t" -timeout="$unit_timeout" "$@"
fi

failed=
for t in "$@"; do
	bin=$bindir/fuzz_$t
	seeds=$here/corpus/$t
	work=$outdir/corpus/$t
	art=$outdir/artifacts/$t
	log=$outdir/$t.log
	if [ ! -x "$bin" ]; then
		echo "fuzz $t: $bin missing" >&2
		failed="$failed $t"
		continue
	fi
	mkdir -p "$work" "$art"
	start=$(date +%s)
	# The first corpus directory receives new units; the seed directory is read only.
	"$bin" -max_total_time="$secs" -timeout="$unit_timeout" -rss_limit_mb=2048 \
		-artifact_prefix="$art/" -print_final_stats=1 "$work" "$seeds" >"$log" 2>&1
	rc=$?
	end=$(date +%s)
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
	if [ $rc -ne 0 ]; then
		echo "FAIL fuzz $t (exit $rc, $((end - start))s); log: $log, artifacts: $art"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*invariant failed|.*runtime error)' "$log" | head -n 5
		failed="$failed $t"
	else
		echo "ok   fuzz $t: ${runs:-?} runs, $cov, $((end - start))s"
	fi
done

if [ -n "$failed" ]; then
	echo "fuzz: failed:$failed" >&2
	exit 1
fi
exit 0
