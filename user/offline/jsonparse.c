// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Strict recursive-descent JSON parser into an arena. A trace is millions of small nodes, so
 * nodes and strings are carved out of large blocks (one malloc per MiB, one free per block)
 * and numbers that fit a double exactly skip strtod.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offline/jsonparse.h"
#include "common/utf8.h"

#define ARENA_BLK	(1u << 20)

struct arena_blk {
	struct arena_blk *next;
	size_t used, cap;
	max_align_t data[];
};

struct jv_doc {
	struct arena_blk *blocks;
	struct jv root;
};

struct parser {
	const char *start, *p, *end;
	struct arena_blk *blocks;
	int depth;
	const char *err_at;
	const char *err_msg;
	char msg_buf[64];
};

static void *arena_alloc(struct parser *ps, size_t n)
{
	struct arena_blk *b = ps->blocks;
	size_t cap;
	void *r;

	n = (n + 7) & ~(size_t)7;
	if (b && b->cap - b->used >= n) {
		r = (char *)b->data + b->used;
		b->used += n;
		return r;
	}
	cap = n > ARENA_BLK / 4 ? n : ARENA_BLK;
	b = malloc(sizeof(*b) + cap);
	if (!b)
		return NULL;
	b->cap = cap;
	b->used = n;
	if (cap == n && ps->blocks) {
		/* a dedicated block for a big string: keep filling the current one */
		b->next = ps->blocks->next;
		ps->blocks->next = b;
	} else {
		b->next = ps->blocks;
		ps->blocks = b;
	}
	return b->data;
}

static void arena_free(struct arena_blk *b)
{
	while (b) {
		struct arena_blk *n = b->next;

		free(b);
		b = n;
	}
}

/* Record the first error only: callers just unwind with -1. */
static int fail(struct parser *ps, const char *at, const char *msg)
{
	if (!ps->err_msg) {
		ps->err_at = at;
		ps->err_msg = msg;
	}
	return -1;
}

static int fail_char(struct parser *ps, const char *at, const char *what)
{
	unsigned char c = (unsigned char)*at;

	if (c > 0x20 && c < 0x7f)
		snprintf(ps->msg_buf, sizeof(ps->msg_buf), "unexpected '%c'%s", c, what);
	else
		snprintf(ps->msg_buf, sizeof(ps->msg_buf), "unexpected byte 0x%02x%s", c, what);
	return fail(ps, at, ps->msg_buf);
}

static int fail_oom(struct parser *ps)
{
	return fail(ps, ps->p, "out of memory");
}

static inline void skip_ws(struct parser *ps)
{
	const char *p = ps->p, *end = ps->end;

	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	ps->p = p;
}

static int hex4(const char *p, unsigned int *out)
{
	unsigned int v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned int)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned int)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned int)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* ps->p is on the opening quote. */
static int parse_string(struct parser *ps, const char **out, size_t *out_len)
{
	const char *q = ps->p + 1, *p, *end = ps->end;
	bool simple = true;
	size_t n;
	char *o, *s;

	/* first pass: find the closing quote, which also bounds the unescaped length */
	for (p = q; p < end && *p != '"'; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '\\') {
			simple = false;
			if (end - p < 2) {
				p = end;
				break;
			}
			p++;
		} else if (c < 0x20 || c >= 0x80) {
			simple = false;
		}
	}
	if (p >= end)
		return fail(ps, ps->p, "unterminated string");
	n = (size_t)(p - q);
	s = arena_alloc(ps, n + 1);
	if (!s)
		return fail_oom(ps);
	if (simple) {
		memcpy(s, q, n);
		s[n] = '\0';
		*out = s;
		*out_len = n;
		ps->p = p + 1;
		return 0;
	}

	o = s;
	end = p;
	p = q;
	while (p < end) {
		unsigned char c = (unsigned char)*p;
		unsigned int cp, lo;
		size_t k;

		if (c >= 0x20 && c < 0x80 && c != '\\') {
			*o++ = (char)c;
			p++;
			continue;
		}
		if (c < 0x20)
			return fail(ps, p, "control character in string");
		if (c >= 0x80) {
			k = utf8_seq_len((const unsigned char *)p, (size_t)(end - p));
			if (!k)
				return fail(ps, p, "invalid UTF-8 in string");
			memcpy(o, p, k);
			o += k;
			p += k;
			continue;
		}
		/* backslash: the first pass guaranteed one more byte before the quote */
		switch (p[1]) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '/': *o++ = '/'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u':
			if (end - p < 6 || hex4(p + 2, &cp))
				return fail(ps, p, "invalid \\u escape");
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return fail(ps, p, "unpaired UTF-16 surrogate");
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (end - p < 12 || p[6] != '\\' || p[7] != 'u' ||
				    hex4(p + 8, &lo) || lo < 0xdc00 || lo > 0xdfff)
					return fail(ps, p, "unpaired UTF-16 surrogate");
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				p += 6;
			}
			o += utf8_encode(o, cp);
			p += 6;
			continue;
		default:
			return fail(ps, p, "invalid escape in string");
		}
		p += 2;
	}
	*o = '\0';
	*out = s;
	*out_len = (size_t)(o - s);
	ps->p = end + 1;
	return 0;
}

