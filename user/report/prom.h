/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-window metrics for node_exporter's textfile collector (Prometheus text format 0.0.4).
 *
 * The tracer traces in windows; counters (*_total, the summary's _sum/_count) are cumulative
 * since the tracer started, so Prometheus' rate()/increase() and sums over a fleet work across
 * windows and restarts (a restart is an ordinary counter reset). Gauges (spyre_window_*) and the
 * summary's quantiles describe the last window only.
 *
 * Per window: prom_window_begin, then prom_window_add_span/add_count/add_drops for every
 * (job, function) traced in it (values are that window's, not cumulative), prom_window_end,
 * prom_write. A series not added in the last expire_after + 1 windows (its job is gone) is
 * dropped at prom_window_end, so pid churn does not grow the file forever.
 */
#ifndef SPYRE_PROM_H
#define SPYRE_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "output/facts.h"
#include "stream/stats.h"

/* Who made the calls. Strings come from the traced process: escaped on output. */
struct prom_job {
	uint32_t pid;		/* 0 with a NULL job: not known per job (drops) */
	const char *comm;	/* NULL: label omitted */
	const char *container;	/* container id; NULL or "": label omitted */
};

struct prom_series {
	uint32_t pid;
	bool has_job;
	bool has_calls;		/* add_span or add_count seen */
	bool span;		/* durations known (add_span) */
	bool has_drops;		/* add_drops seen */
	char *comm;
	char *container;
	char *func;
	/* cumulative */
	uint64_t calls;
	uint64_t total_ns;
	uint64_t drops_ring;
	uint64_t drops_depth;
	uint64_t drops_nostack;
	/* last window */
	uint64_t win_calls;
	uint64_t win_total_ns;
	uint64_t win_p50_ns;
	uint64_t win_p99_ns;
	uint64_t win_q_calls;	/* calls behind win_p50/p99 (largest single add) */
	uint64_t last_window;	/* index of the last window it was added in */
};

/* Device memory of one job (memledger.h): allocated per device, or DMA mapped (dev < 0). */
struct prom_mem {
	uint32_t pid;
	int dev;
	bool mapped;
	char *comm;
	char *container;
	uint64_t cur, peak;
	uint64_t last_window;
};

struct prom_window {
	char version[64];
	unsigned int sample_every;	/* N of --sample-every; 0 or 1: every call */
	uint64_t period_ns;		/* window start to window start; 0: continuous */
	uint64_t start_ns;		/* last window's start, CLOCK_REALTIME ns */
	uint64_t duration_ns;		/* last window's traced time: attached to detached */
	uint64_t attach_ns, detach_ns;	/* ... what its attach and its detach took */
	uint64_t windows;		/* completed windows (prom_window_end calls) */
	uint64_t window;		/* index of the current window, from 1 */
	unsigned int expire_after;	/* idle windows a series is still exported; default 3 */
	struct prom_series *series;
	int nseries;
	size_t cap;
	struct prom_mem *mem;
	int nmem;
	size_t capmem;
	/*
	 * The last window's overhead (cost_meter_overhead, attach/cost.h), as a ratio; NaN where
	 * it is not known (no job CPU clock: -a; or the probes took too much of it to tell)
	 */
	double overhead_ratio;
	/* the run's counts (output/facts.h), summed over the windows: their own series */
	struct run_counts counts;
};

void prom_window_init(struct prom_window *w, const char *version, unsigned int sample_every,
		      uint64_t period_ns);
void prom_window_free(struct prom_window *w);

/* A new window starts at @start_realtime_ns: per-window values reset. */
void prom_window_begin(struct prom_window *w, uint64_t start_realtime_ns);
/* The window lasted @duration_ns. Series idle for more than expire_after windows go. */
void prom_window_end(struct prom_window *w, uint64_t duration_ns);

/*
 * This window's statistics of a span probe (count, total, p50, p99 from @s). Adding the same
 * (job, function) twice in one window sums counts and totals and keeps the quantiles of the
 * larger part (histograms are not kept per series: memory). 0, -EINVAL or -ENOMEM.
 */
int prom_window_add_span(struct prom_window *w, const struct prom_job *job, const char *func,
			 const struct fn_stats *s);
/* Calls of an instant probe (no durations) in this window. */
int prom_window_add_count(struct prom_window *w, const struct prom_job *job, const char *func,
			  uint64_t calls);
/*
 * Events lost in this window (ring buffer full, nesting too deep, no thread stack: that series
 * only once it happened, it is rare). @job may be NULL when the
 * BPF counters are per probe only: the series then has only a function label.
 */
int prom_window_add_drops(struct prom_window *w, const struct prom_job *job, const char *func,
			  uint64_t ring_full, uint64_t too_deep, uint64_t no_stack);

/*
 * This window's counts (summary_counts: the summary's first line) added to the run's: each
 * count a counter of its own (run_count_keys names them).
 */
void prom_window_add_counts(struct prom_window *w, const struct run_counts *rc);

/*
 * A job's device memory at the end of this window: bytes @cur live now, @peak the most since
 * the tracer started. spyre_device_memory_bytes and _peak_bytes, labels device (allocated) or
 * none (mapped) and kind. 0, -ENOMEM.
 */
int prom_window_set_memory(struct prom_window *w, const struct prom_job *job, int dev,
			   bool mapped, uint64_t cur, uint64_t peak);

/* The exposition text, malloc'd and NUL-terminated (@len may be NULL); NULL on ENOMEM. */
char *prom_render(const struct prom_window *w, size_t *len);

/*
 * Replace @path atomically: a temp file in the same directory, fsync, rename, so the
 * collector never reads a half-written file. Mode 0644 (node_exporter runs unprivileged).
 * rename() replaces a symlink at @path instead of following it. 0 or -errno.
 */
int prom_write(const char *path, const struct prom_window *w);

#endif
