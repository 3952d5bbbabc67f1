// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * check's rules of one event, judged as the event is read (a stream: tracestream.h), and of
 * the document's own members; what the cross-event rules (checkcross.c) need of the event
 * is kept in checkctx.h's records.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "common/util.h"
#include "offline/checkctx.h"
#include "offline/checkevent.h"
#include "offline/jsonparse.h"

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
		ck_problem(c, CK_COUNTER, i, "counter event without args (no series to draw)");
		return;
	}
	for (m = jv_first(args); m; m = m->next) {
		if (m->type == JV_NUMBER)
			continue;
		ck_clean(t, sizeof(t), m->key);
		ck_problem(c, CK_COUNTER, i, "counter series \"%s\" is a %s, not a number "
			   "(Perfetto drops it, chrome://tracing draws nothing)", t,
			   jv_type_name(m->type));
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
			ck_problem(c, CK_BAD_DUR, i, "%s out of range", keys[k]);
		else
			ck_problem(c, CK_BAD_DUR, i, "%s is a %s, not a number (Perfetto drops "
				   "the event: json_tokenizer_failure)", keys[k],
				   jv_type_name(v->type));
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
		ck_problem(c, CK_INSTANT_SCOPE, i, "instant event without scope \"s\" (aiu-trace-"
			   "analyzer raises KeyError; write \"s\":\"t\")");
	} else if (strcmp(s, "t") && strcmp(s, "p") && strcmp(s, "g")) {
		ck_clean(t, sizeof(t), s);
		ck_problem(c, CK_INSTANT_SCOPE, i, "instant scope \"%s\" is none of t, p, g "
			   "(Perfetto up to v50 drops the event: json_parser_failure)", t);
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
/*
 * The rules of an event's cat, name and flow members: a kernel's correlation, a "* Cmpt Exec"
 * event's TS1..TS5, a flow v2 end's direction, a flow finish's binding point.
 */
static void check_cat_name_args(struct ctx *c, size_t i, const struct evrec *r)
{
	const struct jv *ev = c->ev, *args;
	const char *cat, *name;
	char missing[32];

	args = jv_get(ev, "args");
	cat = jv_get_str(ev, "cat");
	if (cat && !strcmp(cat, "kernel") && !jv_get(args, "correlation"))
		ck_problem(c, CK_NO_CORRELATION, i, "kernel event without args.correlation "
			   "(aiu-trace-analyzer raises KeyError)");
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
			ck_problem(c, CK_CMPT_EXEC, i, "\"* Cmpt Exec\" event without args %s",
				   missing);
	}
	/* a flow v2 end (what Perfetto reads of X events): it must say its direction */
	if (r->ph == 'X' && jv_get(ev, "bind_id") && !is_true(jv_get(ev, "flow_in")) &&
	    !is_true(jv_get(ev, "flow_out")))
		ck_problem(c, CK_FLOW_NO_DIR, i, "bind_id without flow_in or flow_out (Perfetto "
			   "draws no arrow)");
	if (r->ph == 'f') {
		const char *bp = jv_get_str(ev, "bp");

		if (!bp || strcmp(bp, "e"))
			ck_problem(c, CK_FLOW_NO_BP, i, "flow finish without bp:\"e\" (the arrow "
				   "binds to the next slice)");
	}
}

