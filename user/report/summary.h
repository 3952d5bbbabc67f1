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

/* How a run ended, beyond the per-probe counters. */
struct run_end {
	bool target_exited;
	bool exit_known;		/* the target's exit code was seen */
	int exit_code;			/* as wait(2) reports it */
	const struct cost_meter *cost;	/* the probes' estimated cost (cost.h), or NULL */
	const struct vfio_tracer *driver;	/* the driver tier (its counters), or NULL */
	double max_overhead;		/* --max-overhead, 0 when not given */
	const struct run_sampling *sampling;	/* "spyreSampling" in the metadata, or NULL */
	/* return sites: their returns done by BPF (emulated), else single-stepped; and why */
	bool rets_emulated;
	const char *rets_why;		/* NULL: no return sites (--uretprobes) */
};

/* The fatal signal that ended the target, or 0 (exited, still running, or not known). */
int run_end_signal(const struct run_end *e);
/* "SIGABRT (core dumped)": that signal's name, into @buf; @buf is returned. */
const char *run_end_signame(const struct run_end *e, char *buf, size_t len);
/*
 * Calls of one probe the BPF dropped, every reason (ring full, too deep, no thread stack): the
 * sum the status line, the summary's "dropped" and the metadata's "drops" all mean.
 */
static inline uint64_t summary_dropped(const struct spyre_counters *k)
{
	return k->drops_ring + k->drops_depth + k->drops_nostack;
}
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

/*
 * The once-a-second status line on stderr: events, events/s, drops, unwound calls, probes
 * (and how many of them see entries only), @cost (cost_meter_status, may be NULL), @driver's
 * path.
 */
void summary_status_line(const struct consumer *c, uint64_t drops, uint64_t unwound,
			 uint64_t *last_events, uint64_t *last_ns, int nprobes, int entry_only,
			 const char *cost, const struct vfio_tracer *driver, bool tty);

#endif
