// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * jv_parse() on arbitrary bytes (traces given to check/recover/merge may be truncated or
 * hand-edited). Oracles besides "no crash": every number equals strtod() of its raw text, every
 * string is valid UTF-8 of the stated length, and an accepted document written back out as JSON
 * parses again into the same tree (same re-serialisation).
 */
#include <math.h>

#include "fuzz.h"
#include "offline/jsonparse.h"
#include "../unit/jv_at.h"

struct out {
	char *buf;
	size_t len, cap;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->cap - o->len < n) {
		while (o->cap - o->len < n)
			o->cap = o->cap ? o->cap * 2 : 256;
		o->buf = realloc(o->buf, o->cap);
		if (!o->buf)
			abort();
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void put_string(struct out *o, const char *s, size_t n)
{
	char esc[8];
	size_t i;

	FUZZ_CHECK(s && s[n] == '\0');
	FUZZ_CHECK(fuzz_utf8_ok((const unsigned char *)s, n));
	put(o, "\"", 1);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == '"' || c == '\\') {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			put(o, esc, 6);
		} else {
			put(o, (const char *)&s[i], 1);
		}
	}
	put(o, "\"", 1);
}

static void emit(struct out *o, const struct jv *v, int depth)
{
	const struct jv *c;
	size_t n = 0;
	double ref;

	FUZZ_CHECK(depth <= JV_MAX_DEPTH);
	switch (v->type) {
	case JV_NULL:
		put(o, "null", 4);
		break;
	case JV_BOOL:
		put(o, v->b ? "true" : "false", v->b ? 4 : 5);
		break;
	case JV_NUMBER:
		FUZZ_CHECK(v->num.raw && v->num.raw[0]);
		/* The fast path must round exactly like the C library. */
		ref = strtod(v->num.raw, NULL);
		FUZZ_CHECK(v->num.d == ref && signbit(v->num.d) == signbit(ref));
		put(o, v->num.raw, strlen(v->num.raw));
		break;
	case JV_STRING:
		put_string(o, v->str.s, v->str.len);
		FUZZ_CHECK(jv_str(v) == v->str.s);
		break;
	case JV_ARRAY:
	case JV_OBJECT:
		put(o, v->type == JV_ARRAY ? "[" : "{", 1);
		jv_foreach(c, v) {
			if (n)
				put(o, ",", 1);
			if (v->type == JV_OBJECT) {
				FUZZ_CHECK(c->key);
				put_string(o, c->key, strlen(c->key));
				put(o, ":", 1);
				/* jv_get finds the first member of that name: this one or earlier */
				FUZZ_CHECK(jv_get(v, c->key));
			} else {
				FUZZ_CHECK(!c->key);
			}
			emit(o, c, depth + 1);
			n++;
		}
		FUZZ_CHECK(n == jv_len(v));
		FUZZ_CHECK(!jv_at(v, n) && (!n || jv_at(v, n - 1)));
		put(o, v->type == JV_ARRAY ? "]" : "}", 1);
		break;
	default:
		FUZZ_CHECK(!"unknown jv type");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct out a = { 0 }, b = { 0 };
	struct jv *root, *again;
	size_t errlen = size % 61;
	char *err = errlen ? malloc(errlen) : NULL;

	/* libFuzzer's buffer has exactly @size bytes and no NUL: overreads trap. */
	root = jv_parse((const char *)data, size, err, errlen);
	if (!root) {
		if (errlen > 1) {
			/* "line:col: message", possibly cut short by the buffer */
			unsigned long line = 0, col = 0;

			FUZZ_CHECK(memchr(err, '\0', errlen));
			FUZZ_CHECK(err[0] >= '1' && err[0] <= '9');
			if (strlen(err) < errlen - 1)
				FUZZ_CHECK(sscanf(err, "%lu:%lu: ", &line, &col) == 2 && line && col);
		}
		free(err);
		return 0;
	}
	FUZZ_CHECK(!root->key && !root->next);
	emit(&a, root, 0);
	jv_free(root);

	again = jv_parse(a.buf, a.len, NULL, 0);
	FUZZ_CHECK(again);
	emit(&b, again, 0);
	FUZZ_CHECK(a.len == b.len && !memcmp(a.buf, b.buf, a.len));
	jv_free(again);

	free(a.buf);
	free(b.buf);
	free(err);
	return 0;
}
