// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The external sort check keeps its records in: spilled runs merge back into one order. */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "offline/spool.h"

struct rec {
	uint64_t key;
	uint32_t seq;
	char pad[20];
};

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* @n records through a spool of @mem bytes: the same order as qsort, every record once. */
static void sort_through(size_t n, size_t mem, size_t want_runs)
{
	struct rec *want = malloc((n ? n : 1) * sizeof(*want));
	struct spool *sp = spool_new(sizeof(struct rec), rec_cmp, mem);
	const struct rec *r;
	uint64_t x = 88172645463325252ull;
	size_t i = 0;

	CHECK(want && sp);
	for (size_t k = 0; k < n; k++) {
		/* xorshift; few distinct keys, so that ties are ordered by seq */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		want[k] = (struct rec){ .key = x % 1000, .seq = (uint32_t)k };
		memset(want[k].pad, (int)(k & 0x7f), sizeof(want[k].pad));
		CHECK_EQ_INT(spool_add(sp, &want[k]), 0);
	}
	CHECK_EQ_INT(spool_sort(sp), 0);
	CHECK_EQ_INT(spool_runs(sp), want_runs);
	qsort(want, n, sizeof(*want), rec_cmp);
	while ((r = spool_next(sp))) {
		if (i < n && memcmp(r, &want[i], sizeof(*r)))
			break;
		i++;
	}
	CHECK_EQ_INT(i, n);
	CHECK_EQ_INT(spool_error(sp), 0);
	CHECK_EQ_INT(spool_count(sp), n);
	/* and it stays at its end */
	CHECK(spool_next(sp) == NULL);
	spool_free(sp);
	free(want);
}

TEST(spool_sorts_in_memory_and_through_spilled_runs)
{
	sort_through(0, 1 << 20, 0);
	sort_through(1, 1 << 20, 0);
	sort_through(5000, 1 << 20, 0);
	/* 100 records a run: 50 runs merged, each read back 2 records at a time */
	sort_through(5000, 100 * sizeof(struct rec), 50);
	/* a last run shorter than the others */
	sort_through(5050, 100 * sizeof(struct rec), 51);
}
