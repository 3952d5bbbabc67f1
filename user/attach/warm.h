/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Uprobe registration warm-up. The kernel registers and unregisters every uprobe under one
 * write lock (dup_mmap_sem, a percpu rw-semaphore): the first writer after a quiet spell waits
 * for an RCU grace period, writers that come within a grace period of the last one do not.
 * That wait (8-20 ms here) fell on the first link of every attach. The warmer takes it on a
 * thread of its own while the BPF objects load: it registers a uprobe in this process's own
 * executable (never hit, and installed in this process only) at once and again every quarter
 * of that first wait, until the tracer's own links are made.
 */
#ifndef SPYRE_WARM_H
#define SPYRE_WARM_H

#include <stddef.h>

struct warmer;

/* Start warming; NULL when it cannot (no uprobe PMU, no thread): nothing is lost but time. */
struct warmer *warm_start(void);
/*
 * Stop registering (the tracer's links are made) and return how many uprobes the warmer
 * registered; returns at once, they are unregistered in the background.
 */
int warm_end(struct warmer *w);
/* warm_end, then wait until the warmer's uprobes are gone. */
int warm_free(struct warmer *w);

/* Where function @fn of this process lives in its file: @path (of @len) and @offset; -errno. */
int warm_self_site(const void *fn, char *path, size_t len, unsigned long *offset);

#endif
