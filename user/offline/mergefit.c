// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "offline/mergefit.h"

/* Nesting passes before a lane that still overlaps gets its own track: each pass settles one
 * level of consequences (a span moved into its parent can push out a child of ours); real
 * traces settle in one or two. */
#define FIT_PASSES 8

int64_t fit_lane_key(int64_t pid, int64_t tid)
{
	return (int64_t)(((uint64_t)pid << 32) ^ (uint64_t)(tid & 0xffffffff));
}

/* Lane, then start; at one start the longer span first (the parent), then the profiler's. */
static int span_cmp(const void *a, const void *b)
{
	const struct fit_span *x = a, *y = b;
	int64_t kx = fit_lane_key(x->pid, x->tid), ky = fit_lane_key(y->pid, y->tid);

	if (kx != ky)
		return kx < ky ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	if (x->ours != y->ours)
		return x->ours ? 1 : -1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int64_t dist(int64_t a, int64_t b)
{
	return a > b ? a - b : b - a;
}

/* A move's cost: its size, and any move of ours before one of the profiler's */
static int64_t cost(const struct fit_span *s, int64_t by)
{
	return by + (s->ours ? 0 : (1ll << 50));
}

/*
 * @x starts inside @t and ends after it. Move one boundary so that one nests in the other, the
 * cheapest move whose total stays within its span's tol: x's end back to t's end (x inside t),
 * t's end out to x's end (t around x), or t's start up to x's (t inside x). Returns true when
 * one was made.
 */
static bool fix_pair(struct fit_span *t, struct fit_span *x)
{
	int64_t best = -1, c;
	int how = 0;

	if (dist(t->end, x->end0) <= x->tol) {
		best = cost(x, x->end - t->end);
		how = 1;
	}
	c = cost(t, x->end - t->end);
	if (dist(x->end, t->end0) <= t->tol && (best < 0 || c < best)) {
		best = c;
		how = 2;
	}
	c = cost(t, x->ts - t->ts);
	if (dist(x->ts, t->ts0) <= t->tol && (best < 0 || c < best)) {
		best = c;
		how = 3;
	}
	switch (how) {
	case 1:
		x->end = t->end;
		return true;
	case 2:
		t->end = x->end;
		return true;
	case 3:
		t->ts = x->ts;
		return true;
	}
	return false;
}

/*
 * One sweep over the sorted spans, as `check` judges them: a stack of open parents per lane.
 * With @fix, partial overlaps are mended where the tolerance allows; without, lanes that keep
 * one involving a span of ours are listed in @moved. Returns the number of fixes made.
 */
static size_t sweep(struct fit_span *sp, size_t n, size_t *stack, bool fix, int64_t *moved,
		    size_t *nmoved, struct fit_stats *st)
{
	size_t depth = 0, fixes = 0;

	for (size_t i = 0; i < n; i++) {
		struct fit_span *s = &sp[i], *t;

		if (depth && fit_lane_key(sp[stack[0]].pid, sp[stack[0]].tid) !=
			     fit_lane_key(s->pid, s->tid))
			depth = 0;
		while (depth && sp[stack[depth - 1]].end <= s->ts)
			depth--;
		if (!depth || s->end <= sp[stack[depth - 1]].end) {
			stack[depth++] = i;
			continue;
		}
		t = &sp[stack[depth - 1]];
		if (fix) {
			if (fix_pair(t, s)) {
				fixes++;
				if (s->end <= t->end)
					stack[depth++] = i;
			}
			continue;
		}
		if (!s->ours && !t->ours) {
			st->profiler_overlaps++;
			continue;
		}
		if (!*nmoved || moved[*nmoved - 1] != fit_lane_key(s->pid, s->tid))
			moved[(*nmoved)++] = fit_lane_key(s->pid, s->tid);
	}
	return fixes;
}

static bool lane_moved(const int64_t *moved, size_t n, int64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (moved[mid] == key)
			return true;
		if (moved[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

int fit_nesting(struct fit_span *sp, size_t n, int64_t *moved, size_t *nmoved,
		struct fit_stats *st)
{
	size_t *stack = malloc((n ? n : 1) * sizeof(*stack));

	memset(st, 0, sizeof(*st));
	*nmoved = 0;
	if (!stack)
		return -ENOMEM;
	for (int pass = 0; pass < FIT_PASSES; pass++) {
		qsort(sp, n, sizeof(*sp), span_cmp);
		if (!sweep(sp, n, stack, true, NULL, NULL, st))
			break;
	}
	qsort(sp, n, sizeof(*sp), span_cmp);
	/* lanes come in key order, so the list is sorted */
	sweep(sp, n, stack, false, moved, nmoved, st);
	free(stack);
	for (size_t i = 0; i < n; i++) {
		struct fit_span *s = &sp[i];

		if (!s->ours) {
			st->profiler_adjusted += s->ts != s->ts0 || s->end != s->end0;
			continue;
		}
		if (lane_moved(moved, *nmoved, fit_lane_key(s->pid, s->tid))) {
			s->ts = s->ts0;
			s->end = s->end0;
			st->spans_moved++;
			continue;
		}
		if (s->ts == s->ts0 && s->end == s->end0)
			continue;
		st->adjusted++;
		if (dist(s->ts, s->ts0) > st->max_adjust_ns)
			st->max_adjust_ns = dist(s->ts, s->ts0);
		if (dist(s->end, s->end0) > st->max_adjust_ns)
			st->max_adjust_ns = dist(s->end, s->end0);
	}
	st->lanes_moved = *nmoved;
	return 0;
}

/* --- legacy clock fit -------------------------------------------------------------------------- */

struct iv {
	int64_t lo, hi;
};

struct ivs {
	struct iv *v;
	size_t n, cap;
};

static int ivs_add(struct ivs *s, int64_t lo, int64_t hi)
{
	int err = array_reserve(&s->v, &s->cap, s->n + 1, sizeof(*s->v), 256);

	if (err)
		return err;
	s->v[s->n++] = (struct iv){ lo, hi };
	return 0;
}

static int iv_cmp(const void *a, const void *b)
{
	const struct iv *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* thread, name, start: same-named spans of one thread are a contiguous run sorted by start */
static int named_cmp(const void *a, const void *b)
{
	const struct named_span *x = *(const struct named_span *const *)a;
	const struct named_span *y = *(const struct named_span *const *)b;
	int r;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	r = strcmp(x->name, y->name);
	if (r)
		return r;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* First of @v (sorted by named_cmp) not before (tid, name, ts). */
static size_t lower(const struct named_span *const *v, size_t n, int64_t tid, const char *name,
		    int64_t ts)
{
	struct named_span key = { .tid = tid, .ts = ts, .name = name };
	const struct named_span *kp = &key;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (named_cmp(&v[mid], &kp) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The offsets at which profiler span @k lies inside a same-named span of ours on thread @otid,
 * as a union of intervals appended to @out (one profiler span votes once for any offset).
 */
static int intervals_of(const struct named_span *k, const struct named_span *const *ours,
			size_t nours, int64_t otid, int64_t lo, int64_t hi, int64_t slack,
			struct ivs *out)
{
	size_t first = out->n, w;
	size_t j = lower(ours, nours, otid, k->name, k->ts + lo - FIT_MAX_LEAD_NS);
	int err;

	for (; j < nours; j++) {
		const struct named_span *s = ours[j];
		int64_t a, b;

		if (s->tid != otid || strcmp(s->name, k->name) || s->ts > k->ts + hi + slack)
			break;
		/* s.ts <= k.ts + D + slack and k.end + D <= s.end + slack */
		a = s->ts - k->ts - slack;
		b = s->end - k->end + slack;
		if (a < lo)
			a = lo;
		if (b > hi)
			b = hi;
		if (a <= b && (err = ivs_add(out, a, b)))
			return err;
	}
	if (out->n == first)
		return 0;
	/* union: overlapping candidates of one span count once */
	qsort(out->v + first, out->n - first, sizeof(*out->v), iv_cmp);
	for (j = first, w = first; j < out->n; j++) {
		if (w > first && out->v[j].lo <= out->v[w - 1].hi) {
			if (out->v[j].hi > out->v[w - 1].hi)
				out->v[w - 1].hi = out->v[j].hi;
			continue;
		}
		out->v[w++] = out->v[j];
	}
	out->n = w;
	return 0;
}

struct edge {
	int64_t at;
	int d;
};

static int edge_cmp(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;

	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return y->d - x->d;	/* at one point, openings first: bounds are inclusive */
}

/* The point most intervals cover (the middle of the first such stretch) and how many. */
static int best_point(const struct ivs *s, int64_t *at, size_t *count)
{
	struct edge *e = malloc((2 * s->n + 1) * sizeof(*e));
	size_t cur = 0, best = 0;
	int64_t from = 0, to = 0;

	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		e[2 * i] = (struct edge){ s->v[i].lo, 1 };
		e[2 * i + 1] = (struct edge){ s->v[i].hi, -1 };
	}
	qsort(e, 2 * s->n, sizeof(*e), edge_cmp);
	for (size_t i = 0; i < 2 * s->n; i++) {
		if (e[i].d > 0) {
			cur++;
			if (cur > best) {
				best = cur;
				from = e[i].at;
				to = i + 1 < 2 * s->n ? e[i + 1].at : e[i].at;
			}
		} else {
			cur--;
		}
	}
	free(e);
	*count = best;
	*at = from + (to - from) / 2;
	return 0;
}

static int distinct_tids(const struct named_span *v, size_t n, int64_t *out)
{
	int cnt = 0;

	for (size_t i = 0; i < n; i++) {
		int j;

		for (j = 0; j < cnt && out[j] != v[i].tid; j++)
			;
		if (j == cnt && cnt < FIT_MAX_THREADS)
			out[cnt++] = v[i].tid;
	}
	return cnt;
}

/* Profiler spans of thread @tid that vote: its first FIT_MAX_VOTERS in file order. */
static size_t voters(const struct named_span *prof, size_t nprof, int64_t tid,
		     const struct named_span **out)
{
	size_t n = 0;

	for (size_t i = 0; i < nprof && n < FIT_MAX_VOTERS; i++)
		if (prof[i].tid == tid)
			out[n++] = &prof[i];
	return n;
}

int fit_legacy_clock(const struct named_span *prof, size_t nprof, const struct named_span *ours,
		     size_t nours, int64_t lo_ns, int64_t hi_ns, int64_t slack_ns,
		     struct legacy_fit *fit)
{
	const struct named_span **sorted = NULL, **vote = NULL;
	int64_t ptids[FIT_MAX_THREADS], otids[FIT_MAX_THREADS];
	int np, no, err = -ENOMEM;
	struct ivs iv = {};
	size_t best = 0;

	memset(fit, 0, sizeof(*fit));
	sorted = malloc((nours ? nours : 1) * sizeof(*sorted));
	vote = malloc(FIT_MAX_VOTERS * sizeof(*vote));
	if (!sorted || !vote)
		goto out;
	for (size_t i = 0; i < nours; i++)
		sorted[i] = &ours[i];
	qsort(sorted, nours, sizeof(*sorted), named_cmp);
	np = distinct_tids(prof, nprof, ptids);
	no = distinct_tids(ours, nours, otids);

	/* the offset: the thread pair that agrees most decides it */
	for (int p = 0; p < np; p++) {
		size_t nv = voters(prof, nprof, ptids[p], vote);

		fit->considered += nv;
		for (int o = 0; o < no; o++) {
			size_t count;
			int64_t at;

			iv.n = 0;
			for (size_t k = 0; k < nv; k++)
				if ((err = intervals_of(vote[k], sorted, nours, otids[o], lo_ns,
							hi_ns, slack_ns, &iv)))
					goto out;
			if ((err = best_point(&iv, &at, &count)))
				goto out;
			if (count > best) {
				best = count;
				fit->offset_ns = at;
			}
		}
	}
	fit->votes = best;
	/* at that offset, each profiler thread goes with the thread of ours it agrees with most */
	for (int p = 0; best && p < np; p++) {
		size_t nv = voters(prof, nprof, ptids[p], vote), top = 0;
		int64_t to = 0;

		for (int o = 0; o < no; o++) {
			size_t agree = 0;

			for (size_t k = 0; k < nv; k++) {
				iv.n = 0;
				if ((err = intervals_of(vote[k], sorted, nours, otids[o],
							fit->offset_ns, fit->offset_ns, slack_ns,
							&iv)))
					goto out;
				agree += iv.n > 0;
			}
			if (agree > top) {
				top = agree;
				to = otids[o];
			}
		}
		if (top) {
			fit->tid_from[fit->nthreads] = ptids[p];
			fit->tid_to[fit->nthreads++] = to;
		}
	}
	err = 0;
out:
	free(iv.v);
	free(sorted);
	free(vote);
	return err;
}
