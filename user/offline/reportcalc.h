/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What `report` reads of a trace and works out of it, for its renderings (reportout.h) and its
 * command (report.c): the rows, tracks, devices, collectives, memory and health of one file.
 * Only the report files include this.
 */
#ifndef SPYRE_REPORTCALC_H
#define SPYRE_REPORTCALC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/facts.h"

struct jv;
struct spool;

/* ROW_PYLINE: a Python line (args.python of host calls made with --python), not a function */
enum row_kind { ROW_HOST, ROW_KERNEL, ROW_COPY, ROW_PYLINE };

/* A host function, a device kernel or a copy direction: what its spans sum to. */
struct row {
	int kind;
	const char *name;	/* owned (strdup) */
	int64_t pid, tid;	/* --by-thread: its thread's (host rows); else -1 */
	uint32_t id;
	uint64_t count;
	int64_t total_ns;
	int64_t p50_ns, p99_ns;
	uint64_t bytes;		/* copies: args.bytes summed */
	int64_t host_bound_ns;	/* host: its time inside the devices' host-bound idle time */
	int64_t seen_end;	/* Python lines: the end of their calls so far (host_bound_sum) */
	bool wait;		/* a host call that waits for the device (is_wait, once a row) */
};

/* Device work on one (pid, tid): a stream, or a lane of concurrent copies. */
struct track {
	int64_t pid, tid;
	uint64_t spans;
	int64_t busy_ns;	/* its spans' durations summed: a stream runs one thing at once */
};

/* Sorted, disjoint intervals [lo, hi) */
struct ivl {
	int64_t lo, hi;
};

struct ivs {
	struct ivl *v;
	size_t n, cap;
};

/* The intervals' total length */
static inline int64_t ivs_len(const struct ivs *s)
{
	int64_t t = 0;

	for (size_t i = 0; i < s->n; i++)
		t += s->v[i].hi - s->v[i].lo;
	return t;
}

struct device {
	int64_t pid;
	uint64_t spans;
	int64_t busy_ns;	/* the union of its tracks' spans */
	int64_t first_ns, last_ns;
	struct ivs gaps;	/* between its work: idle */
	struct ivs queued;	/* work launched for it, not started yet */
	struct ivs kern;	/* its kernels' time (copies apart) */
	int64_t host;		/* the process whose launches it ran: -1 none seen, -2 several */
	int64_t idle_ns, queued_ns, waiting_ns, host_bound_ns;
};

/* process_name (tid -1) and thread_name */
struct track_name {
	int64_t pid, tid;
	char *name;
};
/* A collective op of one process (a rank): libspyre_comms's spyre_comms::Context::OP spans */
struct coll {
	int64_t pid;
	const char *op;		/* static: one of coll_ops */
	uint64_t count, bytes;
	int64_t total_ns;
};

/*
 * Device memory of one process and device, from the [memory] instants (ours and the PyTorch
 * profiler's): its peak, when, on which thread, and the host call that made it (the innermost
 * span of that thread around the peak's moment, found among the host calls at the end).
 */
struct mem {
	int64_t pid, type, dev;
	int64_t peak, last;		/* "Total Allocated" */
	int64_t peak_ts, peak_tid;
	uint64_t allocs, frees;
	int64_t who_len;		/* the span found so far: the shortest around the peak */
	uint32_t who;			/* its row; UINT32_MAX: none */
};

/*
 * A process's (a rank's) collectives against its devices' kernels: how much of the time it
 * spent in collectives its devices computed meanwhile (HTA's communication/computation overlap)
 */
struct overlap {
	int64_t pid;
	int64_t comm_ns, overlap_ns;
};

struct rep {
	void *by_name;			/* tsearch: struct row * by kind and name */
	struct row **rows;
	size_t nrows, rows_cap;
	struct track *tracks;
	size_t ntracks, tracks_cap;
	struct device *devs;
	size_t ndevs;
	struct track_name *names;
	size_t nnames, names_cap;
	struct spool *durs, *busy, *corrs, *waits, *queued, *hosts;
	struct spool *kerns, *comms;	/* kernels by device, collectives by process */
	struct overlap *ovl;
	size_t novl, ovl_cap;
	struct ivs waiting;		/* host threads inside a wait call */
	struct coll *colls;
	size_t ncolls, colls_cap;
	struct mem *mems;
	size_t nmems, mems_cap;
	struct ivs host_bound;		/* some device idle, nothing queued, no wait */
	uint64_t events;
	int64_t first_ns, last_ns;
	bool have_x;
	bool by_thread;
};

/* The trace's health, from its metadata */
struct health {
	bool ours;			/* spyreStats: a trace of spyre-bpftrace */
	struct run_counts rc;		/* the run's summary line, by the same keys (facts.h) */
	double no_return, driver_drops, in_flight;
	double sample_every;
	bool budget;
	double traced_s, run_s, windows, cut_at_pause;
	bool memory_sampled;
};

/* The spools @r sums through, empty (@by_thread: a host row per function and thread). */
int rep_init(struct rep *r, bool by_thread);
/* One event of the trace into @r: 0, or -errno */
int rep_take_event(struct rep *r, const struct jv *ev);
/* Once every event was taken: percentiles, device busy and idle time, host-bound, overlap. */
int rep_compute(struct rep *r);
void rep_free(struct rep *r);
void rep_health_of(const struct jv *head, struct health *h);

/* The process_name (@tid -1) or thread_name of a track, NULL when the trace gives none */
const char *rep_name_of(const struct rep *r, int64_t pid, int64_t tid);

#endif
