// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * check's problem lines (at most CHECK_MAX_LINES printed, all counted), the names they quote
 * kept in a bounded table, and the spools of records the cross-event rules read, each sorted
 * in the order its rule walks it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "common/util.h"
#include "offline/checkctx.h"
#include "offline/jsonparse.h"
#include "offline/spool.h"

/* Memory of each spool of records before it spills to a temporary file */
#define CHECK_SPOOL_MEM		(16u << 20)

/* Printable copy of a string from the trace: bounded, no control bytes (one line a problem). */
void ck_clean(char *dst, size_t n, const char *s)
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

void ck_value_text(char *dst, size_t n, const struct jv *v)
{
	if (!v)
		ck_clean(dst, n, "-");
	else if (v->type == JV_NUMBER)
		ck_clean(dst, n, v->num.raw);
	else if (v->type == JV_STRING)
		ck_clean(dst, n, v->str.s);
	else
		ck_clean(dst, n, jv_type_name(v->type));
}

void ck_fmt_us(char *dst, size_t n, int64_t ns)
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
uint32_t ck_name_id(struct ctx *c, const char *s)
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

const char *ck_name_of(const struct ctx *c, uint32_t id)
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

/* @idx: the event being judged (c->idx), or SIZE_MAX for a document-level problem. */
void ck_problem(struct ctx *c, enum check_kind k, size_t idx, const char *fmt, ...)
{
	char at[256] = "", name[80], pid[24], tid[24], ts[32];
	const struct jv *ev = c->ev;
	va_list ap;

	if (idx != SIZE_MAX && printing(c)) {
		if (ev->type == JV_OBJECT) {
			ck_clean(name, sizeof(name), jv_get_str(ev, "name"));
			ck_value_text(pid, sizeof(pid), jv_get(ev, "pid"));
			ck_value_text(tid, sizeof(tid), jv_get(ev, "tid"));
			ck_value_text(ts, sizeof(ts), jv_get(ev, "ts"));
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

/* A problem of an event judged earlier, from what was kept of it. */
void ck_problem_ref(struct ctx *c, enum check_kind k, const struct evref *r, const char *fmt,
		    ...)
{
	char at[256] = "", name[80], pid[24] = "?", tid[24] = "?", ts[32] = "?";
	va_list ap;

	if (printing(c)) {
		ck_clean(name, sizeof(name), ck_name_of(c, r->name));
		if (r->ids_ok) {
			snprintf(pid, sizeof(pid), "%lld", (long long)r->pid);
			snprintf(tid, sizeof(tid), "%lld", (long long)r->tid);
		}
		if (r->ts_ok)
			ck_fmt_us(ts, sizeof(ts), r->ts);
		snprintf(at, sizeof(at), "event %llu (%s, pid %s, tid %s, ts %s): ",
			 (unsigned long long)r->idx, name, pid, tid, ts);
	}
	va_start(ap, fmt);
	vproblem(c, k, at, fmt, ap);
	va_end(ap);
}

/* A record could not be kept (memory, the temporary file): the check cannot be finished. */
void ck_keep(struct ctx *c, struct spool *sp, const void *rec)
{
	int err = spool_add(sp, rec);

	if (err && !c->err)
		c->err = err;
}

/* --- the records' spools, each in the order its cross-event rule reads it --------------------- */

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

int ck_init(struct ctx *c, const char *label, FILE *out, struct check_result *res)
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

void ck_fini(struct ctx *c)
{
	spool_free(c->spans);
	spool_free(c->points);
	spool_free(c->flows);
	spool_free(c->binds);
	spool_free(c->metas);
	free(c->names.s);
	free(c->names.slot);
}
