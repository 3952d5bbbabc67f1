/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What a run saw: the one-screen summary at exit and the same facts in the trace's metadata. */
#ifndef SPYRE_SUMMARY_H
#define SPYRE_SUMMARY_H

#include <stdbool.h>
#include <stdio.h>
#include "stream/consumer.h"

struct cost_meter;
struct vfio_tracer;

/* How a run was sampled (fleet mode's options; by PID or launched: every call, one window). */
struct run_sampling {
	bool system_wide;
	uint64_t sample_every;		/* 1: every call */
	uint64_t rate_cap;		/* per process and second, 0: none */
	double window_s, period_s;
	uint64_t window;		/* the window's index */
};

/*
 * Which part of the run a file holds (--max-size, --switch-output): "spyreFile" in its
 * metadata. Statistics elsewhere in the metadata count the run from its start.
 */
struct run_file {
	unsigned int index;		/* 0: the run's first file */
	bool last;			/* the run ended in it */
	const char *reason;		/* why it ended: "max-size" (the next one follows), "end" */
	uint64_t start_ns, end_ns;	/* the stretch of the run it holds (CLOCK_MONOTONIC) */
	uint64_t base_ns;		/* the run's ts 0 (every file has the same) */
	uint64_t events;		/* events written into it */
	uint64_t max_size;		/* --max-size, bytes */
	uint64_t launched_before;	/* device spans whose launch is in the file before */
	const char *previous, *next;	/* the neighbouring files' names, or NULL */
	uint64_t window_ns;		/* a flight recorder's dump: what it keeps; 0: not one */
};

/* How a run ended, beyond the per-probe counters. */
/* --max-overhead's windows as the summary and the metadata tell them. */
struct run_budget {
	const struct budget *b;
	uint64_t start_ns, now_ns;	/* the run's first attach, these facts (CLOCK_MONOTONIC) */
	uint64_t base_ns;		/* the trace's ts 0 */
	uint64_t launches_cut;		/* device work in flight at a pause: not drawn */
};

struct run_end {
	bool target_exited;
	bool exit_known;		/* the target's exit code was seen */
	int exit_code;			/* as wait(2) reports it */
	const struct cost_meter *cost;	/* the probes' estimated cost (cost.h), or NULL */
	const struct vfio_tracer *driver;	/* the driver tier (its counters), or NULL */
	double max_overhead;		/* --max-overhead, 0 when none */
	const struct run_budget *budget;	/* its windows, or NULL */
	const struct run_sampling *sampling;	/* "spyreSampling" in the metadata, or NULL */
	const struct run_file *file;	/* "spyreFile" in the metadata, or NULL */
	uint64_t unwritten;		/* calls and records left in the ring at --max-size */
	/* return sites: their returns done by BPF (emulated), else single-stepped; and why */
	bool rets_emulated;
	const char *rets_why;		/* NULL: no return sites (--uretprobes) */
};

/* The fatal signal that ended the target, or 0 (exited, still running, or not known). */
int run_end_signal(const struct run_end *e);
/* "SIGABRT (core dumped)": that signal's name, into @buf; @buf is returned. */
const char *run_end_signame(const struct run_end *e, char *buf, size_t len);
/* Calls of one probe the BPF dropped, every reason (ring full, too deep, no thread stack). */
static inline uint64_t summary_dropped(const struct spyre_counters *k)
{
	return k->drops_ring + k->drops_depth + k->drops_nostack;
}
struct run_counts;
/*
 * The run's counts (output/facts.h) from the BPF @counters and consumer @c: what the summary's
 * first line, the status line and the metadata's spyreStats say.
 */
void summary_counts(const struct consumer *c, const struct target *t,
		    const struct spyre_counters *counters, struct run_counts *rc);
/* Unwound calls in all (each one an event of the trace, "unwound": true, or a ring drop). */
uint64_t summary_unwound(const struct target *t, const struct spyre_counters *counters);

/* Per function: count, total, mean, p50, p99; then hits/drops. */
void summary_print(FILE *f, const struct consumer *c, const struct target *t,
		   const struct spyre_counters *counters, const struct run_end *end);
/*
 * Top-level trace members ("spyreProbes":[...],"spyreStats":{...}, "spyreMemory", and
 * "spyreSampling" when @end has it), malloc'd.
 */
char *summary_trace_metadata(const struct consumer *c, const struct target *t,
			     const struct spyre_counters *counters, const struct run_end *end);

/* What the status line shows beyond the consumer's counts. */
struct status_facts {
	uint64_t drops, unwound;
	int nprobes, entry_only;
	const char *cost;		/* cost_meter_status, or NULL */
	const struct vfio_tracer *driver;
	double elapsed_s;		/* since the trace began */
	double left_s;			/* under -d; < 0: no deadline */
	uint64_t bytes;			/* JSON text written, every file of the run */
	unsigned int file;		/* the file's index (--switch-output) */
	uint64_t max_size;		/* --max-size; 0: none */
	bool in_memory;			/* @bytes: the flight recorder's, held in memory */
	double budget_pct;		/* --max-overhead, 0: none */
	bool paused;			/* ... has the probes detached now */
	double traced_pct;		/* ... and kept them attached so much of the run */
	bool tty;			/* redraw in place, cut to @width columns */
	int width;
};

/* The last line's counts, for the rates of the next. */
struct status_prev {
	uint64_t events, bytes, ns;
};

/*
 * The once-a-second status line on stderr: elapsed time (and what is left of -d), events and
 * their rate, bytes written and their rate (the file and its bound), drops, unwound calls,
 * probes (and how many of them see entries only), the cost, the driver tier's path. On a
 * terminal it fits the width: the least needed fields go first.
 */
void summary_status_line(const struct consumer *c, const struct status_facts *f,
			 struct status_prev *prev);
#endif
