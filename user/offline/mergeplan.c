// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Merge's first pass (mergeplan.h): each input read once as a stream (tracestream.h), in memory
 * bounded by what the plan needs, not by the files: each trace's ids, names, extent and X spans.
 * From them the plan: the time shift between the two clocks (or, for a legacy export, a fit on
 * the ops both have), device pids, correlation ids and arrow ids of ours moved where they would
 * clash with the other trace's, the nesting fit (mergefit.h), and what is refused (clocks that
 * cannot be aligned, traces not of one run). mergewrite.c applies it.
 */
#include <errno.h>
#include <math.h>
#include <search.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/intset.h"
#include "common/util.h"
#include "offline/jsonparse.h"
#include "offline/merge.h"
#include "offline/mergeplan.h"
#include "offline/tracestream.h"

/* below this a Kineto ts is relative to baseTimeNanoseconds; above, µs since 1970 */
#define MERGE_ABSOLUTE_US	100000000000000.0
/* Traces further apart than this are not of one run: a day, longer than any profiled step */
#define MERGE_MAX_GAP_US	86400e6

/* A base time in ns: exact from plain digits, else from the double if it is sane. */
static bool base_ns(const struct jv *v, uint64_t *out)
{
	double d;

	if (jv_u64_exact(v, out))
		return true;
	if (!jv_num(v, &d) || !(d >= 0) || d > 9.2e18)
		return false;
	*out = (uint64_t)d;
	return true;
}

/*
 * Sets of a few members (pids, named tracks) kept sorted as they fill: one entry per event
 * appended, they would hold 8 bytes per event of a multi-GB trace until sealed.
 */
static int add_few(struct intset *s, int64_t x)
{
	int ret = intset_insert(s, x);

	return ret < 0 ? ret : 0;
}

/*
 * Ids: appended, and their duplicates dropped each time the set has doubled (a launch's
 * correlation is in its runtime span and its device span at least).
 */
static int add_id(struct intset *s, size_t *sealed, int64_t x)
{
	int ret = intset_append(s, x);

	if (!ret && s->n >= 2 * *sealed + (1u << 20)) {
		intset_seal(s);
		*sealed = s->n;
	}
	return ret;
}

/* One event's ids, names and extent into @s (sealed by seal_side). */
static int scan_event(struct side *s, const struct jv *ev)
{
	const char *ph = jv_get_str(ev, "ph"), *name = jv_get_str(ev, "name");
	const struct jv *args = jv_get(ev, "args");
	int64_t pid = 0, tid = 0;
	bool has_pid, has_tid;
	double ts, dur;
	uint64_t id;
	int err = 0;

	if (ev->type != JV_OBJECT || !ph)
		return 0;
	has_pid = int_of(jv_get(ev, "pid"), &pid);
	has_tid = int_of(jv_get(ev, "tid"), &tid);
	if (jv_get_str(ev, "pid")) {
		s->string_pid = true;
		if (has_tid)
			err = err ?: add_few(&s->legacy_tids, tid);
	}
	if (has_pid)
		err = err ?: add_few(&s->pids, pid);
	if (jv_u64_exact(jv_get(args, "correlation"), &id)) {
		err = err ?: add_id(&s->corrs, &s->corrs_sealed, (int64_t)(id & INT64_MAX));
		if (id > s->max_corr)
			s->max_corr = id;
	}
	if ((!strcmp(ph, "s") || !strcmp(ph, "f")) && jv_u64_exact(jv_get(ev, "id"), &id)) {
		err = err ?: add_id(&s->flows, &s->flows_sealed, (int64_t)(id & INT64_MAX));
		if (id > s->max_flow)
			s->max_flow = id;
	}
	if (!strcmp(ph, "M") && name && has_pid) {
		const char *val = jv_get_str(args, "name");

		if (!strcmp(name, "process_name")) {
			err = err ?: add_few(&s->named_pids, pid);
			if (val && !strncmp(val, "Spyre", 5))
				err = err ?: add_few(&s->dev_pids, pid);
		} else if (!strcmp(name, "thread_name") && has_tid) {
			err = err ?: add_few(&s->named_lanes, fit_lane_key(pid, tid));
		}
	}
	if (!strcmp(ph, "X") && has_pid && trace_device_cat(jv_get_str(ev, "cat")))
		err = err ?: add_few(&s->dev_pids, pid);
	if (!strcmp(ph, "X") && jv_get_num(ev, "ts", &ts)) {
		if (!jv_get_num(ev, "dur", &dur) || !(dur >= 0))
			dur = 0;
		if (!s->have_x || ts < s->first_us)
			s->first_us = ts;
		if (!s->have_x || ts + dur > s->last_us)
			s->last_us = ts + dur;
		s->have_x = true;
	}
	return err;
}

