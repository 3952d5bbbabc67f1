// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "common/ohash.h"
#include "unit.h"

/* An entry whose key and pid are not where either user keeps them: the offsets are honoured */
struct ent {
	uint32_t val;
	uint32_t pid;
	uint64_t tag;
	uint64_t key;
};

/* @n keys whose home is @home in a table of @cap slots (pid @pid), from @from on */
static size_t colliding(uint32_t pid, size_t home, size_t cap, uint64_t from, uint64_t *out,
			size_t n)
{
	size_t got = 0;

	for (uint64_t k = from; got < n && k < from + 1000000; k++)
		if (ohash_home(pid, k, cap) == home)
			out[got++] = k;
	return got;
}

/* Every slot either empty (all bytes 0) or an entry the table finds where it is */
static bool consistent(const struct ohash *h)
{
	const struct ent *s = h->slots;
	size_t n = 0;

	for (size_t i = 0; i < h->cap; i++) {
		if (!s[i].key) {
			if (s[i].pid || s[i].val || s[i].tag)
				return false;
			continue;
		}
		if (ohash_find(h, s[i].pid, s[i].key) != &s[i])
			return false;
		n++;
	}
	return n == h->cnt;
}

TEST(ohash_insert_find_and_the_empty_slot)
{
	struct ohash h = OHASH_INIT(struct ent, key, pid);
	struct ent *e, *e2;
	size_t i = 0;

	/* never allocated: found nothing, nothing to walk, no room */
	CHECK(!ohash_find(&h, 1, 5));
	CHECK(!ohash_next(&h, &i));
	CHECK(!ohash_add(&h, 1, 5));
	CHECK_EQ_INT(ohash_reserve(&h, 16), 0);
	CHECK_EQ_INT(h.cap, 16);
	e = ohash_add(&h, 7, 42);
	CHECK(e);
	/* a new entry: key and pid set, the rest zero, as the slot was */
	CHECK(e->key == 42 && e->pid == 7 && !e->val && !e->tag);
	e->val = 1;
	CHECK(ohash_find(&h, 7, 42) == e);
	/* the same key in another process is another entry */
	CHECK(!ohash_find(&h, 8, 42));
	e2 = ohash_add(&h, 8, 42);
	CHECK(e2 && e2 != e);
	e2->val = 2;
	CHECK_EQ_INT(((struct ent *)ohash_find(&h, 7, 42))->val, 1);
	CHECK_EQ_INT(((struct ent *)ohash_find(&h, 8, 42))->val, 2);
	CHECK(!ohash_find(&h, 7, 43));
	CHECK_EQ_INT(h.cnt, 2);
	/* key 0 is an empty slot: never found */
	CHECK(!ohash_find(&h, 0, 0));
	CHECK(consistent(&h));
	/* the walk sees both entries once */
	i = 0;
	CHECK(ohash_next(&h, &i) && ohash_next(&h, &i) && !ohash_next(&h, &i));
	ohash_del(&h, ohash_find(&h, 7, 42));
	CHECK(!ohash_find(&h, 7, 42));
	CHECK(ohash_find(&h, 8, 42));
	CHECK_EQ_INT(h.cnt, 1);
	CHECK(consistent(&h));
	ohash_clear(&h);
	CHECK_EQ_INT(h.cnt, 0);
	CHECK_EQ_INT(h.cap, 16);
	CHECK(!ohash_find(&h, 8, 42));
	CHECK(consistent(&h));
	ohash_free(&h);
	CHECK(!h.slots && !h.cap && !h.cnt);
}

TEST(ohash_grows_at_half_full_and_keeps_every_entry)
{
	struct ohash h = OHASH_INIT(struct ent, key, pid);
	size_t caps = 0;

	for (uint32_t i = 0; i < 5000; i++) {
		struct ent *e;
		size_t cap = h.cap;

		CHECK_EQ_INT(ohash_reserve(&h, 8), 0);
		if (h.cap != cap) {
			/* doubled (from 8), just as the next entry would pass half */
			CHECK_EQ_INT(h.cap, cap ? 2 * cap : 8);
			CHECK((h.cnt + 1) * 2 > cap);
			caps++;
		}
		e = ohash_add(&h, i % 3, 1000 + i);
		CHECK(e);
		e->val = i;
		CHECK(h.cnt * 2 <= h.cap);
	}
	/* 8, 16, ... 16384: 12 tables for 5000 entries */
	CHECK_EQ_INT(caps, 12);
	CHECK_EQ_INT(h.cap, 16384);
	for (uint32_t i = 0; i < 5000; i++) {
		struct ent *e = ohash_find(&h, i % 3, 1000 + i);

		CHECK(e && e->val == i);
	}
	CHECK(consistent(&h));
	ohash_free(&h);
}

