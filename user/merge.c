// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Merging works on the two DOMs: Kineto's events are written back as they were read (numbers
 * keep their exact text), ours are rewritten on the way out: ts shifted by an integer number
 * of ns (parsed from the decimal text, so no float rounding creeps in), device pids and
 * correlation ids moved where they would clash with Kineto's. Output is one event a line,
 * traceEvents last, like the tracer's own files, so `recover` can close a cut merge too.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "env.h"
#include "jsonparse.h"
#include "util.h"
#include "jsonw.h"
#include "merge.h"
#include "output.h"

/* ts beyond ±9e12 µs (104 days of ns in a double) is not a Kineto or spyre-bpftrace ts */
#define MERGE_MAX_US		9000000000000LL
/* below this a Kineto ts is relative to baseTimeNanoseconds; above, µs since 1970 */
#define MERGE_ABSOLUTE_US	100000000000000.0
#define DEVICE_SUFFIX		" (spyre-bpftrace)"


/* A JSON number written as plain digits, exactly (doubles lose ns at 1.7e18). */
static bool raw_u64(const struct jv *v, uint64_t *out)
{
	const char *p;
	uint64_t x = 0;

	if (!v || v->type != JV_NUMBER || !v->num.raw[0])
		return false;
	for (p = v->num.raw; *p; p++) {
		unsigned int d = (unsigned int)(*p - '0');

		if (d > 9 || x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*out = x;
	return true;
}

/* A base time in ns: exact from plain digits, else from the double if it is sane. */
static bool base_ns(const struct jv *v, uint64_t *out)
{
	double d;

	if (raw_u64(v, out))
		return true;
	if (!jv_num(v, &d) || !(d >= 0) || d > 9.2e18)
		return false;
	*out = (uint64_t)d;
	return true;
}

/* µs -> ns. Plain decimals are converted digit by digit, rounded half away from zero. */
static bool us_ns(const struct jv *v, int64_t *out)
{
	int64_t ip = 0, fp = 0;
	bool neg = false, up = false;
	const char *p;
	double d;
	int nd = 0;

	if (!v || v->type != JV_NUMBER)
		return false;
	p = v->num.raw;
	if (*p == '-') {
		neg = true;
		p++;
	}
	if (*p < '0' || *p > '9')
		goto approx;
	for (; *p >= '0' && *p <= '9'; p++) {
		ip = ip * 10 + (*p - '0');
		if (ip > MERGE_MAX_US)
			return false;
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, nd++) {
			if (nd < 3)
				fp = fp * 10 + (*p - '0');
			else if (nd == 3)
				up = *p >= '5';
		}
	}
	if (*p)
		goto approx;	/* an exponent */
	for (int i = nd; i < 3; i++)
		fp *= 10;
	*out = ip * 1000 + fp + up;
	if (neg)
		*out = -*out;
	return true;
approx:
	d = v->num.d * 1000.0;
	if (!(d <= MERGE_MAX_US * 1000.0 && d >= -MERGE_MAX_US * 1000.0))
		return false;
	*out = (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
	return true;
}

static bool int_of(const struct jv *v, int64_t *out)
{
	uint64_t u;

	if (!raw_u64(v, &u) || u > INT64_MAX)
		return false;
	*out = (int64_t)u;
	return true;
}

/* --- sorted sets of integers ------------------------------------------------------------------ */

struct iset {
	int64_t *v;
	size_t n, cap;
};

static int iset_add(struct iset *s, int64_t x)
{
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		int64_t *nv = realloc(s->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = ncap;
	}
	s->v[s->n++] = x;
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void iset_seal(struct iset *s)
{
	size_t j = 0;

	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(*s->v), cmp_i64);
	for (size_t i = 0; i < s->n; i++)
		if (!j || s->v[j - 1] != s->v[i])
			s->v[j++] = s->v[i];
	s->n = j;
}

static bool iset_has(const struct iset *s, int64_t x)
{
	return s->n && bsearch(&x, s->v, s->n, sizeof(*s->v), cmp_i64);
}

/* (pid, tid) packed for the thread-name set; pids and tids of real traces fit 32 bits */
static int64_t lane_key(int64_t pid, int64_t tid)
{
	return (int64_t)(((uint64_t)pid << 32) ^ (uint64_t)(tid & 0xffffffff));
}

/* --- what each input holds ------------------------------------------------------------------- */

struct side {
	const struct jv *events;	/* the traceEvents array */
	struct iset pids;		/* every integer pid */
	struct iset ids;		/* correlation and flow ids */
	struct iset named_pids;		/* pids with a process_name */
	struct iset named_lanes;	/* (pid, tid) with a thread_name */
	struct iset dev_pids;		/* pids holding device work */
	double first_us, last_us;	/* X events, on the side's own time base */
	bool have_x;
	uint64_t max_id;
};

static bool is_device_cat(const char *cat)
{
	return cat && (!strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") ||
		       !strcmp(cat, "gpu_memset"));
}

static int scan(struct side *s, const struct jv *events)
{
	const struct jv *ev;
	int err = 0;

	s->events = events;
	jv_foreach(ev, events) {
		const char *ph = jv_get_str(ev, "ph"), *name = jv_get_str(ev, "name");
		const struct jv *args = jv_get(ev, "args");
		int64_t pid = 0, tid = 0;
		bool has_pid, has_tid;
		double ts, dur;
		uint64_t id;

		if (ev->type != JV_OBJECT || !ph)
			continue;
		has_pid = int_of(jv_get(ev, "pid"), &pid);
		has_tid = int_of(jv_get(ev, "tid"), &tid);
		if (has_pid)
			err = err ?: iset_add(&s->pids, pid);
		if (raw_u64(jv_get(args, "correlation"), &id)) {
			err = err ?: iset_add(&s->ids, (int64_t)(id & INT64_MAX));
			if (id > s->max_id)
				s->max_id = id;
		}
		if ((!strcmp(ph, "s") || !strcmp(ph, "f")) && raw_u64(jv_get(ev, "id"), &id)) {
			err = err ?: iset_add(&s->ids, (int64_t)(id & INT64_MAX));
			if (id > s->max_id)
				s->max_id = id;
		}
		if (!strcmp(ph, "M") && name && has_pid) {
			const char *val = jv_get_str(args, "name");

			if (!strcmp(name, "process_name")) {
				err = err ?: iset_add(&s->named_pids, pid);
				if (val && !strncmp(val, "Spyre", 5))
					err = err ?: iset_add(&s->dev_pids, pid);
			} else if (!strcmp(name, "thread_name") && has_tid) {
				err = err ?: iset_add(&s->named_lanes, lane_key(pid, tid));
			}
		}
		if (!strcmp(ph, "X") && has_pid && is_device_cat(jv_get_str(ev, "cat")))
			err = err ?: iset_add(&s->dev_pids, pid);
		if (!strcmp(ph, "X") && jv_get_num(ev, "ts", &ts)) {
			if (!jv_get_num(ev, "dur", &dur) || !(dur >= 0))
				dur = 0;
			if (!s->have_x || ts < s->first_us)
				s->first_us = ts;
			if (!s->have_x || ts + dur > s->last_us)
				s->last_us = ts + dur;
			s->have_x = true;
		}
	}
	if (err)
		return err;
	iset_seal(&s->pids);
	iset_seal(&s->ids);
	iset_seal(&s->named_pids);
	iset_seal(&s->named_lanes);
	iset_seal(&s->dev_pids);
	return 0;
}

static void side_free(struct side *s)
{
	free(s->pids.v);
	free(s->ids.v);
	free(s->named_pids.v);
	free(s->named_lanes.v);
	free(s->dev_pids.v);
}

/* --- writing ---------------------------------------------------------------------------------- */

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
	case JV_ARRAY:
	case JV_OBJECT:
		jw_raw(w, v->type == JV_ARRAY ? "[" : "{", 1);
		jv_foreach(c, v) {
			if (!first)
				jw_raw(w, ",", 1);
			first = false;
			if (v->type == JV_OBJECT) {
				jw_str(w, c->key);
				jw_raw(w, ":", 1);
			}
			put_value(w, c);
		}
		jw_raw(w, v->type == JV_ARRAY ? "]" : "}", 1);
		break;
	}
}