static void seal_side(struct side *s)
{
	intset_seal(&s->corrs);
	intset_seal(&s->flows);
}

static void side_free(struct side *s)
{
	tstream_close(s->ts);
	intset_free(&s->pids);
	intset_free(&s->corrs);
	intset_free(&s->flows);
	intset_free(&s->named_pids);
	intset_free(&s->named_lanes);
	intset_free(&s->dev_pids);
	intset_free(&s->legacy_tids);
	intset_free(&s->lanes);
}

/* A legacy export's thread on the merged trace: the thread of ours the clock fit paired it with,
 * else a tid of its own past every real one. */
int64_t merge_legacy_tid(const struct mctx *m, int64_t tid)
{
	const struct legacy_fit *f = &m->mi->lfit;

	for (int i = 0; i < f->nthreads; i++)
		if (f->tid_from[i] == tid)
			return f->tid_to[i];
	return MERGE_LEGACY_TID + tid;
}

bool merge_remap_pid(const struct mctx *m, int64_t pid, int64_t *to)
{
	for (int i = 0; i < m->mi->ndev; i++) {
		if (m->mi->dev_from[i] == pid) {
			*to = m->mi->dev_to[i];
			return true;
		}
	}
	return false;
}

/* CLOCK_REALTIME at our ts 0, into mi->spyre_base_ns; -EINVAL with a message when unknown. */
static int our_base(struct merge_info *mi, const struct jv *ours, char *err, size_t errlen)
{
	if (base_ns(jv_get(jv_get(ours, "spyreTracer"), "realtimeBaseNs"), &mi->spyre_base_ns) ||
	    base_ns(jv_get(ours, "baseTimeNanoseconds"), &mi->spyre_base_ns))
		return 0;
	return errf(err, errlen, -EINVAL, "our trace has neither spyreTracer.realtimeBaseNs nor "
		    "baseTimeNanoseconds: its clock is unknown");
}

/* The clock anchors; -EINVAL/-ERANGE with a message when the traces cannot be aligned. */
static int anchors(struct mctx *m, const struct jv *ours, const struct jv *kineto, char *err,
		   size_t errlen)
{
	const struct jv *tr = jv_get(ours, "spyreTracer");
	struct merge_info *mi = m->mi;
	uint64_t diff;
	int ret;

	if (!tr && jv_get(kineto, "spyreTracer"))
		return errf(err, errlen, -EINVAL, "the first trace is not from spyre-bpftrace but "
			    "the second is: give ours first, then Kineto's");
	if ((ret = our_base(mi, ours, err, errlen)))
		return ret;
	if (kineto->type == JV_OBJECT &&
	    base_ns(jv_get(kineto, "baseTimeNanoseconds"), &mi->kineto_base_ns)) {
		mi->kineto_absolute = false;
	} else {
		/* pre-2023 Kineto: no base, ts in µs since the epoch */
		if (!m->k.have_x || !(m->k.first_us > MERGE_ABSOLUTE_US))
			return errf(err, errlen, -ERANGE, "the Kineto trace has no "
				    "baseTimeNanoseconds and its ts are not µs since the epoch: "
				    "its clock is unknown");
		mi->kineto_base_ns = 0;
		mi->kineto_absolute = true;
	}
	diff = mi->spyre_base_ns >= mi->kineto_base_ns ? mi->spyre_base_ns - mi->kineto_base_ns :
		mi->kineto_base_ns - mi->spyre_base_ns;
	/* ours must land where µs with 3 decimals still name single ns (< 2^53 ns) */
	if (diff > (uint64_t)MERGE_MAX_US * 1000 * (mi->kineto_absolute ? 1000 : 1))
		return errf(err, errlen, -ERANGE, "the traces' clocks are %.0f days apart: not "
			    "the same job?", diff / 86400e9);
	mi->shift_ns = mi->spyre_base_ns >= mi->kineto_base_ns ? (int64_t)diff : -(int64_t)diff;
	return 0;
}

