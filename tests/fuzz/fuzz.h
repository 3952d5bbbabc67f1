/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared bits of the libFuzzer harnesses: a failed invariant must crash so libFuzzer keeps it. */
#ifndef SPYRE_FUZZ_H
#define SPYRE_FUZZ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Not assert(): it must fire regardless of NDEBUG and say which invariant broke. */
#define FUZZ_CHECK(cond)                                                                  \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, \
				#cond);                                                    \
			abort();                                                           \
		}                                                                          \
	} while (0)

/* NUL-terminated heap copy of the input, so ASan sees any read past its end. */
static inline char *fuzz_strdup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* A C string stored in a fixed array must be terminated inside it. */
#define FUZZ_CHECK_FIELD(arr) FUZZ_CHECK(memchr((arr), '\0', sizeof(arr)) != NULL)

/*
 * Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF), decoded the slow
 * way on purpose: an oracle written apart from user/common/utf8.c, so the fuzzers can catch it.
 */
static inline bool fuzz_utf8_ok(const unsigned char *s, size_t n)
{
	size_t i = 0, k, j;
	uint32_t cp;

	while (i < n) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if ((s[i] & 0xe0) == 0xc0)
			k = 1, cp = s[i] & 0x1f;
		else if ((s[i] & 0xf0) == 0xe0)
			k = 2, cp = s[i] & 0x0f;
		else if ((s[i] & 0xf8) == 0xf0)
			k = 3, cp = s[i] & 0x07;
		else
			return false;
		if (n - i <= k)
			return false;
		for (j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return false;
		i += k + 1;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
