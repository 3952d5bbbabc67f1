/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* String predicates too small for a module of their own. */
#ifndef SPYRE_STRUTIL_H
#define SPYRE_STRUTIL_H

#include <stdbool.h>
#include <string.h>

static inline bool str_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

#endif
