# The CPU PyTorch training job of the tests on real code (exceptions.bats, scale.bats): Debian's
# python3-torch running tests/e2e/torch_job.py, on top of helpers.bash.

load helpers

TORCH_PY=/usr/bin/python3	# Debian's python with python3-torch, whatever python3 is on PATH
TORCH_JOB=$ROOT/tests/e2e/torch_job.py

# same_as_untraced COUNTS UNTRACED KEY...: the job's results equal the untraced run's
same_as_untraced() {
	local k counts=$1 untraced=$2
	shift 2
	for k in "$@"; do
		[ "$(counts_field "$counts" "$k")" = "$(counts_field "$untraced" "$k")" ] ||
			{ echo "$k differs from the untraced run" >&2; return 1; }
	done
}

# need_torch: skip unless Debian's python3-torch is there (make deps installs it)
need_torch() {
	"$TORCH_PY" -c 'import torch' 2>/dev/null || skip "no python3-torch for $TORCH_PY"
}

# torch_untraced: the untraced run's results, once per file, in $BATS_FILE_TMPDIR/torch-untraced.json
torch_untraced() {
	local f=$BATS_FILE_TMPDIR/torch-untraced.json
	[ -e "$f" ] && return 0
	touch "$BATS_FILE_TMPDIR/torch-go"
	"$TORCH_PY" "$TORCH_JOB" --ready "$BATS_FILE_TMPDIR/torch-u.ready" \
		--go "$BATS_FILE_TMPDIR/torch-go" --out "$f"
}

# start_torch_job [JOB OPTIONS]: start the training job, held before its first iteration; sets
# JOB_PID
start_torch_job() {
	JOB_GO=$BATS_TEST_TMPDIR/job.go
	rm -f "$BATS_TEST_TMPDIR/job.ready" "$JOB_GO" "$BATS_TEST_TMPDIR/counts.json"
	"$TORCH_PY" "$TORCH_JOB" --ready "$BATS_TEST_TMPDIR/job.ready" \
		--go "$JOB_GO" --out "$BATS_TEST_TMPDIR/counts.json" "$@" \
		>"$BATS_TEST_TMPDIR/job.out" 2>"$BATS_TEST_TMPDIR/job.err" &
	JOB_PID=$!
	wait_for "$BATS_TEST_TMPDIR/job.ready" 60	# importing torch takes seconds
}
