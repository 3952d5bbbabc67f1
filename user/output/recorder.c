// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The flight recorder's slices (recorder.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "output/recorder.h"

/* slices kept at most: DUR in quarters, the one being filled, and room for short ones */
#define RECORDER_SLICES	64

struct slice {
	char *text;
	size_t len;
	size_t ev_off, ev_end;	/* the event lines: after "traceEvents":[ up to its "]" */
	uint64_t start_ns, end_ns;
	uint64_t count;		/* the caller's (recorder_add) */
};

struct recorder {
	struct slice s[RECORDER_SLICES];	/* a ring, oldest at head */
	int head, n;
	uint64_t keep_ns, max_bytes, bytes, dropped;
};

struct recorder *recorder_new(uint64_t keep_ns, uint64_t max_bytes)
{
	struct recorder *r = calloc(1, sizeof(*r));

	if (r) {
		r->keep_ns = keep_ns;
		r->max_bytes = max_bytes;
	}
	return r;
}

static void drop_oldest(struct recorder *r)
{
	struct slice *o = &r->s[r->head];

	r->bytes -= o->len;
	free(o->text);
	memset(o, 0, sizeof(*o));
	r->head = (r->head + 1) % RECORDER_SLICES;
	r->n--;
}

void recorder_free(struct recorder *r)
{
	while (r && r->n)
		drop_oldest(r);
	free(r);
}

int recorder_add(struct recorder *r, char *text, size_t len, uint64_t start_ns, uint64_t end_ns,
		 uint64_t count)
{
	static const char key[] = "\"traceEvents\":[";
	const char *b = text ? strstr(text, key) : NULL, *e;
	struct slice *sl;

	if (!b) {
		free(text);
		return -EINVAL;
	}
	b += sizeof(key) - 1;
	/* the writer ends the array with "\n]" on a line of its own (trace_finish) */
	for (e = text + len; e > b && !(e[-1] == ']' && e[-2] == '\n'); e--)
		;
	if (r->n == RECORDER_SLICES)
		drop_oldest(r);
	sl = &r->s[(r->head + r->n++) % RECORDER_SLICES];
	*sl = (struct slice){ .text = text, .len = len, .ev_off = (size_t)(b - text),
			      .ev_end = e > b ? (size_t)(e - 1 - text) : (size_t)(b - text),
			      .start_ns = start_ns, .end_ns = end_ns, .count = count };
	r->bytes += len;
	/* the newest covers what is asked: the older ones age out, the bound holds */
	while (r->n > 1 && r->s[(r->head + 1) % RECORDER_SLICES].start_ns + r->keep_ns <= end_ns)
		drop_oldest(r);
	while (r->n > 1 && r->max_bytes && r->bytes > r->max_bytes) {
		drop_oldest(r);
		r->dropped++;
	}
	return 0;
}

/* A line's hash, to write each name once (FNV-1a). */
static uint64_t hash_line(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	while (n--)
		h = (h ^ (unsigned char)*p++) * 1099511628211ull;
	return h ? h : 1;
}

/* Has @h been seen (open addressing in @set of @cap, a power of two)? Inserts it if not. */
static bool seen(uint64_t *set, size_t cap, uint64_t h)
{
	for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
		if (set[i] == h)
			return true;
		if (!set[i]) {
			set[i] = h;
			return false;
		}
	}
}

uint64_t recorder_write(const struct recorder *r, struct trace_writer *tw, uint64_t from_ns,
			uint64_t *start_ns, uint64_t *count)
{
	size_t cap = 1 << 16, names = 0;
	uint64_t *set = calloc(cap, sizeof(*set)), n = 0;

	*start_ns = 0;
	*count = 0;
	for (int k = 0; k < r->n; k++) {
		const struct slice *sl = &r->s[(r->head + k) % RECORDER_SLICES];
		const char *p = sl->text + sl->ev_off, *end = sl->text + sl->ev_end;

		if (sl->end_ns <= from_ns)
			continue;
		if (!*start_ns)
			*start_ns = sl->start_ns;
		*count += sl->count;
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p)), *q;
			size_t len;

			q = nl ? nl : end;
			len = (size_t)(q - p);
			if (len && p[len - 1] == ',')
				len--;
			/* a slice's names are the run's so far: once is enough (bounded set:
			 * past 3/4 full, names are written again rather than tracked) */
			if (len && !strncmp(p, "{\"ph\":\"M\"", 9) && set && names < cap / 4 * 3) {
				if (seen(set, cap, hash_line(p, len)))
					len = 0;
				else
					names++;
			}
			if (len && *p == '{') {
				trace_raw(tw, p, len);
				n++;
			}
			p = q + 1;
		}
	}
	free(set);
	return n;
}

uint64_t recorder_bytes(const struct recorder *r)
{
	return r ? r->bytes : 0;
}

uint64_t recorder_dropped(const struct recorder *r)
{
	return r ? r->dropped : 0;
}
