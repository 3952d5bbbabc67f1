// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Chrome Trace Event writer. Layout: the header object members, then "traceEvents":[ with one
 * event per line, each line after the first starting with the separating comma. Every commit
 * therefore ends right after an event's closing brace, and a cut file is repaired by appending
 * "]}" (the array is the last member until trace_end).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/trace_writer.h"

struct trace_writer {
	struct jw *w;
	uint64_t base_ns;
	bool first;
};

struct jw *trace_jw(struct trace_writer *t)
{
	return t->w;
}

int trace_begin(struct trace_writer **out, struct jw *w, const struct trace_meta *m)
{
	struct trace_writer *t;
	int err;

	*out = NULL;
	if (!w || !m) {
		if (w)
			jw_close(w);
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		jw_close(w);
		return -ENOMEM;
	}
	t->w = w;
	t->base_ns = m->mono_base_ns;
	t->first = true;

	jw_obj_begin(w);
	jw_kv_u64(w, "schemaVersion", 1);
	jw_key(w, "deviceProperties");
	jw_arr_begin(w);
	jw_obj_begin(w);
	jw_kv_i64(w, "id", m->device_id);
	jw_kv_str(w, "name", "Spyre (AIU)");
	jw_kv_u64(w, "totalGlobalMem", 0);
	jw_kv_u64(w, "computeMajor", 0);
	jw_kv_u64(w, "computeMinor", 0);
	jw_obj_end(w);
	jw_arr_end(w);
	jw_kv_str(w, "displayTimeUnit", "ms");
	jw_kv_u64(w, "baseTimeNanoseconds", m->real_base_ns);
	jw_kv_str(w, "traceName", m->trace_name);
	jw_key(w, "spyreTracer");
	jw_obj_begin(w);
	jw_kv_str(w, "version", m->tool_version);
	jw_kv_str(w, "hostname", m->hostname);
	jw_kv_str(w, "clock", "CLOCK_MONOTONIC");
	jw_kv_u64(w, "monotonicBaseNs", m->mono_base_ns);
	jw_kv_u64(w, "realtimeBaseNs", m->real_base_ns);
	jw_obj_end(w);
	/* the events go in as raw text, each with its own separator (trace_complete, ...) */
	jw_key(w, "traceEvents");
	jw_arr_begin(w);
	jw_commit(w);
	/* on disk at once: a tracer killed before its first events leaves a trace to recover */
	jw_flush(w);

	err = jw_error(w);
	if (err) {
		jw_close(w);
		free(t);
		return err;
	}
	*out = t;
	return 0;
}

/* Every event line after the first starts with the separating comma. */
static void put_sep(struct trace_writer *t)
{
	jw_raw(t->w, t->first ? "\n" : ",\n", t->first ? 1 : 2);
	t->first = false;
}

/* Separator and the fields every event starts with. */
static void ev_start(struct trace_writer *t, const char *ph_cat)
{
	put_sep(t);
	jw_lit(t->w, ph_cat);
}

/*
 * ph:"M" @what with args {@key: @value}, or {"sort_index": @sort_index} when @value is NULL;
 * at ts @ts_ns (CLOCK_MONOTONIC; 0: ts 0, the usual for metadata)
 */
static void meta_event_at(struct trace_writer *t, uint32_t pid, uint32_t tid, const char *what,
			  const char *key, const char *value, int sort_index, uint64_t ts_ns)
{
	struct jw *w = t->w;
	char *p;

	ev_start(t, "{\"ph\":\"M\",\"name\":\"");
	jw_lit(w, what);
	jw_lit(w, "\",\"pid\":");
	jw_u64(w, pid);
	jw_lit(w, ",\"tid\":");
	jw_u64(w, tid);
	jw_lit(w, ",\"ts\":");
	p = jw_reserve(w, JW_FMT_MAX);
	if (p)
		jw_advance(w, jw_fmt_us(p, ts_ns > t->base_ns ? ts_ns - t->base_ns : 0));
	jw_lit(w, ",\"args\":{");
	if (value) {
		jw_str(w, key);
		jw_raw(w, ":", 1);
		jw_str(w, value);
	} else {
		jw_lit(w, "\"sort_index\":");
		jw_i64(w, sort_index);
	}
	jw_lit(w, "}}");
	jw_commit(w);
}

static void meta_event(struct trace_writer *t, uint32_t pid, uint32_t tid, const char *what,
		       const char *key, const char *value, int sort_index)
{
	meta_event_at(t, pid, tid, what, key, value, sort_index, 0);
}

void trace_renamed(struct trace_writer *t, uint32_t pid, uint32_t tid, const char *name,
		   uint64_t ts_ns)
{
	meta_event_at(t, pid, tid, tid ? "thread_name" : "process_name", "name", name, 0, ts_ns);
}