static const double pow10_exact[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

static int parse_number(struct parser *ps, struct jv *v)
{
	const char *p = ps->p, *end = ps->end, *start = p;
	uint64_t mant = 0;
	int digits = 0, frac = 0, exp = 0, esign = 1;
	bool neg = false, fast = true;
	size_t n;
	char *raw;

	if (*p == '-') {
		neg = true;
		p++;
	}
	if (p >= end || *p < '0' || *p > '9')
		return fail(ps, p < end ? p : start, "invalid number");
	if (*p == '0') {
		p++;
		if (p < end && *p >= '0' && *p <= '9')
			return fail(ps, p, "leading zero in number");
	} else {
		for (; p < end && *p >= '0' && *p <= '9'; p++) {
			if (digits < 19)
				mant = mant * 10 + (uint64_t)(*p - '0');
			else
				fast = false;
			digits++;
		}
	}
	if (p < end && *p == '.') {
		p++;
		if (p >= end || *p < '0' || *p > '9')
			return fail(ps, p < end ? p : start, "invalid number");
		for (; p < end && *p >= '0' && *p <= '9'; p++) {
			if (digits < 19 && frac < 1000) {
				mant = mant * 10 + (uint64_t)(*p - '0');
				if (mant)
					digits++;
				frac++;
			} else {
				fast = false;
			}
		}
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-')) {
			if (*p == '-')
				esign = -1;
			p++;
		}
		if (p >= end || *p < '0' || *p > '9')
			return fail(ps, p < end ? p : start, "invalid number exponent");
		for (; p < end && *p >= '0' && *p <= '9'; p++) {
			if (exp < 100000)
				exp = exp * 10 + (*p - '0');
		}
	}
	n = (size_t)(p - start);
	raw = arena_alloc(ps, n + 1);
	if (!raw)
		return fail_oom(ps);
	memcpy(raw, start, n);
	raw[n] = '\0';

	/*
	 * Both the mantissa (<= 15 digits) and the power of ten (<= 1e22) are exact doubles, so
	 * one multiplication or division is correctly rounded; anything else goes to strtod.
	 */
	exp = exp * esign - frac;
	if (fast && digits <= 15 && exp >= -22 && exp <= 22) {
		double d = (double)mant;

		d = exp < 0 ? d / pow10_exact[-exp] : d * pow10_exact[exp];
		v->num.d = neg ? -d : d;
	} else {
		v->num.d = strtod(raw, NULL);
	}
	v->num.raw = raw;
	v->type = JV_NUMBER;
	ps->p = p;
	return 0;
}

static int parse_value(struct parser *ps, struct jv *v);

/*
 * An array or an object (@object), from its opening bracket: the members are read the same
 * way, an object's with a name first.
 */
static int parse_members(struct parser *ps, struct jv *v, bool object)
{
	const char close = object ? '}' : ']';
	const char *eof = object ? "unexpected end of input in object" :
				   "unexpected end of input in array";
	struct jv *last = NULL, *e;
	const char *key = NULL;
	size_t klen;

	v->type = object ? JV_OBJECT : JV_ARRAY;
	v->kids.first = NULL;
	v->kids.n = 0;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return 0;
	}
	for (;;) {
		if (object) {
			skip_ws(ps);
			if (ps->p >= ps->end)
				return fail(ps, ps->p, eof);
			if (*ps->p != '"')
				return fail_char(ps, ps->p, ", expected a member name");
			if (parse_string(ps, &key, &klen))
				return -1;
			skip_ws(ps);
			if (ps->p >= ps->end)
				return fail(ps, ps->p, eof);
			if (*ps->p != ':')
				return fail_char(ps, ps->p, ", expected ':'");
			ps->p++;
		}
		e = arena_alloc(ps, sizeof(*e));
		if (!e)
			return fail_oom(ps);
		e->next = NULL;
		e->key = key;
		if (parse_value(ps, e))
			return -1;
		if (last)
			last->next = e;
		else
			v->kids.first = e;
		last = e;
		v->kids.n++;
		skip_ws(ps);
		if (ps->p >= ps->end)
			return fail(ps, ps->p, eof);
		if (*ps->p == close) {
			ps->p++;
			return 0;
		}
		if (*ps->p != ',')
			return fail_char(ps, ps->p, object ? ", expected ',' or '}'" :
							     ", expected ',' or ']'");
		ps->p++;
	}
}

