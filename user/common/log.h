/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Messages on stderr, one line each, "spyre-bpftrace: " first (or a subcommand's name, see
 * log_set_prefix), by level:
 *   pr_err   what stopped a command (always shown)
 *   pr_warn  "warning: ..." what the user should know (always shown)
 *   pr_info  what happened, for the operator's log (always shown)
 *   pr_debug the tracer's own choices (-v)
 * libbpf's own messages go through log_libbpf_print: its warnings always, its info with -v,
 * its debug output with -vv.
 * Messages are built whole and written with one call: lines from the loader threads
 * (uprobe and driver tiers load side by side) never interleave mid-line.
 */
#ifndef SPYRE_LOG_H
#define SPYRE_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <bpf/libbpf.h>

enum log_level {
	LOG_ERROR = 0,
	LOG_WARN,
	LOG_INFO,
	LOG_DEBUG,	/* -v */
	LOG_TRACE,	/* -vv: libbpf's debug output too */
};

/* The level set by the command line; default LOG_INFO. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
static inline bool log_enabled(enum log_level level)
{
	return level <= log_get_level();
}

/*
 * Start every message with "@name: " instead of "spyre-bpftrace: ": the subcommands that read
 * traces back (check, recover, merge) speak as themselves. @name must stay valid (a literal);
 * NULL restores the default.
 */
void log_set_prefix(const char *name);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(enum log_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/*
 * @n bytes of @in into @out (@cap bytes, NUL-terminated) with every byte a terminal would act on
 * escaped as "\xNN": C0 controls but tab, DEL, C1 controls (U+0080..U+009F), malformed UTF-8.
 * Every message goes through it; for text printed otherwise that a traced process chose (its
 * files' paths, thread names, environment). What fits is written whole, a sequence never cut:
 * the length written.
 */
size_t log_sanitize(char *out, size_t cap, const char *in, size_t n);
/* @n bytes of lines of text to @f, each line through log_sanitize (its newlines kept) */
void log_write_lines(FILE *f, const char *text, size_t n);

#define pr_err(...)	log_msg(LOG_ERROR, __VA_ARGS__)
#define pr_warn(...)	log_msg(LOG_WARN, __VA_ARGS__)
#define pr_info(...)	log_msg(LOG_INFO, __VA_ARGS__)
#define pr_debug(...)	log_msg(LOG_DEBUG, __VA_ARGS__)

/*
 * The print callback for libbpf_set_print(): libbpf's lines as they are (they carry their own
 * "libbpf: " and newline), nothing while libbpf_is_quiet() on this thread.
 * LIBBPF_WARN always, LIBBPF_INFO from LOG_DEBUG (-v), LIBBPF_DEBUG from LOG_TRACE (-vv).
 */
int log_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/*
 * libbpf's messages from this thread are dropped between libbpf_quiet(true) and (false): an
 * expected failure (a feature probe, fentry under lockdown) must not flood stderr. Per thread,
 * because the BPF objects load in parallel; the print callback asks libbpf_is_quiet().
 */
void libbpf_quiet(bool on);
bool libbpf_is_quiet(void);

#endif
