// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `check` validates a trace against the layout rules Perfetto and aiu-trace-analyzer depend
 * on. The trace is read as a stream (tracestream.h), one event at a time: the rules of one
 * event are judged then, and what the cross-event rules (overlap, flows, metadata) need of it
 * is kept in small fixed records, sorted in bounded memory (spool.h, spilling to a temporary
 * file past CHECK_SPOOL_MEM each), so that a trace of any size is O(n log n) in time and bounded
 * in memory.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "offline/check.h"
#include "common/exitcodes.h"
#include "offline/jsonparse.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/util.h"
#include "offline/spool.h"
#include "offline/tracestream.h"
#include "output/jsonw.h"
static const char *const kind_names[CK_NKINDS] = {
	[CK_NOT_OBJECT] = "not-object",
	[CK_BARE_ARRAY] = "bare-array",
	[CK_NO_EVENTS] = "no-traceEvents",
	[CK_DEVICE_PROPS] = "deviceProperties",
	[CK_NO_BASE_TIME] = "no-baseTimeNanoseconds",
	[CK_NOT_EVENT] = "not-an-event",
	[CK_NO_TS] = "no-ts",
	[CK_BAD_PH] = "bad-ph",
	[CK_BAD_PID_TID] = "bad-pid-tid",
	[CK_BAD_DUR] = "bad-dur",
	[CK_OVERLAP] = "overlap",
	[CK_NO_CORRELATION] = "no-correlation",
	[CK_CMPT_EXEC] = "cmpt-exec-args",
	[CK_FLOW_UNMATCHED] = "flow-unmatched",
	[CK_FLOW_NO_BP] = "flow-no-bp",
	[CK_FLOW_OFF_SPAN] = "flow-off-span",
	[CK_META_CONFLICT] = "metadata-conflict",
	[CK_SORT_INDEX] = "sort-index",
	[CK_META_ORDER] = "metadata-order",
	[CK_NO_NAME] = "no-name",
	[CK_NEGATIVE_TS] = "negative-ts",
	[CK_INSTANT_SCOPE] = "instant-no-scope",
	[CK_FLOW_NO_CAT] = "flow-no-cat",
	[CK_BAD_ARGS] = "bad-args",
	[CK_COUNTER] = "counter-args",
	[CK_FLOW_DUP] = "flow-duplicate-id",
	[CK_FLOW_BAD_ID] = "flow-invalid-id",
	[CK_FLOW_BACKWARDS] = "flow-backwards",
	[CK_FLOW_NO_DIR] = "flow-no-direction",
	[CK_META_NAME] = "metadata-no-name",
	[CK_TOO_DEEP] = "too-deep",
};

const char *check_kind_name(enum check_kind k)
{
	return (unsigned int)k < CK_NKINDS ? kind_names[k] : "?";
}

/* What a problem line says of an event, kept past its parse for the cross-event rules. */
struct evref {
	uint64_t idx;
	int64_t pid, tid, ts;
	uint32_t name;		/* in the names table, 0 = not kept */
	bool ids_ok, ts_ok;
};

/* Names kept for the problem lines: bounded, past it a name prints as "?" */
#define NAMES_MAX	(1u << 18)
#define NAME_KEEP	80

struct names {
	char (*s)[NAME_KEEP];
	uint32_t *slot;		/* open addressing: index + 1, 0 empty */
	size_t n, cap, nslot;
};

struct ctx {
	const char *label;
	FILE *out;
	struct check_result *res;
	size_t printed;
	const struct jv *ev;	/* the event being judged, index idx */
	size_t idx;
	struct names names;
	struct spool *spans, *points, *flows, *binds, *metas;
	int err;
};

