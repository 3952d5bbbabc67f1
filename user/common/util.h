/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Small things the subcommands share: clocks, privilege and kernel checks, threads. */
#ifndef SPYRE_UTIL_H
#define SPYRE_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

uint64_t now_ns(clockid_t clk);
/* Format a message into @err (may be NULL or 0 long) and return @ret: errors with a reason. */
int errf(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Root, or CAP_BPF + CAP_PERFMON + CAP_SYS_PTRACE. */
bool have_privileges(void);
/* What tracing needs before anything is loaded: 0, EXIT_PERM or EXIT_NO_BTF (with a message). */
int preflight_bpf(void);
/* Block SIGINT, SIGTERM and SIGHUP and return a signalfd for them (-errno): signals then
 * arrive in the drain loop, never in the middle of a write. */
int stop_signals_fd(void);
/* Create @path atomically, containing our pid: the --ready-file handshake. */
int write_ready_file(const char *path);
/*
 * libbpf's messages from this thread are dropped between libbpf_quiet(true) and (false): an
 * expected failure (a feature probe, fentry under lockdown) must not flood stderr. Per thread,
 * because the BPF objects load in parallel; the print callback asks libbpf_is_quiet().
 */
void libbpf_quiet(bool on);
bool libbpf_is_quiet(void);
/* Is environment variable @name set to exactly "1"? (The SPYRE_NO_* switches.) */
bool env_is_1(const char *name);
/*
 * Call @fn(i, @ctx) for i in [0, @n) from up to 32 threads and return when all calls are done.
 * For what waits in the kernel: closing a uprobe link, a kprobe or a tracepoint's perf event
 * waits for grace periods (~70 ms each here), and side by side those waits overlap. The calls
 * run here, one after the other, where no thread can be made.
 */
void for_each_parallel(int n, void (*fn)(int i, void *ctx), void *ctx);
/*
 * A helper thread: pthread_create with every signal blocked in it (the tracer takes them from
 * a signalfd), and a condition variable timed on CLOCK_MONOTONIC. 0 or an errno value.
 */
int thread_start_nosig(pthread_t *th, void *(*fn)(void *), void *arg);
void cond_init_monotonic(pthread_cond_t *c);
/* close() @n fds, negative ones skipped, with for_each_parallel. */
void close_parallel(const int *fds, int n);
struct bpf_link;
/* bpf_link__destroy() the non-NULL ones of @links with for_each_parallel; all NULL after. */
void destroy_links_parallel(struct bpf_link **links, int n);

#endif
