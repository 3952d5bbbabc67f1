// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>

#include "stream/stats.h"
#include "unit.h"

static void check_near(uint64_t got, double want, double rel, int line)
{
	double err = ((double)got - want) / want;

	if (err > rel || err < -rel) {
		char m[128];

		snprintf(m, sizeof(m), "got %llu, want %.0f within %.1f%%",
			 (unsigned long long)got, want, rel * 100);
		unit_fail(__FILE__, line, m);
	}
}
#define NEAR(got, want, rel) check_near(got, want, rel, __LINE__)

TEST(stats_uniform)
{
	struct fn_stats *s = calloc(1, sizeof(*s));
	uint64_t v;

	/* shuffled order must not matter */
	for (v = 1; v <= 100000; v++)
		fn_stats_add(s, (v * 7919) % 100000 + 1);
	CHECK_EQ_INT(s->count, 100000);
	CHECK_EQ_INT(s->min_ns, 1);
	CHECK_EQ_INT(s->max_ns, 100000);
	CHECK_EQ_INT(s->total_ns, 100000ull * 100001 / 2);
	NEAR(fn_stats_quantile(s, 0.5), 50000, 0.02);
	NEAR(fn_stats_quantile(s, 0.99), 99000, 0.02);
	NEAR(fn_stats_quantile(s, 0.9), 90000, 0.02);
	NEAR(fn_stats_quantile(s, 0.01), 1000, 0.02);
	CHECK_EQ_INT(fn_stats_quantile(s, 0), 1);
	CHECK_EQ_INT(fn_stats_quantile(s, 1), 100000);
	/* the top bucket's midpoint would exceed the max: clamped */
	CHECK(fn_stats_quantile(s, 0.99999) <= 100000);
	free(s);
}

TEST(stats_small_values_exact)
{
	struct fn_stats *s = calloc(1, sizeof(*s));
	int i;

	/* below 2^STATS_SUB_BITS every value has its own bucket */
	for (i = 0; i < 10; i++)
		fn_stats_add(s, (uint64_t)i);
	CHECK_EQ_INT(fn_stats_quantile(s, 0.5), 4);
	CHECK_EQ_INT(fn_stats_quantile(s, 0.1), 0);
	CHECK_EQ_INT(fn_stats_quantile(s, 0.95), 9);
	free(s);
}

TEST(stats_single_and_empty)
{
	struct fn_stats *s = calloc(1, sizeof(*s));

	CHECK_EQ_INT(fn_stats_quantile(s, 0.5), 0);
	CHECK_EQ_INT(fn_stats_quantile(s, 0.99), 0);
	fn_stats_add(s, 123457);
	CHECK_EQ_INT(s->min_ns, 123457);
	CHECK_EQ_INT(s->max_ns, 123457);
	/* clamped to [min, max]: a single value comes back exactly */
	CHECK_EQ_INT(fn_stats_quantile(s, 0.5), 123457);
	CHECK_EQ_INT(fn_stats_quantile(s, 0.99), 123457);
	CHECK_EQ_INT(fn_stats_quantile(s, 0), 123457);
	free(s);

	s = calloc(1, sizeof(*s));
	fn_stats_add(s, 0);
	fn_stats_add(s, UINT64_MAX);
	CHECK_EQ_INT(s->min_ns, 0);
	CHECK(s->max_ns == UINT64_MAX);
	CHECK_EQ_INT(fn_stats_quantile(s, 0.5), 0);
	NEAR(fn_stats_quantile(s, 0.75), 18446744073709551615.0, 0.016);
	free(s);
}

TEST(stats_bimodal)
{
	struct fn_stats *s = calloc(1, sizeof(*s));
	int i;

	/* 90% fast launches at 2us, 10% slow syncs at 5ms */
	for (i = 0; i < 9000; i++)
		fn_stats_add(s, 2000);
	for (i = 0; i < 1000; i++)
		fn_stats_add(s, 5000000);
	NEAR(fn_stats_quantile(s, 0.5), 2000, 0.016);
	NEAR(fn_stats_quantile(s, 0.9), 2000, 0.016);
	NEAR(fn_stats_quantile(s, 0.91), 5000000, 0.016);
	NEAR(fn_stats_quantile(s, 0.99), 5000000, 0.016);
	free(s);
}

TEST(stats_fmt_duration)
{
	char b[32];

	CHECK_STR(fmt_duration(0, b, sizeof(b)), "0ns");
	CHECK_STR(fmt_duration(850, b, sizeof(b)), "850ns");
	CHECK_STR(fmt_duration(999, b, sizeof(b)), "999ns");
	CHECK_STR(fmt_duration(1000, b, sizeof(b)), "1.00us");
	CHECK_STR(fmt_duration(12345, b, sizeof(b)), "12.3us");
	CHECK_STR(fmt_duration(123456, b, sizeof(b)), "123us");
	CHECK_STR(fmt_duration(999999, b, sizeof(b)), "1.00ms");
	CHECK_STR(fmt_duration(4560000, b, sizeof(b)), "4.56ms");
	CHECK_STR(fmt_duration(1200000000, b, sizeof(b)), "1.20s");
	CHECK_STR(fmt_duration(61000000000ull, b, sizeof(b)), "61.0s");
	CHECK_STR(fmt_duration(3600000000000ull, b, sizeof(b)), "3600s");
	CHECK_STR(fmt_duration(1234, b, 4), "1.2");	/* truncated, still terminated */
}