/* Printable copy of a string from the trace: bounded, no control bytes (one line a problem). */
static void clean(char *dst, size_t n, const char *s)
{
	size_t i;

	if (!s)
		s = "?";
	for (i = 0; i + 1 < n && s[i]; i++)
		dst[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	dst[i] = '\0';
	if (s[i] && n > 4)
		memcpy(dst + n - 4, "...", 4);
}

static void value_text(char *dst, size_t n, const struct jv *v)
{
	if (!v)
		clean(dst, n, "-");
	else if (v->type == JV_NUMBER)
		clean(dst, n, v->num.raw);
	else if (v->type == JV_STRING)
		clean(dst, n, v->str.s);
	else
		clean(dst, n, jv_type_name(v->type));
}

static void fmt_us(char *dst, size_t n, int64_t ns)
{
	snprintf(dst, n, "%s%lld.%03lld", ns < 0 ? "-" : "", llabs(ns) / 1000, llabs(ns) % 1000);
}

static int names_grow(struct names *t)
{
	size_t ns = t->nslot ? t->nslot * 2 : 1024, h;
	uint32_t *slot = calloc(ns, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		h = str_hash(STR_HASH_INIT, t->s[i], strlen(t->s[i])) & (ns - 1);
		while (slot[h])
			h = (h + 1) & (ns - 1);
		slot[h] = (uint32_t)i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->nslot = ns;
	return 0;
}

/* A name's number in the table (its first NAME_KEEP - 1 bytes), 0 when it cannot be kept. */
static uint32_t name_id(struct ctx *c, const char *s)
{
	struct names *t = &c->names;
	size_t len, k, mask;
	uint32_t id;

	if (!s)
		return 0;
	len = strnlen(s, NAME_KEEP - 1);
	if (2 * (t->n + 1) > t->nslot && t->n < NAMES_MAX && names_grow(t))
		return 0;
	if (!t->nslot)
		return 0;
	mask = t->nslot - 1;
	for (k = str_hash(STR_HASH_INIT, s, len) & mask; (id = t->slot[k]); k = (k + 1) & mask)
		if (!strncmp(t->s[id - 1], s, len) && !t->s[id - 1][len])
			return id;
	if (t->n >= NAMES_MAX || 2 * (t->n + 1) > t->nslot)
		return 0;
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 256;
		char (*ns)[NAME_KEEP] = realloc(t->s, nc * sizeof(*ns));

		if (!ns)
			return 0;
		t->s = ns;
		t->cap = nc;
	}
	memcpy(t->s[t->n], s, len);
	t->s[t->n][len] = '\0';
	t->slot[k] = (uint32_t)++t->n;
	return (uint32_t)t->n;
}

static const char *name_of(const struct ctx *c, uint32_t id)
{
	return id ? c->names.s[id - 1] : "?";
}

static void vproblem(struct ctx *c, enum check_kind k, const char *at, const char *fmt,
		     va_list ap)
{
	c->res->problems++;
	c->res->by_kind[k]++;
	if (!c->out || c->printed >= CHECK_MAX_LINES)
		return;
	c->printed++;
	fprintf(c->out, "check: %s: %s", c->label, at);
	vfprintf(c->out, fmt, ap);
	fprintf(c->out, " [%s]\n", check_kind_name(k));
}

static bool printing(const struct ctx *c)
{
	return c->out && c->printed < CHECK_MAX_LINES;
}

static void problem(struct ctx *c, enum check_kind k, size_t idx, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* @idx: the event being judged (c->idx), or SIZE_MAX for a document-level problem. */
static void problem(struct ctx *c, enum check_kind k, size_t idx, const char *fmt, ...)
{
	char at[256] = "", name[80], pid[24], tid[24], ts[32];
	const struct jv *ev = c->ev;
	va_list ap;

	if (idx != SIZE_MAX && printing(c)) {
		if (ev->type == JV_OBJECT) {
			clean(name, sizeof(name), jv_get_str(ev, "name"));
			value_text(pid, sizeof(pid), jv_get(ev, "pid"));
			value_text(tid, sizeof(tid), jv_get(ev, "tid"));
			value_text(ts, sizeof(ts), jv_get(ev, "ts"));
			snprintf(at, sizeof(at), "event %zu (%s, pid %s, tid %s, ts %s): ", idx,
				 name, pid, tid, ts);
		} else {
			snprintf(at, sizeof(at), "event %zu: ", idx);
		}
	}
	va_start(ap, fmt);
	vproblem(c, k, at, fmt, ap);
	va_end(ap);
}

static void problem_ref(struct ctx *c, enum check_kind k, const struct evref *r,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* A problem of an event judged earlier, from what was kept of it. */
static void problem_ref(struct ctx *c, enum check_kind k, const struct evref *r,
			const char *fmt, ...)
{
	char at[256] = "", name[80], pid[24] = "?", tid[24] = "?", ts[32] = "?";
	va_list ap;

	if (printing(c)) {
		clean(name, sizeof(name), name_of(c, r->name));
		if (r->ids_ok) {
			snprintf(pid, sizeof(pid), "%lld", (long long)r->pid);
			snprintf(tid, sizeof(tid), "%lld", (long long)r->tid);
		}
		if (r->ts_ok)
			fmt_us(ts, sizeof(ts), r->ts);
		snprintf(at, sizeof(at), "event %llu (%s, pid %s, tid %s, ts %s): ",
			 (unsigned long long)r->idx, name, pid, tid, ts);
	}
	va_start(ap, fmt);
	vproblem(c, k, at, fmt, ap);
	va_end(ap);
}

/* A record could not be kept (memory, the temporary file): the check cannot be finished. */
static void keep(struct ctx *c, struct spool *sp, const void *rec)
{
	int err = spool_add(sp, rec);

	if (err && !c->err)
		c->err = err;
}

/* Non-negative integer written as plain digits (what the analyzer and Perfetto key on). */
static bool is_uint(const struct jv *v, int64_t *out)
{
	const char *p;

	if (!v || v->type != JV_NUMBER || v->num.d < 0 || v->num.d > 9007199254740992.0)
		return false;
	for (p = v->num.raw; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	*out = (int64_t)v->num.d;
	return true;
}

static bool is_int(const struct jv *v)
{
	const char *p;

	if (!v || v->type != JV_NUMBER)
		return false;
	p = v->num.raw;
	if (*p == '-')
		p++;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

static bool is_true(const struct jv *v)
{
	return v && v->type == JV_BOOL && v->b;
}

/*
 * µs as written in the trace -> integer ns, the resolution the writer has: from the text, as a
 * double loses ns there (merged traces are on Kineto's base, up to 7.9e12 µs; at 5.6e12 the
 * old d * 1000 + 0.5 read 135.573 as 135.574 and made a tail call's equal ends overlap).
 * ±9e12 µs is ±104 days: far past any trace, far inside int64 ns.
 */
static bool us_to_ns(const struct jv *v, int64_t *out)
{
	return jv_us_ns(v, 9000000000000LL, out);
}

/* A counter's args are its series: each member one track, its value a number. */
static void check_counter(struct ctx *c, size_t i, const struct jv *args)
{
	const struct jv *m;
	char t[48];

	if (!jv_len(args)) {
		problem(c, CK_COUNTER, i, "counter event without args (no series to draw)");
		return;
	}
	for (m = jv_first(args); m; m = m->next) {
		if (m->type == JV_NUMBER)
			continue;
		clean(t, sizeof(t), m->key);
		problem(c, CK_COUNTER, i, "counter series \"%s\" is a %s, not a number (Perfetto "
			"drops it, chrome://tracing draws nothing)", t, jv_type_name(m->type));
		return;
	}
}

/*
 * Perfetto's tokenizer (v52 on) reads dur, tts and tdur of every event, whatever its ph, and
 * drops an event with one that is not a number (json_tokenizer_failure). An X event's dur is
 * judged with its span (@x).
 */
static void check_times(struct ctx *c, size_t i, bool x)
{
	static const char *const keys[] = { "dur", "tts", "tdur" };
	const struct jv *v;
	int64_t ns;

	for (size_t k = x; k < sizeof(keys) / sizeof(keys[0]); k++) {
		v = jv_get(c->ev, keys[k]);
		if (!v || us_to_ns(v, &ns))
			continue;
		if (v->type == JV_NUMBER)
			problem(c, CK_BAD_DUR, i, "%s out of range", keys[k]);
		else
			problem(c, CK_BAD_DUR, i, "%s is a %s, not a number (Perfetto drops the "
				"event: json_tokenizer_failure)", keys[k], jv_type_name(v->type));
	}
}

/*
 * An instant's scope: thread, process or global. Perfetto up to v50 (its jsoncpp parser) drops
 * an instant of any other scope (json_parser_failure); v51 on draw it on the thread.
 */
static void check_scope(struct ctx *c, size_t i, const char *s)
{
	char t[24];

	if (!s) {
		problem(c, CK_INSTANT_SCOPE, i, "instant event without scope \"s\" (aiu-trace-"
			"analyzer raises KeyError; write \"s\":\"t\")");
	} else if (strcmp(s, "t") && strcmp(s, "p") && strcmp(s, "g")) {
		clean(t, sizeof(t), s);
		problem(c, CK_INSTANT_SCOPE, i, "instant scope \"%s\" is none of t, p, g (Perfetto "
			"up to v50 drops the event: json_parser_failure)", t);
	}
}

/* What the cross-event records take of one event. */
struct evrec {
	int64_t pid, tid;
	int64_t ts, end;	/* ns; end only for X with a valid dur */
	char ph;
	bool ts_ok, ids_ok, dur_ok;
};

static void keep_records(struct ctx *c, size_t i, const struct evrec *r);

/* The rules of one event (c->ev, index c->idx), then what the cross-event rules need of it. */
static void check_event(struct ctx *c)
{
	struct evrec rec = {}, *r = &rec;
	const struct jv *ev = c->ev, *args, *v;
	size_t i = c->idx;
	const char *ph, *cat, *name;
	char missing[32];
	int64_t dur;

	if (ev->type != JV_OBJECT) {
		problem(c, CK_NOT_EVENT, i, "traceEvents element is a %s, not an object",
			jv_type_name(ev->type));
		return;
	}
	ph = jv_get_str(ev, "ph");
	if (!ph) {
		problem(c, CK_BAD_PH, i, "no ph");
	} else if (ph[0] && !ph[1] && strchr("XMsfiIC", ph[0])) {
		r->ph = ph[0];
	} else if (!strcmp(ph, "B") || !strcmp(ph, "E")) {
		problem(c, CK_BAD_PH, i, "ph \"%s\": aiu-trace-analyzer needs X spans, not B/E pairs",
			ph);
	} else {
		char t[16];

		clean(t, sizeof(t), ph);
		problem(c, CK_BAD_PH, i, "ph \"%s\" is not one of X M s f i I C", t);
	}

	v = jv_get(ev, "ts");
	if (!v)
		problem(c, CK_NO_TS, i, "no ts%s", r->ph == 'M' ?
			" (metadata too: aiu-trace-analyzer sorts every event by ts)" : "");
	else if (!us_to_ns(v, &r->ts))
		problem(c, CK_NO_TS, i, "ts is not a number in range");
	else
		r->ts_ok = true;
	/*
	 * Perfetto's sorter drops every event before ts 0; aiu-trace-analyzer's overlap pass
	 * starts every pid/tid at ts 0 and asserts that ts never goes back
	 */
	if (r->ts_ok && r->ts < 0)
		problem(c, CK_NEGATIVE_TS, i, "ts before 0 (Perfetto drops the event%s)",
			r->ph == 'X' ? ", aiu-trace-analyzer fails an assertion on it" : "");

	/* aiu-trace-analyzer indexes these members unconditionally: KeyError when absent */
	if (!jv_get_str(ev, "name"))
		problem(c, CK_NO_NAME, i, "no string name (aiu-trace-analyzer raises KeyError)");
	if (r->ph == 'i' || r->ph == 'I')
		check_scope(c, i, jv_get_str(ev, "s"));
	if ((r->ph == 's' || r->ph == 'f') && !jv_get_str(ev, "cat"))
		problem(c, CK_FLOW_NO_CAT, i, "flow event without cat (aiu-trace-analyzer raises "
			"KeyError; arrows pair on cat and id)");
	v = jv_get(ev, "args");
	if (v && v->type != JV_OBJECT)
		problem(c, CK_BAD_ARGS, i, "args is a %s, not an object", jv_type_name(v->type));
	if (r->ph == 'C' && (!v || v->type == JV_OBJECT))
		check_counter(c, i, v);

	r->ids_ok = true;
	if (!is_uint(jv_get(ev, "pid"), &r->pid)) {
		problem(c, CK_BAD_PID_TID, i, "pid is not a non-negative integer");
		r->ids_ok = false;
	}
	if (!is_uint(jv_get(ev, "tid"), &r->tid)) {
		problem(c, CK_BAD_PID_TID, i, "tid is not a non-negative integer");
		r->ids_ok = false;
	}

	if (r->ph == 'X') {
		v = jv_get(ev, "dur");
		if (!v)
			problem(c, CK_BAD_DUR, i, "X event without dur");
		else if (!us_to_ns(v, &dur))
			problem(c, CK_BAD_DUR, i, "dur is not a number in range");
		else if (dur < 0)
			problem(c, CK_BAD_DUR, i, "negative dur");
		else if (r->ts_ok) {
			r->end = r->ts + dur;
			r->dur_ok = true;
		}
	}
	check_times(c, i, r->ph == 'X');

	args = jv_get(ev, "args");
	cat = jv_get_str(ev, "cat");
	if (cat && !strcmp(cat, "kernel") && !jv_get(args, "correlation"))
		problem(c, CK_NO_CORRELATION, i,
			"kernel event without args.correlation (aiu-trace-analyzer raises KeyError)");
	name = jv_get_str(ev, "name");
	if (name && str_ends_with(name, " Cmpt Exec")) {
		missing[0] = '\0';
		for (int k = 1; k <= 5; k++) {
			char key[4] = { 'T', 'S', (char)('0' + k), 0 };

			if (!jv_get(args, key)) {
				size_t l = strlen(missing);

				snprintf(missing + l, sizeof(missing) - l, "%s%s", l ? "," : "", key);
			}
		}
		if (missing[0])
			problem(c, CK_CMPT_EXEC, i, "\"* Cmpt Exec\" event without args %s", missing);
	}
	/* a flow v2 end (what Perfetto reads of X events): it must say its direction */
	if (r->ph == 'X' && jv_get(ev, "bind_id") && !is_true(jv_get(ev, "flow_in")) &&
	    !is_true(jv_get(ev, "flow_out")))
		problem(c, CK_FLOW_NO_DIR, i, "bind_id without flow_in or flow_out (Perfetto "
			"draws no arrow)");
	if (r->ph == 'f') {
		const char *bp = jv_get_str(ev, "bp");

		if (!bp || strcmp(bp, "e"))
			problem(c, CK_FLOW_NO_BP, i,
				"flow finish without bp:\"e\" (the arrow binds to the next slice)");
	}
	keep_records(c, i, r);
}

/* --- the records the cross-event rules keep ---------------------------------------------------- */

/* Memory of each spool of records before it spills to a temporary file */
#define CHECK_SPOOL_MEM		(16u << 20)

/* An X span: partial overlaps and depth on its pid/tid, and the slices flows bind to. */
struct span {
	struct evref r;
	int64_t end;
};

/* A flow event's ts on its pid/tid: is it inside a span? */
struct point {
	struct evref r;
	char ph;
};

/*
 * Perfetto's JSON importer keys an arrow (flow v1) on its cat, name and id, the id being an
 * integer or a hex string; aiu-trace-analyzer pairs on cat and id. @key: hash of cat and name.
 */
struct flow {
	struct evref r;
	uint64_t key, id;
	char ph;
};

/*
 * Flow v2: X events with a bind_id, the arrow leaving one with "flow_out" and arriving at one
 * with "flow_in" (both: a step). Perfetto keys these on the bind_id alone, and numbers its v1
 * arrows (cat, name, id) from 0 in the order it meets them, in the same space: a second start of
 * one bind_id is flow_duplicate_id, and a bind_id below the number of v1 arrows is one of
 * theirs (flow_duplicate_id, or a finish bound to the other's start). None of our writers makes
 * these; merge copies a profiler's bind_ids untouched, beside our v1 arrows.
 */
struct bind {
	struct evref r;
	uint64_t id;
	bool start;
};

/* An M event: its order on its pid/tid (kind 0), the name it gives (1 process, 2 thread). */
struct meta {
	struct evref r;
	int64_t tid, ts;	/* the lane's: a process's name does not depend on its tid */
	uint64_t val;		/* hash of the name given */
	uint32_t val_name;
	int kind;
};

static int lane_cmp(int64_t pa, int64_t ta, int64_t pb, int64_t tb)
{
	if (pa != pb)
		return pa < pb ? -1 : 1;
	if (ta != tb)
		return ta < tb ? -1 : 1;
	return 0;
}

static int idx_cmp(const struct evref *x, const struct evref *y)
{
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Lane, then start; at one start the longer span first, as it is the parent. */
static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	int r = lane_cmp(x->r.pid, x->r.tid, y->r.pid, y->r.tid);

	if (r)
		return r;
	if (x->r.ts != y->r.ts)
		return x->r.ts < y->r.ts ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return idx_cmp(&x->r, &y->r);
}

static int point_cmp(const void *a, const void *b)
{
	const struct point *x = a, *y = b;
	int r = lane_cmp(x->r.pid, x->r.tid, y->r.pid, y->r.tid);

	if (r)
		return r;
	if (x->r.ts != y->r.ts)
		return x->r.ts < y->r.ts ? -1 : 1;
	return idx_cmp(&x->r, &y->r);
}

static int flow_cmp(const void *a, const void *b)
{
	const struct flow *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return idx_cmp(&x->r, &y->r);
}

static int bind_cmp(const void *a, const void *b)
{
	const struct bind *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return idx_cmp(&x->r, &y->r);
}

static int meta_cmp(const void *a, const void *b)
{
	const struct meta *x = a, *y = b;
	int r;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	r = lane_cmp(x->r.pid, x->tid, y->r.pid, y->tid);
	if (r)
		return r;
	return idx_cmp(&x->r, &y->r);
}

/* A flow id as Perfetto reads it: an integer of int64 range, or a string of hex digits. */
static bool flow_id(const struct jv *v, uint64_t *out)
{
	char *end;

	if (v && v->type == JV_STRING) {
		if (!v->str.s[0])
			return false;
		errno = 0;
		*out = strtoull(v->str.s, &end, 16);
		return !*end && !errno;
	}
	if (!is_int(v) || v->num.d < -9.2e18 || v->num.d > 9.2e18)
		return false;
	*out = (uint64_t)(int64_t)strtoll(v->num.raw, NULL, 10);
	return true;
}

static void keep_records(struct ctx *c, size_t i, const struct evrec *r)
{
	const struct jv *ev = c->ev, *id;
	struct evref ref = { .idx = i, .pid = r->pid, .tid = r->tid, .ts = r->ts,
			     .ids_ok = r->ids_ok, .ts_ok = r->ts_ok };
	const char *name = jv_get_str(ev, "name");

	if (r->ph != 'X' && r->ph != 's' && r->ph != 'f' && r->ph != 'M')
		return;
	ref.name = name_id(c, name);
	if (r->ph == 'X') {
		uint64_t bid;
		bool in, out;

		if (r->dur_ok && r->ids_ok)
			keep(c, c->spans, &(struct span){ ref, r->end });
		if (!flow_id(jv_get(ev, "bind_id"), &bid))
			return;
		in = is_true(jv_get(ev, "flow_in"));
		out = is_true(jv_get(ev, "flow_out"));
		if (in || out)	/* else flow-no-direction */
			keep(c, c->binds, &(struct bind){ ref, bid, out && !in });
		return;
	}
	if (r->ph == 'M') {
		struct meta m = { .r = ref, .tid = r->tid, .ts = r->ts };
		const char *val;
		bool proc;

		if (!r->ids_ok)
			return;
		if (name && (!strcmp(name, "process_sort_index") ||
			     !strcmp(name, "thread_sort_index")) &&
		    !is_int(jv_get(jv_get(ev, "args"), "sort_index")))
			problem(c, CK_SORT_INDEX, i, "args.sort_index is not an integer");
		if (r->ts_ok)
			keep(c, c->metas, &m);
		if (!name || (strcmp(name, "process_name") && strcmp(name, "thread_name")))
			return;
		val = jv_get_str(jv_get(ev, "args"), "name");
		proc = name[0] == 'p';
		if (!val || !val[0])
			problem(c, CK_META_NAME, i, "%s without a non-empty string args.name "
				"(Perfetto: json_parser_failure)", name);
		val = val ? val : "";
		m.tid = proc ? 0 : r->tid;
		m.ts = r->ts_ok ? r->ts : 0;
		m.val = str_hash(STR_HASH_INIT, val, strlen(val));
		m.val_name = name_id(c, val);
		m.kind = proc ? 1 : 2;
		keep(c, c->metas, &m);
		return;
	}
	/* s, f */
	if (r->ts_ok && r->ids_ok)
		keep(c, c->points, &(struct point){ ref, r->ph });
	id = jv_get(ev, "id");
	if (!id) {
		problem(c, CK_FLOW_UNMATCHED, i, "flow event without an id");
	} else {
		struct flow f = { .r = ref, .ph = r->ph };
		const char *cat = jv_get_str(ev, "cat") ?: "";

		if (!flow_id(id, &f.id)) {
			char t[40];

			value_text(t, sizeof(t), id);
			problem(c, CK_FLOW_BAD_ID, i, "flow id %s is neither an integer nor a hex "
				"string (Perfetto: flow_invalid_id)", t);
			return;
		}
		f.key = str_hash(str_hash(STR_HASH_INIT, cat, strlen(cat) + 1), name ?: "",
				 strlen(name ?: ""));
		keep(c, c->flows, &f);
	}
}

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

		fmt_us(a, sizeof(a), p->r.ts);
		fmt_us(b, sizeof(b), p->end);
		fmt_us(d, sizeof(d), s->r.ts);
		fmt_us(e, sizeof(e), s->end);
		clean(pname, sizeof(pname), name_of(c, p->r.name));
		problem_ref(c, CK_OVERLAP, &s->r, "[%s, %s] partially overlaps event %llu (%s) "
			    "[%s, %s] on the same pid/tid (Perfetto moves it to another track)",
			    d, e, (unsigned long long)p->r.idx, pname, a, b);
		/* leave it out of the nesting: the rest is judged against the parents */
		return;
	}
	if (w->depth >= CHECK_MAX_DEPTH) {
		problem_ref(c, CK_TOO_DEEP, &s->r, "nested %d deep on its pid/tid: Perfetto "
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
	problem_ref(c, CK_FLOW_OFF_SPAN, &p->r, "flow %s is not inside any X event of its "
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
			problem_ref(c, CK_FLOW_UNMATCHED, &g[k].r, "flow %s id %s has no %s", ns ?
				    "start" : "finish", id, ns ? "finish ('f')" : "start ('s')");
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
			problem_ref(c, CK_FLOW_DUP, &g[k].r, "flow id %s is used by %zu starts and "
				    "%zu finishes (Perfetto: flow_duplicate_id: one arrow an id)",
				    id, ns, nf);
		}
		return;
	}
	if (s->r.ts_ok && f->r.ts_ok && f->r.ts < s->r.ts)
		problem_ref(c, CK_FLOW_BACKWARDS, &f->r, "flow finish before its start (event "
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
			problem_ref(c, CK_FLOW_DUP, &b->r, "bind_id %llu starts a second arrow "
				    "(flow_out; Perfetto: flow_duplicate_id)",
				    (unsigned long long)b->id);
		else if (b->id < nv1)
			problem_ref(c, CK_FLOW_DUP, &b->r, "bind_id %llu is below %zu, the number "
				    "of v1 arrows (s/f), which Perfetto numbers 0, 1, ... in the same "
				    "space (flow_duplicate_id, or arrows between the wrong slices)",
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
				problem_ref(c, CK_META_ORDER, &x->r, "metadata ts goes back from "
					    "event %llu on the same pid/tid (non-monotonic metadata)",
					    (unsigned long long)p->r.idx);
			} else if (x->kind && p->val != x->val && x->ts <= p->ts) {
				/* a later name at a later ts is a rename: loaders keep the last */
				char a[64], b[64];

				clean(a, sizeof(a), name_of(c, p->val_name));
				clean(b, sizeof(b), name_of(c, x->val_name));
				problem_ref(c, CK_META_CONFLICT, &x->r, "%s \"%s\" contradicts \"%s\" "
					    "of event %llu", x->kind == 1 ? "process_name" :
					    "thread_name", b, a, (unsigned long long)p->r.idx);
			}
		}
		prev = *x;
		have = true;
	}
}

/* --- the document ----------------------------------------------------------------------------- */

static int ctx_init(struct ctx *c, const char *label, FILE *out, struct check_result *res)
{
	memset(c, 0, sizeof(*c));
	memset(res, 0, sizeof(*res));
	c->label = label ? label : "-";
	c->out = out;
	c->res = res;
	c->spans = spool_new(sizeof(struct span), span_cmp, CHECK_SPOOL_MEM);
	c->points = spool_new(sizeof(struct point), point_cmp, CHECK_SPOOL_MEM);
	c->flows = spool_new(sizeof(struct flow), flow_cmp, CHECK_SPOOL_MEM);
	c->binds = spool_new(sizeof(struct bind), bind_cmp, CHECK_SPOOL_MEM);
	c->metas = spool_new(sizeof(struct meta), meta_cmp, CHECK_SPOOL_MEM);
	if (!c->spans || !c->points || !c->flows || !c->binds || !c->metas)
		return -ENOMEM;
	return 0;
}

static void ctx_fini(struct ctx *c)
{
	spool_free(c->spans);
	spool_free(c->points);
	spool_free(c->flows);
	spool_free(c->binds);
	spool_free(c->metas);
	free(c->names.s);
	free(c->names.slot);
}

static void check_element(struct ctx *c, size_t idx, const struct jv *ev)
{
	c->ev = ev;
	c->idx = idx;
	check_event(c);
	c->ev = NULL;
	c->res->events = idx + 1;
}

/*
 * The document's own members (@root: the document, or a stream's head, its events apart).
 * Returns the array whose elements are the events, NULL when there is none.
 */
static const struct jv *check_members(struct ctx *c, const struct jv *root)
{
	const struct jv *events, *v;

	if (!root || (root->type != JV_OBJECT && root->type != JV_ARRAY)) {
		problem(c, CK_NOT_OBJECT, SIZE_MAX, "top level is %s, not a trace object",
			root ? jv_type_name(root->type) : "missing");
		return NULL;
	}
	if (root->type == JV_ARRAY) {
		problem(c, CK_BARE_ARRAY, SIZE_MAX, "top level is a bare array: aiu-trace-analyzer "
			"needs the object form, Perfetto rejects an empty []");
		return root;
	}
	events = jv_get(root, "traceEvents");
	if (!events || events->type != JV_ARRAY) {
		problem(c, CK_NO_EVENTS, SIZE_MAX, "%s", events ? "traceEvents is not an array" :
			"no traceEvents");
		events = NULL;
	}
	v = jv_get(root, "deviceProperties");
	if (!v)
		problem(c, CK_DEVICE_PROPS, SIZE_MAX, "no deviceProperties: aiu-trace-analyzer "
			"needs exactly one entry");
	else if (v->type != JV_ARRAY)
		problem(c, CK_DEVICE_PROPS, SIZE_MAX, "deviceProperties is a %s, not an array",
			jv_type_name(v->type));
	else if (jv_len(v) != 1)
		problem(c, CK_DEVICE_PROPS, SIZE_MAX, "deviceProperties has %zu entries: "
			"aiu-trace-analyzer needs exactly one", jv_len(v));
	if (!jv_get_num(root, "baseTimeNanoseconds", NULL))
		problem(c, CK_NO_BASE_TIME, SIZE_MAX, "no numeric baseTimeNanoseconds: ts cannot be "
			"mapped to wall-clock time");
	return events;
}

/* The cross-event rules, once every event was read; then the count of lines not printed. */
static int check_cross(struct ctx *c)
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

long check_doc(const struct jv *root, const char *label, FILE *out, struct check_result *res)
{
	const struct jv *events, *ev;
	struct ctx c;
	size_t i = 0;
	int err;

	err = ctx_init(&c, label, out, res);
	if (!err) {
		events = check_members(&c, root);
		jv_foreach(ev, events)
			check_element(&c, i++, ev);
		err = check_cross(&c);
	}
	ctx_fini(&c);
	return err ? err : (long)res->problems;
}

/* What became of one file. */
struct check_outcome {
	struct check_result res;
	int rc;
	char err[320];		/* why it could not be checked */
	bool cut;		/* cut short: recover can close it */
	uint64_t bytes;		/* read, decompressed */
	double secs;
};

/*
 * Check @path as a stream: problem lines to @out, and the summary line when @summary; errors
 * to stderr and into @o. Returns the exit code.
 */
static int check_one(const char *path, FILE *out, bool summary, struct check_outcome *o)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	const struct jv *ev;
	struct tstream *s;
	struct ctx c;
	size_t idx = 0;
	char err[256];
	int r, e;

	memset(o, 0, sizeof(*o));
	s = tstream_open(path, err, sizeof(err));
	if (!s) {
		snprintf(o->err, sizeof(o->err), "%s", err);
		pr_err("%s: %s", path, err);
		return o->rc = EXIT_ERROR;
	}
	e = ctx_init(&c, path, out, &o->res);
	while (!e && (r = tstream_next(s, &ev, err, sizeof(err))) > 0)
		check_element(&c, idx++, ev);
	o->bytes = tstream_bytes(s);
	if (e) {
		snprintf(o->err, sizeof(o->err), "%s", strerror(-e));
	} else if (r < 0) {
		o->cut = tstream_cut(s) || tstream_gzip_cut(s);
		snprintf(o->err, sizeof(o->err), "not valid JSON: %s", err);
		pr_err("%s: %s%s", path, o->err, o->cut ? " (cut short: `spyre-bpftrace recover "
		       "FILE` closes it)" : "");
	} else {
		if (tstream_gzip_cut(s))
			/* not pr_warn: check names the file first, its "warning: " after the path */
			pr_err("%s: warning: the gzip stream is cut short or corrupt after the end "
			       "of the JSON", path);
		check_members(&c, tstream_head(s));
		e = check_cross(&c);
		if (e)
			snprintf(o->err, sizeof(o->err), "the rules across events: %s (their "
				 "records spill to $TMPDIR, else /tmp)", strerror(-e));
	}
	tstream_close(s);
	ctx_fini(&c);
	o->secs = (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
	if (e)
		pr_err("%s: %s", path, o->err);
	if (o->err[0])
		return o->rc = EXIT_ERROR;
	pr_debug("%s: %.1f MB in %.2f s, %.0f MB/s", path, (double)o->bytes / 1e6, o->secs,
		 o->secs > 0 ? (double)o->bytes / 1e6 / o->secs : 0.0);
	if (summary)
		fprintf(out, "check: %s: %zu events, %zu problems\n", path, o->res.events,
			o->res.problems);
	return o->rc = o->res.problems ? EXIT_CHECK : EXIT_OK;
}

int check_file(const char *path, FILE *out)
{
	struct check_outcome o;

	return check_one(path, out, true, &o);
}

/* --- several files, directories, --json ------------------------------------------------------ */

/* The line of a problem without its "check: FILE: " prefix, as JSON strings. */
static void json_lines(struct jw *w, const char *path, char *text)
{
	size_t plen = strlen(path);
	char *line, *save = NULL;

	jw_key(w, "lines");
	jw_arr_begin(w);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "check: ", 7) && !strncmp(line + 7, path, plen) &&
		    !strncmp(line + 7 + plen, ": ", 2))
			line += 9 + plen;
		jw_elem(w);
		jw_str(w, line);
	}
	jw_arr_end(w);
}

