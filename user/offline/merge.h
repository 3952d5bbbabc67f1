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

struct jv;
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

/*
 * Merge two parsed traces into @w (the whole output document, one event a line). @ours_name
 * and @kineto_name are only recorded in the "spyreMerged" member. On error returns -errno
 * (-EINVAL: an input is not usable, -ERANGE: clocks cannot be aligned) with a message in @err.
 */
int merge_docs(const struct jv *ours, const struct jv *kineto, struct jw *w,
	       const char *ours_name, const char *kineto_name, const struct merge_opts *mo,
	       struct merge_info *mi, char *err, size_t errlen);

/* Read, merge and write @out (.gz: gzip; an existing file only with @force). Exit code. */
int merge_files(const char *ours, const char *kineto, const char *out, bool force,
		const struct merge_opts *mo, FILE *msg);
int cmd_merge(const char *ours, const char *kineto, const char *out, bool force,
	      const struct merge_opts *mo);

#endif
