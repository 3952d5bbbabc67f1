/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Small things every layer shares: the clock, error messages with a reason, env switches. */
#ifndef SPYRE_UTIL_H
#define SPYRE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

uint64_t now_ns(clockid_t clk);
/* Format a message into @err (may be NULL or 0 long) and return @ret: errors with a reason. */
int errf(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Is environment variable @name set to exactly "1"? (The SPYRE_NO_* switches.) */
bool env_is_1(const char *name);
/* "12.3 MiB": a size as the summaries print it (B; KiB from 10 KiB; MiB, GiB from 1 of each) */
const char *fmt_bytes(uint64_t b, char *buf, size_t len);
/* @v with thousands separators, "242,056" (what a person reads), into @buf; @buf */
const char *fmt_count(uint64_t v, char *buf, size_t len);

#endif
