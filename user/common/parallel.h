/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Threads: waits in the kernel taken side by side, helper threads without signals. */
#ifndef SPYRE_PARALLEL_H
#define SPYRE_PARALLEL_H

#include <pthread.h>

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
