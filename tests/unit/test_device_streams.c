// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Device streams: as many tracks as live streams, a destroyed stream's track reused. */
#include "stream/device.h"
#include "offline/jsonparse.h"
#include "output/jsonw.h"
#include "output/trace_writer.h"
#include "unit.h"

#define SBASE 1000000ull

static struct trace_writer *streams_trace(void)
{
	struct trace_meta m = { .mono_base_ns = SBASE, .real_base_ns = 1, .trace_name = "t" };
	struct trace_writer *tw = NULL;

	CHECK_EQ_INT(trace_begin(&tw, jw_memopen(), &m), 0);
	return tw;
}

/* Device spans and named device tracks in the finished trace; no tid may hold both kinds. */
static void count_tracks(struct trace_writer *tw, int *spans, int *streams, int *lanes)
{
	struct jw *w = trace_jw(tw);
	struct jv *root, *e;
	static char kind[65536];	/* per tid: 's' stream name, 'l' lane name */
	char err[128];
	const char *data;
	size_t len;

	*spans = *streams = *lanes = 0;
	memset(kind, 0, sizeof(kind));
	CHECK_EQ_INT(trace_finish(tw, NULL), 0);
	data = jw_mem_data(w, &len);
	root = jv_parse(data, len, err, sizeof(err));
	CHECK(root);
	jv_foreach(e, root ? jv_get(root, "traceEvents") : NULL) {
		const char *ph = jv_get_str(e, "ph"), *name = jv_get_str(e, "name");
		struct jv *args = jv_get(e, "args");
		const char *tname = args ? jv_get_str(args, "name") : NULL;
		double tid = 0;

		jv_get_num(e, "tid", &tid);
		if (ph[0] == 'X') {
			(*spans)++;
		} else if (ph[0] == 'M' && !strcmp(name, "thread_name") && tname &&
			   tid < (double)sizeof(kind)) {
			char k = !strncmp(tname, "Stream ", 7) ? 's' : 'l';

			CHECK(!kind[(int)tid] || kind[(int)tid] == k);
			if (!kind[(int)tid])
				*(k == 's' ? streams : lanes) += 1;
			kind[(int)tid] = k;
		}
	}
	jv_free(root);
	jw_close(w);
}

TEST(device_more_than_64_live_streams_all_get_tracks)
{
	struct trace_writer *tw = streams_trace();
	int spans, streams, lanes;
	struct device_tl d;
	uint64_t t = SBASE;

	CHECK_EQ_INT(device_init(&d, tw), 0);
	/* 150 streams alive at once, each with a compute, plus copies on lanes 100.. and 200.. */
	for (uint64_t s = 1; s <= 150; s++) {
		device_launch(&d, 10, 11, s, 0x10000 + s * 64, OP_COMPUTE, 0, t, t);
		t += 1000;
	}
	device_launch(&d, 10, 11, 1000, 0x10000 + 64, OP_H2D, 4096, t, t);
	device_launch(&d, 10, 11, 1001, 0x10000 + 128, OP_D2H, 4096, t, t);
	for (uint64_t s = 1; s <= 150; s++)
		device_complete(&d, 10, s, 0x10000 + s * 64, t + s * 1000);
	device_complete(&d, 10, 1000, 0x10000 + 64, t + 500);
	device_complete(&d, 10, 1001, 0x10000 + 128, t + 500);
	device_finish(&d);
	CHECK_EQ_INT(d.st.matched, 152);
	CHECK_EQ_INT(d.st.streams_overflow, 0);
	count_tracks(tw, &spans, &streams, &lanes);
	CHECK_EQ_INT(spans, 152);
	CHECK_EQ_INT(streams, 150);
	CHECK_EQ_INT(lanes, 2);
	device_free(&d);
}

TEST(device_destroyed_streams_free_their_tracks)
{
	struct trace_writer *tw = streams_trace();
	int spans, streams, lanes;
	struct device_tl d;
	uint64_t t = SBASE;

	CHECK_EQ_INT(device_init(&d, tw), 0);
	/* a job that makes 1000 short-lived streams, two alive at a time, each at a new address */
	for (uint64_t i = 1; i <= 1000; i++) {
		uint64_t st = 0x100000 + i * 64;

		device_launch(&d, 10, 11, i, st, OP_COMPUTE, 0, t, t);
		device_complete(&d, 10, i, st, t + 500);
		if (i > 1)
			device_stream_destroy(&d, 10, st - 64, t + 600);
		t += 1000;
	}
	/* a launch from before its stream's end that reaches us after the destroy: same track */
	device_stream_destroy(&d, 10, 0x100000 + 1000 * 64, t);
	device_launch(&d, 10, 12, 5000, 0x100000 + 1000 * 64, OP_COMPUTE, 0, t - 100, t - 100);
	device_complete(&d, 10, 5000, 0x100000 + 1000 * 64, t + 50);
	device_finish(&d);
	CHECK_EQ_INT(d.st.matched, 1001);
	CHECK_EQ_INT(d.st.streams_overflow, 0);
	CHECK_EQ_INT(d.st.streams_destroyed, 1000);
	CHECK_EQ_INT(d.nstreams, 2);
	CHECK_EQ_INT(device_lost(&d), 0);
	count_tracks(tw, &spans, &streams, &lanes);
	CHECK_EQ_INT(spans, 1001);
	CHECK_EQ_INT(streams, 2);
	device_free(&d);
}
