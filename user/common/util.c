// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/util.h"

int errf(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

bool env_is_1(const char *name)
{
	const char *v = getenv(name);

	return v && !strcmp(v, "1");
}

const char *fmt_bytes(uint64_t b, char *buf, size_t len)
{
	if (b >= 1ull << 30)
		snprintf(buf, len, "%.1f GiB", b / (double)(1ull << 30));
	else if (b >= 1ull << 20)
		snprintf(buf, len, "%.1f MiB", b / (double)(1ull << 20));
	else if (b >= 10ull << 10)
		snprintf(buf, len, "%.1f KiB", b / 1024.0);
	else
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	return buf;
}

const char *fmt_count(uint64_t v, char *buf, size_t len)
{
	char digits[24], *p = buf;
	int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v);

	if (!len)
		return buf;
	/* a comma before each group of three from the right */
	for (int i = 0; i < n && (size_t)(p - buf) + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			*p++ = ',';
		*p++ = digits[i];
	}
	*p = 0;
	return buf;
}
