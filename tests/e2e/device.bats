#!/usr/bin/env bats
# Device timeline, end to end: every launch of the mock job becomes one device span joined to
# it by correlation and an ac2g arrow, on named, non-overlapping device tracks.

load helpers

VERIFY_DEVICE="python3 $ROOT/tests/e2e/verify_device.py"
CHECK_DEVICE="python3 $ROOT/tests/e2e/check_device.py"

# trace_phase MOCK_OPTIONS...: trace phase 1 of a fresh job into $BATS_TEST_TMPDIR/t.json
trace_phase() {
	start_job "$@"
	start_tracer -o "$BATS_TEST_TMPDIR/t.json"
	kill -USR1 "$JOB_PID"	# one phase: its counts go to counts.json itself
	wait_for "$BATS_TEST_TMPDIR/counts.json" 120
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	[ "$JOB_RC" -eq 0 ]
}

@test "one device span per launch, with its correlation, bytes, tracks and arrows" {
	trace_phase --threads 3 --streams 2 --iters 40 --compute-us 50 --bytes 65536
	local c=$BATS_TEST_TMPDIR/counts.json
	# what the job did: K+2 completions per iteration (host callbacks run in the launching
	# thread), a DMA callback in even iterations only: their D2H copy is addressed by the
	# tensor's segment, the only one torch-spyre gives a callback (job_plan.cpp)
	[ "$(counts_field "$c" completions)" -eq $((3 * 40 * 5)) ]
	[ "$(counts_field "$c" callbacks)" -eq $((3 * 20)) ]
	$VERIFY_DEVICE "$BATS_TEST_TMPDIR/t.json" --counts "$c" --compute-us 50 --bytes 65536
	# 3 threads x 40 iterations x (1 HtoD + 3 kernels + 1 DtoH); host callbacks make no span;
	# each end says how it was known, all three kinds seen (streams switched: synchronize; the
	# last kernels: query(); the DtoH copies: their callback)
	$CHECK_DEVICE phase "$BATS_TEST_TMPDIR/t.json" 3 40
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "overlapping large copies get separate lanes, each named after its direction" {
	# 1 MiB at the mock's 8 GB/s is 131 us: four threads' copies overlap in time
	trace_phase --threads 4 --streams 1 --kernels 2 --iters 15 --compute-us 20 --bytes 1048576
	$VERIFY_DEVICE "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json" \
		--compute-us 20 --bytes 1048576
	$CHECK_DEVICE lanes "$BATS_TEST_TMPDIR/t.json" 4
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 0 ]
}

@test "verify_device.py catches a lost span, a wrong byte count and a moved arrow" {
	trace_phase --threads 2 --streams 2 --iters 10
	local t=$BATS_TEST_TMPDIR/t.json c=$BATS_TEST_TMPDIR/counts.json
	$VERIFY_DEVICE "$t" --counts "$c"
	python3 "$ROOT/tests/e2e/make_trace.py" broken-device "$t" "$BATS_TEST_TMPDIR"
	run $VERIFY_DEVICE "$BATS_TEST_TMPDIR/lost.json" --counts "$c"
	[ "$status" -eq 1 ]
	[[ "$output" == *"has 0 device spans"* ]]
	run $VERIFY_DEVICE "$BATS_TEST_TMPDIR/bytes.json"
	[ "$status" -eq 1 ]
	[[ "$output" == *"!= launch's"* ]]
	run $VERIFY_DEVICE "$BATS_TEST_TMPDIR/arrow.json"
	[ "$status" -eq 1 ]
	[[ "$output" == *"'f' at"* ]]
}

@test "128 live streams all get tracks, none of their spans is lost" {
	# every kernel on its own stream: 2 threads x 64 streams, 64 kernels an iteration
	trace_phase --threads 2 --streams 64 --kernels 64 --iters 2 --compute-us 5
	$VERIFY_DEVICE "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json" \
		--compute-us 5
	$CHECK_DEVICE tracks "$BATS_TEST_TMPDIR/t.json" 128
	grep -q " 0 dropped (ring full 0, too deep 0, device spans dropped 0)" "$BATS_TEST_TMPDIR/tracer.out"
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 0 ]
}

@test "streams made and destroyed as the job goes reuse the tracks of the destroyed ones" {
	# 64 live streams replaced by new ones (at other addresses) every iteration: 320 streams.
	# ~RuntimeStream (dev=destroy) is in the mock's table, not the default one: torch-spyre
	# never destroys a stream
	start_job --threads 2 --streams 32 --kernels 32 --iters 5 --compute-us 5 --stream-churn 1
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" \
		--probes "$ROOT/tests/progs/mock-spyre/mock.probes"
	kill -USR1 "$JOB_PID"
	wait_for "$BATS_TEST_TMPDIR/counts.json" 120
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	[ "$JOB_RC" -eq 0 ]
	$VERIFY_DEVICE "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json" \
		--compute-us 5
	# as many tracks as streams alive at once, give or take a launch that reached the tracer
	# after its stream was handed on (see device_stream_destroy)
	$CHECK_DEVICE tracks "$BATS_TEST_TMPDIR/t.json" 64 70
	grep -q " 0 dropped (ring full 0, too deep 0, device spans dropped 0)" "$BATS_TEST_TMPDIR/tracer.out"
	run "$TOOL" check "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 0 ]
}

@test "without the DMA callback probe every device span still ends, by query or synchronize" {
	# libflex's lines only: no _C.so callback invoker, so no span ends by "callback"
	grep '^libflex' "$ROOT/user/resolve/spyre-default.probes" >"$BATS_TEST_TMPDIR/flex.probes"
	start_job --threads 2 --streams 2 --iters 10 --compute-us 50
	start_tracer -o "$BATS_TEST_TMPDIR/t.json" --no-default --probes "$BATS_TEST_TMPDIR/flex.probes"
	run_phase
	stop_tracer INT
	[ "$TRACER_RC" -eq 0 ]
	stop_job
	! grep -q '"name":"aiuDmaCallback"' "$BATS_TEST_TMPDIR/t.json"
	$VERIFY_DEVICE "$BATS_TEST_TMPDIR/t.json" --counts "$BATS_TEST_TMPDIR/counts.json"
	$CHECK_DEVICE ends "$BATS_TEST_TMPDIR/t.json" query synchronize
}

# The tail calls docs/mock.md promises (what a tracer meets in a vendor's -O2 build): each of
# SpyreStream's six forwarders ends in a jmp through the PLT into the libflex function it
# forwards to, so the two return together. A build that makes one a call and a ret (-O0 does)
# fails here.
@test "the mock's SpyreStream forwarders end in a tail jump into libflex" {
	[ "$(uname -m)" = x86_64 ] || skip "reads x86-64 disassembly"
	command -v objdump >/dev/null || skip "objdump missing"
	objdump -d --no-show-raw-insn -C "$BUILD/mock/torch_spyre/_C.so" >"$BATS_TEST_TMPDIR/c.dis"
	$CHECK_DEVICE forwarders "$BATS_TEST_TMPDIR/c.dis"
}
