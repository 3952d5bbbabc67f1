/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Constant-memory latency statistics: log-linear histogram, p50/p99 within ~1.6%. */
#ifndef SPYRE_STATS_H
#define SPYRE_STATS_H

#include <stdint.h>
#include <stdio.h>
#include "output/facts.h"

#define STATS_SUB_BITS	5	/* 32 sub-buckets per power of two */
#define STATS_NBUCKETS	(64 << STATS_SUB_BITS)

struct fn_stats {
	uint64_t count;
	uint64_t total_ns;
	uint64_t min_ns;
	uint64_t max_ns;
	uint32_t buckets[STATS_NBUCKETS];
};

void fn_stats_add(struct fn_stats *s, uint64_t ns);
/* 0 <= q <= 1; returns 0 for an empty set. */
uint64_t fn_stats_quantile(const struct fn_stats *s, double q);
/*
 * The calls of @s as a row (output/facts.h): count, total, p50, p99. The one place a live run's
 * figures are taken from its histogram: the summary's table, spyreProbes, the Prometheus file.
 */
struct fn_row fn_stats_row(const struct fn_stats *s);
/* "1.23ms" style, into @buf. */
const char *fmt_duration(uint64_t ns, char *buf, size_t len);

#endif