struct mctx {
	struct merge_info *mi;
	struct side k, o;
	struct jw *w;
	bool first_event;
};

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
		return iset_has(&m->k.named_pids, pid);
	if (!strncmp(name, "thread_", 7))
		return has_tid && iset_has(&m->k.named_lanes, lane_key(pid, tid));
	return false;
}

static void put_our_args(struct mctx *m, const struct jv *args, bool rename)
{
	const struct jv *c;
	bool first = true;
	uint64_t id;

	jw_raw(m->w, "{", 1);
	jv_foreach(c, args) {
		if (!first)
			jw_raw(m->w, ",", 1);
		first = false;
		jw_str(m->w, c->key);
		jw_raw(m->w, ":", 1);
		if (m->mi->corr_offset && !strcmp(c->key, "correlation") && raw_u64(c, &id)) {
			jw_u64(m->w, id + m->mi->corr_offset);
		} else if (rename && !strcmp(c->key, "name") && c->type == JV_STRING) {
			char buf[256];

			/* Kineto's own device track of that index stays recognisable */
			snprintf(buf, sizeof(buf), "%s%s", c->str.s, DEVICE_SUFFIX);
			jw_str(m->w, buf);
		} else {
			put_value(m->w, c);
		}
	}
	jw_raw(m->w, "}", 1);
}

