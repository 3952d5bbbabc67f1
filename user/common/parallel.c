// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "common/parallel.h"

/* Threads for for_each_parallel(); thread t takes items t, t + PARALLEL_THREADS, ... */
#define PARALLEL_THREADS	32

struct parallel_job {
	int n;
	int first;
	void (*fn)(int i, void *ctx);
	void *ctx;
};

static void *run_job(void *arg)
{
	const struct parallel_job *j = arg;

	for (int i = j->first; i < j->n; i += PARALLEL_THREADS)
		j->fn(i, j->ctx);
	return NULL;
}

void for_each_parallel(int n, void (*fn)(int i, void *ctx), void *ctx)
{
	struct parallel_job jobs[PARALLEL_THREADS];
	pthread_t th[PARALLEL_THREADS];
	bool started[PARALLEL_THREADS] = {};

	for (int t = 0; t < PARALLEL_THREADS && t < n; t++) {
		jobs[t] = (struct parallel_job){ .n = n, .first = t, .fn = fn, .ctx = ctx };
		started[t] = !pthread_create(&th[t], NULL, run_job, &jobs[t]);
		if (!started[t])
			run_job(&jobs[t]);	/* no thread: the slow way */
	}
	for (int t = 0; t < PARALLEL_THREADS && t < n; t++)
		if (started[t])
			pthread_join(th[t], NULL);
}

static void close_at(int i, void *ctx)
{
	const int *fds = ctx;

	if (fds[i] >= 0)
		close(fds[i]);
}

void close_parallel(const int *fds, int n)
{
	for_each_parallel(n, close_at, (void *)fds);
}

static void destroy_at(int i, void *ctx)
{
	bpf_link__destroy(((struct bpf_link **)ctx)[i]);
}

void destroy_links_parallel(struct bpf_link **links, int n)
{
	int m = 0;

	/* only the slots in use get a thread */
	for (int i = 0; i < n; i++) {
		struct bpf_link *l = links[i];

		links[i] = NULL;
		if (l)
			links[m++] = l;
	}
	for_each_parallel(m, destroy_at, links);
	for (int i = 0; i < m; i++)
		links[i] = NULL;
}

int thread_start_nosig(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

void cond_init_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
}

