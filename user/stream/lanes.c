// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A thread's host spans on lanes where none crosses another (lanes.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "stream/lanes.h"

struct span_iv {
	uint64_t start, end;
};

/* The spans later ones must be checked against: outermost ones, in the order they came. */
struct lane {
	struct span_iv *v;
	uint32_t n, cap;
};

struct lanes {
	int n;			/* lanes made, the thread's own track (lane 0) among them */
	uint64_t crossed;	/* spans put on the last lane though they cross one there */
	struct lane lane[LANES_MAX + 1];
};

/*
 * Whether span [s, e) crosses one of lane @ln's: starts inside it and ends after it, or starts
 * before it and ends inside it. Nested either way, or apart, is no crossing. Spans come in the
 * order they end, so those that ended before @s (apart) stop the walk back.
 */
static bool crosses(const struct lane *ln, uint64_t s, uint64_t e)
{
	for (uint32_t i = ln->n; i-- > 0;) {
		const struct span_iv *t = &ln->v[i];

		if (t->end <= s)
			break;
		if ((t->start < s && s < t->end && t->end < e) ||
		    (s < t->start && t->start < e && e < t->end))
			return true;
	}
	return false;
}

/*
 * Span [s, e) goes on lane @ln: those it encloses need no checking any more (a later span that
 * crosses one of them crosses it too); the oldest half goes when the lane is full.
 */
static int keep(struct lane *ln, uint64_t s, uint64_t e)
{
	while (ln->n && ln->v[ln->n - 1].start >= s && ln->v[ln->n - 1].end <= e)
		ln->n--;
	if (ln->n == ln->cap) {
		uint32_t cap = ln->cap ? ln->cap * 2 : 8;
		struct span_iv *v;

		if (cap > LANE_KEEP) {
			memmove(ln->v, ln->v + LANE_KEEP / 2, (ln->n - LANE_KEEP / 2) * sizeof(*v));
			ln->n -= LANE_KEEP / 2;
		} else {
			v = realloc(ln->v, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			ln->v = v;
			ln->cap = cap;
		}
	}
	ln->v[ln->n++] = (struct span_iv){ s, e };
	return 0;
}

int lanes_place(struct lanes **lp, uint64_t start, uint64_t end)
{
	struct lanes *l = *lp;
	int k;

	if (!l) {
		l = *lp = calloc(1, sizeof(*l));
		if (!l)
			return 0;
		l->n = 1;
	}
	for (k = 0; k < l->n && crosses(&l->lane[k], start, end); k++)
		;
	if (k == l->n) {
		if (l->n == LANES_MAX + 1) {
			k = LANES_MAX;
			l->crossed++;
		} else {
			l->n++;
		}
	}
	keep(&l->lane[k], start, end);
	return k;
}

int lanes_extra(const struct lanes *l)
{
	return l ? l->n - 1 : 0;
}

uint64_t lanes_crossed(const struct lanes *l)
{
	return l ? l->crossed : 0;
}

void lanes_free(struct lanes *l)
{
	if (!l)
		return;
	for (int k = 0; k < l->n; k++)
		free(l->lane[k].v);
	free(l);
}
