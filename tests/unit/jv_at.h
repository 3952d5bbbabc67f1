/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Element @i of a parsed array/object (linear), NULL when out of range: for tests that pick
 * one member; the tool itself walks with jv_first/->next. */
#ifndef SPYRE_UNIT_JV_AT_H
#define SPYRE_UNIT_JV_AT_H

#include "offline/jsonparse.h"

static inline struct jv *jv_at(const struct jv *v, size_t i)
{
	struct jv *c;

	for (c = jv_first(v); c && i; c = c->next)
		i--;
	return c;
}

#endif
