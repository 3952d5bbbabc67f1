// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Chrome Trace Event writer. Layout: the header object members, then "traceEvents":[ with one
 * event per line, each line after the first starting with the separating comma. Every commit
 * therefore ends right after an event's closing brace, and a cut file is repaired by appending
 * "]}" (the array is the last member until trace_end).
 */
#include <errno.h>
#include <stdlib.h>

#include "trace.h"

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

	jw_lit(w, "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":");
	jw_i64(w, m->device_id);
	jw_lit(w, ",\"name\":\"Spyre (AIU)\",\"totalGlobalMem\":0,\"computeMajor\":0,"
		  "\"computeMinor\":0}],\"displayTimeUnit\":\"ms\",\"baseTimeNanoseconds\":");
	jw_u64(w, m->real_base_ns);
	jw_lit(w, ",\"traceName\":");
	jw_str(w, m->trace_name);
	jw_lit(w, ",\"spyreTracer\":{\"version\":");
	jw_str(w, m->tool_version);
	jw_lit(w, ",\"hostname\":");
	jw_str(w, m->hostname);
	jw_lit(w, ",\"clock\":\"CLOCK_MONOTONIC\",\"monotonicBaseNs\":");
	jw_u64(w, m->mono_base_ns);
	jw_lit(w, ",\"realtimeBaseNs\":");
	jw_u64(w, m->real_base_ns);
	jw_lit(w, "},\"traceEvents\":[");
	jw_commit(w);

	err = jw_error(w);
	if (err) {
		jw_close(w);
		free(t);
		return err;
	}
	*out = t;
	return 0;
}

/* Separator and the fields every event starts with. */
static void ev_start(struct trace_writer *t, const char *ph_cat)
{
	if (t->first)
		jw_raw(t->w, "\n", 1);
	else
		jw_raw(t->w, ",\n", 2);
	t->first = false;
	jw_lit(t->w, ph_cat);
}

static void put_ts(struct trace_writer *t, uint64_t ts_ns)
{
	/* wraps to a negative difference for events before the base, as intended */
	jw_us_signed(t->w, (int64_t)(ts_ns - t->base_ns));
}

/* ph:"M" @what with args {@key: @value}, or {"sort_index": @sort_index} when @value is NULL */
static void meta_event(struct trace_writer *t, uint32_t pid, uint32_t tid, const char *what,
		       const char *key, const char *value, int sort_index)
{
	struct jw *w = t->w;

	ev_start(t, "{\"ph\":\"M\",\"name\":\"");
	jw_lit(w, what);
	jw_lit(w, "\",\"pid\":");
	jw_u64(w, pid);
	jw_lit(w, ",\"tid\":");
	jw_u64(w, tid);
	jw_lit(w, ",\"ts\":0,\"args\":{");
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

static void put_arg(struct jw *w, const struct trace_arg *a)
{
	jw_str(w, a->key);
	jw_raw(w, ":", 1);
	switch (a->type) {
	case TA_U64:
		jw_u64(w, a->u);
		break;
	case TA_I64:
		jw_i64(w, a->i);
		break;
	case TA_HEX:
		jw_hex(w, a->u);
		break;
	case TA_STR:
		jw_str(w, a->s);
		break;
	case TA_DBL:
		jw_dbl(w, a->d, 3);
		break;
	default:
		jw_lit(w, "null");
		break;
	}
}

static void put_args(struct jw *w, const struct trace_arg *args, int nargs)
{
	if (nargs <= 0 || !args)
		return;
	jw_lit(w, ",\"args\":{");
	for (int i = 0; i < nargs; i++) {
		if (i)
			jw_raw(w, ",", 1);
		put_arg(w, &args[i]);
	}
	jw_raw(w, "}", 1);
}

/* The fields X and i events share: cat, name, pid, tid, ts. */
static void put_common(struct trace_writer *t, const char *start, uint32_t pid, uint32_t tid,
		       uint64_t ts_ns, const char *name, const char *cat)
{
	struct jw *w = t->w;

	ev_start(t, start);
	jw_str(w, cat);
	jw_lit(w, ",\"name\":");
	jw_str(w, name);
	jw_lit(w, ",\"pid\":");
	jw_u64(w, pid);
	jw_lit(w, ",\"tid\":");
	jw_u64(w, tid);
	jw_lit(w, ",\"ts\":");
	put_ts(t, ts_ns);
}

void trace_complete(struct trace_writer *t, uint32_t pid, uint32_t tid, uint64_t ts_ns,
		    uint64_t dur_ns, const char *name, const char *cat,
		    const struct trace_arg *args, int nargs)
{
	struct jw *w = t->w;

	put_common(t, "{\"ph\":\"X\",\"cat\":", pid, tid, ts_ns, name, cat);
	jw_lit(w, ",\"dur\":");
	/* unsigned: a duration is never negative by construction */
	jw_us(w, dur_ns);
	put_args(w, args, nargs);
	jw_raw(w, "}", 1);
	jw_commit(w);
}

void trace_instant(struct trace_writer *t, uint32_t pid, uint32_t tid, uint64_t ts_ns,
		   const char *name, const char *cat, const struct trace_arg *args, int nargs)
{
	struct jw *w = t->w;

	/* thread-scoped: aiu-trace-analyzer needs "s", and a 0-length X it would skip */
	put_common(t, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":", pid, tid, ts_ns, name, cat);
	put_args(w, args, nargs);
	jw_raw(w, "}", 1);
	jw_commit(w);
}

void trace_flow(struct trace_writer *t, char ph, uint64_t id, uint32_t pid, uint32_t tid,
		uint64_t ts_ns)
{
	struct jw *w = t->w;

	ev_start(t, ph == 'f' ? "{\"ph\":\"f\"" : "{\"ph\":\"s\"");
	jw_lit(w, ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":");
	jw_u64(w, id);
	jw_lit(w, ",\"pid\":");
	jw_u64(w, pid);
	jw_lit(w, ",\"tid\":");
	jw_u64(w, tid);
	jw_lit(w, ",\"ts\":");
	put_ts(t, ts_ns);
	/* bind the arrow head to the enclosing slice, as Kineto does */
	if (ph == 'f')
		jw_lit(w, ",\"bp\":\"e\"");
	jw_raw(w, "}", 1);
	jw_commit(w);
}

int trace_finish(struct trace_writer *t, const char *extra)
{
	struct jw *w;

	if (!t)
		return -EINVAL;
	w = t->w;
	jw_raw(w, "\n]", 2);
	if (extra && *extra) {
		jw_raw(w, ",", 1);
		jw_lit(w, extra);
	}
	jw_raw(w, "}\n", 2);
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
