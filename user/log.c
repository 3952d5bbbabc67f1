// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <string.h>
#include "log.h"

static enum log_level cur_level = LOG_INFO;

void log_set_level(enum log_level level)
{
	cur_level = level;
}

enum log_level log_get_level(void)
{
	return cur_level;
}

void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char buf[4096];
	int n;

	if (!log_enabled(level))
		return;
	n = snprintf(buf, sizeof(buf), "spyre-bpftrace: %s",
		     level == LOG_WARN ? "warning: " : "");
	if (n < 0 || n >= (int)sizeof(buf))
		return;
	vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	n = strlen(buf);
	/* a message cut at the buffer still ends its line */
	if (n == (int)sizeof(buf) - 1)
		n--;
	buf[n++] = '\n';
	fwrite(buf, 1, n, stderr);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}