/* Our device pids that Kineto uses too go to pids neither trace uses. */
static void plan_pids(struct mctx *m)
{
	struct merge_info *mi = m->mi;
	int64_t next = 0;

	for (size_t i = 0; i < m->o.dev_pids.n && mi->ndev < MERGE_MAX_DEVICE_PIDS; i++) {
		int64_t p = m->o.dev_pids.v[i];
		bool taken;

		if (!intset_has(&m->k.pids, p))
			continue;
		do {
			taken = intset_has(&m->k.pids, next) || intset_has(&m->o.pids, next);
			for (int j = 0; j < mi->ndev && !taken; j++)
				taken = mi->dev_to[j] == next;
		} while (taken && ++next < INT32_MAX);
		mi->dev_from[mi->ndev] = p;
		mi->dev_to[mi->ndev++] = next++;
	}
}

/* Is one of @ids, moved by @off, one of Kineto's correlation or arrow ids? */
static bool ids_clash(const struct mctx *m, const struct intset *ids, uint64_t off)
{
	for (size_t i = 0; i < ids->n; i++) {
		int64_t id = (int64_t)(((uint64_t)ids->v[i] + off) & INT64_MAX);

		if (intset_has(&m->k.corrs, id) || intset_has(&m->k.flows, id))
			return true;
	}
	return false;
}

/*
 * The offset that moves @ids clear of Kineto's correlation and arrow ids: 0 if they are clear,
 * else one that puts the smallest of them just past @kmax (the largest of the same kind of
 * Kineto's), else just past Kineto's largest id. One number, whatever it is, joins them to
 * nothing of Kineto's: aiu-trace-analyzer draws an arrow from an 's' to every kernel whose
 * args.correlation equals its id, Perfetto one from the first 's' to every 'f' of an id. Moved
 * from the smallest, not by the largest: two of our traces both number from 2^52 (device.h),
 * and 2^52 + 2^52 would be past 2^53, where a viewer reading ids as doubles merges neighbours.
 */
static uint64_t clear_offset(const struct mctx *m, const struct intset *ids, uint64_t max,
			     uint64_t kmax)
{
	uint64_t all = m->k.max_corr > m->k.max_flow ? m->k.max_corr : m->k.max_flow;
	uint64_t min = ids->n ? (uint64_t)ids->v[0] : 0;	/* the set is sorted */

	if (!ids_clash(m, ids, 0) || max >= UINT64_MAX / 2 || all >= UINT64_MAX / 2)
		return 0;
	/* a clash means one of ours is one of Kineto's: min <= that <= all */
	if (kmax >= min && !ids_clash(m, ids, kmax + 1 - min))
		return kmax + 1 - min;
	return all + 1 - min;
}

/*
 * Our correlations and arrow ids (the tracer's own sequences, see device.h) move apart: each
 * only where it clashes with Kineto's.
 */
static void plan_ids(struct mctx *m)
{
	m->mi->corr_offset = clear_offset(m, &m->o.corrs, m->o.max_corr, m->k.max_corr);
	m->mi->flow_offset = clear_offset(m, &m->o.flows, m->o.max_flow, m->k.max_flow);
}

/* An X event's start and end in ns on its own time base (ts as written, dur >= 0). */
static bool x_times(const struct jv *ev, int64_t *ts, int64_t *end)
{
	const char *ph = jv_get_str(ev, "ph");
	int64_t dur = 0;

	if (ev->type != JV_OBJECT || !ph || strcmp(ph, "X") || !us_ns(jv_get(ev, "ts"), ts))
		return false;
	if (!us_ns(jv_get(ev, "dur"), &dur) || dur < 0)
		dur = 0;
	*end = *ts + dur;
	return true;
}

int merge_src_open(const struct merge_src *src, struct tstream **out, char *err, size_t errlen)
{
	char e[200];

	if (src->data) {
		/* tests: the text in memory, read in chunks as a file would be */
		*out = tstream_open_mem(src->data, src->len, 1 << 16);
		if (!*out)
			return errf(err, errlen, -ENOMEM, "%s: %s", src->name, strerror(ENOMEM));
		return 0;
	}
	*out = tstream_open(src->name, e, sizeof(e));
	if (!*out)
		return errf(err, errlen, errno ? -errno : -EIO, "%s: %s", src->name, e);
	return 0;
}

