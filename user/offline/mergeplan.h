/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What passes between merge's two halves (merge.h): mergeplan.c reads both inputs once and
 * decides every move (the time shift, device pids, ids, the nesting fit); mergewrite.c reads
 * them again and writes the events with those moves applied. Only those two include this.
 */
#ifndef SPYRE_MERGEPLAN_H
#define SPYRE_MERGEPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/intset.h"
#include "offline/jsonparse.h"
#include "offline/merge.h"

struct tstream;

/* ts beyond ±9e12 µs (104 days of ns in a double) is not a Kineto or spyre-bpftrace ts */
#define MERGE_MAX_US		9000000000000LL
/* appended to the names of our tracks that the other trace has too */
#define DEVICE_SUFFIX		" (spyre-bpftrace)"

/* µs -> ns, exactly (jv_us_ns), within ±MERGE_MAX_US */
static inline bool us_ns(const struct jv *v, int64_t *out)
{
	return jv_us_ns(v, MERGE_MAX_US, out);
}

static inline bool int_of(const struct jv *v, int64_t *out)
{
	uint64_t u;

	if (!jv_u64_exact(v, &u) || u > INT64_MAX)
		return false;
	*out = (int64_t)u;
	return true;
}

/* --- what each input holds ------------------------------------------------------------------- */

struct side {
	const struct merge_src *src;
	struct tstream *ts;		/* the first pass's stream, kept for its head */
	const struct jv *head;		/* the document without its events */
	size_t nevents;			/* elements of the traceEvents array */
	struct intset pids;		/* every integer pid */
	struct intset corrs;		/* args.correlation values */
	struct intset flows;		/* s/f ids */
	struct intset named_pids;	/* pids with a process_name */
	struct intset named_lanes;	/* (pid, tid) with a thread_name */
	struct intset dev_pids;		/* pids holding device work */
	struct intset legacy_tids;	/* tids of events whose pid is a string (legacy export) */
	struct intset lanes;		/* (pid, tid) of its X spans (a string pid as -1) */
	bool string_pid;		/* some event has a string pid ("CPU functions") */
	double first_us, last_us;	/* X events, on the side's own time base */
	bool have_x;
	uint64_t max_corr, max_flow;
	size_t corrs_sealed, flows_sealed;	/* their sizes when last sealed */
};

/* An X event's times on the merged base (ns), when the nesting fit moved them */
struct adjusted {
	size_t idx;		/* the event's index in its trace's traceEvents */
	int64_t ts, end;
};

/* One trace's moved events, by index: read in order as the second pass writes them. */
struct adj_list {
	struct adjusted *v;
	size_t n, at;
};

/* The plan: made by merge_plan, read (and @w, @first_event written) by merge_write */
struct mctx {
	struct merge_info *mi;
	const struct merge_opts *mo;
	struct side k, o;		/* Kineto's (the other trace), ours */
	struct jw *w;			/* the second pass's output */
	bool first_event;		/* no event written yet (event_sep) */
	/* both traces' X spans (the first pass), for the nesting fit */
	struct fit_span *spans;
	size_t nspans, spans_cap;
	/* X events whose times the nesting fit changed, in each side's order */
	struct adj_list adj_o, adj_k;
	/* legacy: our threads' processes, from their first X event (our_pid_of) */
	int64_t *tid_pid;
	size_t ntid_pid, tid_pid_cap;
	/* lanes (fit_lane_key) whose events of ours go to a track of their own, and whether one
	 * of our thread_name events named it already */
	int64_t *moved;
	bool *moved_named;
	size_t nmoved;
	/*
	 * appended to the name of a process of ours whose pid moved (its device, which the other
	 * trace has too): the rank when our trace knows it, so that three ranks merged two at a
	 * time do not show two devices of one name
	 */
	char dev_suffix[64];
};

struct merge {
	struct mctx m;
	struct merge_opts mo;
};

/* A stream over @src; -errno with "NAME: why" in @err. */
int merge_src_open(const struct merge_src *src, struct tstream **out, char *err, size_t errlen);
/* Why the stream stopped early: -EINVAL with the place in @err. */
int merge_src_bad(const struct merge_src *src, struct tstream *ts, const char *why, char *err,
		  size_t errlen);
/* What the plan made of a thread of a legacy export, and of a device pid of ours */
int64_t merge_legacy_tid(const struct mctx *m, int64_t tid);
bool merge_remap_pid(const struct mctx *m, int64_t pid, int64_t *to);

#endif
