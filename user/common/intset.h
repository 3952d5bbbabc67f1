/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sorted sets of integers (pids, tids, ids), looked up by binary search. Two ways to fill one:
 * intset_insert keeps it sorted after every element (a set read while it grows, such as the
 * processes fleet mode has scanned), intset_append then one intset_seal sorts and drops
 * duplicates once (a set filled whole before it is read, such as merge's ids).
 */
#ifndef SPYRE_INTSET_H
#define SPYRE_INTSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct intset {
	int64_t *v;		/* ascending, no duplicates (once sealed, with intset_append) */
	size_t n, cap;
};

/* Add @x where it sorts: 1 if added, 0 if it was there already, -ENOMEM. */
int intset_insert(struct intset *s, int64_t x);
/* Add @x at the end, unsorted: 0 or -ENOMEM. The set is not searchable until intset_seal. */
int intset_append(struct intset *s, int64_t x);
/* Sort and drop duplicates after intset_append. */
void intset_seal(struct intset *s);
bool intset_has(const struct intset *s, int64_t x);
void intset_free(struct intset *s);

#endif