static void json_outcome(struct jw *w, const char *path, const struct check_outcome *o,
			 char *lines)
{
	jw_obj_begin(w);
	jw_kv_str(w, "file", path);
	if (o->err[0]) {
		jw_kv_str(w, "error", o->err);
		jw_kv_bool(w, "cut", o->cut);
	} else {
		jw_kv_u64(w, "events", o->res.events);
		jw_kv_u64(w, "problems", o->res.problems);
		jw_key(w, "byKind");
		jw_obj_begin(w);
		for (int k = 0; k < CK_NKINDS; k++)
			if (o->res.by_kind[k])
				jw_kv_u64(w, check_kind_name(k), o->res.by_kind[k]);
		jw_obj_end(w);
	}
	json_lines(w, path, lines ? lines : (char[]){ "" });
	jw_obj_end(w);
	jw_nl(w);
}

struct check_totals {
	size_t files, events, problems, bad_files, unreadable;
	struct jw *w;
	FILE *out;
};

static void check_path(struct check_totals *t, const char *path)
{
	struct check_outcome o;
	char *lines = NULL;
	size_t len = 0;
	FILE *mem = NULL;

	if (t->w)
		mem = open_memstream(&lines, &len);
	check_one(path, mem ? mem : t->out, !t->w, &o);
	if (mem)
		fclose(mem);
	t->files++;
	t->events += o.res.events;
	t->problems += o.res.problems;
	t->bad_files += !o.err[0] && o.res.problems;
	t->unreadable += !!o.err[0];
	if (t->w)
		json_outcome(t->w, path, &o, lines);
	free(lines);
}

