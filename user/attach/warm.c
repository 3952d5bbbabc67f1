// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <bpf/bpf.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "resolve/procmaps.h"
#include "attach/umulti.h"
#include "common/util.h"
#include "common/parallel.h"
#include "attach/warm.h"
#include "attach/feat.h"

/*
 * A writer every quarter of a grace period keeps the lock on its fast path: the first
 * registration waits about one, which sets the pace (8-20 ms here, 2-5 ms between writers;
 * longer on slower machines, where the loads are slower too). The cap bounds the uprobes left
 * to unregister when the tracer's links are late or never come.
 */
#define WARM_INTERVAL_MIN_NS	2000000ull
#define WARM_INTERVAL_MAX_NS	50000000ull
#define WARM_MAX		128

struct warmer {
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	int prog_fd;
	unsigned long offset;
	char path[PATH_MAX];
	int fds[WARM_MAX];
	int n;
};

/* Where the uprobe goes: a function of this executable that nothing calls. */
__attribute__((noinline)) void spyre_warm_target(void)
{
	__asm__ volatile("" ::: "memory");
}

struct self_site {
	unsigned long addr;
	char *path;
	size_t len;
	unsigned long *offset;
};

static int find_target(const struct map_entry *e, void *ctx)
{
	struct self_site *s = ctx;

	if (s->addr < e->start || s->addr >= e->end)
		return 0;
	if (e->deleted || e->path[0] != '/' || strlen(e->path) >= s->len)
		return -ENOENT;	/* replaced on disk (an upgrade): nothing to register on */
	*s->offset = s->addr - e->start + e->offset;
	strcpy(s->path, e->path);
	return 1;
}

int warm_self_site(const void *fn, char *path, size_t len, unsigned long *offset)
{
	struct self_site s = { (unsigned long)fn, path, len, offset };
	FILE *f = fopen("/proc/self/maps", "re");
	int found;

	if (!f)
		return -errno;
	found = procmaps_parse(f, find_target, &s);
	fclose(f);
	return found == 1 ? 0 : -ENOENT;
}

/* One registration: a uprobe of this process only (the kernel filters by pid). */
static int register_one(const struct warmer *w)
{
	return umulti_link(w->prog_fd, w->path, &w->offset, NULL, 1, false, getpid());
}

/* What to register, and with what: the setup, done here to keep it off the caller's path. */
static bool warm_setup(struct warmer *w)
{
	/*
	 * uprobe_multi links to an empty program only: a perf uprobe event would do the same
	 * without BPF, but closing one waits for grace periods under the kernel's event_mutex,
	 * and the driver tier's tracepoints wait there in turn (seen: ready 0.4-1.4 s late); on
	 * older kernels every link is such a perf event.
	 */
	if (!umulti_supported())
		return false;
	return !warm_self_site(spyre_warm_target, w->path, sizeof(w->path), &w->offset) &&
	       (w->prog_fd = feat_empty_prog(true)) >= 0;
}

static void *warm_main(void *arg)
{
	struct warmer *w = arg;
	uint64_t interval = WARM_INTERVAL_MIN_NS;
	struct timespec until;
	int fd;

	if (!warm_setup(w))
		return NULL;
	pthread_mutex_lock(&w->lock);
	while (!w->stop && w->n < WARM_MAX) {
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);

		pthread_mutex_unlock(&w->lock);
		fd = register_one(w);	/* the first waits out the grace period */
		pthread_mutex_lock(&w->lock);
		if (fd < 0)
			break;
		if (!w->n) {
			interval = (now_ns(CLOCK_MONOTONIC) - t0) / 4;
			if (interval < WARM_INTERVAL_MIN_NS)
				interval = WARM_INTERVAL_MIN_NS;
			if (interval > WARM_INTERVAL_MAX_NS)
				interval = WARM_INTERVAL_MAX_NS;
		}
		w->fds[w->n++] = fd;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += interval / 1000000000;
		until.tv_nsec += interval % 1000000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		while (!w->stop && pthread_cond_timedwait(&w->cond, &w->lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&w->lock);
	close_parallel(w->fds, w->n);
	close(w->prog_fd);
	return NULL;
}

struct warmer *warm_start(void)
{
	struct warmer *w;

	if (env_is_1("SPYRE_NO_WARM"))
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->prog_fd = -1;
	pthread_mutex_init(&w->lock, NULL);
	cond_init_monotonic(&w->cond);
	/* no signal for this thread: the tracer takes them from a signalfd */
	if (thread_start_nosig(&w->th, warm_main, w)) {
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return NULL;
	}
	return w;
}

int warm_end(struct warmer *w)
{
	int n;

	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	n = w->n;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return n;
}

int warm_free(struct warmer *w)
{
	int n = warm_end(w);

	if (!w)
		return 0;
	pthread_join(w->th, NULL);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
	return n;
}
