# IBM's aiu-trace-analyzer (acelyzer) for the tests that run it (tests/e2e/analyzer.bats,
# tests/analyzer/stats.bats). They run only when AIU_TRACE_ANALYZER names a checkout of
# github.com/IBM/aiu-trace-analyzer; it needs python3-numpy and python3-pandas, not installed by
# `make deps`, since the analyzer itself cannot be fetched where CI runs (`make check-analyzer`
# installs them). AIU_PYTHON picks the interpreter (default: the first python3 that imports
# numpy and pandas).
# v1.2.0 needs Python 3.12 for one construct (quotes inside f-string fields); on bookworm's 3.11
# the tests run a copy with only those quotes swapped (tests/e2e/py311_fstrings.py).

# analyzer_python: the first python3 that imports numpy and pandas, or nothing
analyzer_python() {
	local py
	for py in ${AIU_PYTHON:-} python3 /usr/bin/python3; do
		if "$py" -c 'import numpy, pandas' 2>/dev/null; then
			echo "$py"
			return
		fi
	done
}

# analyzer_setup_file: (from setup_file) the copy of the checkout that the tests import, in
# $BATS_FILE_TMPDIR/analyzer
analyzer_setup_file() {
	[ -f "${AIU_TRACE_ANALYZER:-/nonexistent}/src/aiu_trace_analyzer/__init__.py" ] || return 0
	local py
	py=$(analyzer_python)
	[ -n "$py" ] || return 0
	"$py" "$ROOT/tests/e2e/py311_fstrings.py" "$AIU_TRACE_ANALYZER" "$BATS_FILE_TMPDIR/analyzer" >&3
}

# analyzer_setup: (from setup) skip the test without the analyzer; else APY (the interpreter),
# ANALYZER (the copy) and PYTHONPATH (the copy's src/)
analyzer_setup() {
	if [ -z "${AIU_TRACE_ANALYZER:-}" ]; then
		skip "AIU_TRACE_ANALYZER is not set (point it at an aiu-trace-analyzer checkout)"
	fi
	if [ ! -f "$AIU_TRACE_ANALYZER/src/aiu_trace_analyzer/__init__.py" ]; then
		skip "AIU_TRACE_ANALYZER=$AIU_TRACE_ANALYZER is not an aiu-trace-analyzer checkout"
	fi
	APY=$(analyzer_python)
	[ -n "$APY" ] || skip "no python3 with numpy and pandas (apt install python3-numpy python3-pandas)"
	ANALYZER=$BATS_FILE_TMPDIR/analyzer
	export PYTHONPATH="$ANALYZER/src${PYTHONPATH:+:$PYTHONPATH}"
}