static void check_event(struct ctx *c)
{
	struct evrec rec = {}, *r = &rec;
	const struct jv *ev = c->ev, *v;
	size_t i = c->idx;
	const char *ph;
	int64_t dur;

	if (ev->type != JV_OBJECT) {
		ck_problem(c, CK_NOT_EVENT, i, "traceEvents element is a %s, not an object",
			   jv_type_name(ev->type));
		return;
	}
	ph = jv_get_str(ev, "ph");
	if (!ph) {
		ck_problem(c, CK_BAD_PH, i, "no ph");
	} else if (ph[0] && !ph[1] && strchr("XMsfiIC", ph[0])) {
		r->ph = ph[0];
	} else if (!strcmp(ph, "B") || !strcmp(ph, "E")) {
		ck_problem(c, CK_BAD_PH, i, "ph \"%s\": aiu-trace-analyzer needs X spans, not B/E "
			   "pairs", ph);
	} else {
		char t[16];

		ck_clean(t, sizeof(t), ph);
		ck_problem(c, CK_BAD_PH, i, "ph \"%s\" is not one of X M s f i I C", t);
	}

	v = jv_get(ev, "ts");
	if (!v)
		ck_problem(c, CK_NO_TS, i, "no ts%s", r->ph == 'M' ?
			   " (metadata too: aiu-trace-analyzer sorts every event by ts)" : "");
	else if (!us_to_ns(v, &r->ts))
		ck_problem(c, CK_NO_TS, i, "ts is not a number in range");
	else
		r->ts_ok = true;
	/*
	 * Perfetto's sorter drops every event before ts 0; aiu-trace-analyzer's overlap pass
	 * starts every pid/tid at ts 0 and asserts that ts never goes back
	 */
	if (r->ts_ok && r->ts < 0)
		ck_problem(c, CK_NEGATIVE_TS, i, "ts before 0 (Perfetto drops the event%s)",
			   r->ph == 'X' ? ", aiu-trace-analyzer fails an assertion on it" : "");

	/* aiu-trace-analyzer indexes these members unconditionally: KeyError when absent */
	if (!jv_get_str(ev, "name"))
		ck_problem(c, CK_NO_NAME, i, "no string name (aiu-trace-analyzer raises KeyError)");
	if (r->ph == 'i' || r->ph == 'I')
		check_scope(c, i, jv_get_str(ev, "s"));
	if ((r->ph == 's' || r->ph == 'f') && !jv_get_str(ev, "cat"))
		ck_problem(c, CK_FLOW_NO_CAT, i, "flow event without cat (aiu-trace-analyzer "
			   "raises KeyError; arrows pair on cat and id)");
	v = jv_get(ev, "args");
	if (v && v->type != JV_OBJECT)
		ck_problem(c, CK_BAD_ARGS, i, "args is a %s, not an object", jv_type_name(v->type));
	if (r->ph == 'C' && (!v || v->type == JV_OBJECT))
		check_counter(c, i, v);

	r->ids_ok = true;
	if (!is_uint(jv_get(ev, "pid"), &r->pid)) {
		ck_problem(c, CK_BAD_PID_TID, i, "pid is not a non-negative integer");
		r->ids_ok = false;
	}
	if (!is_uint(jv_get(ev, "tid"), &r->tid)) {
		ck_problem(c, CK_BAD_PID_TID, i, "tid is not a non-negative integer");
		r->ids_ok = false;
	}

	if (r->ph == 'X') {
		v = jv_get(ev, "dur");
		if (!v)
			ck_problem(c, CK_BAD_DUR, i, "X event without dur");
		else if (!us_to_ns(v, &dur))
			ck_problem(c, CK_BAD_DUR, i, "dur is not a number in range");
		else if (dur < 0)
			ck_problem(c, CK_BAD_DUR, i, "negative dur");
		else if (r->ts_ok) {
			r->end = r->ts + dur;
			r->dur_ok = true;
		}
	}
	check_times(c, i, r->ph == 'X');

	check_cat_name_args(c, i, r);
	keep_records(c, i, r);
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
	ref.name = ck_name_id(c, name);
	if (r->ph == 'X') {
		uint64_t bid;
		bool in, out;

		if (r->dur_ok && r->ids_ok)
			ck_keep(c, c->spans, &(struct span){ ref, r->end });
		if (!flow_id(jv_get(ev, "bind_id"), &bid))
			return;
		in = is_true(jv_get(ev, "flow_in"));
		out = is_true(jv_get(ev, "flow_out"));
		if (in || out)	/* else flow-no-direction */
			ck_keep(c, c->binds, &(struct bind){ ref, bid, out && !in });
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
			ck_problem(c, CK_SORT_INDEX, i, "args.sort_index is not an integer");
		if (r->ts_ok)
			ck_keep(c, c->metas, &m);
		if (!name || (strcmp(name, "process_name") && strcmp(name, "thread_name")))
			return;
		val = jv_get_str(jv_get(ev, "args"), "name");
		proc = name[0] == 'p';
		if (!val || !val[0])
			ck_problem(c, CK_META_NAME, i, "%s without a non-empty string args.name "
				   "(Perfetto: json_parser_failure)", name);
		val = val ? val : "";
		m.tid = proc ? 0 : r->tid;
		m.ts = r->ts_ok ? r->ts : 0;
		m.val = str_hash(STR_HASH_INIT, val, strlen(val));
		m.val_name = ck_name_id(c, val);
		m.kind = proc ? 1 : 2;
		ck_keep(c, c->metas, &m);
		return;
	}
	/* s, f */
	if (r->ts_ok && r->ids_ok)
		ck_keep(c, c->points, &(struct point){ ref, r->ph });
	id = jv_get(ev, "id");
	if (!id) {
		ck_problem(c, CK_FLOW_UNMATCHED, i, "flow event without an id");
	} else {
		struct flow f = { .r = ref, .ph = r->ph };
		const char *cat = jv_get_str(ev, "cat") ?: "";

		if (!flow_id(id, &f.id)) {
			char t[40];

			ck_value_text(t, sizeof(t), id);
			ck_problem(c, CK_FLOW_BAD_ID, i, "flow id %s is neither an integer nor a "
				   "hex string (Perfetto: flow_invalid_id)", t);
			return;
		}
		f.key = str_hash(str_hash(STR_HASH_INIT, cat, strlen(cat) + 1), name ?: "",
				 strlen(name ?: ""));
		ck_keep(c, c->flows, &f);
	}
}