void trace_process_name(struct trace_writer *t, uint32_t pid, const char *name, int sort_index)
{
	meta_event(t, pid, 0, "process_name", "name", name ? name : "", 0);
	if (sort_index >= 0)
		meta_event(t, pid, 0, "process_sort_index", NULL, NULL, sort_index);
}

void trace_process_labels(struct trace_writer *t, uint32_t pid, const char *labels)
{
	meta_event(t, pid, 0, "process_labels", "labels", labels, 0);
}

void trace_thread_name(struct trace_writer *t, uint32_t pid, uint32_t tid, const char *name,
		       int sort_index)
{
	meta_event(t, pid, tid, "thread_name", "name", name ? name : "", 0);
	if (sort_index >= 0)
		meta_event(t, pid, tid, "thread_sort_index", NULL, NULL, sort_index);
}

/* An argument's value (its key is written by the caller). */
static void put_value(struct jw *w, const struct trace_arg *a)
{
	char *p;

	switch (a->type) {
	case TA_STR:
		jw_str(w, a->s);
		return;
	case TA_DBL:
		jw_dbl(w, a->d, 3);
		return;
	case TA_BOOL:
		jw_lit(w, a->u ? "true" : "false");
		return;
	case TA_STRS:
		jw_lit(w, "[");
		for (uint32_t i = 0; i < a->n; i++) {
			if (i)
				jw_lit(w, ",");
			jw_str(w, a->sv[i]);
		}
		jw_lit(w, "]");
		return;
	default:
		break;
	}
	p = jw_reserve(w, JW_FMT_MAX);
	if (!p)
		return;
	if (a->type == TA_U64)
		p = jw_fmt_u64(p, a->u);
	else if (a->type == TA_I64)
		p = jw_fmt_i64(p, a->i);
	else if (a->type == TA_HEX)
		p = jw_fmt_hex(p, a->u);
	else
		p = (memcpy(p, "null", 4), p + 4);
	jw_advance(w, p);
}

#define COPY_LIT(p, lit)	(memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)

/*
 * @head (the event's constant opening, up to and including "pid":), then pid, tid, ts and
 * (for X events) dur, formatted in place; the object is left open for the args.
 */
static void put_head_ids(struct trace_writer *t, const char *head, size_t head_len, uint32_t pid,
			 uint32_t tid, uint64_t ts_ns, const uint64_t *dur_ns)
{
	char *p = jw_reserve(t->w, head_len + 64 + 3 * JW_FMT_MAX);

	if (!p)
		return;
	memcpy(p, head, head_len);
	p = jw_fmt_u64(p + head_len, pid);
	p = COPY_LIT(p, ",\"tid\":");
	p = jw_fmt_u64(p, tid);
	p = COPY_LIT(p, ",\"ts\":");
	/* wraps to a negative difference for events before the base, as intended */
	p = jw_fmt_us_signed(p, (int64_t)(ts_ns - t->base_ns));
	if (dur_ns) {
		p = COPY_LIT(p, ",\"dur\":");
		/* unsigned: a duration is never negative by construction */
		p = jw_fmt_us(p, *dur_ns);
	}
	jw_advance(t->w, p);
}

/* ,"args":{...} with keys escaped here, or pre-rendered ones from @f; then the closing brace. */
static void put_args_end(struct jw *w, const struct trace_fmt *f, const struct trace_arg *args,
			 int nargs)
{
	if (nargs > 0 && args) {
		jw_raw(w, ",\"args\":{", 9);
		for (int i = 0; i < nargs; i++) {
			if (i)
				jw_raw(w, ",", 1);
			if (f && i < f->nkeys) {
				jw_raw(w, f->text + f->key_off[i], f->key_len[i]);
			} else {
				jw_str(w, args[i].key);
				jw_raw(w, ":", 1);
			}
			put_value(w, &args[i]);
		}
		jw_raw(w, "}", 1);
	}
	jw_raw(w, "}", 1);
	jw_commit(w);
}

static const char *ph_open(bool instant)
{
	/* thread-scoped instants: aiu-trace-analyzer needs "s", and a 0-length X it would skip */
	return instant ? "{\"ph\":\"i\",\"s\":\"t\",\"cat\":" : "{\"ph\":\"X\",\"cat\":";
}

/* Escaped "cat" and "name" into @w, up to and including "pid": */
static void put_head(struct jw *w, bool instant, const char *cat, const char *name)
{
	jw_lit(w, ph_open(instant));
	jw_str(w, cat);
	jw_lit(w, ",\"name\":");
	jw_str(w, name);
	jw_lit(w, ",\"pid\":");
}

