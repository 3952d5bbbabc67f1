// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/facts.h"
#include "output/jsonw.h"
#include "unit.h"

static const char *line_of(const struct run_counts *r)
{
	static char buf[300];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	run_counts_text(f, r);
	fclose(f);
	return buf;
}

/* The summary's first line: every loss in "dropped", the rare causes said only when there. */
TEST(facts_summary_line)
{
	struct run_counts r = { .events = 12345, .hits = 2000, .ring = 3, .depth = 4,
				.device_lost = 5, .unwound = 6, .causes_known = true };
	const char *want;

	CHECK_EQ_INT(run_counts_dropped(&r), 12);
	want = "12,345 events, 2,000 probe hits, 12 dropped (ring full 3, too deep 4, device "
	       "spans dropped 5), 6 unwound";
	CHECK_STR(line_of(&r), want);
	r.nostack = 7;
	r.unreadable = 1000;
	CHECK_EQ_INT(run_counts_dropped(&r), 1019);
	want = "12,345 events, 2,000 probe hits, 1,019 dropped (ring full 3, too deep 4, no thread "
	       "stack 7, unreadable records 1,000, device spans dropped 5), 6 unwound";
	CHECK_STR(line_of(&r), want);
	/* an older trace: the BPF's causes summed */
	r.causes_known = false;
	want = "12,345 events, 2,000 probe hits, 1,019 dropped (in the BPF 14, unreadable records "
	       "1,000, device spans dropped 5), 6 unwound";
	CHECK_STR(line_of(&r), want);
}

/* The metadata's members: each count under its key, "drops" the BPF's three causes. */
TEST(facts_json_members_by_key)
{
	struct run_counts r = { .events = 1, .hits = 2, .ring = 3, .depth = 4, .nostack = 5,
				.unreadable = 6, .device_lost = 7, .unwound = 8 };
	struct jw *w = jw_memopen();
	const char *want;
	char *text;

	jw_members_begin(w, true);
	run_counts_json(w, &r);
	jw_members_end(w);
	text = jw_mem_take(w, NULL);
	want = "\"events\":1,\"probeHits\":2,\"dropsRingFull\":3,\"dropsTooDeep\":4,"
		  "\"dropsNoStack\":5,\"recordsUnreadable\":6,\"deviceOverflow\":7,"
		  "\"unwound\":8,\"drops\":12";
	CHECK_STR(text, want);
	free(text);
	/* every key names a distinct count */
	for (size_t i = 0; i < run_count_nkeys; i++)
		for (size_t j = i + 1; j < run_count_nkeys; j++)
			CHECK(run_count_keys[i].off != run_count_keys[j].off &&
			      strcmp(run_count_keys[i].key, run_count_keys[j].key));
}

/* A row in the columns the summary and report share: an instant, durations without quantiles. */
TEST(facts_fn_row_forms)
{
	static char buf[300];
	struct fn_row span = { .count = 2000, .total_ns = 91218000, .p50_ns = 39400,
			       .p99_ns = 210900 };
	struct fn_row inst = { .count = 7, .counted_only = true };
	struct fn_row sum = { .count = 200, .total_ns = 168000, .no_quantiles = true };
	struct jw *w;
	const char *want;
	char *text;
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	fn_row_text(f, &span);
	fputc('|', f);
	fn_row_text(f, &inst);
	fputc('|', f);
	fn_row_text(f, &sum);
	fclose(f);
	want = "      2,000       91.218       45.6       39.4      210.9|          7            -"
	       "          -          -          -|        200        0.168        0.8          - "
	       "         -";
	CHECK_STR(buf, want);
	w = jw_memopen();
	jw_members_begin(w, true);
	fn_row_json(w, &span);
	fn_row_json(w, &inst);
	fn_row_json(w, &sum);
	jw_members_end(w);
	text = jw_mem_take(w, NULL);
	want = "\"count\":2000,\"totalNs\":91218000,\"meanNs\":45609,\"p50Ns\":39400,"
	       "\"p99Ns\":210900,\"count\":7,\"count\":200,\"totalNs\":168000,\"meanNs\":840";
	CHECK_STR(text, want);
	free(text);
}
