/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Shared bits of the libFuzzer harnesses: a failed invariant must crash so libFuzzer keeps it. */
#ifndef SPYRE_FUZZ_H
#define SPYRE_FUZZ_H

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
