// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/log.h"

static __thread bool quiet_libbpf;

void libbpf_quiet(bool on)
{
	quiet_libbpf = on;
}

bool libbpf_is_quiet(void)
{
	return quiet_libbpf;
}

#define DEFAULT_PREFIX	"spyre-bpftrace"

static enum log_level cur_level = LOG_INFO;
static const char *prefix = DEFAULT_PREFIX;

void log_set_prefix(const char *name)
{
	prefix = name ? name : DEFAULT_PREFIX;
}

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
	n = snprintf(buf, sizeof(buf), "%s: %s", prefix, level == LOG_WARN ? "warning: " : "");
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

int log_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	enum log_level need = level == LIBBPF_WARN ? LOG_WARN :
			      level == LIBBPF_INFO ? LOG_DEBUG : LOG_TRACE;
	char buf[4096], *big = NULL, *p = buf;
	va_list copy;
	int n;

	if (libbpf_is_quiet() || !log_enabled(need))
		return 0;
	/* one write per message, as log_vmsg; a verifier log is far longer than a line */
	va_copy(copy, ap);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (n >= (int)sizeof(buf)) {
		big = malloc(n + 1);
		if (big)
			n = vsnprintf(big, n + 1, fmt, copy);
		else
			n = sizeof(buf) - 1;	/* what fits */
		p = big ? big : buf;
	}
	va_end(copy);
	if (n > 0)
		fwrite(p, 1, n, stderr);
	free(big);
	return n;
}
