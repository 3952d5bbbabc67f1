// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <string.h>

#include "offline/mergefit.h"
#include "unit.h"

#define US 1000

static struct fit_span prof(int64_t tid, int64_t ts, int64_t end, int64_t tol, uint32_t idx)
{
	return (struct fit_span){ .pid = 1, .tid = tid, .ts = ts, .end = end, .ts0 = ts,
				  .end0 = end, .tol = tol, .idx = idx };
}

static struct fit_span ours(int64_t tid, int64_t ts, int64_t end, uint32_t idx)
{
	struct fit_span s = prof(tid, ts, end, 2 * US, idx);

	s.ours = true;
	return s;
}

static const struct fit_span *find(const struct fit_span *sp, size_t n, bool is_ours, uint32_t idx)
{
	for (size_t i = 0; i < n; i++)
		if (sp[i].ours == is_ours && sp[i].idx == idx)
			return &sp[i];
	return NULL;
}

/* does every pair on a lane nest or stay apart? */
static bool nests(const struct fit_span *sp, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			const struct fit_span *a = &sp[i], *b = &sp[j];

			if (i == j || a->pid != b->pid || a->tid != b->tid)
				continue;
			if (a->ts < b->ts && b->ts < a->end && a->end < b->end)
				return false;
		}
	return true;
}

TEST(fit_clamps_our_span_that_overhangs_the_profilers_parent)
{
	/* profiler: linear [0, 100], addmm [10, 99.7]; ours: addmm [9.7, 100.3] */
	struct fit_span sp[] = {
		prof(7, 0, 100 * US, 0, 0), prof(7, 10 * US, 99700, 0, 1),
		ours(7, 9700, 100300, 0),
	};
	int64_t moved[3];
	size_t nmoved;
	struct fit_stats st;

	CHECK_EQ_INT(fit_nesting(sp, 3, moved, &nmoved, &st), 0);
	CHECK_EQ_INT(nmoved, 0);
	CHECK_EQ_INT(st.adjusted, 1);
	CHECK_EQ_INT(st.max_adjust_ns, 300);
	CHECK_EQ_INT(find(sp, 3, true, 0)->end, 100 * US);
	CHECK_EQ_INT(find(sp, 3, true, 0)->ts, 9700);
	CHECK_EQ_INT(st.profiler_adjusted, 0);
	CHECK(nests(sp, 3));
}

TEST(fit_moves_a_start_that_precedes_the_profilers_parent)
{
	/* ours [99.5, 150] starts 0.5 µs before the profiler's [100, 200] and ends inside it */
	struct fit_span sp[] = { prof(7, 100 * US, 200 * US, 0, 0), ours(7, 99500, 150 * US, 0) };
	int64_t moved[2];
	size_t nmoved;
	struct fit_stats st;

	CHECK_EQ_INT(fit_nesting(sp, 2, moved, &nmoved, &st), 0);
	CHECK_EQ_INT(nmoved, 0);
	CHECK_EQ_INT(find(sp, 2, true, 0)->ts, 100 * US);
	CHECK_EQ_INT(find(sp, 2, true, 0)->end, 150 * US);
	CHECK_EQ_INT(st.max_adjust_ns, 500);
	CHECK(nests(sp, 2));
}

TEST(fit_puts_a_thread_beyond_the_tolerance_on_its_own_track)
{
	/* 5 µs overhang on thread 7 (tolerance 2 µs), a clean nesting on thread 8 */
	struct fit_span sp[] = {
		prof(7, 0, 100 * US, 0, 0), ours(7, 50 * US, 105 * US, 0),
		ours(7, 60 * US, 70 * US, 1),
		prof(8, 0, 100 * US, 0, 1), ours(8, 10 * US, 20 * US, 2),
	};
	int64_t moved[5];
	size_t nmoved;
	struct fit_stats st;

	CHECK_EQ_INT(fit_nesting(sp, 5, moved, &nmoved, &st), 0);
	CHECK_EQ_INT(nmoved, 1);
	CHECK_EQ_INT(moved[0], fit_lane_key(1, 7));
	CHECK_EQ_INT(st.lanes_moved, 1);
	CHECK_EQ_INT(st.spans_moved, 2);
	CHECK_EQ_INT(st.adjusted, 0);
	CHECK_EQ_INT(find(sp, 5, true, 0)->end, 105 * US);
}