/* Keys that probe from one slot: found past each other, and still after one is deleted */
TEST(ohash_collisions_probe_on_and_deletion_shifts_back)
{
	struct ohash h = OHASH_INIT(struct ent, key, pid);
	uint64_t k[5], w[3];
	struct ent *s;

	CHECK_EQ_INT(ohash_resize(&h, 16, NULL, NULL), 0);
	s = h.slots;
	CHECK_EQ_INT(colliding(3, 5, 16, 1, k, 5), 5);
	for (int i = 0; i < 5; i++)
		CHECK(ohash_add(&h, 3, k[i]));
	/* in probe order: slots 5..9 */
	for (int i = 0; i < 5; i++)
		CHECK(s[5 + i].key == k[i]);
	for (int i = 0; i < 5; i++)
		CHECK(ohash_find(&h, 3, k[i]) == &s[5 + i]);
	/* deleting the first moves the others back one: none is cut off by a hole */
	ohash_del(&h, &s[5]);
	CHECK(!ohash_find(&h, 3, k[0]));
	for (int i = 1; i < 5; i++)
		CHECK(ohash_find(&h, 3, k[i]) == &s[4 + i]);
	CHECK(!s[9].key);
	CHECK(consistent(&h));
	/* the probe wraps past the last slot, and a deletion shifts back across the wrap: w[1]
	 * (home 15) from 0 to 15, then w[2] (home 0) from 1 to 0 */
	CHECK_EQ_INT(colliding(3, 15, 16, 1000, w, 2), 2);
	CHECK(ohash_add(&h, 3, w[0]) == (void *)&s[15]);
	CHECK(ohash_add(&h, 3, w[1]) == (void *)&s[0]);
	CHECK(ohash_find(&h, 3, w[1]) == &s[0]);
	CHECK_EQ_INT(colliding(3, 0, 16, 2000, &w[2], 1), 1);
	CHECK(ohash_add(&h, 3, w[2]) == (void *)&s[1]);
	ohash_del(&h, &s[15]);
	CHECK(ohash_find(&h, 3, w[1]) == &s[15]);
	CHECK(ohash_find(&h, 3, w[2]) == &s[0]);
	CHECK(consistent(&h));
	ohash_free(&h);
}

static bool keep_even(void *entry, void *ctx)
{
	const struct ent *e = entry;
	size_t *dropped = ctx;

	if (e->val % 2 == 0)
		return true;
	(*dropped)++;
	return false;
}

TEST(ohash_resize_filters_refuses_too_few_slots_and_leaves_one_free)
{
	struct ohash h = OHASH_INIT(struct ent, key, pid);
	size_t dropped = 0;

	CHECK_EQ_INT(ohash_resize(&h, 64, NULL, NULL), 0);
	for (uint32_t i = 0; i < 30; i++)
		((struct ent *)ohash_add(&h, 1, i + 1))->val = i;
	CHECK_EQ_INT(ohash_resize(&h, 16, NULL, NULL), -EINVAL);	/* 30 in 16 */
	CHECK_EQ_INT(ohash_resize(&h, 48, NULL, NULL), -EINVAL);	/* not a power of two */
	CHECK_EQ_INT(h.cap, 64);
	/* the same size, the odd ones dropped (the device table's sweep of orphans) */
	CHECK_EQ_INT(ohash_resize(&h, 64, keep_even, &dropped), 0);
	CHECK_EQ_INT(dropped, 15);
	CHECK_EQ_INT(h.cnt, 15);
	for (uint32_t i = 0; i < 30; i++)
		CHECK(!ohash_find(&h, 1, i + 1) == (i % 2 == 1));
	CHECK(consistent(&h));
	ohash_free(&h);
	/* without ohash_reserve a table fills to all but one slot, which ends every probe */
	CHECK_EQ_INT(ohash_resize(&h, 4, NULL, NULL), 0);
	CHECK(ohash_add(&h, 1, 1) && ohash_add(&h, 1, 2) && ohash_add(&h, 1, 3));
	CHECK(!ohash_add(&h, 1, 4));
	CHECK(!ohash_find(&h, 1, 4));
	ohash_free(&h);
}
