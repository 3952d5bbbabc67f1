/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Fitting our spans into a PyTorch profiler trace for `merge` (no JSON here, so it is testable
 * on plain arrays):
 *  - nesting: a uprobe span of an op starts before the profiler's RecordFunction of that op and
 *    ends after it (~0.3 µs each side on Debian's PyTorch), so where the profiler's parent span
 *    ends right after the op, ours overhangs it: a partial overlap, which Perfetto resolves by
 *    moving slices to other tracks. Our boundaries move by at most a tolerance so that every
 *    span nests; a thread where that is not enough gets our events on a track of their own.
 *    The profiler's spans move only by their own rounding (the legacy export's whole µs: a
 *    child can end 1 µs after its parent there), and only where moving ours cannot help.
 *  - legacy clocks: PyTorch built without Kineto (Debian's) exports ts in whole µs from the
 *    profiler's start, which the job knows only to within the time enabling takes (~0.5 ms
 *    measured here). The offset is found from the ops both traces have: the profiler's span of
 *    an op lies inside our span of the same op, which bounds the offset from both sides; the
 *    offset most spans agree on wins, and so does the thread pairing.
 */
#ifndef SPYRE_MERGEFIT_H
#define SPYRE_MERGEFIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An X event of either trace, on the merged time base (ns). */
struct fit_span {
	int64_t pid, tid;
	int64_t ts, end;	/* as adjusted */
	int64_t ts0, end0;	/* as read */
	int64_t tol;		/* how far (in total) each boundary may move */
	uint32_t idx;		/* the event's index in its own trace */
	bool ours;
};

struct fit_stats {
	size_t adjusted;	/* our spans whose boundaries moved */
	size_t profiler_adjusted; /* the profiler's spans whose boundaries moved (rounding) */
	int64_t max_adjust_ns;	/* the largest single move */
	size_t lanes_moved;	/* threads whose events of ours went to their own track */
	size_t spans_moved;	/* our spans on those tracks */
	size_t profiler_overlaps; /* partial overlaps among the profiler's own spans, kept */
};

/*
 * Make every span nest with every other span of its pid/tid by moving starts and ends, each by
 * at most its span's tol (in total), ours first; lanes where a span of ours still overlaps are
 * listed in @moved (lane keys, see fit_lane_key; room for @n keys) and their spans of ours get
 * back their original times. @sp is sorted on return. 0 or -ENOMEM.
 */
int fit_nesting(struct fit_span *sp, size_t n, int64_t *moved, size_t *nmoved,
		struct fit_stats *st);

/* (pid, tid) as one sortable key; pids and tids of real traces fit 32 bits */
int64_t fit_lane_key(int64_t pid, int64_t tid);

/* An X event for the legacy clock fit: its thread, its times (ns) and its name. */
struct named_span {
	int64_t tid;
	int64_t ts, end;
	const char *name;
};

#define FIT_MAX_THREADS 64

struct legacy_fit {
	int64_t offset_ns;	/* profiler ts (ns) + offset_ns = our ts (ns) */
	size_t votes;		/* profiler spans inside a same-named span of ours at that offset */
	size_t considered;	/* profiler spans that took part */
	int nthreads;
	int64_t tid_from[FIT_MAX_THREADS], tid_to[FIT_MAX_THREADS];	/* profiler -> ours */
};

/* How much earlier than the profiler's span of an op ours may start: the uprobe's own cost and
 * the dispatcher before RecordFunction (~10 µs on Debian's PyTorch here), with a wide margin */
#define FIT_MAX_LEAD_NS (200 * 1000ll)

/*
 * Find the offset in [@lo_ns, @hi_ns] that puts most profiler spans (@prof, their first
 * FIT_MAX_VOTERS per thread) inside a span of ours with the same name, within @slack_ns (the
 * profiler's whole-µs rounding), and pair each profiler thread with the thread of ours that
 * agrees with it most at that offset. Returns 0 (fit->votes may be 0: nothing matched), or
 * -ENOMEM.
 */
#define FIT_MAX_VOTERS 4000
int fit_legacy_clock(const struct named_span *prof, size_t nprof, const struct named_span *ours,
		     size_t nours, int64_t lo_ns, int64_t hi_ns, int64_t slack_ns,
		     struct legacy_fit *fit);

#endif
