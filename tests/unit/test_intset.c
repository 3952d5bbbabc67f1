// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "common/array.h"
#include "common/intset.h"
#include "unit.h"

static bool sorted_unique(const struct intset *s)
{
	for (size_t i = 1; i < s->n; i++)
		if (s->v[i - 1] >= s->v[i])
			return false;
	return true;
}

TEST(intset_insert_keeps_order)
{
	static const int64_t in[] = { 40, 7, 300, 7, -5, 40, 1000000, 0, INT64_MAX, INT64_MIN };
	struct intset s = {};

	CHECK(!intset_has(&s, 0));	/* empty, never allocated */
	CHECK_EQ_INT(intset_insert(&s, 40), 1);
	CHECK_EQ_INT(intset_insert(&s, 40), 0);
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		CHECK(intset_insert(&s, in[i]) >= 0);
	CHECK_EQ_INT(s.n, 8);
	CHECK(sorted_unique(&s));
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		CHECK(intset_has(&s, in[i]));
	CHECK(!intset_has(&s, 8));
	CHECK(!intset_has(&s, 41));
	CHECK(!intset_has(&s, -4));
	intset_free(&s);
	CHECK(!s.v && !s.n && !s.cap);
}

TEST(intset_insert_many_grows)
{
	struct intset s = {};

	/* descending, so every insert moves what is there: past the first capacity and more */
	for (int64_t x = 5000; x > 0; x--)
		CHECK_EQ_INT(intset_insert(&s, x * 3), 1);
	CHECK_EQ_INT(s.n, 5000);
	CHECK(sorted_unique(&s));
	CHECK(intset_has(&s, 3) && intset_has(&s, 15000) && !intset_has(&s, 14999));
	intset_free(&s);
}

TEST(intset_append_then_seal)
{
	struct intset s = {};

	intset_seal(&s);	/* empty: nothing to do */
	CHECK_EQ_INT(s.n, 0);
	for (int i = 0; i < 1000; i++)
		CHECK_EQ_INT(intset_append(&s, (i * 37) % 100), 0);
	CHECK_EQ_INT(s.n, 1000);
	intset_seal(&s);
	CHECK_EQ_INT(s.n, 100);
	CHECK(sorted_unique(&s));
	CHECK_EQ_INT(s.v[0], 0);
	CHECK_EQ_INT(s.v[99], 99);
	CHECK(intset_has(&s, 42));
	CHECK(!intset_has(&s, 100));
	intset_free(&s);
}

TEST(array_reserve_growth)
{
	size_t cap = 0;
	int *v = NULL;

	CHECK_EQ_INT(array_reserve(&v, &cap, 0, sizeof(*v), 16), 0);
	CHECK(!v && !cap);	/* nothing needed: nothing allocated */
	CHECK_EQ_INT(array_reserve(&v, &cap, 1, sizeof(*v), 16), 0);
	CHECK(v != NULL);
	CHECK_EQ_INT(cap, 16);
	v[15] = 1;
	CHECK_EQ_INT(array_reserve(&v, &cap, 16, sizeof(*v), 16), 0);
	CHECK_EQ_INT(cap, 16);
	CHECK_EQ_INT(array_reserve(&v, &cap, 17, sizeof(*v), 16), 0);
	CHECK_EQ_INT(cap, 32);
	CHECK_EQ_INT(v[15], 1);		/* kept across the realloc */
	CHECK_EQ_INT(array_reserve(&v, &cap, 1000, sizeof(*v), 16), 0);
	CHECK_EQ_INT(cap, 1024);
	/* a size that overflows: refused, the array and its capacity left as they were */
	CHECK_EQ_INT(array_reserve(&v, &cap, SIZE_MAX / 2, sizeof(*v), 16), -ENOMEM);
	CHECK_EQ_INT(cap, 1024);
	CHECK_EQ_INT(v[15], 1);
	free(v);
}
