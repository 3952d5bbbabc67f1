/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Chrome Trace Event writer with the Kineto conventions the Spyre tools read: object form,
 * one deviceProperties entry, baseTimeNanoseconds, ph:"X" spans, ts relative in µs with three
 * decimals, ts on every event (M included), never a bare [].
 */
#ifndef SPYRE_TRACE_WRITER_H
#define SPYRE_TRACE_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include "output/jsonw.h"

struct trace_meta {
	uint64_t mono_base_ns;	/* CLOCK_MONOTONIC of ts 0 */
	uint64_t real_base_ns;	/* CLOCK_REALTIME at the same instant: baseTimeNanoseconds */
	const char *trace_name;
	const char *tool_version;
	const char *hostname;
	int device_id;		/* the one deviceProperties entry (aiu-trace-analyzer wants exactly one) */
};

enum trace_arg_type { TA_U64, TA_I64, TA_HEX, TA_STR, TA_DBL, TA_BOOL /* .u: false or true */,
		      TA_STRS /* .sv: an array of .n strings */ };

struct trace_arg {
	const char *key;
	enum trace_arg_type type;
	uint32_t n;		/* TA_STRS: how many */
	union {
		uint64_t u;
		int64_t i;
		const char *s;
		const char *const *sv;
		double d;
	};
};

struct trace_writer;

/*
 * Write the header (everything before the first event). The writer takes @w: on error @w is
 * closed too and *@out is NULL. Returns 0 or -errno.
 */
int trace_begin(struct trace_writer **out, struct jw *w, const struct trace_meta *m);
struct jw *trace_jw(struct trace_writer *t);

/*
 * ph:"M" process_name / process_sort_index / thread_name / thread_sort_index (the sort index
 * event only when @sort_index >= 0). M events carry "ts":0 and, for processes, "tid":0.
 */
void trace_process_name(struct trace_writer *t, uint32_t pid, const char *name, int sort_index);
/* ph:"M" process_labels: shown under the process name (command line, container). */
void trace_process_labels(struct trace_writer *t, uint32_t pid, const char *labels);
void trace_thread_name(struct trace_writer *t, uint32_t pid, uint32_t tid, const char *name,
		       int sort_index);
/*
 * A later name of a process (@tid 0) or thread, found at @ts_ns (CLOCK_MONOTONIC): ph:"M"
 * process_name/thread_name at that ts. Loaders keep the last name of a track: Perfetto sorts by
 * ts and the same priority replaces, chrome://tracing assigns in file order.
 */
void trace_renamed(struct trace_writer *t, uint32_t pid, uint32_t tid, const char *name,
		   uint64_t ts_ns);
/* ph:"X" complete event; @ts_ns is CLOCK_MONOTONIC (converted here), dur never negative. */
void trace_complete(struct trace_writer *t, uint32_t pid, uint32_t tid, uint64_t ts_ns,
		    uint64_t dur_ns, const char *name, const char *cat,
		    const struct trace_arg *args, int nargs);
/* ph:"i" thread-scoped instant (an entry-only probe). */
void trace_instant(struct trace_writer *t, uint32_t pid, uint32_t tid, uint64_t ts_ns,
		   const char *name, const char *cat, const struct trace_arg *args, int nargs);
/*
 * The constant part of one kind of event (a probe's spans or instants): the opening up to
 * "pid": and the quoted argument keys, escaped once instead of for every event.
 */
#define TRACE_FMT_MAX_ARGS	10
struct trace_fmt {
	char *text;		/* the opening, then each "key": back to back */
	size_t head_len;
	size_t key_off[TRACE_FMT_MAX_ARGS];
	size_t key_len[TRACE_FMT_MAX_ARGS];
	int nkeys;
	bool instant;		/* ph:"i" (no dur) rather than ph:"X" */
};

/* 0, -ENOMEM, or -E2BIG for more than TRACE_FMT_MAX_ARGS keys. */
int trace_fmt_init(struct trace_fmt *f, bool instant, const char *cat, const char *name,
		   const char *const *keys, int nkeys);
void trace_fmt_free(struct trace_fmt *f);
/*
 * The same event trace_complete/trace_instant write, from @f: the i-th of @args takes @f's
 * i-th key (its own .key is not read); @dur_ns is ignored for instants.
 */
void trace_event(struct trace_writer *t, const struct trace_fmt *f, uint32_t pid, uint32_t tid,
		 uint64_t ts_ns, uint64_t dur_ns, const struct trace_arg *args, int nargs);
/* ph:"C" counter of process @pid (tid 0): each of @args (numbers) is a track of @name. */
void trace_counter(struct trace_writer *t, uint32_t pid, uint64_t ts_ns, const char *name,
		   const struct trace_arg *args, int nargs);
/* ac2g flow: ph 's' at the launch, 'f' (bp:"e") at the device span. */
void trace_flow(struct trace_writer *t, char ph, uint64_t id, uint32_t pid, uint32_t tid,
		uint64_t ts_ns);

/* One event already rendered by a trace writer (its text between braces, @len bytes). */
void trace_raw(struct trace_writer *t, const char *ev, size_t len);

/*
 * Close the traceEvents array, write the caller's extra top-level members (@extra is either
 * NULL or text of the form "\"key\":value,..." without surrounding braces), close the object
 * and the output. Returns the first output error (-errno) or 0. Frees @t.
 */
int trace_end(struct trace_writer *t, const char *extra);
/* Same as trace_end but leaves @w (trace_jw) open, e.g. to read a jw_memopen buffer. */
int trace_finish(struct trace_writer *t, const char *extra);

#endif
