/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `merge`: one trace from a spyre-bpftrace trace and a Kineto (PyTorch profiler) trace of the
 * same job. Both name the wall-clock time of their ts 0: ours in spyreTracer.realtimeBaseNs
 * (= baseTimeNanoseconds), Kineto's in baseTimeNanoseconds (CLOCK_REALTIME floored to a
 * three-month boundary; older Kineto writes absolute µs since the epoch and no base). Our
 * events move onto Kineto's time base; Kineto's are copied untouched.
 */
#ifndef SPYRE_MERGE_H
#define SPYRE_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "offline/mergefit.h"

struct jw;

/* Device pids of ours that a Kineto device already uses are moved; at most this many. */
#define MERGE_MAX_DEVICE_PIDS	64

/* Our events of a thread that cannot nest with the profiler's go to tid + this (Linux tids stay
 * below 2^22); profiler threads of a legacy export that match none of ours to this + its number. */
#define MERGE_OWN_TRACK_TID	0x40000000
#define MERGE_LEGACY_TID	0x20000000
/* Our span boundaries may move this much to nest with the profiler's (see user/offline/mergefit.h) */
#define MERGE_DEFAULT_TOL_NS	2000

struct merge_opts {
	int64_t tol_ns;			/* nesting tolerance */
	uint64_t profiler_start_ns;	/* legacy export: CLOCK_REALTIME near its ts 0; 0 = none */
};

struct merge_info {
	int64_t shift_ns;		/* added to every ts of ours */
	uint64_t kineto_base_ns;	/* Kineto's baseTimeNanoseconds; 0 when its ts are absolute */
	uint64_t spyre_base_ns;		/* our CLOCK_REALTIME at our ts 0 */
	bool kineto_absolute;		/* Kineto had no base: ts are µs since the epoch */
	int ndev;			/* device pids of ours that were moved */
	int64_t dev_from[MERGE_MAX_DEVICE_PIDS], dev_to[MERGE_MAX_DEVICE_PIDS];
	uint64_t corr_offset;		/* added to our args.correlation (0: no clash) */
	uint64_t flow_offset;		/* added to our s/f ids (0: no clash) */
	size_t kineto_events, spyre_events;
	size_t dropped_meta;		/* our names of tracks Kineto names already */
	bool overlap_known;		/* both have X events: gap_us is meaningful */
	double gap_us;			/* > 0 ours starts after Kineto ends, < 0 ends before */
	struct fit_stats fit;		/* nesting with the profiler's spans */
	int64_t tol_ns;
	bool legacy;			/* the profiler trace is a legacy (non-Kineto) export */
	bool profiler_ours;		/* the second trace is one of ours too (another rank) */
	struct legacy_fit lfit;		/* legacy: its clock and threads, from the shared ops */
	int64_t legacy_pid;		/* legacy: the process its "CPU functions" are */
	int64_t legacy_guess_ns;	/* legacy: --profiler-start - our base, before the fit */
};

/* A trace to merge: a file (plain or gzip), or its text in memory (tests). */
struct merge_src {
	const char *name;	/* the file's path; names the trace in messages and spyreMerged */
	const char *data;	/* when set: @len bytes of trace text, @name only a name */
	size_t len;
};

/*
 * A merge in two passes over each input, in memory bounded by the plan (the sets of ids, the
 * X spans while they are fitted, the moved spans), not by the traces: merge_plan reads both
 * (@ours is spyre-bpftrace's, @other Kineto's, a legacy profiler export or another of ours)
 * and decides every move into @mi (kept by the caller until merge_write); merge_write reads
 * them again and writes the whole output document to @w, one event a line. On error -errno
 * (-EINVAL: an input is not usable or changed between the passes, -ERANGE: clocks cannot be
 * aligned) with a message in @err.
 */
struct merge;
int merge_plan(const struct merge_src *ours, const struct merge_src *other,
	       const struct merge_opts *mo, struct merge_info *mi, struct merge **out, char *err,
	       size_t errlen);
int merge_write(struct merge *m, struct jw *w, char *err, size_t errlen);
void merge_free(struct merge *m);

/* Read, merge and write @out (.gz: gzip; an existing file only with @force). Exit code. */
int merge_files(const char *ours, const char *kineto, const char *out, bool force,
		const struct merge_opts *mo, FILE *msg);
int cmd_merge(const char *ours, const char *kineto, const char *out, bool force,
	      const struct merge_opts *mo);

#endif