static void put_our_event(struct mctx *m, const struct jv *ev)
{
	const char *ph, *name;
	int64_t pid = -1, tid = 0, to = 0, ts;
	bool moved = false, has_tid, flow;
	const struct jv *c;
	bool first = true;
	uint64_t id;

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
		moved = remap_pid(m, pid, &to);
	has_tid = int_of(jv_get(ev, "tid"), &tid);
	if (ph && !strcmp(ph, "M") && drop_meta(m, name, moved ? to : pid, tid, has_tid)) {
		m->mi->dropped_meta++;
		return;
	}
	flow = ph && (!strcmp(ph, "s") || !strcmp(ph, "f"));
	event_sep(m);
	jw_raw(m->w, "{", 1);
	jv_foreach(c, ev) {
		if (!first)
			jw_raw(m->w, ",", 1);
		first = false;
		jw_str(m->w, c->key);
		jw_raw(m->w, ":", 1);
		if (!strcmp(c->key, "ts") && us_ns(c, &ts))
			jw_us_signed(m->w, ts + m->mi->shift_ns);
		else if (!strcmp(c->key, "pid") && moved)
			jw_i64(m->w, to);
		else if (!strcmp(c->key, "id") && flow && m->mi->corr_offset && raw_u64(c, &id))
			jw_u64(m->w, id + m->mi->corr_offset);
		else if (!strcmp(c->key, "args") && c->type == JV_OBJECT)
			put_our_args(m, c, moved && name && !strcmp(name, "process_name"));
		else
			put_value(m->w, c);
	}
	jw_raw(m->w, "}", 1);
	jw_commit(m->w);
	m->mi->spyre_events++;
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
	jw_str(w, key);
	jw_raw(w, ":", 1);
	put_value(w, v);
	jw_raw(w, ",", 1);
	jw_commit(w);
}

static void put_header(struct mctx *m, const struct jv *ours, const struct jv *kineto,
		       const char *ours_name, const char *kineto_name)
{
	const struct jv *kobj = kineto->type == JV_OBJECT ? kineto : NULL;
	const struct jv *dp = jv_get(kobj, "deviceProperties"), *v, *c;
	struct merge_info *mi = m->mi;
	struct jw *w = m->w;

	jw_lit(w, "{\"schemaVersion\":");
	v = jv_get(kobj, "schemaVersion");
	if (v && v->type == JV_NUMBER)
		put_value(w, v);
	else
		jw_lit(w, "1");
	/* exactly one entry, as aiu-trace-analyzer wants: Kineto's device, else ours */
	if (!jv_len(dp) || dp->type != JV_ARRAY)
		dp = jv_get(ours, "deviceProperties");
	jw_lit(w, ",\"deviceProperties\":[");
	if (jv_len(dp) && dp->type == JV_ARRAY)
		put_value(w, jv_first(dp));
	else
		jw_lit(w, "{\"id\":0,\"name\":\"Spyre (AIU)\"}");
	jw_lit(w, "],\n");
	jw_commit(w);
	/* everything else both carry, Kineto's first; on a name clash Kineto's wins */
	jv_foreach(c, kobj)
		if (!own_member(c->key))
			put_member(w, c->key, c);
	jv_foreach(c, ours)
		if (!own_member(c->key) && !jv_get(kobj, c->key))
			put_member(w, c->key, c);
	jw_lit(w, "\"displayTimeUnit\":");
	v = jv_get(kobj, "displayTimeUnit");
	if (!jv_str(v))
		v = jv_get(ours, "displayTimeUnit");
	jw_str(w, jv_str(v) ? jv_str(v) : "ms");
	jw_lit(w, ",\"baseTimeNanoseconds\":");
	jw_u64(w, mi->kineto_base_ns);
	jw_lit(w, ",\n\"spyreMerged\":{\"spyreTrace\":");
	jw_str(w, ours_name);
	jw_lit(w, ",\"kinetoTrace\":");
	jw_str(w, kineto_name);
	jw_lit(w, ",\"clock\":\"CLOCK_REALTIME\",\"kinetoTimestamps\":");
	jw_lit(w, mi->kineto_absolute ? "\"absolute\"" : "\"relative\"");
	jw_lit(w, ",\"kinetoBaseTimeNanoseconds\":");
	jw_u64(w, mi->kineto_base_ns);
	jw_lit(w, ",\"spyreRealtimeBaseNs\":");
	jw_u64(w, mi->spyre_base_ns);
	jw_lit(w, ",\"shiftNs\":");
	jw_i64(w, mi->shift_ns);
	jw_lit(w, ",\"devicePids\":[");
	for (int i = 0; i < mi->ndev; i++) {
		jw_lit(w, i ? ",{\"from\":" : "{\"from\":");
		jw_i64(w, mi->dev_from[i]);
		jw_lit(w, ",\"to\":");
		jw_i64(w, mi->dev_to[i]);
		jw_lit(w, "}");
	}
	jw_lit(w, "],\"correlationOffset\":");
	jw_u64(w, mi->corr_offset);
	jw_lit(w, "},\n\"traceEvents\":[");
	jw_commit(w);
}