int merge_src_bad(const struct merge_src *src, struct tstream *ts, const char *why, char *err,
		  size_t errlen)
{
	if (tstream_gzip_cut(ts))
		return errf(err, errlen, -EINVAL, "%s: the gzip stream is cut short (%s); "
			    "`recover` writes a whole trace of what it holds", src->name, why);
	return errf(err, errlen, -EINVAL, "%s: not valid JSON: %s", src->name, why);
}

/* A span's pid when it is not a number (a legacy export's "CPU functions") */
#define NO_PID	INT64_MIN

/* @ev, when an X span on a thread, kept for the nesting fit (fit_tracks). */
static int keep_span(struct mctx *m, const struct jv *ev, size_t idx, bool ours)
{
	struct fit_span sp = { .idx = (uint32_t)idx, .ours = ours };
	int err;

	if (!x_times(ev, &sp.ts, &sp.end) || !int_of(jv_get(ev, "tid"), &sp.tid))
		return 0;
	if (!int_of(jv_get(ev, "pid"), &sp.pid)) {
		if (ours)
			return 0;
		sp.pid = NO_PID;
	}
	if (idx > UINT32_MAX)
		return -EFBIG;
	/* how many tracks the fit may move: m->moved's size, not one a span */
	err = add_few(ours ? &m->o.lanes : &m->k.lanes,
		      fit_lane_key(sp.pid == NO_PID ? -1 : sp.pid, sp.tid));
	if (err)
		return err;
	err = array_reserve(&m->spans, &m->spans_cap, m->nspans + 1, sizeof(sp), 4096);
	if (err)
		return err;
	m->spans[m->nspans++] = sp;
	return 0;
}

/*
 * The first pass over one input: its ids, names and extent (scan_event), its spans, its count
 * of events, and the document without its events (s->head, held by the open stream).
 */
static int read_side(struct mctx *m, struct side *s, const struct merge_src *src, bool ours,
		     char *err, size_t errlen)
{
	const struct jv *ev;
	char e[200];
	int r, ret;

	s->src = src;
	ret = merge_src_open(src, &s->ts, err, errlen);
	if (ret)
		return ret;
	while ((r = tstream_next(s->ts, &ev, e, sizeof(e))) == 1) {
		ret = scan_event(s, ev);
		if (!ret)
			ret = keep_span(m, ev, s->nevents, ours);
		if (ret)
			return errf(err, errlen, ret, "%s: %s", src->name, strerror(-ret));
		s->nevents++;
	}
	if (r < 0)
		return merge_src_bad(src, s->ts, e, err, errlen);
	s->head = tstream_head(s->ts);
	seal_side(s);
	return 0;
}

/* The legacy export's ts 0 on our clock: from the ops both traces have (see mergefit.h). */
#define LEGACY_BEFORE_NS	(2 * 1000 * 1000ll)	/* the job's stamp may be a bit late */
#define LEGACY_AFTER_NS		(20 * 1000 * 1000ll)	/* enabling took 0.5 ms here */
#define LEGACY_SLACK_NS		1000			/* its ts and dur are whole µs */

static int name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* @name kept once for the whole fit (one copy per distinct name); NULL without memory */
static const char *intern(void **pool, const char *name)
{
	char *const *hit = tfind(name, pool, name_cmp);
	char *c;

	if (hit)
		return *hit;
	c = strdup(name);
	if (!c)
		return NULL;
	hit = tsearch(c, pool, name_cmp);
	if (!hit || *hit != c)
		free(c);
	return hit ? *hit : NULL;
}

/* Our thread @tid's process, from its first runtime span (our_pid_of) */
static int note_thread(struct mctx *m, int64_t tid, int64_t pid)
{
	int64_t *v;

	for (size_t i = 0; i < m->ntid_pid; i++)
		if (m->tid_pid[2 * i] == tid)
			return 0;
	if (array_reserve(&m->tid_pid, &m->tid_pid_cap, 2 * (m->ntid_pid + 1), sizeof(*v), 16))
		return -ENOMEM;
	v = m->tid_pid;
	v[2 * m->ntid_pid] = tid;
	v[2 * m->ntid_pid++ + 1] = pid;
	return 0;
}

