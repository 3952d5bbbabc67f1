// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Merging reads each input twice as a stream (tracestream.h), in memory bounded by what the
 * plan needs, not by the files: the first pass takes each trace's ids, extent and X spans (the
 * nesting fit), the second writes. Kineto's events are written back as they were read
 * (numbers keep their exact text), ours are rewritten on the way out: ts shifted by an integer
 * number of ns (parsed from the decimal text, so no float rounding creeps in), device pids,
 * correlation ids and arrow ids moved where they would clash with Kineto's. Output is one
 * event a line, traceEvents last, like the tracer's own files, so `recover` can close a cut
 * merge too.
 */
#include <errno.h>
#include <math.h>
#include <search.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/array.h"
#include "common/exitcodes.h"
#include "common/intset.h"
#include "offline/jsonparse.h"
#include "common/util.h"
#include "common/log.h"
#include "output/jsonw.h"
#include "offline/merge.h"
#include "output/output.h"
#include "offline/tracestream.h"

/* ts beyond ±9e12 µs (104 days of ns in a double) is not a Kineto or spyre-bpftrace ts */
#define MERGE_MAX_US		9000000000000LL
/* below this a Kineto ts is relative to baseTimeNanoseconds; above, µs since 1970 */
#define MERGE_ABSOLUTE_US	100000000000000.0
#define DEVICE_SUFFIX		" (spyre-bpftrace)"
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

/* µs -> ns, exactly (jv_us_ns), within ±MERGE_MAX_US */
static bool us_ns(const struct jv *v, int64_t *out)
{
	return jv_us_ns(v, MERGE_MAX_US, out);
}

static bool int_of(const struct jv *v, int64_t *out)
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

/* --- writing ---------------------------------------------------------------------------------- */

/*
 * A member's value written differently (@w at the value, the key written): true, else false and
 * the value is copied as it is.
 */
typedef bool (*member_fn)(struct jw *w, const struct jv *member, void *ctx);

static void put_value(struct jw *w, const struct jv *v);

/* Object @v member by member, in its order; @fn (may be NULL) may write a member's value. */
static void put_members(struct jw *w, const struct jv *v, member_fn fn, void *ctx)
{
	const struct jv *c;
	bool first = true;

	jw_raw(w, "{", 1);
	jv_foreach(c, v) {
		if (!first)
			jw_raw(w, ",", 1);
		first = false;
		jw_str(w, c->key);
		jw_raw(w, ":", 1);
		if (!fn || !fn(w, c, ctx))
			put_value(w, c);
	}
	jw_raw(w, "}", 1);
}

static void put_value(struct jw *w, const struct jv *v)
{
	const struct jv *c;
	bool first = true;

	switch (v->type) {
	case JV_NULL:
		jw_lit(w, "null");
		break;
	case JV_BOOL:
		jw_lit(w, v->b ? "true" : "false");
		break;
	case JV_NUMBER:
		jw_lit(w, v->num.raw);
		break;
	case JV_STRING:
		/* a \u0000 inside a string ends it here: no trace tool writes one */
		jw_strn(w, v->str.s, v->str.len);
		break;
	case JV_OBJECT:
		put_members(w, v, NULL, NULL);
		break;
	case JV_ARRAY:
		jw_raw(w, "[", 1);
		jv_foreach(c, v) {
			if (!first)
				jw_raw(w, ",", 1);
			first = false;
			put_value(w, c);
		}
		jw_raw(w, "]", 1);
		break;
	}
}

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

static const struct adjusted *adj_find(struct adj_list *l, size_t idx)
{
	while (l->at < l->n && l->v[l->at].idx < idx)
		l->at++;
	return l->at < l->n && l->v[l->at].idx == idx ? &l->v[l->at] : NULL;
}

/* ts and dur from the fit */
static void put_adjusted(struct jw *w, const struct adjusted *a, const char *key)
{
	jw_us_signed(w, !strcmp(key, "ts") ? a->ts : a->end - a->ts);
}

