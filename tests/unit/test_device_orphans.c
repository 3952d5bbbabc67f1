// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Device timeline over long traces: completions that never get a launch must not pile up. */
#include "stream/device.h"
#include "output/jsonw.h"
#include "output/trace_writer.h"
#include "unit.h"

#define OBASE 1000000ull

static struct trace_writer *orphan_trace(void)
{
	struct trace_meta m = { .mono_base_ns = OBASE, .real_base_ns = 1, .trace_name = "t" };
	struct trace_writer *tw = NULL;

	CHECK_EQ_INT(trace_begin(&tw, jw_memopen(), &m), 0);
	return tw;
}

static void orphan_trace_end(struct trace_writer *tw)
{
	struct jw *w = trace_jw(tw);

	trace_finish(tw, NULL);
	jw_close(w);
}

TEST(device_orphan_completions_do_not_starve_launches)
{
	struct trace_writer *tw = orphan_trace();
	const uint32_t n = DEVICE_MAX_PENDING + 40000;
	uint64_t t = OBASE;
	struct device_tl d;

	CHECK_EQ_INT(device_init(&d, tw), 0);
	/*
	 * Host callbacks complete without a launch probe: one every 100 µs, more of them than
	 * the table holds, over 30 s. Without expiry they fill it and real launches overflow.
	 */
	for (uint32_t i = 1; i <= n; i++) {
		t = OBASE + (uint64_t)i * 100000;
		device_complete(&d, 10, 1000000 + i, 0xC, t);
	}
	CHECK(d.ops.cnt < DEVICE_MAX_PENDING / 2);
	device_launch(&d, 10, 11, 1, 0xA, OP_COMPUTE, 0, t + 1000, t + 1000);
	device_complete(&d, 10, 1, 0xA, t + 9000);
	CHECK_EQ_INT(d.st.matched, 1);
	CHECK_EQ_INT(d.st.overflow, 0);
	device_finish(&d);
	/* every orphan is accounted for: swept while tracing or left over at the end */
	CHECK_EQ_INT(d.st.completions_unmatched, n);
	CHECK_EQ_INT(d.st.launches_unmatched, 0);
	device_free(&d);
	orphan_trace_end(tw);
}

TEST(device_recent_completion_waits_for_its_launch_through_sweeps)
{
	struct trace_writer *tw = orphan_trace();
	struct device_tl d;
	uint64_t t0 = OBASE + 20ull * 1000000000;	/* 20 s in: the sweep cut-off is live */

	CHECK_EQ_INT(device_init(&d, tw), 0);
	/* an old orphan, then a completion whose launch record is still on its way */
	device_complete(&d, 10, 7, 0xA, OBASE + 1000);
	device_complete(&d, 10, 2, 0xA, t0);
	/* 20000 orphans within the next 2 s: the table grows and sweeps several times */
	for (uint32_t i = 1; i <= 20000; i++)
		device_complete(&d, 10, 5000000 + i, 0xC, t0 + (uint64_t)i * 100000);
	/* the launch returns late, but well within the orphan age: it still pairs */
	device_launch(&d, 10, 11, 2, 0xA, OP_COMPUTE, 0, t0 - 1000, t0 - 1000);
	CHECK_EQ_INT(d.st.matched, 1);
	/* the old one went in a sweep already */
	CHECK(d.st.completions_unmatched >= 1);
	device_finish(&d);
	CHECK_EQ_INT(d.st.completions_unmatched, 20001);
	device_free(&d);
	orphan_trace_end(tw);
}