/*
 * One more pass over one side, for a legacy export only (PyTorch without Kineto: small): its
 * named spans (ours: the runtime's, not the device's) and, of ours, each thread's process.
 */
static int named_spans(struct mctx *m, const struct side *s, bool ours, void **pool,
		       struct named_span **out, size_t *n, char *err, size_t errlen)
{
	size_t cap = 0;
	struct tstream *ts;
	const struct jv *ev;
	char e[200];
	int r, ret;

	*out = NULL;
	*n = 0;
	ret = merge_src_open(s->src, &ts, err, errlen);
	if (ret)
		return ret;
	while ((r = tstream_next(ts, &ev, e, sizeof(e))) == 1) {
		struct named_span sp;
		const char *name;
		int64_t pid;

		if (!x_times(ev, &sp.ts, &sp.end) || !int_of(jv_get(ev, "tid"), &sp.tid) ||
		    (ours && trace_device_cat(jv_get_str(ev, "cat"))))
			continue;
		if (ours && int_of(jv_get(ev, "pid"), &pid) && (ret = note_thread(m, sp.tid, pid)))
			break;
		if (!(name = jv_get_str(ev, "name")))
			continue;
		if (!(sp.name = intern(pool, name))) {
			ret = -ENOMEM;
			break;
		}
		if ((ret = array_reserve(out, &cap, *n + 1, sizeof(sp), 1024)))
			break;
		(*out)[(*n)++] = sp;
	}
	if (ret)
		ret = errf(err, errlen, ret, "%s: %s", s->src->name, strerror(-ret));
	else if (r < 0)
		ret = merge_src_bad(s->src, ts, e, err, errlen);
	tstream_close(ts);
	return ret;
}

static int legacy_clock(struct mctx *m, int64_t guess_ns, char *err, size_t errlen)
{
	struct named_span *prof = NULL, *ours = NULL;
	size_t np = 0, no = 0;
	void *pool = NULL;
	int ret;

	ret = named_spans(m, &m->k, false, &pool, &prof, &np, err, errlen);
	if (!ret)
		ret = named_spans(m, &m->o, true, &pool, &ours, &no, err, errlen);
	if (!ret) {
		ret = fit_legacy_clock(prof, np, ours, no, guess_ns - LEGACY_BEFORE_NS,
				       guess_ns + LEGACY_AFTER_NS, LEGACY_SLACK_NS, &m->mi->lfit);
		if (ret)
			errf(err, errlen, ret, "%s", strerror(-ret));
	}
	free(prof);
	free(ours);
	tdestroy(pool, free);
	return ret;
}

/* The process of our thread @tid (@any: of our first thread), for a legacy export's "CPU
 * functions"; -1 when ours has no runtime span */
static int64_t our_pid_of(const struct mctx *m, int64_t tid, bool any)
{
	for (size_t i = 0; i < m->ntid_pid; i++)
		if (any || m->tid_pid[2 * i] == tid)
			return m->tid_pid[2 * i + 1];
	return -1;
}

static int legacy_anchors(struct mctx *m, const struct jv *ours, char *err, size_t errlen)
{
	struct merge_info *mi = m->mi;
	int64_t guess, d;
	int ret;

	if (!m->mo->profiler_start_ns)
		return errf(err, errlen, -EINVAL, "the profiler trace is a legacy PyTorch export "
			    "(a bare array, ts in µs from the profiler's start, pid \"CPU "
			    "functions\", torch's own thread numbers): its clock is unknown. Give "
			    "--profiler-start NS, CLOCK_REALTIME ns just before the profiler was "
			    "enabled (time.time_ns() before torch.autograd.profiler.profile())");
	if ((ret = our_base(mi, ours, err, errlen)))
		return ret;
	if (m->mo->profiler_start_ns > mi->spyre_base_ns + (uint64_t)MERGE_MAX_US * 1000 ||
	    mi->spyre_base_ns > m->mo->profiler_start_ns + (uint64_t)MERGE_MAX_US * 1000)
		return errf(err, errlen, -ERANGE, "--profiler-start is %.0f days from our trace's "
			    "start: not the same job?",
			    (double)((int64_t)(m->mo->profiler_start_ns - mi->spyre_base_ns)) /
			    86400e9);
	guess = (int64_t)(m->mo->profiler_start_ns - mi->spyre_base_ns);
	mi->legacy_guess_ns = guess;
	ret = legacy_clock(m, guess, err, errlen);
	if (ret)
		return ret;
	d = mi->lfit.votes ? mi->lfit.offset_ns : guess;
	mi->kineto_base_ns = mi->spyre_base_ns + (uint64_t)d;
	mi->shift_ns = -d;
	mi->legacy_pid = mi->lfit.nthreads ? our_pid_of(m, mi->lfit.tid_to[0], false) :
		our_pid_of(m, 0, true);
	if (mi->legacy_pid < 0)
		return errf(err, errlen, -EINVAL, "our trace has no runtime call of a process to "
			    "put the legacy export's \"CPU functions\" on");
	return 0;
}

