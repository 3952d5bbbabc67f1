/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The state of one `check`: its problem lines and counts, the names kept for them, and the
 * records the cross-event rules keep of each event (sorted by spool.h). Only the check files
 * include this: checkevent.c fills it, checkcross.c reads it back, check.c drives both.
 */
#ifndef SPYRE_CHECKCTX_H
#define SPYRE_CHECKCTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "offline/checkkind.h"

struct jv;
struct spool;

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

/* --- the records the cross-event rules keep, each in its spool (ck_init) ---------------------- */

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

/* pid, then tid: the order of the lanes (tracks) */
static inline int lane_cmp(int64_t pa, int64_t ta, int64_t pb, int64_t tb)
{
	if (pa != pb)
		return pa < pb ? -1 : 1;
	if (ta != tb)
		return ta < tb ? -1 : 1;
	return 0;
}

/* Printable copy of a string from the trace: bounded, no control bytes (one line a problem). */
void ck_clean(char *dst, size_t n, const char *s);
/* A value of the trace as a problem line quotes it: a number's text, a string, else its type */
void ck_value_text(char *dst, size_t n, const struct jv *v);
/* ns as µs with three decimals, as the trace writes them */
void ck_fmt_us(char *dst, size_t n, int64_t ns);
/* A name's number in the table (its first NAME_KEEP - 1 bytes), 0 when it cannot be kept. */
uint32_t ck_name_id(struct ctx *c, const char *s);
const char *ck_name_of(const struct ctx *c, uint32_t id);

/* @idx: the event being judged (c->idx), or SIZE_MAX for a document-level problem. */
void ck_problem(struct ctx *c, enum check_kind k, size_t idx, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A problem of an event judged earlier, from what was kept of it. */
void ck_problem_ref(struct ctx *c, enum check_kind k, const struct evref *r, const char *fmt,
		    ...) __attribute__((format(printf, 4, 5)));
/* A record could not be kept (memory, the temporary file): the check cannot be finished. */
void ck_keep(struct ctx *c, struct spool *sp, const void *rec);

/* @c empty, its problem lines to @out (NULL: only counted) as "check: @label: ". 0 or -ENOMEM */
int ck_init(struct ctx *c, const char *label, FILE *out, struct check_result *res);
void ck_fini(struct ctx *c);

#endif
