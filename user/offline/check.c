// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `check` validates a trace against the layout rules Perfetto and aiu-trace-analyzer depend
 * on. The whole file is read into memory (tracefile.h): the DOM of a few hundred MB is
 * affordable, and it keeps the checks simple. Per-event facts are first copied into flat arrays
 * that are sorted for the cross-event rules (overlap, flows, metadata), so a million events
 * stay O(n log n).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "offline/check.h"
#include "common/exitcodes.h"
#include "offline/jsonparse.h"
#include "common/log.h"
#include "common/strutil.h"
#include "offline/tracefile.h"

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

/* What the cross-event passes need of one event, so they never walk the DOM again. */
struct evrec {
	const struct jv *ev;
	int64_t pid, tid;
	int64_t ts, end;	/* ns; end only for X with a valid dur */
	char ph;
	bool ts_ok, ids_ok, dur_ok;
};

struct ctx {
	const char *label;
	FILE *out;
	struct check_result *res;
	size_t printed;
	struct evrec *recs;
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

static void problem(struct ctx *c, enum check_kind k, size_t idx, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* @idx: event index, or SIZE_MAX for a document-level problem. */
static void problem(struct ctx *c, enum check_kind k, size_t idx, const char *fmt, ...)
{
	char name[80], pid[24], tid[24], ts[32];
	const struct jv *ev;
	va_list ap;

	c->res->problems++;
	c->res->by_kind[k]++;
	if (!c->out)
		return;
	if (c->printed >= CHECK_MAX_LINES)
		return;
	c->printed++;
	fprintf(c->out, "check: %s: ", c->label);
	if (idx != SIZE_MAX) {
		ev = c->recs[idx].ev;
		if (ev->type == JV_OBJECT) {
			clean(name, sizeof(name), jv_get_str(ev, "name"));
			value_text(pid, sizeof(pid), jv_get(ev, "pid"));
			value_text(tid, sizeof(tid), jv_get(ev, "tid"));
			value_text(ts, sizeof(ts), jv_get(ev, "ts"));
			fprintf(c->out, "event %zu (%s, pid %s, tid %s, ts %s): ", idx, name, pid,
				tid, ts);
		} else {
			fprintf(c->out, "event %zu: ", idx);
		}
	}
	va_start(ap, fmt);
	vfprintf(c->out, fmt, ap);
	va_end(ap);
	fprintf(c->out, " [%s]\n", check_kind_name(k));
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
		v = jv_get(c->recs[i].ev, keys[k]);
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

static void check_event(struct ctx *c, size_t i)
{
	struct evrec *r = &c->recs[i];
	const struct jv *ev = r->ev, *args, *v;
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
}

/* --- spans: partial overlaps, and the lookup flows need -------------------------------------- */

struct span {
	int64_t pid, tid, ts, end;
	uint32_t idx;
};

static int lane_cmp(int64_t pa, int64_t ta, int64_t pb, int64_t tb)
{
	if (pa != pb)
		return pa < pb ? -1 : 1;
	if (ta != tb)
		return ta < tb ? -1 : 1;
	return 0;
}

/* Lane, then start; at one start the longer span first, as it is the parent. */
static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	int r = lane_cmp(x->pid, x->tid, y->pid, y->tid);

	if (r)
		return r;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void fmt_us(char *dst, size_t n, int64_t ns)
{
	snprintf(dst, n, "%s%lld.%03lld", ns < 0 ? "-" : "", llabs(ns) / 1000, llabs(ns) % 1000);
}

static int check_overlaps(struct ctx *c, struct span *sp, size_t n)
{
	size_t *stack, depth = 0, i;

	stack = malloc((n ? n : 1) * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct span *s = &sp[i];

		if (depth && lane_cmp(sp[stack[0]].pid, sp[stack[0]].tid, s->pid, s->tid))
			depth = 0;
		while (depth && sp[stack[depth - 1]].end <= s->ts)
			depth--;
		if (depth && s->end > sp[stack[depth - 1]].end) {
			const struct span *p = &sp[stack[depth - 1]];
			char a[32], b[32], d[32], e[32];
			char pname[64];

			fmt_us(a, sizeof(a), p->ts);
			fmt_us(b, sizeof(b), p->end);
			fmt_us(d, sizeof(d), s->ts);
			fmt_us(e, sizeof(e), s->end);
			clean(pname, sizeof(pname), jv_get_str(c->recs[p->idx].ev, "name"));
			problem(c, CK_OVERLAP, s->idx,
				"[%s, %s] partially overlaps event %u (%s) [%s, %s] on the same "
				"pid/tid (Perfetto moves it to another track)", d, e, p->idx, pname,
				a, b);
			/* leave it out of the nesting: the rest is judged against the parents */
			continue;
		}
		if (depth >= CHECK_MAX_DEPTH) {
			problem(c, CK_TOO_DEEP, s->idx, "nested %d deep on its pid/tid: Perfetto "
				"drops slices past depth %d", CHECK_MAX_DEPTH + 1, CHECK_MAX_DEPTH);
			continue;
		}
		stack[depth++] = i;
	}
	free(stack);
	return 0;
}

/* Is @ts inside (bounds included) some span of lane pid/tid? @pmax: running max of end. */
static bool on_span(const struct span *sp, const int64_t *pmax, size_t n, int64_t pid,
		    int64_t tid, int64_t ts)
{
	size_t lo = 0, hi = n;

	/* first span that sorts after (pid, tid, ts) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = lane_cmp(sp[mid].pid, sp[mid].tid, pid, tid);

		if (r < 0 || (!r && sp[mid].ts <= ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	lo--;
	return !lane_cmp(sp[lo].pid, sp[lo].tid, pid, tid) && pmax[lo] >= ts;
}

/* --- flows ------------------------------------------------------------------------------------ */

/*
 * Perfetto's JSON importer keys an arrow (flow v1) on its cat, name and id, the id being an
 * integer or a hex string; aiu-trace-analyzer pairs on cat and id.
 */
struct flow {
	const char *cat, *name;
	uint64_t id;
	int64_t ts;
	char ph;
	bool ts_ok;
	uint32_t idx;
};

static int flow_cmp(const void *a, const void *b)
{
	const struct flow *x = a, *y = b;
	int r = strcmp(x->cat, y->cat);

	if (r)
		return r;
	r = strcmp(x->name, y->name);
	if (r)
		return r;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool same_flow(const struct flow *x, const struct flow *y)
{
	return x->id == y->id && !strcmp(x->cat, y->cat) && !strcmp(x->name, y->name);
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
			problem(c, CK_FLOW_UNMATCHED, g[k].idx, "flow %s id %s has no %s", ns ?
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
			problem(c, CK_FLOW_DUP, g[k].idx, "flow id %s is used by %zu starts and "
				"%zu finishes (Perfetto: flow_duplicate_id: one arrow an id)", id,
				ns, nf);
		}
		return;
	}
	if (s->ts_ok && f->ts_ok && f->ts < s->ts)
		problem(c, CK_FLOW_BACKWARDS, f->idx, "flow finish before its start (event %u): "
			"Perfetto reads events in time order and drops the arrow", s->idx);
}

/*
 * Flow v2: X events with a bind_id, the arrow leaving one with "flow_out" and arriving at one
 * with "flow_in" (both: a step). Perfetto keys these on the bind_id alone, and numbers its v1
 * arrows (cat, name, id) from 0 in the order it meets them, in the same space: a second start of
 * one bind_id is flow_duplicate_id, and a bind_id below @nv1, the number of v1 arrows, is one
 * of theirs (flow_duplicate_id, or a finish bound to the other's start). None of our writers
 * makes these; merge copies a profiler's bind_ids untouched, beside our v1 arrows.
 */
struct flow2 {
	uint64_t id;
	uint32_t idx;
	bool start;
};

static int flow2_cmp(const void *a, const void *b)
{
	const struct flow2 *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int check_flows_v2(struct ctx *c, size_t nev, size_t nv1)
{
	bool started = false;
	struct flow2 *fl;
	size_t n = 0, i;

	fl = malloc((nev ? nev : 1) * sizeof(*fl));
	if (!fl)
		return -ENOMEM;
	for (i = 0; i < nev; i++) {
		const struct jv *ev = c->recs[i].ev;
		bool in, out;

		if (c->recs[i].ph != 'X' || !flow_id(jv_get(ev, "bind_id"), &fl[n].id))
			continue;
		in = is_true(jv_get(ev, "flow_in"));
		out = is_true(jv_get(ev, "flow_out"));
		if (!in && !out)
			continue;	/* flow-no-direction */
		fl[n].start = out && !in;
		fl[n++].idx = (uint32_t)i;
	}
	qsort(fl, n, sizeof(*fl), flow2_cmp);
	for (i = 0; i < n; i++) {
		if (i && fl[i - 1].id != fl[i].id)
			started = false;
		if (fl[i].start && started)
			problem(c, CK_FLOW_DUP, fl[i].idx, "bind_id %llu starts a second arrow "
				"(flow_out; Perfetto: flow_duplicate_id)",
				(unsigned long long)fl[i].id);
		else if (fl[i].id < nv1)
			problem(c, CK_FLOW_DUP, fl[i].idx, "bind_id %llu is below %zu, the number "
				"of v1 arrows (s/f), which Perfetto numbers 0, 1, ... in the same "
				"space (flow_duplicate_id, or arrows between the wrong slices)",
				(unsigned long long)fl[i].id, nv1);
		started |= fl[i].start;
	}
	free(fl);
	return 0;
}

static int check_flows(struct ctx *c, size_t nev, const struct span *sp, const int64_t *pmax,
		       size_t nsp)
{
	size_t n = 0, nv1, i, j;
	struct flow *fl;

	fl = malloc((nev ? nev : 1) * sizeof(*fl));
	if (!fl)
		return -ENOMEM;
	for (i = 0; i < nev; i++) {
		const struct evrec *r = &c->recs[i];
		const struct jv *id;

		if (r->ph != 's' && r->ph != 'f')
			continue;
		if (r->ts_ok && r->ids_ok && !on_span(sp, pmax, nsp, r->pid, r->tid, r->ts))
			problem(c, CK_FLOW_OFF_SPAN, i,
				"flow %s is not inside any X event of its pid/tid (the arrow "
				"has no slice to bind to)", r->ph == 's' ? "start" : "finish");
		id = jv_get(r->ev, "id");
		if (!id) {
			problem(c, CK_FLOW_UNMATCHED, i, "flow event without an id");
			continue;
		}
		if (!flow_id(id, &fl[n].id)) {
			char t[40];

			value_text(t, sizeof(t), id);
			problem(c, CK_FLOW_BAD_ID, i, "flow id %s is neither an integer nor a hex "
				"string (Perfetto: flow_invalid_id)", t);
			continue;
		}
		fl[n].cat = jv_get_str(r->ev, "cat") ?: "";
		fl[n].name = jv_get_str(r->ev, "name") ?: "";
		fl[n].ts = r->ts;
		fl[n].ts_ok = r->ts_ok;
		fl[n].ph = r->ph;
		fl[n].idx = (uint32_t)i;
		n++;
	}
	qsort(fl, n, sizeof(*fl), flow_cmp);
	for (i = 0, nv1 = 0; i < n; i = j, nv1++) {
		for (j = i + 1; j < n && same_flow(&fl[j], &fl[i]); j++)
			;
		check_flow_group(c, &fl[i], j - i);
	}
	free(fl);
	return check_flows_v2(c, nev, nv1);
}

/* --- metadata --------------------------------------------------------------------------------- */

struct meta {
	int64_t pid, tid, ts;
	const char *val;
	int kind;		/* 0 any M (order check), 1 process_name, 2 thread_name */
	uint32_t idx;
};

static int meta_cmp(const void *a, const void *b)
{
	const struct meta *x = a, *y = b;
	int r;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	r = lane_cmp(x->pid, x->tid, y->pid, y->tid);
	if (r)
		return r;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int check_metadata(struct ctx *c, size_t nev)
{
	struct meta *m;
	size_t n = 0, i;

	/* at most two entries per event: order, and name */
	m = malloc((nev ? nev : 1) * 2 * sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (i = 0; i < nev; i++) {
		const struct evrec *r = &c->recs[i];
		const char *name;

		if (r->ph != 'M' || !r->ids_ok)
			continue;
		name = jv_get_str(r->ev, "name");
		if (name && (!strcmp(name, "process_sort_index") ||
			     !strcmp(name, "thread_sort_index")) &&
		    !is_int(jv_get(jv_get(r->ev, "args"), "sort_index")))
			problem(c, CK_SORT_INDEX, i, "args.sort_index is not an integer");
		if (r->ts_ok)
			m[n++] = (struct meta){ r->pid, r->tid, r->ts, NULL, 0, (uint32_t)i };
		if (name && (!strcmp(name, "process_name") || !strcmp(name, "thread_name"))) {
			const char *val = jv_get_str(jv_get(r->ev, "args"), "name");
			bool proc = name[0] == 'p';

			if (!val || !val[0])
				problem(c, CK_META_NAME, i, "%s without a non-empty string "
					"args.name (Perfetto: json_parser_failure)", name);

			/* a process's name does not depend on the tid its M event carries */
			m[n++] = (struct meta){ r->pid, proc ? 0 : r->tid, r->ts_ok ? r->ts : 0,
						val ? val : "", proc ? 1 : 2, (uint32_t)i };
		}
	}
	qsort(m, n, sizeof(*m), meta_cmp);
	for (i = 1; i < n; i++) {
		const struct meta *p = &m[i - 1], *x = &m[i];

		if (p->kind != x->kind || lane_cmp(p->pid, p->tid, x->pid, x->tid))
			continue;
		if (!x->kind && x->ts < p->ts) {
			problem(c, CK_META_ORDER, x->idx, "metadata ts goes back from event %u "
				"on the same pid/tid (non-monotonic metadata)", p->idx);
		} else if (x->kind && strcmp(p->val, x->val) && x->ts <= p->ts) {
			/* a later name at a later ts is a rename: every loader keeps the last one */
			char a[64], b[64];

			clean(a, sizeof(a), p->val);
			clean(b, sizeof(b), x->val);
			problem(c, CK_META_CONFLICT, x->idx, "%s \"%s\" contradicts \"%s\" of event %u",
				x->kind == 1 ? "process_name" : "thread_name", b, a, p->idx);
		}
	}
	free(m);
	return 0;
}

/* --- the document ----------------------------------------------------------------------------- */

static int check_events(struct ctx *c, const struct jv *events)
{
	size_t n = jv_len(events), nsp = 0, i;
	struct span *sp = NULL;
	int64_t *pmax = NULL;
	const struct jv *ev;
	int err = -ENOMEM;

	c->res->events = n;
	c->recs = calloc(n ? n : 1, sizeof(*c->recs));
	sp = malloc((n ? n : 1) * sizeof(*sp));
	pmax = malloc((n ? n : 1) * sizeof(*pmax));
	if (!c->recs || !sp || !pmax)
		goto out;
	i = 0;
	jv_foreach(ev, events)
		c->recs[i++].ev = ev;
	for (i = 0; i < n; i++) {
		const struct evrec *r = &c->recs[i];

		check_event(c, i);
		if (r->ph == 'X' && r->dur_ok && r->ids_ok)
			sp[nsp++] = (struct span){ r->pid, r->tid, r->ts, r->end, (uint32_t)i };
	}
	qsort(sp, nsp, sizeof(*sp), span_cmp);
	for (i = 0; i < nsp; i++) {
		pmax[i] = sp[i].end;
		if (i && !lane_cmp(sp[i - 1].pid, sp[i - 1].tid, sp[i].pid, sp[i].tid) &&
		    pmax[i - 1] > pmax[i])
			pmax[i] = pmax[i - 1];
	}
	err = check_overlaps(c, sp, nsp);
	if (!err)
		err = check_flows(c, n, sp, pmax, nsp);
	if (!err)
		err = check_metadata(c, n);
out:
	free(pmax);
	free(sp);
	free(c->recs);
	c->recs = NULL;
	return err;
}

long check_doc(const struct jv *root, const char *label, FILE *out, struct check_result *res)
{
	struct ctx c = { .label = label ? label : "-", .out = out, .res = res };
	const struct jv *events, *v;
	int err = 0;

	memset(res, 0, sizeof(*res));
	if (!root || (root->type != JV_OBJECT && root->type != JV_ARRAY)) {
		problem(&c, CK_NOT_OBJECT, SIZE_MAX, "top level is %s, not a trace object",
			root ? jv_type_name(root->type) : "missing");
		goto done;
	}
	if (root->type == JV_ARRAY) {
		problem(&c, CK_BARE_ARRAY, SIZE_MAX, "top level is a bare array: aiu-trace-analyzer "
			"needs the object form, Perfetto rejects an empty []");
		events = root;
	} else {
		events = jv_get(root, "traceEvents");
		if (!events || events->type != JV_ARRAY) {
			problem(&c, CK_NO_EVENTS, SIZE_MAX, "%s", events ?
				"traceEvents is not an array" : "no traceEvents");
			events = NULL;
		}
		v = jv_get(root, "deviceProperties");
		if (!v)
			problem(&c, CK_DEVICE_PROPS, SIZE_MAX, "no deviceProperties: "
				"aiu-trace-analyzer needs exactly one entry");
		else if (v->type != JV_ARRAY)
			problem(&c, CK_DEVICE_PROPS, SIZE_MAX, "deviceProperties is a %s, not an array",
				jv_type_name(v->type));
		else if (jv_len(v) != 1)
			problem(&c, CK_DEVICE_PROPS, SIZE_MAX, "deviceProperties has %zu entries: "
				"aiu-trace-analyzer needs exactly one", jv_len(v));
		if (!jv_get_num(root, "baseTimeNanoseconds", NULL))
			problem(&c, CK_NO_BASE_TIME, SIZE_MAX, "no numeric baseTimeNanoseconds: "
				"ts cannot be mapped to wall-clock time");
	}
	if (events)
		err = check_events(&c, events);
done:
	if (out && res->problems > c.printed)
		fprintf(out, "check: %s: ... and %zu more problems\n", c.label,
			res->problems - c.printed);
	return err ? err : (long)res->problems;
}

int check_file(const char *path, FILE *out)
{
	struct check_result res;
	struct trace_file tf;
	struct jv *doc;
	char err[256];
	long n;

	if (trace_file_read(path, &tf, err, sizeof(err))) {
		pr_err("%s: %s", path, err);
		return EXIT_ERROR;
	}
	doc = jv_parse(tf.data, tf.len, err, sizeof(err));
	if (!doc) {
		bool cut = tf.cut || strstr(err, "unexpected end of input");

		pr_err("%s: not valid JSON: %s%s", path, err,
		       cut ? " (cut short? `spyre-bpftrace recover` can close it)" : "");
		trace_file_free(&tf);
		return EXIT_ERROR;
	}
	if (tf.cut)
		/* not pr_warn: check names the file first, its "warning: " after the path */
		pr_err("%s: warning: the gzip stream is cut short or corrupt after the end of the "
		       "JSON", path);
	/* the tree does not point into the text: free it before the checks allocate */
	trace_file_free(&tf);
	n = check_doc(doc, path, out, &res);
	jv_free(doc);
	if (n < 0) {
		pr_err("%s: %s", path, strerror((int)-n));
		return EXIT_ERROR;
	}
	fprintf(out, "check: %s: %zu events, %zu problems\n", path, res.events, res.problems);
	return res.problems ? EXIT_CHECK : EXIT_OK;
}

int cmd_check(const char *path)
{
	return check_file(path, stdout);
}