/* The clock anchors; -EINVAL/-ERANGE with a message when the traces cannot be aligned. */
static int anchors(struct mctx *m, const struct jv *ours, const struct jv *kineto, char *err,
		   size_t errlen)
{
	const struct jv *tr = jv_get(ours, "spyreTracer");
	struct merge_info *mi = m->mi;
	uint64_t diff;

	if (!tr && jv_get(kineto, "spyreTracer"))
		return errf(err, errlen, -EINVAL, "the first trace is not from spyre-bpftrace but "
			    "the second is: give ours first, then Kineto's");
	if (!base_ns(jv_get(tr, "realtimeBaseNs"), &mi->spyre_base_ns) &&
	    !base_ns(jv_get(ours, "baseTimeNanoseconds"), &mi->spyre_base_ns))
		return errf(err, errlen, -EINVAL, "our trace has neither spyreTracer.realtimeBaseNs "
			    "nor baseTimeNanoseconds: its clock is unknown");
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

		if (!iset_has(&m->k.pids, p))
			continue;
		do {
			taken = iset_has(&m->k.pids, next) || iset_has(&m->o.pids, next);
			for (int j = 0; j < mi->ndev && !taken; j++)
				taken = mi->dev_to[j] == next;
		} while (taken && ++next < INT32_MAX);
		mi->dev_from[mi->ndev] = p;
		mi->dev_to[mi->ndev++] = next++;
	}
}

/* Our op ids become correlation and flow ids; move them all past Kineto's if any clash. */
static void plan_ids(struct mctx *m)
{
	for (size_t i = 0; i < m->o.ids.n; i++) {
		if (iset_has(&m->k.ids, m->o.ids.v[i])) {
			if (m->k.max_id < UINT64_MAX / 2 && m->o.max_id < UINT64_MAX / 2)
				m->mi->corr_offset = m->k.max_id + 1;
			return;
		}
	}
}

int merge_docs(const struct jv *ours, const struct jv *kineto, struct jw *w,
	       const char *ours_name, const char *kineto_name, struct merge_info *mi,
	       char *err, size_t errlen)
{
	struct mctx m = { .mi = mi, .w = w, .first_event = true };
	const struct jv *kev, *oev, *ev;
	int ret;

	memset(mi, 0, sizeof(*mi));
	if (!ours || ours->type != JV_OBJECT)
		return errf(err, errlen, -EINVAL, "our trace is not a trace object");
	oev = jv_get(ours, "traceEvents");
	if (!oev || oev->type != JV_ARRAY)
		return errf(err, errlen, -EINVAL, "our trace has no traceEvents array");
	if (!kineto || (kineto->type != JV_OBJECT && kineto->type != JV_ARRAY))
		return errf(err, errlen, -EINVAL, "the Kineto trace is not a trace");
	kev = kineto->type == JV_ARRAY ? kineto : jv_get(kineto, "traceEvents");
	if (!kev || kev->type != JV_ARRAY)
		return errf(err, errlen, -EINVAL, "the Kineto trace has no traceEvents array");

	ret = scan(&m.k, kev);
	if (!ret)
		ret = scan(&m.o, oev);
	if (ret) {
		errf(err, errlen, ret, "%s", strerror(-ret));
		goto out;
	}
	ret = anchors(&m, ours, kineto, err, errlen);
	if (ret)
		goto out;
	plan_pids(&m);
	plan_ids(&m);
	if (m.k.have_x && m.o.have_x) {
		double shift_us = mi->shift_ns / 1000.0;

		mi->overlap_known = true;
		mi->gap_us = m.o.first_us + shift_us > m.k.last_us ?
			m.o.first_us + shift_us - m.k.last_us :
			m.o.last_us + shift_us < m.k.first_us ?
			m.o.last_us + shift_us - m.k.first_us : 0;
	}

	put_header(&m, ours, kineto, ours_name, kineto_name);
	jv_foreach(ev, kev) {
		event_sep(&m);
		put_value(w, ev);
		jw_commit(w);
		mi->kineto_events++;
	}
	jv_foreach(ev, oev)
		put_our_event(&m, ev);
	jw_lit(w, "\n]}\n");
	jw_commit(w);
	ret = jw_error(w);
	if (ret)
		errf(err, errlen, ret, "%s", strerror(-ret));
out:
	side_free(&m.k);
	side_free(&m.o);
	return ret;
}