static int adj_cmp(const void *a, const void *b)
{
	const struct adjusted *x = a, *y = b;

	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Nest our spans with the profiler's, lane by lane (mergefit.h): the spans the first pass kept
 * go onto the merged base; the moves land in m->adj_*, lanes that need their own track in
 * m->moved. The spans are freed: only the moves are needed to write.
 */
static int fit_tracks(struct mctx *m)
{
	struct fit_span *sp = m->spans;
	size_t n = 0, no = 0, nk = 0, nl;
	int err = -ENOMEM;

	for (size_t i = 0; i < m->nspans; i++) {
		struct fit_span s = sp[i];
		int64_t to;

		if (!s.ours) {
			if (m->mi->legacy) {
				s.pid = m->mi->legacy_pid;
				s.tid = merge_legacy_tid(m, s.tid);
			} else if (s.pid == NO_PID) {
				continue;
			}
			/* a legacy export rounds ts and dur to whole µs each */
			s.tol = m->mi->legacy ? LEGACY_SLACK_NS : 0;
		} else {
			if (merge_remap_pid(m, s.pid, &to))
				s.pid = to;
			s.ts += m->mi->shift_ns;
			s.end += m->mi->shift_ns;
			s.tol = m->mi->tol_ns;
		}
		s.ts0 = s.ts;
		s.end0 = s.end;
		sp[n++] = s;
	}
	/* a lane of either trace is at most one lane merged (pids and legacy tids map 1:1) */
	nl = m->o.lanes.n + m->k.lanes.n + 1;
	m->moved = calloc(nl, sizeof(*m->moved));
	m->moved_named = calloc(nl, sizeof(*m->moved_named));
	if (!m->moved || !m->moved_named)
		goto out;
	err = fit_nesting(sp, n, m->moved, &m->nmoved, &m->mi->fit);
	if (err)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (sp[i].ts != sp[i].ts0 || sp[i].end != sp[i].end0)
			*(sp[i].ours ? &no : &nk) += 1;
	m->adj_o.v = calloc(no + 1, sizeof(*m->adj_o.v));
	m->adj_k.v = calloc(nk + 1, sizeof(*m->adj_k.v));
	err = -ENOMEM;
	if (!m->adj_o.v || !m->adj_k.v)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct adj_list *l = sp[i].ours ? &m->adj_o : &m->adj_k;

		if (sp[i].ts != sp[i].ts0 || sp[i].end != sp[i].end0)
			l->v[l->n++] = (struct adjusted){ sp[i].idx, sp[i].ts, sp[i].end };
	}
	qsort(m->adj_o.v, m->adj_o.n, sizeof(*m->adj_o.v), adj_cmp);
	qsort(m->adj_k.v, m->adj_k.n, sizeof(*m->adj_k.v), adj_cmp);
	err = 0;
out:
	free(m->spans);
	m->spans = NULL;
	m->nspans = m->spans_cap = 0;
	return err;
}

void merge_free(struct merge *g)
{
	if (!g)
		return;
	side_free(&g->m.k);
	side_free(&g->m.o);
	free(g->m.spans);
	free(g->m.adj_o.v);
	free(g->m.adj_k.v);
	free(g->m.moved);
	free(g->m.moved_named);
	free(g->m.tid_pid);
	free(g);
}