static int parse_literal(struct parser *ps, const char *lit, size_t n)
{
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, lit, n))
		return fail_char(ps, ps->p, "");
	ps->p += n;
	return 0;
}

static int parse_value(struct parser *ps, struct jv *v)
{
	int ret;

	skip_ws(ps);
	if (ps->p >= ps->end)
		return fail(ps, ps->p, "unexpected end of input");
	switch (*ps->p) {
	case '{':
	case '[':
		if (ps->depth >= JV_MAX_DEPTH)
			return fail(ps, ps->p, "nesting too deep");
		ps->depth++;
		ret = parse_members(ps, v, *ps->p == '{');
		ps->depth--;
		return ret;
	case '"':
		v->type = JV_STRING;
		return parse_string(ps, &v->str.s, &v->str.len);
	case 't':
		v->type = JV_BOOL;
		v->b = true;
		return parse_literal(ps, "true", 4);
	case 'f':
		v->type = JV_BOOL;
		v->b = false;
		return parse_literal(ps, "false", 5);
	case 'n':
		v->type = JV_NULL;
		return parse_literal(ps, "null", 4);
	case '-':
	case '0' ... '9':
		return parse_number(ps, v);
	default:
		return fail_char(ps, ps->p, "");
	}
}

static void format_error(const struct parser *ps, char *err, size_t errlen)
{
	const char *p, *line_start = ps->start;
	unsigned long line = 1;

	if (!err || !errlen)
		return;
	for (p = ps->start; p < ps->err_at; p++) {
		if (*p == '\n') {
			line++;
			line_start = p + 1;
		}
	}
	snprintf(err, errlen, "%lu:%lu: %s", line, (unsigned long)(ps->err_at - line_start) + 1,
		 ps->err_msg);
}

/* One document into the arena ps->blocks: its root, or NULL with the message in @err. */
static struct jv *parse_doc(struct parser *ps, char *err, size_t errlen)
{
	struct jv_doc *doc;

	if (err && errlen)
		err[0] = '\0';
	doc = arena_alloc(ps, sizeof(*doc));
	if (!doc) {
		fail_oom(ps);
		goto err;
	}
	doc->root.next = NULL;
	doc->root.key = NULL;
	if (parse_value(ps, &doc->root))
		goto err;
	skip_ws(ps);
	if (ps->p < ps->end) {
		fail(ps, ps->p, "trailing characters after the document");
		goto err;
	}
	doc->blocks = ps->blocks;
	return &doc->root;
err:
	format_error(ps, err, errlen);
	return NULL;
}

struct jv *jv_parse(const char *buf, size_t len, char *err, size_t errlen)
{
	struct parser ps = { .start = buf, .p = buf, .end = buf + len };
	struct jv *root;

	if (!buf)
		ps.start = ps.p = ps.end = "";
	root = parse_doc(&ps, err, errlen);
	if (!root)
		arena_free(ps.blocks);
	return root;
}

struct jv_keep {
	struct arena_blk *first;	/* the block kept from one document to the next */
	struct arena_blk *chain;	/* every block of the last document, @first last */
};

/* Free the last document's blocks but the first one, which is emptied for the next. */
static void keep_release(struct jv_keep *k)
{
	struct arena_blk *b = k->chain;

	while (b) {
		struct arena_blk *n = b->next;

		if (b != k->first)
			free(b);
		b = n;
	}
	k->chain = NULL;
}