void check_element(struct ctx *c, size_t idx, const struct jv *ev)
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
const struct jv *check_members(struct ctx *c, const struct jv *root)
{
	const struct jv *events, *v;

	if (!root || (root->type != JV_OBJECT && root->type != JV_ARRAY)) {
		ck_problem(c, CK_NOT_OBJECT, SIZE_MAX, "top level is %s, not a trace object",
			   root ? jv_type_name(root->type) : "missing");
		return NULL;
	}
	if (root->type == JV_ARRAY) {
		ck_problem(c, CK_BARE_ARRAY, SIZE_MAX, "top level is a bare array: "
			   "aiu-trace-analyzer needs the object form, Perfetto rejects an "
			   "empty []");
		return root;
	}
	events = jv_get(root, "traceEvents");
	if (!events || events->type != JV_ARRAY) {
		ck_problem(c, CK_NO_EVENTS, SIZE_MAX, "%s", events ? "traceEvents is not an array" :
			   "no traceEvents");
		events = NULL;
	}
	v = jv_get(root, "deviceProperties");
	if (!v)
		ck_problem(c, CK_DEVICE_PROPS, SIZE_MAX, "no deviceProperties: aiu-trace-analyzer "
			   "needs exactly one entry");
	else if (v->type != JV_ARRAY)
		ck_problem(c, CK_DEVICE_PROPS, SIZE_MAX, "deviceProperties is a %s, not an array",
			   jv_type_name(v->type));
	else if (jv_len(v) != 1)
		ck_problem(c, CK_DEVICE_PROPS, SIZE_MAX, "deviceProperties has %zu entries: "
			   "aiu-trace-analyzer needs exactly one", jv_len(v));
	if (!jv_get_num(root, "baseTimeNanoseconds", NULL))
		ck_problem(c, CK_NO_BASE_TIME, SIZE_MAX, "no numeric baseTimeNanoseconds: ts "
			   "cannot be mapped to wall-clock time");
	return events;
}