int merge_plan(const struct merge_src *ours, const struct merge_src *other,
	       const struct merge_opts *mo, struct merge_info *mi, struct merge **out, char *err,
	       size_t errlen)
{
	struct merge *g = calloc(1, sizeof(*g));
	const struct jv *oh, *kh;
	struct mctx *m;
	int64_t rank;
	int ret;

	*out = NULL;
	memset(mi, 0, sizeof(*mi));
	if (!g)
		return errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	g->mo = mo ? *mo : (struct merge_opts){ .tol_ns = MERGE_DEFAULT_TOL_NS };
	m = &g->m;
	m->mi = mi;
	m->mo = &g->mo;
	mi->tol_ns = m->mo->tol_ns;

	ret = read_side(m, &m->o, ours, true, err, errlen);
	if (ret)
		goto fail;
	oh = m->o.head;
	ret = -EINVAL;
	if (!oh || oh->type != JV_OBJECT) {
		errf(err, errlen, ret, "our trace is not a trace object");
		goto fail;
	}
	if (!tstream_in_events(m->o.ts)) {
		errf(err, errlen, ret, "our trace has no traceEvents array");
		goto fail;
	}
	ret = read_side(m, &m->k, other, false, err, errlen);
	if (ret)
		goto fail;
	kh = m->k.head;
	ret = -EINVAL;
	if (!kh || (kh->type != JV_OBJECT && kh->type != JV_ARRAY)) {
		errf(err, errlen, ret, "the Kineto trace is not a trace");
		goto fail;
	}
	if (kh->type == JV_OBJECT && !tstream_in_events(m->k.ts)) {
		errf(err, errlen, ret, "the Kineto trace has no traceEvents array");
		goto fail;
	}

	snprintf(m->dev_suffix, sizeof(m->dev_suffix), "%s", DEVICE_SUFFIX);
	if (int_of(jv_get(jv_get(oh, "distributedInfo"), "rank"), &rank))
		snprintf(m->dev_suffix, sizeof(m->dev_suffix), " (spyre-bpftrace, rank %lld)",
			 (long long)rank);
	/* a bare array with "CPU functions" pids and ts near 0: PyTorch without Kineto */
	mi->legacy = kh->type == JV_ARRAY && m->k.string_pid &&
		!(m->k.have_x && m->k.first_us > MERGE_ABSOLUTE_US);
	mi->profiler_ours = kh->type == JV_OBJECT && jv_get(kh, "spyreTracer");
	ret = mi->legacy ? legacy_anchors(m, oh, err, errlen) : anchors(m, oh, kh, err, errlen);
	if (ret)
		goto fail;
	plan_pids(m);
	plan_ids(m);
	ret = fit_tracks(m);
	if (ret) {
		errf(err, errlen, ret, "%s", strerror(-ret));
		goto fail;
	}
	if (m->k.have_x && m->o.have_x) {
		double shift_us = mi->shift_ns / 1000.0;

		mi->overlap_known = true;
		mi->gap_us = m->o.first_us + shift_us > m->k.last_us ?
			m->o.first_us + shift_us - m->k.last_us :
			m->o.last_us + shift_us < m->k.first_us ?
			m->o.last_us + shift_us - m->k.first_us : 0;
		/*
		 * Not one run: traces 29 days apart were merged with a warning into a file in
		 * which check found 135,927 events before ts 0 (ours, before the profiler's
		 * base). Refused, as a merge of them shows nothing side by side.
		 */
		if (fabs(mi->gap_us) > MERGE_MAX_GAP_US) {
			ret = errf(err, errlen, -ERANGE, "the traces are %.1f days apart (ours %s "
				   "the other's): not one run; merge traces taken together",
				   fabs(mi->gap_us) / 86400e6, mi->gap_us > 0 ? "after" : "before");
			goto fail;
		}
	}
	if (m->o.have_x && m->o.first_us + mi->shift_ns / 1000.0 < 0) {
		ret = errf(err, errlen, -ERANGE, "ours would start %.3f s before the other trace's "
			   "time 0 (its baseTimeNanoseconds): viewers drop events before 0; give "
			   "the earlier trace second", -(m->o.first_us + mi->shift_ns / 1000.0) / 1e6);
		goto fail;
	}
	*out = g;
	return 0;
fail:
	merge_free(g);
	return ret;
}
