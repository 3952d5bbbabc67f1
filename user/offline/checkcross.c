// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * check's rules across events, once every event was read: the records checkevent.c kept,
 * each spool sorted (spool.h), walked once: spans and flow points by lane and time (partial
 * overlaps, depth, flows off their slices), flows by cat, name and id, bind_ids, metadata.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "offline/checkctx.h"
#include "offline/checkcross.h"
#include "offline/spool.h"

/* --- spans: partial overlaps, depth, and whether flows sit on one ----------------------------- */

struct sweep {
	struct span stack[CHECK_MAX_DEPTH];
	size_t depth;
	bool lane;		/* pid, tid and pmax are of a lane */
	int64_t pid, tid, pmax;	/* the lane's largest end so far */
};

static void sweep_span(struct ctx *c, struct sweep *w, const struct span *s)
{
	if (!w->lane || lane_cmp(w->pid, w->tid, s->r.pid, s->r.tid)) {
		w->lane = true;
		w->pid = s->r.pid;
		w->tid = s->r.tid;
		w->pmax = s->end;
		w->depth = 0;
	} else if (s->end > w->pmax) {
		w->pmax = s->end;
	}
	while (w->depth && w->stack[w->depth - 1].end <= s->r.ts)
		w->depth--;
	if (w->depth && s->end > w->stack[w->depth - 1].end) {
		const struct span *p = &w->stack[w->depth - 1];
		char a[32], b[32], d[32], e[32], pname[64];

		ck_fmt_us(a, sizeof(a), p->r.ts);
		ck_fmt_us(b, sizeof(b), p->end);
		ck_fmt_us(d, sizeof(d), s->r.ts);
		ck_fmt_us(e, sizeof(e), s->end);
		ck_clean(pname, sizeof(pname), ck_name_of(c, p->r.name));
		ck_problem_ref(c, CK_OVERLAP, &s->r, "[%s, %s] partially overlaps event %llu (%s) "
			       "[%s, %s] on the same pid/tid (Perfetto moves it to another track)",
			       d, e, (unsigned long long)p->r.idx, pname, a, b);
		/* leave it out of the nesting: the rest is judged against the parents */
		return;
	}
	if (w->depth >= CHECK_MAX_DEPTH) {
		ck_problem_ref(c, CK_TOO_DEEP, &s->r, "nested %d deep on its pid/tid: Perfetto "
			       "drops slices past depth %d", CHECK_MAX_DEPTH + 1, CHECK_MAX_DEPTH);
		return;
	}
	w->stack[w->depth++] = *s;
}

/* Is the flow event inside (bounds included) some span of its lane read so far? */
static void sweep_point(struct ctx *c, const struct sweep *w, const struct point *p)
{
	if (w->lane && !lane_cmp(w->pid, w->tid, p->r.pid, p->r.tid) && w->pmax >= p->r.ts)
		return;
	ck_problem_ref(c, CK_FLOW_OFF_SPAN, &p->r, "flow %s is not inside any X event of its "
		       "pid/tid (the arrow has no slice to bind to)", p->ph == 's' ? "start" :
		       "finish");
}

/*
 * Spans and flow points, both in lane and ts order, in one pass: a point is judged once every
 * span of its lane that starts at or before it was read.
 */
static void check_spans(struct ctx *c)
{
	const struct point *p = spool_next(c->points);
	struct sweep *w = calloc(1, sizeof(*w));
	const struct span *s;

	if (!w) {
		c->err = -ENOMEM;
		return;
	}
	while ((s = spool_next(c->spans))) {
		for (; p; p = spool_next(c->points)) {
			int r = lane_cmp(s->r.pid, s->r.tid, p->r.pid, p->r.tid);

			if (r < 0 || (!r && s->r.ts <= p->r.ts))
				break;
			sweep_point(c, w, p);
		}
		sweep_span(c, w, s);
	}
	for (; p; p = spool_next(c->points))
		sweep_point(c, w, p);
	free(w);
}

/* --- flows ------------------------------------------------------------------------------------ */