int trace_fmt_init(struct trace_fmt *f, bool instant, const char *cat, const char *name,
		   const char *const *keys, int nkeys)
{
	struct jw *m = jw_memopen();
	size_t len;
	int err;

	memset(f, 0, sizeof(*f));
	if (nkeys < 0 || nkeys > TRACE_FMT_MAX_ARGS) {
		if (m)
			jw_close(m);
		return -E2BIG;
	}
	if (!m)
		return -ENOMEM;
	put_head(m, instant, cat, name);
	jw_mem_data(m, &len);
	f->head_len = len;
	for (int i = 0; i < nkeys; i++) {
		f->key_off[i] = len;
		jw_str(m, keys[i]);
		jw_raw(m, ":", 1);
		jw_mem_data(m, &len);
		f->key_len[i] = len - f->key_off[i];
	}
	err = jw_error(m);
	f->text = jw_mem_take(m, NULL);	/* NULL exactly when err */
	if (err) {
		memset(f, 0, sizeof(*f));
		return err;
	}
	f->nkeys = nkeys;
	f->instant = instant;
	return 0;
}

void trace_fmt_free(struct trace_fmt *f)
{
	free(f->text);
	memset(f, 0, sizeof(*f));
}

void trace_event(struct trace_writer *t, const struct trace_fmt *f, uint32_t pid, uint32_t tid,
		 uint64_t ts_ns, uint64_t dur_ns, const struct trace_arg *args, int nargs)
{
	put_sep(t);
	put_head_ids(t, f->text, f->head_len, pid, tid, ts_ns, f->instant ? NULL : &dur_ns);
	put_args_end(t->w, f, args, nargs);
}

/* The generic path: the head is escaped for each event, into the output itself. */
static void put_event(struct trace_writer *t, bool instant, uint32_t pid, uint32_t tid,
		      uint64_t ts_ns, const uint64_t *dur_ns, const char *name, const char *cat,
		      const struct trace_arg *args, int nargs)
{
	put_sep(t);
	put_head(t->w, instant, cat, name);
	put_head_ids(t, "", 0, pid, tid, ts_ns, dur_ns);
	put_args_end(t->w, NULL, args, nargs);
}

void trace_complete(struct trace_writer *t, uint32_t pid, uint32_t tid, uint64_t ts_ns,
		    uint64_t dur_ns, const char *name, const char *cat,
		    const struct trace_arg *args, int nargs)
{
	put_event(t, false, pid, tid, ts_ns, &dur_ns, name, cat, args, nargs);
}

void trace_instant(struct trace_writer *t, uint32_t pid, uint32_t tid, uint64_t ts_ns,
		   const char *name, const char *cat, const struct trace_arg *args, int nargs)
{
	put_event(t, true, pid, tid, ts_ns, NULL, name, cat, args, nargs);
}

void trace_counter(struct trace_writer *t, uint32_t pid, uint64_t ts_ns, const char *name,
		   const struct trace_arg *args, int nargs)
{
	put_sep(t);
	jw_lit(t->w, "{\"ph\":\"C\",\"name\":");
	jw_str(t->w, name);
	jw_lit(t->w, ",\"pid\":");
	put_head_ids(t, "", 0, pid, 0, ts_ns, NULL);
	put_args_end(t->w, NULL, args, nargs);
}

void trace_flow(struct trace_writer *t, char ph, uint64_t id, uint32_t pid, uint32_t tid,
		uint64_t ts_ns)
{
	char *p;

	put_sep(t);
	p = jw_reserve(t->w, 128 + 4 * JW_FMT_MAX);
	if (!p)
		return;
	p = ph == 'f' ? COPY_LIT(p, "{\"ph\":\"f\"") : COPY_LIT(p, "{\"ph\":\"s\"");
	p = COPY_LIT(p, ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":");
	p = jw_fmt_u64(p, id);
	p = COPY_LIT(p, ",\"pid\":");
	p = jw_fmt_u64(p, pid);
	p = COPY_LIT(p, ",\"tid\":");
	p = jw_fmt_u64(p, tid);
	p = COPY_LIT(p, ",\"ts\":");
	p = jw_fmt_us_signed(p, (int64_t)(ts_ns - t->base_ns));
	/* bind the arrow head to the enclosing slice, as Kineto does */
	if (ph == 'f')
		p = COPY_LIT(p, ",\"bp\":\"e\"");
	*p++ = '}';
	jw_advance(t->w, p);
	jw_commit(t->w);
}

void trace_raw(struct trace_writer *t, const char *ev, size_t len)
{
	put_sep(t);
	jw_raw(t->w, ev, len);
	jw_commit(t->w);
}

int trace_finish(struct trace_writer *t, const char *extra)
{
	struct jw *w;

	if (!t)
		return -EINVAL;
	w = t->w;
	jw_raw(w, "\n", 1);
	jw_arr_end(w);
	if (extra && *extra) {	/* members, made by a keyed writer of their own */
		jw_raw(w, ",", 1);
		jw_lit(w, extra);
	}
	jw_obj_end(w);
	jw_raw(w, "\n", 1);
	jw_commit(w);
	free(t);
	return jw_error(w);
}

int trace_end(struct trace_writer *t, const char *extra)
{
	struct jw *w;

	if (!t)
		return -EINVAL;
	w = t->w;
	trace_finish(t, extra);
	return jw_close(w);
}
