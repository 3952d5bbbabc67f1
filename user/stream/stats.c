// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Log-linear latency histogram: values below 2^STATS_SUB_BITS get a bucket each, above that
 * every power of two is split into 2^STATS_SUB_BITS equal sub-buckets, so a bucket is at most
 * 1/32 of its lower bound wide and its midpoint is within ~1.6% of any value in it.
 */
#include <stdbool.h>
#include <stdio.h>

#include "stream/stats.h"

#define SUB		(1u << STATS_SUB_BITS)

static unsigned int bucket_of(uint64_t v)
{
	unsigned int e, sub;

	if (v < SUB)
		return (unsigned int)v;
	e = 63u - (unsigned int)__builtin_clzll(v);	/* >= STATS_SUB_BITS */
	sub = (unsigned int)(v >> (e - STATS_SUB_BITS)) & (SUB - 1);
	return ((e - STATS_SUB_BITS + 1) << STATS_SUB_BITS) + sub;
}

static void bucket_bounds(unsigned int idx, uint64_t *lo, uint64_t *width)
{
	unsigned int g = idx >> STATS_SUB_BITS, sub = idx & (SUB - 1);

	if (!g) {
		*lo = idx;
		*width = 1;
		return;
	}
	*lo = (uint64_t)(SUB + sub) << (g - 1);
	*width = (uint64_t)1 << (g - 1);
}

void fn_stats_add(struct fn_stats *s, uint64_t ns)
{
	unsigned int b = bucket_of(ns);

	if (!s->count || ns < s->min_ns)
		s->min_ns = ns;
	if (!s->count || ns > s->max_ns)
		s->max_ns = ns;
	s->count++;
	s->total_ns += ns;
	/* saturate rather than wrap: a wrapped bucket would shift every quantile */
	if (s->buckets[b] != UINT32_MAX)
		s->buckets[b]++;
}

uint64_t fn_stats_quantile(const struct fn_stats *s, double q)
{
	uint64_t rank, seen = 0, lo, width, v;
	unsigned int i;

	if (!s->count)
		return 0;
	if (!(q > 0))	/* also NaN */
		return s->min_ns;
	if (q >= 1)
		return s->max_ns;
	rank = (uint64_t)(q * (double)s->count);
	if ((double)rank < q * (double)s->count)
		rank++;
	if (!rank)
		rank = 1;
	for (i = 0; i < STATS_NBUCKETS; i++) {
		seen += s->buckets[i];
		if (seen >= rank)
			break;
	}
	if (i == STATS_NBUCKETS)	/* saturated buckets undercount: the tail is the max */
		return s->max_ns;
	bucket_bounds(i, &lo, &width);
	v = lo + width / 2;
	if (v < s->min_ns)
		v = s->min_ns;
	if (v > s->max_ns)
		v = s->max_ns;
	return v;
}

const char *fmt_duration(uint64_t ns, char *buf, size_t len)
{
	static const struct {
		double scale;
		const char *unit;
	} units[] = { { 1e3, "us" }, { 1e6, "ms" }, { 1e9, "s" } };
	unsigned int i;

	if (!buf || !len)
		return buf;
	if (ns < 1000) {
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
		return buf;
	}
	/* three significant digits; a value that rounds up to 1000 moves to the next unit */
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		double v = (double)ns / units[i].scale;
		bool last = i + 1 == sizeof(units) / sizeof(units[0]);

		if (v < 9.995)
			snprintf(buf, len, "%.2f%s", v, units[i].unit);
		else if (v < 99.95)
			snprintf(buf, len, "%.1f%s", v, units[i].unit);
		else if (v < 999.5 || last)
			snprintf(buf, len, "%.0f%s", v, units[i].unit);
		else
			continue;
		break;
	}
	return buf;
}

struct fn_row fn_stats_row(const struct fn_stats *s)
{
	return (struct fn_row){ .count = s->count, .total_ns = s->total_ns,
				.p50_ns = fn_stats_quantile(s, 0.5),
				.p99_ns = fn_stats_quantile(s, 0.99) };
}
