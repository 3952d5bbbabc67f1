// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "unit.h"
#include "common/log.h"

static int libbpf_says(enum libbpf_print_level level, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = log_libbpf_print(level, fmt, ap);
	va_end(ap);
	return n;
}

/* Everything printed on stderr while @fn(@ctx) runs, caught in @out; returns its length. */
static size_t caught(void (*fn)(void *), void *ctx, char *out, size_t len)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;

	fflush(stderr);
	dup2(fileno(tmp), STDERR_FILENO);
	fn(ctx);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, len - 1, tmp);
	out[n] = 0;
	fclose(tmp);
	return n;
}

struct libbpf_case {
	enum log_level level;
	bool quiet;
};

static void libbpf_lines(void *ctx)
{
	const struct libbpf_case *c = ctx;

	log_set_level(c->level);
	libbpf_quiet(c->quiet);
	libbpf_says(LIBBPF_WARN, "libbpf: %s\n", "W");
	libbpf_says(LIBBPF_INFO, "libbpf: %s\n", "I");
	libbpf_says(LIBBPF_DEBUG, "libbpf: %s\n", "D");
	libbpf_quiet(false);
	log_set_level(LOG_INFO);
}

/* What libbpf's WARN, INFO and DEBUG lines print at @level, stderr caught in @out. */
static void libbpf_at(enum log_level level, bool quiet, char *out, size_t len)
{
	struct libbpf_case c = { level, quiet };

	caught(libbpf_lines, &c, out, len);
}

TEST(log_libbpf_print_warn_always_info_with_v_debug_with_vv)
{
	char out[256];

	libbpf_at(LOG_INFO, false, out, sizeof(out));
	CHECK_STR(out, "libbpf: W\n");
	libbpf_at(LOG_DEBUG, false, out, sizeof(out));
	CHECK_STR(out, "libbpf: W\nlibbpf: I\n");
	libbpf_at(LOG_TRACE, false, out, sizeof(out));
	CHECK_STR(out, "libbpf: W\nlibbpf: I\nlibbpf: D\n");
	/* an expected failure on this thread: nothing, whatever the level */
	libbpf_at(LOG_TRACE, true, out, sizeof(out));
	CHECK_STR(out, "");
}

static void long_warning(void *big)
{
	CHECK_EQ_INT(libbpf_says(LIBBPF_WARN, "%s\n", (const char *)big), strlen(big) + 1);
}

TEST(log_libbpf_print_keeps_a_long_verifier_log_whole)
{
	size_t len = 20000;
	char *big = malloc(len + 1), *out = malloc(len + 64);

	memset(big, 'x', len);
	big[len] = 0;
	CHECK_EQ_INT(caught(long_warning, big, out, len + 64), len + 1);
	free(big);
	free(out);
}

static void say_as_check_then_default(void *ctx)
{
	pr_err("x %d", 1);
	log_set_prefix("check");
	pr_err("%s: warning: the gzip stream is cut short", "t.json.gz");
	pr_warn("w");
	pr_debug("not shown without -v");
	log_set_prefix(NULL);
	pr_info("back");
}

TEST(log_prefix_names_the_subcommand)
{
	const char *want = "spyre-bpftrace: x 1\n"
			   "check: t.json.gz: warning: the gzip stream is cut short\n"
			   "check: warning: w\n"
			   "spyre-bpftrace: back\n";
	char out[160];

	caught(say_as_check_then_default, NULL, out, sizeof(out));
	CHECK_STR(out, want);
}

static void say_hostile_path(void *ctx)
{
	(void)ctx;
	/* a mapped file's name as a traced process chose it (issue 43) */
	pr_warn("Python stacks: %s exports no _PyRuntime", "/tmp/python3\033]0;pwned\a\033[2J");
	pr_info("thread %s\r\x7f \xc2\x9b" "1m \xff ok é\tend\n", "a\nb");
}

/* Control bytes a traced process put in its names reach the terminal escaped, never raw */
TEST(log_escapes_control_bytes)
{
	const char *want =
		"spyre-bpftrace: warning: Python stacks: /tmp/python3\\x1b]0;pwned\\x07\\x1b[2J "
		"exports no _PyRuntime\n"
		"spyre-bpftrace: thread a\\x0ab\\x0d\\x7f \\xc2\\x9b1m \\xff ok é\tend\n";
	char out[400], small[16];

	caught(say_hostile_path, NULL, out, sizeof(out));
	if (strcmp(out, want))
		fprintf(stderr, "got: %s", out);
	CHECK(!strcmp(out, want));
	/* what fits, a sequence never cut */
	CHECK_EQ_INT(log_sanitize(small, 13, "abcdefghij\033xyz", 14), 10);
	CHECK_STR(small, "abcdefghij");
	CHECK_EQ_INT(log_sanitize(small, sizeof(small), "\033", 1), 4);
	CHECK_STR(small, "\\x1b");
}

/* The summary's lines: each escaped, their newlines kept, a long line whole (issue 43) */
TEST(log_write_lines_escapes_each_line)
{
	static char big[5000], out[8192];
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(f != NULL);
	if (!f)
		return;
	log_write_lines(f, "renamed: f is g in /lib/\033[2Jx.so\nok é\n\a", 40);
	fclose(f);
	CHECK_STR(text, "renamed: f is g in /lib/\\x1b[2Jx.so\nok é\n\\x07");
	free(text);
	/* 5,000 bytes of "é" and ESC in one line: pieces never split a sequence */
	for (size_t i = 0; i + 3 <= sizeof(big) - 1; i += 3)
		memcpy(big + i, i % 2 ? "\xc3\xa9\033" : "\033\xc3\xa9", 3);
	f = open_memstream(&text, &len);
	CHECK(f != NULL);
	if (!f)
		return;
	log_write_lines(f, big, strlen(big));
	fclose(f);
	CHECK(len == strlen(big) / 3 * 6 && !strchr(text, '\033') && !strchr(text, '\n'));
	snprintf(out, sizeof(out), "%s", text);
	CHECK(!strncmp(out, "\\x1b\xc3\xa9\xc3\xa9\\x1b", 12));
	free(text);
}
