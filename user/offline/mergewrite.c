// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Merge's second pass (mergeplan.h): each input read again as a stream and written as it is
 * read, with the plan applied. Kineto's events are written back as they were read (numbers keep
 * their exact text), ours are rewritten on the way out: ts shifted by an integer number of ns
 * (parsed from the decimal text, so no float rounding creeps in), device pids, correlation ids
 * and arrow ids moved where they would clash with Kineto's. Output is one event a line,
 * traceEvents last, like the tracer's own files, so `recover` can close a cut merge too.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/exitcodes.h"
#include "common/intset.h"
#include "common/log.h"
#include "common/util.h"
#include "offline/jsonparse.h"
#include "offline/merge.h"
#include "offline/mergeplan.h"
#include "offline/tracestream.h"
#include "output/jsonw.h"
#include "output/output.h"

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
		o.moved = merge_remap_pid(m, pid, &o.to);
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
		jw_i64(w, merge_legacy_tid(p->m, tid));
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

		if (merge_legacy_tid(m, tid) != MERGE_LEGACY_TID + tid)
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

/* The second pass over one input: each event written as it is read. */
static int write_side(struct mctx *m, const struct side *s, bool ours, char *err,
		      size_t errlen)
{
	struct tstream *ts;
	const struct jv *ev;
	size_t idx = 0;
	char e[200];
	int r, ret;

	ret = merge_src_open(s->src, &ts, err, errlen);
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
		ret = merge_src_bad(s->src, ts, e, err, errlen);
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
