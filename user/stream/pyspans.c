// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/array.h"
#include "output/trace_writer.h"
#include "stream/pyspans.h"

/* One traced call: its thread, its bounds and its stack (ids[off .. off + n), outermost first) */
struct pcall {
	uint32_t pid, tid;
	uint64_t ts, end;
	size_t off;
	uint32_t n;
};

struct pyspans {
	/* frame names interned: id i is names[i]; a hash of ids for the lookup */
	char **names;
	size_t nnames, names_cap;
	uint32_t *hash;		/* id + 1, 0: free */
	size_t hash_cap;	/* a power of two */
	struct pcall *calls;
	size_t ncalls, calls_cap;
	uint32_t *ids;
	size_t nids, ids_cap;
	uint64_t left_out;
};

struct pyspans *pyspans_new(void)
{
	return calloc(1, sizeof(struct pyspans));
}

void pyspans_free(struct pyspans *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nnames; i++)
		free(p->names[i]);
	free(p->names);
	free(p->hash);
	free(p->calls);
	free(p->ids);
	free(p);
}

uint64_t pyspans_left_out(const struct pyspans *p)
{
	return p ? p->left_out : 0;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static int rehash(struct pyspans *p, size_t cap)
{
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < p->nnames; i++) {
		size_t k = hash_str(p->names[i]) & (cap - 1);

		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = i + 1;
	}
	free(p->hash);
	p->hash = h;
	p->hash_cap = cap;
	return 0;
}

/* The id of frame name @s, interned on first sight; -ENOMEM */
static int64_t intern(struct pyspans *p, const char *s)
{
	size_t k;

	if ((p->nnames + 1) * 2 > p->hash_cap && rehash(p, p->hash_cap ? p->hash_cap * 2 : 256))
		return -ENOMEM;
	for (k = hash_str(s) & (p->hash_cap - 1); p->hash[k]; k = (k + 1) & (p->hash_cap - 1))
		if (!strcmp(p->names[p->hash[k] - 1], s))
			return p->hash[k] - 1;
	if (array_reserve(&p->names, &p->names_cap, p->nnames + 1, sizeof(*p->names), 256))
		return -ENOMEM;
	p->names[p->nnames] = strdup(s);
	if (!p->names[p->nnames])
		return -ENOMEM;
	p->hash[k] = ++p->nnames;
	return p->nnames - 1;
}

int pyspans_add(struct pyspans *p, uint32_t pid, uint32_t tid, uint64_t ts_ns, uint64_t end_ns,
		const char *const *names, uint32_t n, bool whole)
{
	struct pcall *c;

	if (!n)
		return 0;
	if (!whole || p->ncalls >= PYSPANS_MAX_CALLS) {
		p->left_out++;
		return 0;
	}
	if (array_reserve(&p->calls, &p->calls_cap, p->ncalls + 1, sizeof(*p->calls), 1024) ||
	    array_reserve(&p->ids, &p->ids_cap, p->nids + n, sizeof(*p->ids), 8192)) {
		p->left_out++;
		return -ENOMEM;
	}
	c = &p->calls[p->ncalls];
	*c = (struct pcall){ .pid = pid, .tid = tid, .ts = ts_ns, .end = end_ns, .off = p->nids,
			     .n = n };
	/* outermost first: the sweep compares depths from the bottom of the stack */
	for (uint32_t i = 0; i < n; i++) {
		int64_t id = intern(p, names[n - 1 - i]);

		if (id < 0) {
			p->left_out++;
			return -ENOMEM;
		}
		p->ids[p->nids + i] = (uint32_t)id;
	}
	p->nids += n;
	p->ncalls++;
	return 0;
}

const char *pyspans_name(const char *frame, char *buf, unsigned int len)
{
	const char *colon = NULL, *sp;

	/* "FILE:LINE QUALNAME": the last ':' before the first ' ' after it splits FILE off */
	for (const char *q = frame; *q; q++) {
		if (*q == ':' && q[1] >= '0' && q[1] <= '9') {
			sp = strchr(q, ' ');
			if (sp && strspn(q + 1, "0123456789") == (size_t)(sp - q - 1))
				colon = q;
		}
	}
	sp = colon ? strchr(colon, ' ') : NULL;
	if (!colon || !sp) {
		snprintf(buf, len, "%s", frame);
		return buf;
	}
	snprintf(buf, len, "%.*s(%.*s): %s", (int)(colon - frame), frame, (int)(sp - colon - 1),
		 colon + 1, sp + 1);
	return buf;
}

static int by_thread_then_time(const void *a, const void *b)
{
	const struct pcall *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	/* at one start the longer call first: it is the outer one */
	return x->end > y->end ? -1 : x->end < y->end;
}

/* An open frame of the sweep */
struct open_frame {
	uint32_t id;
	uint64_t start, last_end, pyid;
};

#define SWEEP_DEPTH	64	/* deeper than SPYRE_PY_FRAMES, the most a stack brings */

struct sweep {
	struct pyspans *p;
	struct trace_writer *tw;
	uint32_t pid, tid;
	struct open_frame f[SWEEP_DEPTH];
	uint32_t depth;
	uint64_t next_id, written;
};

static void close_to(struct sweep *s, uint32_t depth)
{
	char name[512];

	while (s->depth > depth) {
		const struct open_frame *o = &s->f[--s->depth];
		struct trace_arg args[2] = {
			{ .key = "Python id", .type = TA_U64, .u = o->pyid },
			{ .key = "Python parent id", .type = TA_U64,
			  .u = s->depth ? s->f[s->depth - 1].pyid : 0 },
		};

		if (s->tw)
			trace_complete(s->tw, s->pid, s->tid, o->start, o->last_end - o->start,
				       pyspans_name(s->p->names[o->id], name, sizeof(name)),
				       "python_function", args, s->depth ? 2 : 1);
		s->written++;
	}
}

uint64_t pyspans_write(struct pyspans *p, struct trace_writer *tw)
{
	struct sweep s = { .p = p, .tw = tw, .next_id = 1 };

	if (!p || !p->ncalls)
		return 0;
	qsort(p->calls, p->ncalls, sizeof(*p->calls), by_thread_then_time);
	for (size_t i = 0; i < p->ncalls; i++) {
		const struct pcall *c = &p->calls[i];
		const uint32_t *ids = p->ids + c->off;
		uint32_t n = c->n < SWEEP_DEPTH ? c->n : SWEEP_DEPTH, k = 0;

		if (c->pid != s.pid || c->tid != s.tid) {
			close_to(&s, 0);
			s.pid = c->pid;
			s.tid = c->tid;
		}
		/* the frames this call shares with the open ones stay open, the rest close */
		while (k < s.depth && k < n && s.f[k].id == ids[k])
			k++;
		close_to(&s, k);
		for (uint32_t d = 0; d < k; d++)
			if (c->end > s.f[d].last_end)
				s.f[d].last_end = c->end;
		for (; k < n; k++)
			s.f[s.depth++] = (struct open_frame){ .id = ids[k], .start = c->ts,
							      .last_end = c->end,
							      .pyid = s.next_id++ };
	}
	close_to(&s, 0);
	p->ncalls = p->nids = 0;
	return s.written;
}

uint64_t pyspans_pending(const struct pyspans *p)
{
	return p ? p->ncalls : 0;
}