/* One cat, name and id: one start and one finish, the finish not earlier. */
static void check_flow_group(struct ctx *c, const struct flow *g, size_t n)
{
	size_t ns = 0, nf = 0;
	const struct flow *s = NULL, *f = NULL;
	char id[24];

	for (size_t k = 0; k < n; k++) {
		if (g[k].ph == 's') {
			ns++;
			s = s ? s : &g[k];
		} else {
			nf++;
			f = f ? f : &g[k];
		}
	}
	snprintf(id, sizeof(id), "%llu", (unsigned long long)g->id);
	if (!ns || !nf) {
		for (size_t k = 0; k < n; k++)
			ck_problem_ref(c, CK_FLOW_UNMATCHED, &g[k].r, "flow %s id %s has no %s",
				       ns ? "start" : "finish", id,
				       ns ? "finish ('f')" : "start ('s')");
		return;
	}
	if (ns > 1 || nf > 1) {
		/*
		 * the first of each binds; Perfetto drops the other starts and binds the other
		 * finishes to the first start: arrows between the wrong slices
		 */
		for (size_t k = 0; k < n; k++) {
			if (&g[k] == s || &g[k] == f)
				continue;
			ck_problem_ref(c, CK_FLOW_DUP, &g[k].r, "flow id %s is used by %zu starts "
				       "and %zu finishes (Perfetto: flow_duplicate_id: one arrow "
				       "an id)", id, ns, nf);
		}
		return;
	}
	if (s->r.ts_ok && f->r.ts_ok && f->r.ts < s->r.ts)
		ck_problem_ref(c, CK_FLOW_BACKWARDS, &f->r, "flow finish before its start (event "
			       "%llu): Perfetto reads events in time order and drops the arrow",
			       (unsigned long long)s->r.idx);
}

/*
 * The flows grouped by cat, name and id. A group is held whole (two events of an arrow; more
 * only in a broken trace). Returns the number of v1 arrows.
 */
static size_t check_flows(struct ctx *c)
{
	struct flow *g = NULL;
	size_t n = 0, cap = 0, arrows = 0;
	const struct flow *f;

	while ((f = spool_next(c->flows))) {
		if (n && (g->key != f->key || g->id != f->id)) {
			check_flow_group(c, g, n);
			arrows++;
			n = 0;
		}
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct flow *ng = realloc(g, nc * sizeof(*ng));

			if (!ng) {
				c->err = -ENOMEM;
				break;
			}
			g = ng;
			cap = nc;
		}
		g[n++] = *f;
	}
	if (n) {
		check_flow_group(c, g, n);
		arrows++;
	}
	free(g);
	return arrows;
}

static void check_binds(struct ctx *c, size_t nv1)
{
	const struct bind *b;
	bool started = false, first = true;
	uint64_t last = 0;

	while ((b = spool_next(c->binds))) {
		if (first || last != b->id)
			started = false;
		first = false;
		last = b->id;
		if (b->start && started)
			ck_problem_ref(c, CK_FLOW_DUP, &b->r, "bind_id %llu starts a second arrow "
				       "(flow_out; Perfetto: flow_duplicate_id)",
				       (unsigned long long)b->id);
		else if (b->id < nv1)
			ck_problem_ref(c, CK_FLOW_DUP, &b->r, "bind_id %llu is below %zu, the "
				       "number of v1 arrows (s/f), which Perfetto numbers 0, 1, "
				       "... in the same space (flow_duplicate_id, or arrows "
				       "between the wrong slices)",
				       (unsigned long long)b->id, nv1);
		started |= b->start;
	}
}

/* --- metadata --------------------------------------------------------------------------------- */

static void check_metadata(struct ctx *c)
{
	struct meta prev = {};
	const struct meta *x;
	bool have = false;

	while ((x = spool_next(c->metas))) {
		const struct meta *p = &prev;

		if (have && p->kind == x->kind && !lane_cmp(p->r.pid, p->tid, x->r.pid, x->tid)) {
			if (!x->kind && x->ts < p->ts) {
				ck_problem_ref(c, CK_META_ORDER, &x->r, "metadata ts goes back "
					       "from event %llu on the same pid/tid (non-monotonic "
					       "metadata)", (unsigned long long)p->r.idx);
			} else if (x->kind && p->val != x->val && x->ts <= p->ts) {
				/* a later name at a later ts is a rename: loaders keep the last */
				char a[64], b[64];

				ck_clean(a, sizeof(a), ck_name_of(c, p->val_name));
				ck_clean(b, sizeof(b), ck_name_of(c, x->val_name));
				ck_problem_ref(c, CK_META_CONFLICT, &x->r, "%s \"%s\" contradicts "
					       "\"%s\" of event %llu",
					       x->kind == 1 ? "process_name" : "thread_name", b, a,
					       (unsigned long long)p->r.idx);
			}
		}
		prev = *x;
		have = true;
	}
}

/* The cross-event rules, once every event was read; then the count of lines not printed. */
int check_cross(struct ctx *c)
{
	size_t arrows;
	int err = c->err;

	if (!err)
		err = spool_sort(c->spans) ?: spool_sort(c->points) ?: spool_sort(c->flows) ?:
		      spool_sort(c->binds) ?: spool_sort(c->metas);
	if (!err) {
		check_spans(c);
		arrows = check_flows(c);
		check_binds(c, arrows);
		check_metadata(c);
		err = c->err ?: spool_error(c->spans) ?: spool_error(c->points) ?:
		      spool_error(c->flows) ?: spool_error(c->binds) ?: spool_error(c->metas);
	}
	if (c->out && c->res->problems > c->printed)
		fprintf(c->out, "check: %s: ... and %zu more problems\n", c->label,
			c->res->problems - c->printed);
	return err;
}