/* Every trace file (*.json, *.json.gz) of directory @dir, in name order. */
static void check_dir(struct check_totals *t, const char *dir)
{
	struct dirent **ents;
	char p[4096];
	int n;

	n = trace_dir_scan(dir, &ents);
	if (n < 0) {
		pr_err("%s: %s", dir, strerror(-n));
		t->unreadable++;
		return;
	}
	if (!n) {
		pr_err("%s: no trace files (*.json, *.json.gz) in the directory", dir);
		t->unreadable++;
	}
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s%s%s", dir, str_ends_with(dir, "/") ? "" : "/",
			 ents[i]->d_name);
		check_path(t, p);
		free(ents[i]);
	}
	free(ents);
}

int check_files(char *const *paths, int n, bool json, FILE *out)
{
	struct check_totals t = { .out = out };
	struct stat st;
	char *text;
	size_t len;

	if (json) {
		t.w = jw_memopen();
		if (!t.w)
			return EXIT_ERROR;
		jw_obj_begin(t.w);
		jw_key(t.w, "files");
		jw_arr_begin(t.w);
		jw_nl(t.w);
	}
	for (int i = 0; i < n; i++) {
		if (!stat(paths[i], &st) && S_ISDIR(st.st_mode))
			check_dir(&t, paths[i]);
		else
			check_path(&t, paths[i]);
	}
	if (json) {
		jw_arr_end(t.w);
		jw_key(t.w, "totals");
		jw_obj_begin(t.w);
		jw_kv_u64(t.w, "files", t.files);
		jw_kv_u64(t.w, "events", t.events);
		jw_kv_u64(t.w, "problems", t.problems);
		jw_kv_u64(t.w, "unreadable", t.unreadable);
		jw_obj_end(t.w);
		jw_obj_end(t.w);
		text = jw_mem_take(t.w, &len);
		if (!text)
			return EXIT_ERROR;
		fprintf(out, "%s\n", text);
		free(text);
	} else if (t.files > 1 || n > 1) {
		fprintf(out, "check: %zu files, %zu events, %zu problems (%zu files with problems, "
			"%zu unreadable)\n", t.files, t.events, t.problems, t.bad_files,
			t.unreadable);
	}
	if (t.unreadable)
		return EXIT_ERROR;
	return t.problems ? EXIT_CHECK : EXIT_OK;
}

int cmd_check(char *const *paths, int n, bool json)
{
	return check_files(paths, n, json, stdout);
}