static struct jv *load(const char *path, char *err, size_t errlen)
{
	struct trace_file tf;
	struct jv *doc;
	char e[200];

	if (trace_file_read(path, &tf, e, sizeof(e))) {
		errf(err, errlen, 0, "%s: %s", path, e);
		return NULL;
	}
	doc = jv_parse(tf.data, tf.len, e, sizeof(e));
	trace_file_free(&tf);
	if (!doc)
		errf(err, errlen, 0, "%s: not valid JSON: %s", path, e);
	return doc;
}

int merge_files(const char *ours, const char *kineto, const char *out, bool force, FILE *msg)
{
	struct jv *od = NULL, *kd = NULL;
	struct merge_info mi;
	struct output o;
	char err[320];
	int ret, rc = EXIT_ERROR;

	od = load(ours, err, sizeof(err));
	if (od)
		kd = load(kineto, err, sizeof(err));
	if (!od || !kd) {
		fprintf(stderr, "merge: %s\n", err);
		goto out;
	}
	ret = output_open(&o, out, force);
	if (ret) {
		fprintf(stderr, "merge: cannot create %s: %s%s\n", out, strerror(-ret),
			ret == -EEXIST ? " (use --force to replace it)" : "");
		rc = EXIT_OUTPUT;
		goto out;
	}
	ret = merge_docs(od, kd, o.jw, ours, kineto, &mi, err, sizeof(err));
	if (ret) {
		output_close(&o);
		unlink(out);
		fprintf(stderr, "merge: %s\n", err);
		rc = ret == -EINVAL || ret == -ERANGE ? EXIT_ERROR : EXIT_OUTPUT;
		goto out;
	}
	ret = jw_close(o.jw);
	o.jw = NULL;
	if (ret) {
		unlink(out);
		fprintf(stderr, "merge: writing %s: %s\n", out, strerror(-ret));
		rc = EXIT_OUTPUT;
		goto out;
	}
	fprintf(msg, "merge: wrote %s (%zu Kineto + %zu spyre-bpftrace events); ours moved by "
		"%+.6f s onto Kineto's time base%s\n", out, mi.kineto_events, mi.spyre_events,
		mi.shift_ns / 1e9, mi.kineto_absolute ? " (absolute µs)" : "");
	for (int i = 0; i < mi.ndev; i++)
		fprintf(msg, "merge: our device pid %lld is Kineto's too: now pid %lld\n",
			(long long)mi.dev_from[i], (long long)mi.dev_to[i]);
	if (mi.overlap_known && mi.gap_us)
		fprintf(msg, "merge: warning: the traces do not overlap in time: ours %s %.3f s "
			"%s Kineto's (same job? clocks stepped?)\n", mi.gap_us > 0 ? "starts" :
			"ends", (mi.gap_us > 0 ? mi.gap_us : -mi.gap_us) / 1e6,
			mi.gap_us > 0 ? "after the end of" : "before the start of");
	if (mi.corr_offset)
		fprintf(msg, "merge: our correlation ids clash with Kineto's: shifted by %llu\n",
			(unsigned long long)mi.corr_offset);
	rc = EXIT_OK;
out:
	jv_free(od);
	jv_free(kd);
	return rc;
}

int cmd_merge(const char *ours, const char *kineto, const char *out, bool force)
{
	return merge_files(ours, kineto, out, force, stdout);
}