TEST(fit_leaves_the_profilers_own_overlaps_unless_its_rounding_explains_them)
{
	/* a child ending 1 µs after its parent: the legacy export's rounding */
	struct fit_span a[] = { prof(7, 0, 10 * US, US, 0), prof(7, 5 * US, 11 * US, US, 1) };
	struct fit_span b[] = { prof(7, 0, 10 * US, 0, 0), prof(7, 5 * US, 11 * US, 0, 1) };
	int64_t moved[2];
	size_t nmoved;
	struct fit_stats st;

	CHECK_EQ_INT(fit_nesting(a, 2, moved, &nmoved, &st), 0);
	CHECK_EQ_INT(st.profiler_adjusted, 1);
	CHECK_EQ_INT(st.profiler_overlaps, 0);
	CHECK(nests(a, 2));
	CHECK_EQ_INT(fit_nesting(b, 2, moved, &nmoved, &st), 0);
	CHECK_EQ_INT(st.profiler_adjusted, 0);
	CHECK_EQ_INT(st.profiler_overlaps, 1);
	CHECK_EQ_INT(nmoved, 0);
}

TEST(fit_moves_ours_before_the_profilers)
{
	/* both could move by 1 µs: ours does */
	struct fit_span sp[] = { prof(7, 0, 10 * US, US, 0), ours(7, 5 * US, 11 * US, 0) };
	int64_t moved[2];
	size_t nmoved;
	struct fit_stats st;

	CHECK_EQ_INT(fit_nesting(sp, 2, moved, &nmoved, &st), 0);
	CHECK_EQ_INT(st.adjusted, 1);
	CHECK_EQ_INT(st.profiler_adjusted, 0);
	CHECK_EQ_INT(find(sp, 2, false, 0)->end, 10 * US);
}

TEST(fit_legacy_clock_finds_the_offset_and_pairs_threads)
{
	/* the profiler's thread 1 is our 500, its 2 our 600; true offset 123.4567 ms */
	const int64_t off = 123456700;
	static const char *const names[] = { "aten::linear", "aten::addmm", "aten::relu" };
	struct named_span p[60], o[60];
	size_t np = 0, no = 0;
	struct legacy_fit f;

	for (int i = 0; i < 30; i++) {
		int64_t tid = i % 2 ? 2 : 1, t0 = i * 50 * US;
		const char *name = names[i % 3];

		/* the profiler's span in whole µs, ours ~8 µs early and 0.3 µs late */
		p[np++] = (struct named_span){ tid, t0, t0 + (10 + i) * US, name };
		o[no++] = (struct named_span){ tid == 1 ? 500 : 600, t0 + off - 8 * US,
					       t0 + off + (10 + i) * US + 300, name };
	}
	CHECK_EQ_INT(fit_legacy_clock(p, np, o, no, off - 2000000, off + 20000000, US, &f), 0);
	CHECK_EQ_INT(f.votes, 15);
	/* anywhere every profiler span fits inside ours: ours lead by 8 µs and lag by 0.3 µs,
	 * give or take the profiler's 1 µs rounding */
	CHECK(f.offset_ns >= off - 9 * US && f.offset_ns <= off + 1300);
	CHECK_EQ_INT(f.nthreads, 2);
	for (int i = 0; i < f.nthreads; i++)
		CHECK_EQ_INT(f.tid_to[i], f.tid_from[i] == 1 ? 500 : 600);
	/* names that match nothing: no vote, no pairing */
	for (size_t i = 0; i < no; i++)
		o[i].name = "other";
	CHECK_EQ_INT(fit_legacy_clock(p, np, o, no, off - 2000000, off + 20000000, US, &f), 0);
	CHECK_EQ_INT(f.votes, 0);
	CHECK_EQ_INT(f.nthreads, 0);
}
