// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/log.h"
#include "common/utf8.h"

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

size_t log_sanitize(char *out, size_t cap, const char *in, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)in;
	size_t o = 0;

	if (!cap)
		return 0;
	for (size_t i = 0; i < n;) {
		size_t len = utf8_seq_len(p + i, n - i);
		/* C0 controls but tab, DEL, malformed bytes, C1 controls (U+0080..U+009F) */
		bool bad = !len || (len == 1 && ((p[i] < 0x20 && p[i] != '\t') || p[i] == 0x7f)) ||
			   (len == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0);

		if (!bad) {
			if (o + len >= cap)
				break;
			memcpy(out + o, p + i, len);
			o += len;
			i += len;
			continue;
		}
		len = len ? len : 1;
		if (o + 4 * len >= cap)
			break;
		for (size_t k = 0; k < len; k++, i++) {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[p[i] >> 4];
			out[o++] = hex[p[i] & 15];
		}
	}
	out[o] = 0;
	return o;
}

void log_write_lines(FILE *f, const char *text, size_t n)
{
	char buf[4 * 1024 + 1];

	while (n) {
		const char *nl = memchr(text, '\n', n);
		size_t line = nl ? (size_t)(nl - text) : n, done = 0;

		/* a long line in pieces: never cut inside a UTF-8 sequence or an escape */
		do {
			size_t take = line - done < 1024 ? line - done : 1024, w;

			while (take < line - done && take && (text[done + take] & 0xc0) == 0x80)
				take--;
			if (!take)
				take = line - done < 1024 ? line - done : 1024;
			w = log_sanitize(buf, sizeof(buf), text + done, take);
			fwrite(buf, 1, w, f);
			done += take;
		} while (done < line);
		if (nl)
			fputc('\n', f);
		text += line + (nl ? 1 : 0);
		n -= line + (nl ? 1 : 0);
	}
}

void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char msg[4096], buf[4 * sizeof(msg) + 256];
	size_t n, m;

	if (!log_enabled(level))
		return;
	n = (size_t)snprintf(buf, 256, "%s: %s", prefix, level == LOG_WARN ? "warning: " : "");
	if (n >= 256)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	m = strlen(msg);
	if (m && msg[m - 1] == '\n')	/* the line ends here anyway */
		m--;
	/*
	 * Messages carry what traced processes chose (their files' paths, thread names, their
	 * environment) to root's terminal: its control bytes are shown escaped, never sent (a
	 * mapped file named "python3\e]0;...\a\e[2J" set the title and cleared the screen)
	 */
	n += log_sanitize(buf + n, sizeof(buf) - n - 1, msg, m);
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