struct jv *jv_parse_keep(struct jv_keep **keep, const char *buf, size_t len, char *err,
			 size_t errlen)
{
	struct parser ps = { .start = buf, .p = buf, .end = buf + len };
	struct jv_keep *k = *keep;
	struct arena_blk *b;
	struct jv *root;

	if (!k) {
		k = calloc(1, sizeof(*k));
		if (!k) {
			snprintf(err, errlen, "1:1: out of memory");
			return NULL;
		}
		*keep = k;
	}
	keep_release(k);
	if (k->first) {
		k->first->used = 0;
		k->first->next = NULL;
		ps.blocks = k->first;
	}
	if (!buf)
		ps.start = ps.p = ps.end = "";
	root = parse_doc(&ps, err, errlen);
	/* the document's first block is the chain's last (new blocks go in front) */
	for (b = ps.blocks; b && b->next; b = b->next)
		;
	if (!k->first && b && b->cap == ARENA_BLK)
		k->first = b;
	k->chain = ps.blocks;
	if (!k->first) {	/* nothing worth keeping: free it all now */
		arena_free(ps.blocks);
		k->chain = NULL;
	}
	return root;
}

void jv_keep_free(struct jv_keep **keep)
{
	struct jv_keep *k = *keep;

	if (!k)
		return;
	keep_release(k);
	free(k->first);
	free(k);
	*keep = NULL;
}

void jv_free(struct jv *root)
{
	struct jv_doc *doc;

	if (!root)
		return;
	doc = (struct jv_doc *)((char *)root - offsetof(struct jv_doc, root));
	arena_free(doc->blocks);
}

struct jv *jv_get(const struct jv *obj, const char *key)
{
	struct jv *c;

	if (!obj || obj->type != JV_OBJECT || !key)
		return NULL;
	/* the first byte first: check looks up ~15 names in each of millions of events */
	for (c = obj->kids.first; c; c = c->next)
		if (c->key[0] == key[0] && !strcmp(c->key, key))
			return c;
	return NULL;
}

size_t jv_len(const struct jv *v)
{
	if (!v || (v->type != JV_ARRAY && v->type != JV_OBJECT))
		return 0;
	return v->kids.n;
}

struct jv *jv_first(const struct jv *v)
{
	if (!v || (v->type != JV_ARRAY && v->type != JV_OBJECT))
		return NULL;
	return v->kids.first;
}

const char *jv_str(const struct jv *v)
{
	return v && v->type == JV_STRING ? v->str.s : NULL;
}

bool jv_num(const struct jv *v, double *out)
{
	if (!v || v->type != JV_NUMBER)
		return false;
	if (out)
		*out = v->num.d;
	return true;
}

bool jv_u64_exact(const struct jv *v, uint64_t *out)
{
	uint64_t x = 0;

	if (!v || v->type != JV_NUMBER || !v->num.raw[0])
		return false;
	for (const char *p = v->num.raw; *p; p++) {
		unsigned int d = (unsigned int)(*p - '0');

		if (d > 9 || x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*out = x;
	return true;
}

bool jv_us_ns(const struct jv *v, int64_t max_us, int64_t *out)
{
	int64_t ip = 0, fp = 0;
	bool neg = false, up = false;
	const char *p;
	double d;
	int nd = 0;

	if (!v || v->type != JV_NUMBER)
		return false;
	p = v->num.raw;
	if (*p == '-') {
		neg = true;
		p++;
	}
	if (*p < '0' || *p > '9')
		goto approx;
	for (; *p >= '0' && *p <= '9'; p++) {
		ip = ip * 10 + (*p - '0');
		if (ip > max_us)
			return false;
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, nd++) {
			if (nd < 3)
				fp = fp * 10 + (*p - '0');
			else if (nd == 3)
				up = *p >= '5';
		}
	}
	if (*p)
		goto approx;	/* an exponent */
	for (int i = nd; i < 3; i++)
		fp *= 10;
	*out = ip * 1000 + fp + up;
	if (neg)
		*out = -*out;
	return true;
approx:
	d = v->num.d * 1000.0;
	if (!(d <= max_us * 1000.0 && d >= -max_us * 1000.0))
		return false;
	/* rounded by the conversion's own sign: d + 0.5 is not exact past 2^52 */
	*out = (int64_t)d;
	if (d - (double)*out >= 0.5)
		(*out)++;
	else if ((double)*out - d >= 0.5)
		(*out)--;
	return true;
}

const char *jv_get_str(const struct jv *obj, const char *key)
{
	return jv_str(jv_get(obj, key));
}

bool jv_get_num(const struct jv *obj, const char *key, double *out)
{
	return jv_num(jv_get(obj, key), out);
}

const char *jv_type_name(enum jv_type t)
{
	switch (t) {
	case JV_NULL: return "null";
	case JV_BOOL: return "bool";
	case JV_NUMBER: return "number";
	case JV_STRING: return "string";
	case JV_ARRAY: return "array";
	case JV_OBJECT: return "object";
	}
	return "?";
}
