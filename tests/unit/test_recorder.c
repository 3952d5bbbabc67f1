// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The flight recorder's ring of slices: aging, the byte bound, one name each in a dump. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "output/jsonw.h"
#include "output/recorder.h"
#include "output/trace_writer.h"
#include "unit.h"

#define MS 1000000ull

/* A slice as the session makes one: a whole trace with a name and @n spans from @start. */
static char *slice(uint64_t start, int n, size_t *len)
{
	struct trace_meta m = { .mono_base_ns = 0, .real_base_ns = 1, .trace_name = "slice" };
	struct trace_writer *tw = NULL;
	struct jw *w = jw_memopen();

	CHECK_EQ_INT(trace_begin(&tw, w, &m), 0);
	trace_thread_name(tw, 10, 11, "train-0", 1);
	for (int i = 0; i < n; i++)
		trace_complete(tw, 10, 11, start + i * MS, MS / 2, "spyreStreamLaunch",
			       "privateuse1_runtime", NULL, 0);
	trace_finish(tw, NULL);
	return jw_mem_take(w, len);
}

/* Dump the slices since @from into a trace; its text (malloc'd) and how many events. */
static char *dump(struct recorder *r, uint64_t from, uint64_t *events, uint64_t *start,
		  uint64_t *count)
{
	struct trace_meta m = { .mono_base_ns = 0, .real_base_ns = 1, .trace_name = "dump" };
	struct trace_writer *tw = NULL;
	struct jw *w = jw_memopen();

	CHECK_EQ_INT(trace_begin(&tw, w, &m), 0);
	*events = recorder_write(r, tw, from, start, count);
	trace_finish(tw, NULL);
	return jw_mem_take(w, NULL);
}

static int count_of(const char *text, const char *what)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, what)); p++)
		n++;
	return n;
}

TEST(recorder_keeps_the_last_window_and_writes_each_name_once)
{
	struct recorder *r = recorder_new(100 * MS, 0);
	uint64_t events, start, count;
	size_t len;
	char *t;

	CHECK(r != NULL);
	/* four slices of 50 ms, 3 spans each: the window of 100 ms keeps the last ones */
	for (int k = 0; k < 4; k++) {
		char *s = slice(k * 50 * MS, 3, &len);

		CHECK_EQ_INT(recorder_add(r, s, len, k * 50 * MS, (k + 1) * 50 * MS, k), 0);
	}
	t = dump(r, 200 * MS - 100 * MS, &events, &start, &count);
	CHECK(t != NULL);
	/* slices 2 and 3 reach into the last 100 ms (slice 1 ended at its start) */
	CHECK_EQ_INT(events, 2 * 3 + 2);	/* the thread's name and sort index, once */
	CHECK_EQ_INT(start, 100 * MS);
	CHECK_EQ_INT(count, 2 + 3);
	CHECK_EQ_INT(count_of(t, "\"thread_name\""), 1);
	CHECK_EQ_INT(count_of(t, "\"spyreStreamLaunch\""), 6);
	free(t);
	/* a slice that is not a trace is refused, freed */
	CHECK_EQ_INT(recorder_add(r, strdup("{}"), 2, 0, 1, 0), -EINVAL);
	recorder_free(r);
}

TEST(recorder_drops_the_oldest_slices_past_its_byte_bound)
{
	size_t len, one;
	char *first = slice(0, 100, &one);
	struct recorder *r = recorder_new(1000 * MS, one * 2 + one / 2);
	uint64_t events, start, count;
	char *t;

	CHECK_EQ_INT(recorder_add(r, first, one, 0, 10 * MS, 0), 0);
	for (int k = 1; k < 5; k++) {
		char *s = slice(k * 10 * MS, 100, &len);

		CHECK_EQ_INT(recorder_add(r, s, len, k * 10 * MS, (k + 1) * 10 * MS, 0), 0);
	}
	CHECK(recorder_bytes(r) <= one * 2 + one / 2);
	CHECK_EQ_INT(recorder_dropped(r), 3);
	t = dump(r, 0, &events, &start, &count);
	CHECK_EQ_INT(events, 2 * 100 + 2);
	CHECK_EQ_INT(start, 30 * MS);
	free(t);
	recorder_free(r);
}
