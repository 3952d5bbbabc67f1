// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The streaming reader of traces (tracestream.c) on arbitrary bytes, read a few bytes at a
 * time so that every value crosses buffer refills. The oracle is jv_parse() of the whole input
 * (fuzzed on its own by fuzz_jsonparse): the stream accepts exactly what it accepts, its events
 * are the elements of the document's traceEvents array (of the top level when it is an array)
 * one by one, its head is the document with that array emptied, and an error that is not a cut
 * says what jv_parse says, at the same line and column.
 */
#include "fuzz.h"
#include "offline/jsonparse.h"
#include "offline/tracestream.h"

static bool same(const struct jv *a, const struct jv *b)
{
	const struct jv *x, *y;

	if (a->type != b->type)
		return false;
	switch (a->type) {
	case JV_NULL:
		return true;
	case JV_BOOL:
		return a->b == b->b;
	case JV_NUMBER:
		return !strcmp(a->num.raw, b->num.raw);
	case JV_STRING:
		return a->str.len == b->str.len && !memcmp(a->str.s, b->str.s, a->str.len);
	case JV_ARRAY:
	case JV_OBJECT:
		if (jv_len(a) != jv_len(b))
			return false;
		for (x = jv_first(a), y = jv_first(b); x && y; x = x->next, y = y->next)
			if ((a->type == JV_OBJECT && strcmp(x->key, y->key)) || !same(x, y))
				return false;
		return true;
	}
	return false;
}

/* The head: @whole with @events (its traceEvents array, or itself) emptied. */
static bool same_head(const struct jv *head, const struct jv *whole, const struct jv *events)
{
	const struct jv *x, *y;

	if (whole == events)
		return head->type == JV_ARRAY && !jv_len(head);
	if (whole->type != JV_OBJECT || head->type != JV_OBJECT || jv_len(head) != jv_len(whole))
		return same(head, whole);
	for (x = jv_first(head), y = jv_first(whole); x && y; x = x->next, y = y->next) {
		if (strcmp(x->key, y->key))
			return false;
		if (y == events ? x->type != JV_ARRAY || jv_len(x) : !same(x, y))
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct jv *events = NULL, *want, *ev;
	char werr[160], serr[160];
	struct tstream *s;
	struct jv *whole;
	int r;

	whole = jv_parse((const char *)data, size, werr, sizeof(werr));
	if (whole && whole->type == JV_ARRAY)
		events = whole;
	else if (whole && whole->type == JV_OBJECT) {
		events = jv_get(whole, "traceEvents");
		if (events && events->type != JV_ARRAY)
			events = NULL;
	}
	want = jv_first(events);
	s = tstream_open_mem((const char *)data, size, 1 + size % 7);
	FUZZ_CHECK(s);
	while ((r = tstream_next(s, &ev, serr, sizeof(serr))) > 0) {
		size_t len;
		const char *raw = tstream_raw(s, &len);

		FUZZ_CHECK(raw >= (const char *)0 && len > 0);
		if (whole) {
			FUZZ_CHECK(want && same(ev, want));
			want = want->next;
		}
	}
	if (whole) {
		FUZZ_CHECK(r == 0 && !want);
		FUZZ_CHECK(tstream_head(s) && same_head(tstream_head(s), whole, events));
		FUZZ_CHECK(!tstream_cut(s));
	} else {
		FUZZ_CHECK(r < 0);
		/* the same message at the same place, unless the stream saw the input end first */
		if (!tstream_cut(s))
			FUZZ_CHECK(!strcmp(serr, werr));
		/* and it stays failed */
		FUZZ_CHECK(tstream_next(s, &ev, serr, sizeof(serr)) < 0);
	}
	FUZZ_CHECK(tstream_bytes(s) <= size);
	tstream_close(s);
	jv_free(whole);
	return 0;
}