struct mctx {
	struct merge_info *mi;
	const struct merge_opts *mo;
	struct side k, o;
	struct jw *w;
	bool first_event;
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

/* A legacy export's thread on the merged trace: the thread of ours the clock fit paired it with,
 * else a tid of its own past every real one. */
static int64_t legacy_tid(const struct mctx *m, int64_t tid)
{
	const struct legacy_fit *f = &m->mi->lfit;

	for (int i = 0; i < f->nthreads; i++)
		if (f->tid_from[i] == tid)
			return f->tid_to[i];
	return MERGE_LEGACY_TID + tid;
}

static bool lane_is_moved(const struct mctx *m, int64_t pid, int64_t tid, size_t *at)
{
	int64_t key = fit_lane_key(pid, tid);

	for (size_t i = 0; i < m->nmoved; i++) {
		if (m->moved[i] == key) {
			if (at)
				*at = i;
			return true;
		}
	}
	return false;
}

static bool remap_pid(const struct mctx *m, int64_t pid, int64_t *to)
{
	for (int i = 0; i < m->mi->ndev; i++) {
		if (m->mi->dev_from[i] == pid) {
			*to = m->mi->dev_to[i];
			return true;
		}
	}
	return false;
}

static void event_sep(struct mctx *m)
{
	jw_raw(m->w, m->first_event ? "\n" : ",\n", m->first_event ? 1 : 2);
	m->first_event = false;
}

/* Our names of tracks Kineto names too would contradict Kineto's: Kineto's win. */
static bool drop_meta(const struct mctx *m, const char *name, int64_t pid, int64_t tid,
		      bool has_tid)
{
	if (!name)
		return false;
	if (!strncmp(name, "process_", 8))
		return intset_has(&m->k.named_pids, pid);
	if (!strncmp(name, "thread_", 7))
		return has_tid && intset_has(&m->k.named_lanes, fit_lane_key(pid, tid));
	return false;
}

struct our_args {
	const struct mctx *m;
	const char *suffix;	/* appended to args.name */
};

static bool our_arg(struct jw *w, const struct jv *c, void *ctx)
{
	const struct our_args *a = ctx;
	uint64_t id;

	if (a->m->mi->corr_offset && !strcmp(c->key, "correlation") && jv_u64_exact(c, &id)) {
		jw_u64(w, id + a->m->mi->corr_offset);
	} else if (a->suffix && !strcmp(c->key, "name") && c->type == JV_STRING) {
		char buf[256];

		/* Kineto's own track of that index stays recognisable */
		snprintf(buf, sizeof(buf), "%s%s", c->str.s, a->suffix);
		jw_str(w, buf);
	} else {
		return false;
	}
	return true;
}

/* What of our event changes in the merged trace (put_our_event). */
struct our_event {
	struct mctx *m;
	const char *suffix;	/* appended to args.name (a device process Kineto has too, a thread
				 * on its own track) */
	const struct adjusted *adj;	/* its times from the nesting fit, or NULL */
	int64_t to, tid;	/* its pid when @moved, its tid */
	bool moved, own, flow, meta;
};

static bool our_member(struct jw *w, const struct jv *c, void *ctx)
{
	const struct our_event *o = ctx;
	const struct merge_info *mi = o->m->mi;
	int64_t ts;
	uint64_t id;

	if ((!strcmp(c->key, "ts") || !strcmp(c->key, "dur")) && o->adj) {
		put_adjusted(w, o->adj, c->key);
	} else if (!strcmp(c->key, "ts") && us_ns(c, &ts)) {
		jw_us_signed(w, o->meta && ts + mi->shift_ns < 0 ? 0 : ts + mi->shift_ns);
	} else if (!strcmp(c->key, "pid") && o->moved) {
		jw_i64(w, o->to);
	} else if (!strcmp(c->key, "tid") && o->own) {
		jw_i64(w, o->tid + MERGE_OWN_TRACK_TID);
	} else if (!strcmp(c->key, "id") && o->flow && mi->flow_offset && jv_u64_exact(c, &id)) {
		jw_u64(w, id + mi->flow_offset);
	} else if (!strcmp(c->key, "args") && c->type == JV_OBJECT) {
		struct our_args a = { .m = o->m, .suffix = o->suffix };

		put_members(w, c, our_arg, &a);
	} else {
		return false;
	}
	return true;
}

static void put_our_event(struct mctx *m, const struct jv *ev, size_t idx)
{
	struct our_event o = { .m = m };
	const char *ph, *name;
	int64_t pid = -1;
	bool has_tid;
	size_t lane = 0;

	if (ev->type != JV_OBJECT) {
		event_sep(m);
		put_value(m->w, ev);
		jw_commit(m->w);
		m->mi->spyre_events++;
		return;
	}
	ph = jv_get_str(ev, "ph");
	name = jv_get_str(ev, "name");
	if (int_of(jv_get(ev, "pid"), &pid))
		o.moved = remap_pid(m, pid, &o.to);
	has_tid = int_of(jv_get(ev, "tid"), &o.tid);
	o.own = has_tid && lane_is_moved(m, o.moved ? o.to : pid, o.tid, &lane);
	if (ph && !strcmp(ph, "M") && !o.own &&
	    drop_meta(m, name, o.moved ? o.to : pid, o.tid, has_tid)) {
		m->mi->dropped_meta++;
		return;
	}
	if (o.moved && name && !strcmp(name, "process_name"))
		o.suffix = m->dev_suffix;
	if (o.own && name && !strcmp(name, "thread_name") && ph && !strcmp(ph, "M")) {
		o.suffix = DEVICE_SUFFIX;
		m->moved_named[lane] = true;
	}
	o.adj = adj_find(&m->adj_o, idx);
	o.flow = ph && (!strcmp(ph, "s") || !strcmp(ph, "f"));
	/*
	 * Names and labels written at our ts 0 land before the other trace's ts 0 when it began
	 * later (a legacy export counts from the profiler's start): Perfetto's sorter drops every
	 * event before 0, names included. Metadata has no time of its own: it goes to 0.
	 */
	o.meta = ph && !strcmp(ph, "M");
	event_sep(m);
	put_members(m->w, ev, our_member, &o);
	jw_commit(m->w);
	m->mi->spyre_events++;
}

/*
 * The profiler's events are copied as they are, except the ones the nesting fit moved (legacy
 * rounding) and a legacy export's ids: its string pid becomes the job's, its thread numbers ours.
 */
struct profiler_event {
	struct mctx *m;
	const struct adjusted *adj;
};

static bool profiler_member(struct jw *w, const struct jv *c, void *ctx)
{
	const struct profiler_event *p = ctx;
	const struct merge_info *mi = p->m->mi;
	int64_t tid;

	if ((!strcmp(c->key, "ts") || !strcmp(c->key, "dur")) && p->adj)
		put_adjusted(w, p->adj, c->key);
	else if (!strcmp(c->key, "pid") && mi->legacy)
		jw_i64(w, mi->legacy_pid);
	else if (!strcmp(c->key, "tid") && mi->legacy && int_of(c, &tid))
		jw_i64(w, legacy_tid(p->m, tid));
	else
		return false;
	return true;
}

static void put_profiler_event(struct mctx *m, const struct jv *ev, size_t idx)
{
	struct profiler_event p = { .m = m, .adj = adj_find(&m->adj_k, idx) };

	event_sep(m);
	if ((!m->mi->legacy && !p.adj) || ev->type != JV_OBJECT)
		put_value(m->w, ev);
	else
		put_members(m->w, ev, profiler_member, &p);
	jw_commit(m->w);
	m->mi->kineto_events++;
}

static void put_thread_name(struct mctx *m, int64_t pid, int64_t tid, const char *name)
{
	event_sep(m);
	jw_lit(m->w, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
	jw_i64(m->w, pid);
	jw_lit(m->w, ",\"tid\":");
	jw_i64(m->w, tid);
	jw_lit(m->w, ",\"ts\":0,\"args\":{\"name\":");
	jw_str(m->w, name);
	jw_lit(m->w, "}}");
	jw_commit(m->w);
}

/* Names for the tracks merge made: our threads on their own tracks, unpaired legacy threads. */
static void put_track_names(struct mctx *m)
{
	char buf[96];

	for (size_t i = 0; i < m->nmoved; i++) {
		int64_t pid = (int64_t)((uint64_t)m->moved[i] >> 32);
		int64_t tid = (int64_t)(uint32_t)m->moved[i];

		if (m->moved_named[i])
			continue;
		snprintf(buf, sizeof(buf), "thread %lld%s", (long long)tid, DEVICE_SUFFIX);
		put_thread_name(m, pid, tid + MERGE_OWN_TRACK_TID, buf);
	}
	if (!m->mi->legacy)
		return;
	for (size_t i = 0; i < m->k.legacy_tids.n; i++) {
		int64_t tid = m->k.legacy_tids.v[i];

		if (legacy_tid(m, tid) != MERGE_LEGACY_TID + tid)
			continue;
		snprintf(buf, sizeof(buf), "PyTorch profiler thread %lld", (long long)tid);
		put_thread_name(m, m->mi->legacy_pid, MERGE_LEGACY_TID + tid, buf);
	}
}

/* Top-level members other than the ones merge writes itself. */
static bool own_member(const char *key)
{
	static const char *const own[] = { "schemaVersion", "deviceProperties", "traceEvents",
					   "displayTimeUnit", "baseTimeNanoseconds",
					   "spyreMerged" };

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (!strcmp(key, own[i]))
			return true;
	return false;
}

static void put_member(struct jw *w, const char *key, const struct jv *v)
{
	jw_key(w, key);
	put_value(w, v);
	jw_commit(w);
}

/* [{"from":A,"to":B},...]: what merge renumbered (device pids, a legacy export's threads) */
static void put_moves(struct jw *w, const char *key, const int64_t *from, const int64_t *to,
		      int n)
{
	jw_key(w, key);
	jw_arr_begin(w);
	for (int i = 0; i < n; i++) {
		jw_obj_begin(w);
		jw_kv_i64(w, "from", from[i]);
		jw_kv_i64(w, "to", to[i]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/*
 * The ranks of the processes the inputs traced. A trace of ours that knows one process's rank
 * has it in distributedInfo, whose pid is the traced process (spyreStats.targetPid); one that
 * knows several lists them in spyreDistributedInfo, by pid. Merging two ranks' traces, the
 * shared distributedInfo can only keep one of them (the second input's, as every shared
 * member): spyreDistributedInfo then lists each process either input names, by pid, so that
 * every rank stays in the merged trace.
 */
#define MERGE_MAX_DIST 1024

struct dist_entry {
	int64_t pid;
	const struct jv *info;	/* a distributedInfo, or a spyreDistributedInfo entry */
};

static bool dist_known(const struct dist_entry *d, int n, int64_t pid)
{
	for (int i = 0; i < n; i++)
		if (d[i].pid == pid)
			return true;
	return false;
}

/* @obj's processes appended to @d (the first input to name a pid keeps it); the new count */
static int dist_entries(const struct jv *obj, struct dist_entry *d, int n)
{
	const struct jv *list = jv_get(obj, "spyreDistributedInfo"), *di, *e;
	int64_t pid;

	if (list && list->type == JV_ARRAY) {
		jv_foreach(e, list)
			if (n < MERGE_MAX_DIST && e->type == JV_OBJECT &&
			    int_of(jv_get(e, "pid"), &pid) && !dist_known(d, n, pid))
				d[n++] = (struct dist_entry){ .pid = pid, .info = e };
		return n;
	}
	/* (a system-wide trace's targetPid is 0: no process of its own) */
	di = jv_get(obj, "distributedInfo");
	if (n < MERGE_MAX_DIST && di && di->type == JV_OBJECT &&
	    int_of(jv_get(jv_get(obj, "spyreStats"), "targetPid"), &pid) && pid > 0 &&
	    !dist_known(d, n, pid))
		d[n++] = (struct dist_entry){ .pid = pid, .info = di };
	return n;
}

/* spyreDistributedInfo of both inputs, when they name more than one process: true if written */
static bool put_dist(struct jw *w, const struct jv *first, const struct jv *second)
{
	struct dist_entry *d = calloc(MERGE_MAX_DIST, sizeof(*d));
	const struct jv *c;
	int n;

	if (!d)
		return false;
	n = dist_entries(second, d, dist_entries(first, d, 0));
	if (n > 1) {
		jw_key(w, "spyreDistributedInfo");
		jw_arr_begin(w);
		for (int i = 0; i < n; i++) {
			jw_obj_begin(w);
			jw_kv_i64(w, "pid", d[i].pid);
			jv_foreach(c, d[i].info)
				if (strcmp(c->key, "pid")) {
					jw_key(w, c->key);
					put_value(w, c);
				}
			jw_obj_end(w);
		}
		jw_arr_end(w);
		jw_commit(w);
	}
	free(d);
	return n > 1;
}

static void put_header(struct mctx *m, const struct jv *ours, const struct jv *kineto,
		       const char *ours_name, const char *kineto_name)
{
	const struct jv *kobj = kineto->type == JV_OBJECT ? kineto : NULL;
	const struct jv *dp = jv_get(kobj, "deviceProperties"), *v, *c;
	struct merge_info *mi = m->mi;
	struct jw *w = m->w;
	bool dist;

	jw_obj_begin(w);
	jw_key(w, "schemaVersion");
	v = jv_get(kobj, "schemaVersion");
	if (v && v->type == JV_NUMBER)
		put_value(w, v);
	else
		jw_lit(w, "1");
	/* exactly one entry, as aiu-trace-analyzer wants: Kineto's device, else ours */
	if (!jv_len(dp) || dp->type != JV_ARRAY)
		dp = jv_get(ours, "deviceProperties");
	jw_key(w, "deviceProperties");
	jw_arr_begin(w);
	jw_elem(w);
	if (jv_len(dp) && dp->type == JV_ARRAY)
		put_value(w, jv_first(dp));
	else
		jw_lit(w, "{\"id\":0,\"name\":\"Spyre (AIU)\"}");
	jw_arr_end(w);
	jw_commit(w);
	jw_nl(w);
	/* every process's rank, ours first, when the two traced different processes */
	dist = put_dist(w, ours, kobj);
	/* everything else both carry, Kineto's first; on a name clash Kineto's wins */
	jv_foreach(c, kobj)
		if (!own_member(c->key) && !(dist && !strcmp(c->key, "spyreDistributedInfo")))
			put_member(w, c->key, c);
	jv_foreach(c, ours)
		if (!own_member(c->key) && !jv_get(kobj, c->key) &&
		    !(dist && !strcmp(c->key, "spyreDistributedInfo")))
			put_member(w, c->key, c);
	v = jv_get(kobj, "displayTimeUnit");
	if (!jv_str(v))
		v = jv_get(ours, "displayTimeUnit");
	jw_kv_str(w, "displayTimeUnit", jv_str(v) ? jv_str(v) : "ms");
	jw_kv_u64(w, "baseTimeNanoseconds", mi->kineto_base_ns);
	jw_nl(w);
	jw_key(w, "spyreMerged");
	jw_obj_begin(w);
	jw_kv_str(w, "spyreTrace", ours_name);
	jw_kv_str(w, "kinetoTrace", kineto_name);
	jw_kv_str(w, "clock", "CLOCK_REALTIME");
	jw_kv_str(w, "kinetoTimestamps", mi->legacy ? "legacy" : mi->kineto_absolute ?
		  "absolute" : "relative");
	jw_kv_u64(w, "kinetoBaseTimeNanoseconds", mi->kineto_base_ns);
	jw_kv_u64(w, "spyreRealtimeBaseNs", mi->spyre_base_ns);
	jw_kv_i64(w, "shiftNs", mi->shift_ns);
	put_moves(w, "devicePids", mi->dev_from, mi->dev_to, mi->ndev);
	jw_kv_u64(w, "correlationOffset", mi->corr_offset);
	jw_kv_u64(w, "flowIdOffset", mi->flow_offset);
	jw_key(w, "nesting");
	jw_obj_begin(w);
	jw_kv_i64(w, "toleranceNs", mi->tol_ns);
	jw_kv_u64(w, "adjustedSpans", mi->fit.adjusted);
	jw_kv_i64(w, "maxAdjustNs", mi->fit.max_adjust_ns);
	jw_kv_u64(w, "ownTracks", mi->fit.lanes_moved);
	jw_kv_u64(w, "spansOnOwnTracks", mi->fit.spans_moved);
	jw_kv_u64(w, "profilerSpansAdjusted", mi->fit.profiler_adjusted);
	jw_kv_u64(w, "profilerOverlaps", mi->fit.profiler_overlaps);
	jw_obj_end(w);
	if (mi->legacy) {
		const struct legacy_fit *f = &mi->lfit;

		jw_key(w, "legacyProfiler");
		jw_obj_begin(w);
		jw_kv_u64(w, "profilerStartNs", m->mo->profiler_start_ns);
		jw_kv_u64(w, "zeroNs", mi->kineto_base_ns);
		jw_kv_u64(w, "fittedOps", f->votes);
		jw_kv_u64(w, "consideredOps", f->considered);
		jw_kv_i64(w, "pid", mi->legacy_pid);
		put_moves(w, "threads", f->tid_from, f->tid_to, f->nthreads);
		jw_obj_end(w);
	}
	jw_obj_end(w);
	/* the events go in as raw text, each with its own separator (event_sep) */
	jw_nl(w);
	jw_key(w, "traceEvents");
	jw_arr_begin(w);
	jw_commit(w);
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

/* --- reading ------------------------------------------------------------------------------- */

/* A stream over @src; -errno with "NAME: why" in @err. */
static int src_open(const struct merge_src *src, struct tstream **out, char *err, size_t errlen)
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

/* Why the stream stopped early: -EINVAL with the place in @err. */
static int src_bad(const struct merge_src *src, struct tstream *ts, const char *why, char *err,
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
	ret = src_open(src, &s->ts, err, errlen);
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
		return src_bad(src, s->ts, e, err, errlen);
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
	ret = src_open(s->src, &ts, err, errlen);
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
		ret = src_bad(s->src, ts, e, err, errlen);
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
				s.tid = legacy_tid(m, s.tid);
			} else if (s.pid == NO_PID) {
				continue;
			}
			/* a legacy export rounds ts and dur to whole µs each */
			s.tol = m->mi->legacy ? LEGACY_SLACK_NS : 0;
		} else {
			if (remap_pid(m, s.pid, &to))
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

struct merge {
	struct mctx m;
	struct merge_opts mo;
};

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

/* The second pass over one input: each event written as it is read. */
static int write_side(struct mctx *m, const struct side *s, bool ours, char *err,
		      size_t errlen)
{
	struct tstream *ts;
	const struct jv *ev;
	size_t idx = 0;
	char e[200];
	int r, ret;

	ret = src_open(s->src, &ts, err, errlen);
	if (ret)
		return ret;
	while ((r = tstream_next(ts, &ev, e, sizeof(e))) == 1 && idx < s->nevents) {
		if (ours)
			put_our_event(m, ev, idx);
		else
			put_profiler_event(m, ev, idx);
		idx++;
	}
	if (r < 0)
		ret = src_bad(s->src, ts, e, err, errlen);
	else if (r == 1 || idx != s->nevents)
		ret = errf(err, errlen, -EINVAL, "%s changed while it was merged (%zu events "
			   "read first, then %s%zu)", s->src->name, s->nevents, r == 1 ? "over " :
			   "", idx);
	tstream_close(ts);
	return ret;
}

int merge_write(struct merge *g, struct jw *w, char *err, size_t errlen)
{
	struct mctx *m = &g->m;
	int ret;

	m->w = w;
	m->first_event = true;
	put_header(m, m->o.head, m->k.head, m->o.src->name, m->k.src->name);
	ret = write_side(m, &m->k, false, err, errlen);
	if (!ret)
		ret = write_side(m, &m->o, true, err, errlen);
	if (ret)
		return ret;
	put_track_names(m);
	jw_raw(w, "\n", 1);
	jw_arr_end(w);	/* traceEvents */
	jw_obj_end(w);
	jw_raw(w, "\n", 1);
	jw_commit(w);
	ret = jw_error(w);
	if (ret)
		errf(err, errlen, ret, "%s", strerror(-ret));
	return ret;
}

int merge_files(const char *ours, const char *kineto, const char *out, bool force,
		const struct merge_opts *mo, FILE *msg)
{
	const struct merge_src os = { .name = ours }, ks = { .name = kineto };
	struct merge *g = NULL;
	struct merge_info mi;
	const char *kname;
	struct output o;
	char err[320];
	int ret, rc = EXIT_ERROR;

	ret = merge_plan(&os, &ks, mo, &mi, &g, err, sizeof(err));
	if (ret) {
		pr_err("%s", err);
		rc = ret == -ENOMEM || ret == -EFBIG ? EXIT_OUTPUT : EXIT_ERROR;
		goto out;
	}
	ret = output_open(&o, out, force);
	if (ret) {
		pr_err("cannot create %s: %s%s", out, strerror(-ret),
		       output_err_hint(ret));
		rc = EXIT_OUTPUT;
		goto out;
	}
	ret = merge_write(g, o.jw, err, sizeof(err));
	if (ret) {
		output_close(&o);
		unlink(out);
		pr_err("%s", err);
		rc = ret == -EINVAL || ret == -ERANGE ? EXIT_ERROR : EXIT_OUTPUT;
		goto out;
	}
	ret = jw_close(o.jw);
	o.jw = NULL;
	if (ret) {
		unlink(out);
		pr_err("writing %s: %s", out, strerror(-ret));
		rc = EXIT_OUTPUT;
		goto out;
	}
	/* the second trace is Kineto's, a legacy profiler export, or another of ours (a rank) */
	kname = mi.profiler_ours ? "the second trace's" : mi.legacy ? "the profiler's" : "Kineto's";
	if (mi.profiler_ours)
		fprintf(msg, "merge: wrote %s (%zu + %zu spyre-bpftrace events, the second trace's "
			"first); the first trace's moved by %+.6f s onto the second's time base\n",
			out, mi.kineto_events, mi.spyre_events, mi.shift_ns / 1e9);
	else
		fprintf(msg, "merge: wrote %s (%zu %s + %zu spyre-bpftrace events); ours moved by "
			"%+.6f s onto %s time base%s\n", out, mi.kineto_events,
			mi.legacy ? "profiler" : "Kineto", mi.spyre_events, mi.shift_ns / 1e9, kname,
			mi.kineto_absolute ? " (absolute µs)" : "");
	for (int i = 0; i < mi.ndev; i++)
		fprintf(msg, "merge: our device pid %lld is %s too: now pid %lld\n",
			(long long)mi.dev_from[i], kname, (long long)mi.dev_to[i]);
	if (mi.overlap_known && mi.gap_us)
		fprintf(msg, "merge: warning: the traces do not overlap in time: ours %s %.3f s "
			"%s %s (same job? clocks stepped?)\n", mi.gap_us > 0 ? "starts" :
			"ends", (mi.gap_us > 0 ? mi.gap_us : -mi.gap_us) / 1e6,
			mi.gap_us > 0 ? "after the end of" : "before the start of", kname);
	if (mi.corr_offset)
		fprintf(msg, "merge: our correlation ids clash with %s: shifted by %llu\n", kname,
			(unsigned long long)mi.corr_offset);
	if (mi.flow_offset)
		fprintf(msg, "merge: our ac2g arrow ids clash with %s: shifted by %llu\n", kname,
			(unsigned long long)mi.flow_offset);
	if (mi.legacy && mi.lfit.votes)
		fprintf(msg, "merge: legacy profiler export: its ts 0 is %+.3f ms from "
			"--profiler-start, fitted on %zu of %zu ops inside ours (%d thread%s "
			"paired)\n", (mi.lfit.offset_ns - mi.legacy_guess_ns) / 1e6, mi.lfit.votes,
			mi.lfit.considered, mi.lfit.nthreads, mi.lfit.nthreads == 1 ? "" : "s");
	else if (mi.legacy)
		fprintf(msg, "merge: warning: legacy profiler export: none of its ops matched a "
			"span of ours by name, so its clock is --profiler-start alone (off by the "
			"time enabling took); trace the ops it records (e.g. at::_ops::OP::call "
			"named aten::OP) for an exact fit\n");
	if (mi.fit.adjusted)
		fprintf(msg, "merge: %zu of our spans moved by at most %.3f µs to nest with the "
			"profiler's (tolerance %.3f µs)\n", mi.fit.adjusted,
			mi.fit.max_adjust_ns / 1e3, mi.tol_ns / 1e3);
	if (mi.fit.lanes_moved)
		fprintf(msg, "merge: warning: %zu of our spans on %zu thread%s overlap the "
			"profiler's by more than the tolerance: on tracks of their own "
			"(tid + %d, named \"...%s\")\n", mi.fit.spans_moved, mi.fit.lanes_moved,
			mi.fit.lanes_moved == 1 ? "" : "s", MERGE_OWN_TRACK_TID, DEVICE_SUFFIX);
	rc = EXIT_OK;
out:
	merge_free(g);
	return rc;
}

int cmd_merge(const char *ours, const char *kineto, const char *out, bool force,
	      const struct merge_opts *mo)
{
	return merge_files(ours, kineto, out, force, mo, stdout);
}
