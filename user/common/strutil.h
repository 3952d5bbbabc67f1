/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* String predicates too small for a module of their own. */
#ifndef SPYRE_STRUTIL_H
#define SPYRE_STRUTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static inline bool str_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* FNV-1a of @n bytes, continuing from @h (start with STR_HASH_INIT) */
#define STR_HASH_INIT	1469598103934665603ull
static inline uint64_t str_hash(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		h = (h ^ *c++) * 1099511628211ull;
	return h;
}

#endif
