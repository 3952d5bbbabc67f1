// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/intset.h"

/* First index whose value is not below @x (s->n if none). */
static size_t lower_bound(const struct intset *s, int64_t x)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool intset_has(const struct intset *s, int64_t x)
{
	size_t i = lower_bound(s, x);

	return i < s->n && s->v[i] == x;
}

int intset_insert(struct intset *s, int64_t x)
{
	size_t i = lower_bound(s, x);
	int err;

	if (i < s->n && s->v[i] == x)
		return 0;
	err = array_reserve(&s->v, &s->cap, s->n + 1, sizeof(*s->v), 64);
	if (err)
		return err;
	memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof(*s->v));
	s->v[i] = x;
	s->n++;
	return 1;
}

int intset_append(struct intset *s, int64_t x)
{
	int err = array_reserve(&s->v, &s->cap, s->n + 1, sizeof(*s->v), 64);

	if (err)
		return err;
	s->v[s->n++] = x;
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

void intset_seal(struct intset *s)
{
	size_t j = 0;

	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(*s->v), cmp_i64);
	for (size_t i = 0; i < s->n; i++)
		if (!j || s->v[j - 1] != s->v[i])
			s->v[j++] = s->v[i];
	s->n = j;
}

void intset_free(struct intset *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}
