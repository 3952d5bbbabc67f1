// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Probe table parser (grammar in probes.h). It is strict on purpose: a typo in a spec file
 * would otherwise silently record nothing, or the wrong register, on a production job that may
 * be hard to trace a second time.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/array.h"
#include "resolve/globcap.h"
#include "resolve/nearmiss.h"
#include "resolve/probes.h"
#include "common/utf8.h"

#define DEFAULT_CAT "privateuse1_runtime"
/* How much of an offending token an error message quotes. */
#define QUOTE_MAX 48

/* A token is a slice of the caller's text: lines are never copied or modified. */
struct tok {
	const char *p;
	size_t n;
};

struct pctx {
	const char *origin;
	int lineno;		/* 0: no line (command line) */
	char *err;
	size_t errlen;
};

/* Option keys, as bits of a "seen" mask to catch duplicates. */
enum {
	K_NAME, K_CAT, K_TYPE, K_RET, K_DEV, K_OP, K_KEY, K_STREAM, K_BYTES,
	K_MEM, K_PTR, K_SIZE, K_MEMDEV, K_STR, K_DIST, K_PY, K_STACK,
	K_ARG1,			/* K_ARG1 + N - 1 for argN */
};

__attribute__((format(printf, 2, 3)))
static int fail(const struct pctx *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (!c->err || !c->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->lineno)
		snprintf(c->err, c->errlen, "%s:%d: %s", c->origin, c->lineno, msg);
	else
		snprintf(c->err, c->errlen, "%s: %s", c->origin, msg);
	return -EINVAL;
}

/* Printable excerpt of a token for an error message; returns @buf. */
static const char *quote(struct tok t, char *buf, size_t len)
{
	size_t i, n = t.n;
	bool cut = false;

	if (n > QUOTE_MAX) {
		n = QUOTE_MAX;
		cut = true;
	}
	if (n > len - 4)
		n = len - 4;
	for (i = 0; i < n; i++) {
		unsigned char ch = t.p[i];

		buf[i] = (ch < 0x20 || ch == 0x7f) ? '?' : ch;
	}
	if (cut)
		memcpy(buf + i, "...", 3), i += 3;
	buf[i] = '\0';
	return buf;
}

static struct tok tok_str(const char *s)
{
	return (struct tok){ s, strlen(s) };
}

static bool tok_eq(struct tok t, const char *s)
{
	return t.n == strlen(s) && !memcmp(t.p, s, t.n);
}

/*
 * Control characters are refused everywhere: they cannot be typed in a spec line and would
 * garble terminal output. @json: the value is written into the trace as a JSON string, so it
 * must also need no escaping and be valid UTF-8.
 */
static int check_text(const struct pctx *c, const char *what, struct tok v, bool json)
{
	const unsigned char *p = (const unsigned char *)v.p;
	size_t i = 0, l;

	while (i < v.n) {
		if (p[i] < 0x20 || p[i] == 0x7f)
			return fail(c, "%s: control character 0x%02x not allowed", what, p[i]);
		if (json && (p[i] == '"' || p[i] == '\\'))
			return fail(c, "%s: character '%c' not allowed", what, p[i]);
		if (json && p[i] >= 0x80) {
			l = utf8_seq_len(p + i, v.n - i);
			if (!l)
				return fail(c, "%s: invalid UTF-8", what);
			i += l;
			continue;
		}
		i++;
	}
	return 0;
}

static int copy_field(const struct pctx *c, char *dst, size_t size, const char *what,
		      struct tok v)
{
	if (v.n >= size)
		return fail(c, "%s is too long (%zu bytes, at most %zu)", what, v.n, size - 1);
	if (v.n)		/* an absent optional field has p == NULL */
		memcpy(dst, v.p, v.n);
	dst[v.n] = '\0';
	return 0;
}

/* "argN" -> N (1..6); 0 when @t is not of the form "arg<digits>"; -1 for a bad index. */
static int parse_argn(struct tok t)
{
	size_t i;

	if (t.n < 4 || memcmp(t.p, "arg", 3))
		return 0;
	for (i = 3; i < t.n; i++)
		if (t.p[i] < '0' || t.p[i] > '9')
			return 0;
	if (t.n != 4 || t.p[3] < '1' || t.p[3] > '0' + PROBE_MAX_ARGS)
		return -1;
	return t.p[3] - '0';
}

/* OFF of a dereference: decimal or 0x hex, 0..PROBE_DEREF_MAX_OFF; -1 when it is not. */
static long parse_off(struct tok t)
{
	unsigned int base = 10;
	long v = 0;
	size_t i = 0;

	if (t.n > 2 && t.p[0] == '0' && (t.p[1] == 'x' || t.p[1] == 'X')) {
		base = 16;
		i = 2;
	}
	if (i == t.n)
		return -1;
	for (; i < t.n; i++) {
		char ch = t.p[i];
		int d;

		if (ch >= '0' && ch <= '9')
			d = ch - '0';
		else if (base == 16 && ch >= 'a' && ch <= 'f')
			d = ch - 'a' + 10;
		else if (base == 16 && ch >= 'A' && ch <= 'F')
			d = ch - 'A' + 10;
		else
			return -1;
		v = v * base + d;
		if (v > PROBE_DEREF_MAX_OFF)
			return -1;
	}
	return v;
}

/*
 * A dereference BASE[OFF] (BASE = argN, ret or sret) -> its PROBE_VAL_DEREF + i, the slot of
 * @s it reads into (one slot per distinct dereference). 0 when @v has no '['.
 */
static int parse_deref(const struct pctx *c, struct probe_spec *s, const char *key,
		       struct tok v, int *out)
{
	const char *br = memchr(v.p, '[', v.n);
	struct tok base, off;
	char q[64];
	long o;
	int src, i;

	if (!br)
		return 0;
	base = (struct tok){ v.p, br - v.p };
	off = (struct tok){ br + 1, v.n - base.n - 1 };
	if (!off.n || off.p[off.n - 1] != ']')
		return fail(c, "%s%s: expected BASE[OFF]", key, quote(v, q, sizeof(q)));
	off.n--;
	if (tok_eq(base, "ret"))
		src = PROBE_VAL_RET;
	else if (tok_eq(base, "sret"))
		src = PROBE_VAL_SRET;
	else if ((src = parse_argn(base)) <= 0)
		return fail(c, "%s%s: a dereference reads argN[OFF], ret[OFF] or sret[OFF]", key,
			    quote(v, q, sizeof(q)));
	o = parse_off(off);
	if (o < 0)
		return fail(c, "%s%s: offset must be 0..%d (decimal or 0x hex)", key,
			    quote(v, q, sizeof(q)), PROBE_DEREF_MAX_OFF);
	for (i = 0; i < s->nderef; i++)
		if (s->deref[i].src == src && s->deref[i].off == (unsigned int)o)
			break;
	if (i == s->nderef) {
		if (s->nderef == PROBE_MAX_DEREFS)
			return fail(c, "%s%s: more than %d dereferences on one probe", key,
				    quote(v, q, sizeof(q)), PROBE_MAX_DEREFS);
		s->deref[s->nderef++] = (struct probe_deref){ src, (unsigned int)o };
	}
	*out = PROBE_VAL_DEREF + i;
	return 1;
}

/* Value of key=/stream=/bytes=/...: argN, a dereference, or "ret" when @allow_ret. */
static int parse_valref(const struct pctx *c, struct probe_spec *s, const char *key,
			struct tok v, bool allow_ret, int *out)
{
	char q[64], kq[16];
	int n;

	snprintf(kq, sizeof(kq), "%s=", key);
	n = parse_deref(c, s, kq, v, out);
	if (n)
		return n < 0 ? n : 0;
	if (allow_ret && tok_eq(v, "ret")) {
		*out = PROBE_VAL_RET;
		return 0;
	}
	n = parse_argn(v);
	if (n < 0)
		return fail(c, "%s=%s: argument index must be 1..%d", key,
			    quote(v, q, sizeof(q)), PROBE_MAX_ARGS);
	if (n == 0)
		return fail(c, "%s=%s: expected %s", key, quote(v, q, sizeof(q)),
			    allow_ret ? "argN or ret (or a dereference BASE[OFF])" :
			    "argN (or a dereference BASE[OFF])");
	*out = n;
	return 0;
}

/* str=argN[:c] */
static int parse_str(const struct pctx *c, struct probe_spec *s, struct tok v)
{
	struct tok a = v;
	const char *colon = memchr(v.p, ':', v.n);
	char q[64];
	int n;

	s->str = STR_CXX;
	if (colon) {
		a.n = colon - v.p;
		if (v.n - a.n != 2 || colon[1] != 'c')
			return fail(c, "str=%s: expected argN (std::string *) or argN:c (char *)",
				    quote(v, q, sizeof(q)));
		s->str = STR_C;
	}
	n = parse_argn(a);
	if (n <= 0)
		return fail(c, "str=%s: expected argN (std::string *) or argN:c (char *), N 1..%d",
			    quote(v, q, sizeof(q)), PROBE_MAX_ARGS);
	s->str_arg = n;
	return 0;
}

/* LABEL[:FMT] of argN=/ret= */
static int parse_arg(const struct pctx *c, const char *key, struct tok v, int src,
		     struct probe_arg *a)
{
	struct tok label = v, fmt = { NULL, 0 };
	const char *colon = memchr(v.p, ':', v.n);
	char q[64];
	size_t i;
	int err;

	if (colon) {
		label.n = colon - v.p;
		fmt.p = colon + 1;
		fmt.n = v.n - label.n - 1;
	}
	if (!label.n)
		return fail(c, "%s: empty label", key);
	/* labels become JSON keys in "args", written without escaping */
	for (i = 0; i < label.n; i++) {
		unsigned char ch = label.p[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-'))
			return fail(c, "%s: label '%s' may only contain A-Z a-z 0-9 _ . -", key,
				    quote(label, q, sizeof(q)));
	}
	err = copy_field(c, a->label, sizeof(a->label), "label", label);
	if (err)
		return err;
	a->src = src;
	a->fmt = ARG_HEX;
	if (!colon)
		return 0;
	if (tok_eq(fmt, "x"))
		a->fmt = ARG_HEX;
	else if (tok_eq(fmt, "u"))
		a->fmt = ARG_UNSIGNED;
	else if (tok_eq(fmt, "d"))
		a->fmt = ARG_SIGNED;
	else if (tok_eq(fmt, "i"))
		a->fmt = ARG_INT32;
	else if (tok_eq(fmt, "b"))
		a->fmt = ARG_BOOL;
	else
		return fail(c, "%s: unknown format '%s' (b, d, i, u or x)", key,
			    quote(fmt, q, sizeof(q)));
	return 0;
}

/* "ORIGIN:LINE" into the fixed field, keeping the line and the end of a long path. */
static void set_origin(char *dst, size_t size, const char *origin, int lineno)
{
	char suffix[16] = "";
	size_t olen = strlen(origin), slen, avail;

	if (lineno)
		snprintf(suffix, sizeof(suffix), ":%d", lineno);
	slen = strlen(suffix);
	avail = size - 1 - slen;
	if (olen <= avail)
		snprintf(dst, size, "%s%s", origin, suffix);
	else
		snprintf(dst, size, "...%s%s", origin + olen - (avail - 3), suffix);
}

static void spec_init(struct probe_spec *s, const char *origin, int lineno)
{
	memset(s, 0, sizeof(*s));
	strcpy(s->cat, DEFAULT_CAT);
	s->type = PROBE_SPAN;
	set_origin(s->origin, sizeof(s->origin), origin, lineno);
}

/* The words an enum-valued key takes, and what each sets. */
struct key_word {
	const char *word;
	int value;
};

#define WORDS(...) ((const struct key_word[]){ __VA_ARGS__, { NULL, 0 } })

/* How a key's value is parsed, and into which field of the spec (offsetof). */
enum key_kind {
	KEY_TEXT,	/* checked JSON-safe text into a char[] */
	KEY_WORD,	/* one of words[] into an enum field */
	KEY_VALREF,	/* argN, ret or a dereference into an int field (PROBE_VAL_*) */
	KEY_VALREF_RET,	/* the same, ret allowed */
	KEY_RET,	/* ret=LABEL[:FMT] */
	KEY_STR,	/* str=argN:LABEL */
};

/*
 * The probe-table keys: adding one is an entry here, its K_ bit in the enum above and the field
 * in struct probe_spec (docs/architecture.md, "A new probe-table key").
 */
static const struct key_def {
	const char *name;
	int bit;
	enum key_kind kind;
	size_t off;		/* the field in struct probe_spec */
	size_t size;		/* KEY_TEXT: the field's size */
	const struct key_word *words;
} keys[] = {
	{ "name", K_NAME, KEY_TEXT, offsetof(struct probe_spec, name),
	  sizeof(((struct probe_spec *)0)->name), NULL },
	{ "cat", K_CAT, KEY_TEXT, offsetof(struct probe_spec, cat),
	  sizeof(((struct probe_spec *)0)->cat), NULL },
	{ "type", K_TYPE, KEY_WORD, offsetof(struct probe_spec, type), 0,
	  WORDS({ "span", PROBE_SPAN }, { "instant", PROBE_INSTANT }, { "unwind", PROBE_UNWIND },
		{ "catch", PROBE_CATCH }) },
	{ "ret", K_RET, KEY_RET, 0, 0, NULL },
	{ "dev", K_DEV, KEY_WORD, offsetof(struct probe_spec, dev), 0,
	  WORDS({ "launch", DEV_LAUNCH }, { "complete", DEV_COMPLETE }, { "destroy", DEV_DESTROY },
		{ "submit", DEV_SUBMIT }, { "sync", DEV_SYNC }, { "query", DEV_QUERY },
		{ "kname", DEV_KNAME }) },
	{ "op", K_OP, KEY_WORD, offsetof(struct probe_spec, op), 0,
	  WORDS({ "compute", OP_COMPUTE }, { "h2d", OP_H2D }, { "d2h", OP_D2H }) },
	{ "key", K_KEY, KEY_VALREF_RET, offsetof(struct probe_spec, key), 0, NULL },
	{ "stream", K_STREAM, KEY_VALREF, offsetof(struct probe_spec, stream), 0, NULL },
	{ "bytes", K_BYTES, KEY_VALREF, offsetof(struct probe_spec, bytes), 0, NULL },
	{ "mem", K_MEM, KEY_WORD, offsetof(struct probe_spec, mem), 0,
	  WORDS({ "alloc", MEM_ALLOC }, { "free", MEM_FREE }) },
	{ "ptr", K_PTR, KEY_VALREF_RET, offsetof(struct probe_spec, ptr), 0, NULL },
	{ "size", K_SIZE, KEY_VALREF, offsetof(struct probe_spec, size), 0, NULL },
	{ "memdev", K_MEMDEV, KEY_VALREF, offsetof(struct probe_spec, memdev), 0, NULL },
	{ "str", K_STR, KEY_STR, 0, 0, NULL },
	{ "dist", K_DIST, KEY_WORD, offsetof(struct probe_spec, dist), 0,
	  WORDS({ "rank", DIST_RANK }, { "size", DIST_SIZE }) },
	{ "py", K_PY, KEY_WORD, offsetof(struct probe_spec, py), 0,
	  WORDS({ "1", 1 }, { "0", 0 }) },
	{ "stack", K_STACK, KEY_WORD, offsetof(struct probe_spec, stack), 0,
	  WORDS({ "1", 1 }, { "0", 0 }) },
};

/* KEY_WORD fields are enums stored through an int pointer */
_Static_assert(sizeof(enum probe_type) == sizeof(int) && sizeof(enum dev_role) == sizeof(int) &&
	       sizeof(enum dev_op) == sizeof(int) && sizeof(enum mem_role) == sizeof(int) &&
	       sizeof(enum dist_role) == sizeof(int), "enum fields are int-sized");

/* "KEY=VAL: expected a, b or c", from the key's words */
static int fail_word(const struct pctx *c, const struct key_def *k, struct tok val)
{
	char list[160] = "", q[64];
	size_t len = 0;

	for (const struct key_word *w = k->words; w->word; w++) {
		const char *sep = w == k->words ? "" : w[1].word ? ", " : " or ";

		len += snprintf(list + len, len < sizeof(list) ? sizeof(list) - len : 0, "%s%s",
				sep, w->word);
	}
	return fail(c, "%s=%s: expected %s", k->name, quote(val, q, sizeof(q)), list);
}

static int parse_key(const struct pctx *c, struct probe_spec *s, const struct key_def *k,
		     struct tok val, struct probe_arg *ret, bool *has_ret)
{
	char *field = (char *)s + k->off;
	int err;

	switch (k->kind) {
	case KEY_TEXT:
		err = check_text(c, k->name, val, true);
		return err ?: copy_field(c, field, k->size, k->name, val);
	case KEY_WORD:
		for (const struct key_word *w = k->words; w->word; w++) {
			if (tok_eq(val, w->word)) {
				*(int *)field = w->value;
				return 0;
			}
		}
		return fail_word(c, k, val);
	case KEY_VALREF:
	case KEY_VALREF_RET:
		return parse_valref(c, s, k->name, val, k->kind == KEY_VALREF_RET, (int *)field);
	case KEY_RET:
		*has_ret = true;
		return parse_arg(c, k->name, val, PROBE_VAL_RET, ret);
	case KEY_STR:
		return parse_str(c, s, val);
	}
	return -EINVAL;
}

/* DEREF=LABEL[:FMT]: a dereference recorded under a label */
static int parse_deref_label(const struct pctx *c, struct probe_spec *s, struct tok key,
			     struct tok val)
{
	char q[64];
	int src, err;

	if (!val.n)
		return fail(c, "%s=: empty value", quote(key, q, sizeof(q)));
	err = parse_deref(c, s, "", key, &src);
	if (err < 0)
		return err;
	for (int i = 0; i < s->nargs; i++)
		if (s->args[i].src == src)
			return fail(c, "duplicate key '%s'", quote(key, q, sizeof(q)));
	if (s->nargs >= PROBE_MAX_LABELS - 1)
		return fail(c, "more than %d recorded values", PROBE_MAX_LABELS - 1);
	err = parse_arg(c, "dereference", val, src, &s->args[s->nargs]);
	if (!err)
		s->nargs++;
	return err;
}

static int parse_option(const struct pctx *c, struct probe_spec *s, struct tok opt,
			unsigned int *seen, struct probe_arg *ret, bool *has_ret)
{
	const char *eq = memchr(opt.p, '=', opt.n);
	const struct key_def *k = NULL;
	struct tok key, val;
	char q[64], kname[8];
	int bit, n, err;

	if (!eq)
		return fail(c, "'%s': expected key=value", quote(opt, q, sizeof(q)));
	key = (struct tok){ opt.p, eq - opt.p };
	val = (struct tok){ eq + 1, opt.n - key.n - 1 };
	if (memchr(key.p, '[', key.n))
		return parse_deref_label(c, s, key, val);

	n = parse_argn(key);
	if (n < 0)
		return fail(c, "'%s': argument index must be 1..%d", quote(key, q, sizeof(q)),
			    PROBE_MAX_ARGS);
	if (n > 0) {
		bit = K_ARG1 + n - 1;
	} else {
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && !k; i++)
			if (tok_eq(key, keys[i].name))
				k = &keys[i];
		if (!k)
			return fail(c, "unknown key '%s'", quote(key, q, sizeof(q)));
		bit = k->bit;
	}

	/* key names are short, known and printable from here on */
	snprintf(kname, sizeof(kname), "%.*s", (int)key.n, key.p);
	if (*seen & (1u << bit))
		return fail(c, "duplicate key '%s'", kname);
	*seen |= 1u << bit;
	if (!val.n)
		return fail(c, "%s=: empty value", kname);
	if (k)
		return parse_key(c, s, k, val, ret, has_ret);

	/* argN=LABEL[:FMT]; args[] can't overflow while argN keys are unique (and dereferences
	 * at most PROBE_MAX_DEREFS), checked anyway, ret's entry left free */
	if (s->nargs >= PROBE_MAX_LABELS - 1)
		return fail(c, "more than %d recorded values", PROBE_MAX_LABELS - 1);
	err = parse_arg(c, kname, val, n, &s->args[s->nargs]);
	if (!err)
		s->nargs++;
	return err;
}

/*
 * A name= template: {N} is what the N-th '*' of the symbol glob matched, {{ and }} are literal
 * braces. Any other brace is refused, so a brace meant literally cannot silently become a
 * reference, nor a typo in a reference a literal. Calls @put(ctx, text, len) for each piece
 * of the name; with @caps NULL it only checks (against @stars captures).
 */
static int expand_name(const char *name, int stars, const char *matched,
		       const struct globcap *caps, const char **why, int *bad,
		       void (*put)(void *ctx, const char *p, size_t n), void *ctx)
{
	const char *p = name, *lit;
	int n;

	while (*p) {
		lit = p;
		p += strcspn(p, "{}");
		if (p > lit && put)
			put(ctx, lit, p - lit);
		if (!*p)
			break;
		if (p[0] == p[1]) {
			if (put)
				put(ctx, p, 1);
			p += 2;
			continue;
		}
		if (*p == '}' || p[1] < '1' || p[1] > '9') {
			*why = "a brace that is not part of {N} ({{ and }} are literal braces)";
			return -EINVAL;
		}
		for (n = 0, p++; *p >= '0' && *p <= '9'; p++)
			if (n <= GLOBCAP_MAX)
				n = n * 10 + (*p - '0');
		if (*p != '}') {
			*why = "a brace that is not part of {N} ({{ and }} are literal braces)";
			return -EINVAL;
		}
		p++;
		if (n > stars || n > GLOBCAP_MAX) {
			*bad = n;
			*why = NULL;
			return -ERANGE;
		}
		if (put && caps && n <= caps->n)
			put(ctx, matched + caps->v[n - 1].off, caps->v[n - 1].len);
	}
	return 0;
}

/* The symbol glob and the name template agree (the line's captures exist). */
static int check_sym_name(const struct pctx *c, const struct probe_spec *s)
{
	const char *why = NULL;
	int stars, bad = 0, err;

	stars = globcap_check(s->sym, &why);
	if (stars < 0)
		return fail(c, "SYMBOL_GLOB '%.*s': %s", QUOTE_MAX, s->sym, why);
	err = expand_name(s->name, stars, NULL, NULL, &why, &bad, NULL, NULL);
	if (err == -ERANGE)
		return fail(c, "name=%s: {%d} but SYMBOL_GLOB '%.*s' has %d '*' (at most %d "
			    "are captured)", s->name, bad, QUOTE_MAX, s->sym, stars, GLOBCAP_MAX);
	if (err)
		return fail(c, "name=%s: %s", s->name, why);
	return 0;
}

/* Rules that involve several keys, checked once the whole line is known (any key order). */
static int check_mem(const struct pctx *c, const struct probe_spec *s)
{
	if (s->mem == MEM_NONE) {
		if (s->ptr || s->size || s->memdev)
			return fail(c, "ptr=, size= and memdev= need mem=alloc or mem=free");
		return 0;
	}
	if (probe_records_nothing(s->type))
		return fail(c, "mem= on a type=%s probe: it records nothing",
			    probe_type_name(s->type));
	if (s->dev != DEV_NONE)
		return fail(c, "mem= and dev= on one probe: a function either moves memory or "
			    "launches work");
	if (s->ptr == PROBE_VAL_NONE)
		return fail(c, "mem=%s needs ptr=", s->mem == MEM_ALLOC ? "alloc" : "free");
	if (s->mem == MEM_ALLOC && s->size == PROBE_VAL_NONE)
		return fail(c, "mem=alloc needs size=");
	if (s->mem == MEM_FREE && (s->size || s->memdev))
		return fail(c, "size= and memdev= need mem=alloc (a free finds both by ptr=)");
	if (s->type == PROBE_INSTANT && s->ptr == PROBE_VAL_RET)
		return fail(c, "ptr=ret on a type=instant probe: no return value at entry");
	if (s->mem == MEM_FREE && s->ptr == PROBE_VAL_RET)
		return fail(c, "mem=free with ptr=ret: the freed pointer is an argument");
	if (s->mem == MEM_FREE && s->ptr >= PROBE_VAL_DEREF)
		return fail(c, "mem=free with a dereference in ptr=: its entry record carries "
			    "arguments only");
	return 0;
}

static int check_spec(const struct pctx *c, const struct probe_spec *s, bool has_ret)
{
	int i, j, err;

	err = check_sym_name(c, s);
	if (err)
		return err;
	if (s->type == PROBE_INSTANT && has_ret)
		return fail(c, "ret= on a type=instant probe: no return value at entry");
	if (s->type == PROBE_INSTANT && s->key == PROBE_VAL_RET)
		return fail(c, "key=ret on a type=instant probe: no return value at entry");
	if (probe_records_nothing(s->type) && (s->nargs || s->dev != DEV_NONE))
		return fail(c, "argN=, ret= and dev= on a type=%s probe: it records nothing",
			    probe_type_name(s->type));
	if (s->op != OP_NONE && s->dev != DEV_LAUNCH)
		return fail(c, "op= needs dev=launch");
	for (i = 0; i < s->nderef; i++)
		if (s->type == PROBE_INSTANT && s->deref[i].src >= PROBE_VAL_RET)
			return fail(c, "%s[%u] on a type=instant probe: no return value at entry",
				    s->deref[i].src == PROBE_VAL_RET ? "ret" : "sret",
				    s->deref[i].off);
	if (probe_records_nothing(s->type) && (s->str || s->dist))
		return fail(c, "str= and dist= on a type=%s probe: it records nothing",
			    probe_type_name(s->type));
	if (s->dev == DEV_COMPLETE && s->key == PROBE_VAL_NONE)
		return fail(c, "dev=complete needs key= to match the completion with its launch");
	if ((s->dev == DEV_DESTROY || s->dev == DEV_SYNC || s->dev == DEV_QUERY) &&
	    s->stream == PROBE_VAL_NONE)
		return fail(c, "dev=%s needs stream= to name its stream",
			    s->dev == DEV_DESTROY ? "destroy" : s->dev == DEV_SYNC ? "sync" : "query");
	if ((s->dev == DEV_SYNC || s->dev == DEV_QUERY) && s->type != PROBE_SPAN)
		return fail(c, "dev=sync and dev=query need a span: their evidence is the return");
	if (s->dev == DEV_KNAME && s->str == STR_NONE)
		return fail(c, "dev=kname needs str= (the kernel name)");
	if (s->dev != DEV_LAUNCH && s->dev != DEV_COMPLETE && s->key != PROBE_VAL_NONE)
		return fail(c, "key= needs dev=launch or dev=complete");
	if ((s->dev == DEV_NONE || s->dev == DEV_SUBMIT || s->dev == DEV_KNAME) &&
	    s->stream != PROBE_VAL_NONE)
		return fail(c, "stream= needs dev=launch, dev=complete, dev=destroy, dev=sync or "
			    "dev=query");
	if (s->dist != DIST_NONE && (s->type != PROBE_SPAN || s->dev || s->mem))
		return fail(c, "dist= needs a span (its return value) without dev= or mem=");
	if (s->dev != DEV_LAUNCH && s->bytes != PROBE_VAL_NONE)
		return fail(c, "bytes= needs dev=launch");
	/* the stack is kept from the entry to the span's record, made at the return */
	if (s->py && s->type != PROBE_SPAN)
		return fail(c, "py=1 needs a span (instants record no Python stack yet)");
	if (s->stack && s->type != PROBE_SPAN)
		return fail(c, "stack=1 needs a span (instants record no native stack yet)");
	err = check_mem(c, s);
	if (err)
		return err;
	/* duplicate labels would give duplicate JSON keys in "args" */
	for (i = 0; i < s->nargs; i++)
		for (j = i + 1; j < s->nargs; j++)
			if (!strcmp(s->args[i].label, s->args[j].label))
				return fail(c, "duplicate label '%s'", s->args[i].label);
	return 0;
}

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r';
}

/* Next token of [*p, end), false at the end of the line or at a comment. */
static bool next_tok(const char **p, const char *end, struct tok *t)
{
	const char *s = *p;

	while (s < end && is_blank(*s))
		s++;
	if (s == end || *s == '#') {
		*p = end;
		return false;
	}
	t->p = s;
	while (s < end && !is_blank(*s))
		s++;
	t->n = s - t->p;
	*p = s;
	return true;
}

/* One line; *@empty when it holds no probe (blank or comment). */
static int parse_line(const struct pctx *c, const char *p, const char *end,
		      struct probe_spec *s, bool *empty)
{
	struct probe_arg ret;
	unsigned int seen = 0;
	bool has_ret = false;
	struct tok lib, sym, opt;
	char q[64];
	int err;

	*empty = !next_tok(&p, end, &lib);
	if (*empty)
		return 0;
	if (!next_tok(&p, end, &sym))
		return fail(c, "missing SYMBOL_GLOB after '%s'", quote(lib, q, sizeof(q)));
	spec_init(s, c->origin, c->lineno);
	err = check_text(c, "LIB_GLOB", lib, false);
	err = err ?: copy_field(c, s->lib, sizeof(s->lib), "LIB_GLOB", lib);
	err = err ?: check_text(c, "SYMBOL_GLOB", sym, false);
	err = err ?: copy_field(c, s->sym, sizeof(s->sym), "SYMBOL_GLOB", sym);
	while (!err && next_tok(&p, end, &opt))
		err = parse_option(c, s, opt, &seen, &ret, &has_ret);
	if (err)
		return err;
	if (has_ret)
		s->args[s->nargs++] = ret;
	return check_spec(c, s, has_ret);
}

/*
 * A LIB with '/' names the file by its path, which the maps give canonical: the user's own
 * spelling (relative, through a symbolic link) made so too, when it is no glob and exists.
 */
static void canonical_lib(struct probe_spec *s)
{
	char real[PATH_MAX];

	if (strchr(s->lib, '/') && !strpbrk(s->lib, "*?[") && realpath(s->lib, real) &&
	    strlen(real) < sizeof(s->lib))
		strcpy(s->lib, real);
}

static int table_add(struct probe_table *t, struct probe_spec *s)
{
	canonical_lib(s);
	/* the count is an int */
	if (t->cnt == INT32_MAX ||
	    array_reserve(&t->specs, &t->cap, (size_t)t->cnt + 1, sizeof(*t->specs), 16))
		return -ENOMEM;
	t->specs[t->cnt++] = *s;
	return 0;
}

int probes_parse_text(struct probe_table *t, const char *text, const char *origin,
		      char *err, size_t errlen)
{
	struct pctx c = { origin ?: "(text)", 0, err, errlen };
	struct probe_spec s;
	const char *p, *eol;
	int start, ret = 0;
	bool empty;

	if (err && errlen)
		err[0] = '\0';
	if (!t || !text)
		return fail(&c, "no table or text");
	start = t->cnt;
	for (p = text; *p; p = *eol ? eol + 1 : eol) {
		eol = strchrnul(p, '\n');
		if (c.lineno == INT32_MAX) {
			ret = fail(&c, "too many lines");
			goto fail;
		}
		c.lineno++;
		ret = parse_line(&c, p, eol, &s, &empty);
		if (ret)
			goto fail;
		if (empty)
			continue;
		ret = table_add(t, &s);
		if (ret) {
			fail(&c, "out of memory");
			goto fail;
		}
	}
	return 0;
fail:
	/* all or nothing, so a caller can report the error without a half-loaded file */
	t->cnt = start;
	return ret;
}

int probes_parse_file(struct probe_table *t, const char *path, char *err, size_t errlen)
{
	struct pctx c = { path ?: "(null)", 0, err, errlen };
	size_t len = 0, cap = 4096, ncap;
	char *buf = NULL, *nb;
	ssize_t n;
	int fd = -1, ret;

	if (err && errlen)
		err[0] = '\0';
	if (!path) {
		ret = fail(&c, "no file name");
		goto out;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		fail(&c, "cannot open: %s", strerror(-ret));
		goto out;
	}
	buf = malloc(cap + 1);
	if (!buf)
		goto nomem;
	for (;;) {
		/* grow to one byte past the limit to tell "exactly the limit" from "too big" */
		if (len == cap) {
			if (cap > PROBES_FILE_MAX)
				break;
			ncap = cap * 2 > PROBES_FILE_MAX + 1 ? PROBES_FILE_MAX + 1 : cap * 2;
			nb = realloc(buf, ncap + 1);
			if (!nb)
				goto nomem;
			buf = nb;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			fail(&c, "read error: %s", strerror(-ret));
			goto out;
		}
		if (n == 0)
			break;
		len += n;
	}
	if (len > PROBES_FILE_MAX) {
		fail(&c, "file larger than %d bytes", PROBES_FILE_MAX);
		ret = -EFBIG;
		goto out;
	}
	if (memchr(buf, '\0', len)) {
		ret = fail(&c, "NUL byte in file (not a text file?)");
		goto out;
	}
	buf[len] = '\0';
	ret = probes_parse_text(t, buf, path, err, errlen);
	goto out;
nomem:
	ret = -ENOMEM;
	fail(&c, "out of memory");
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

/* Whether @s has a ':' that is not part of a "::" */
static bool lone_colon(const char *s)
{
	for (const char *p = s; (p = strchr(p, ':')); p += strspn(p, ":"))
		if (strspn(p, ":") == 1)
			return true;
	return false;
}

int probes_parse_cli(struct probe_table *t, const char *arg, char *errbuf, size_t errlen)
{
	struct pctx c = { "--probe", 0, errbuf, errlen };
	const char *sep[2], *p, *end;
	struct tok lib, sym, name = { NULL, 0 };
	struct probe_spec s;
	char q[64];
	size_t run;
	int nsep = 0, err;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!t || !arg)
		return fail(&c, "no table or argument");
	/*
	 * bpftrace's and perf's spelling: uprobe:LIB:SYMBOL (u: for short), when what follows
	 * still has its LIB:SYMBOL (else "uprobe" is the LIB: "uprobe:foo", "u:ns::f")
	 */
	for (const char *const *pre = (const char *const[]){ "uprobe:", "u:", NULL }; *pre; pre++) {
		size_t n = strlen(*pre);

		if (!strncmp(arg, *pre, n) && lone_colon(arg + n)) {
			arg += n;
			break;
		}
	}
	end = arg + strlen(arg);
	/* a lone ':' separates fields, "::" is C++ scope inside the symbol */
	for (p = arg; *p;) {
		if (*p != ':') {
			p++;
			continue;
		}
		run = strspn(p, ":");
		if (run > 2)
			return fail(&c, "'%s': ambiguous ':::' (use LIB:SYMBOL_GLOB[:NAME])",
				    quote(tok_str(arg), q, sizeof(q)));
		if (run == 1) {
			if (nsep == 2)
				return fail(&c, "'%s': too many fields (LIB:SYMBOL_GLOB[:NAME])",
					    quote(tok_str(arg), q, sizeof(q)));
			sep[nsep++] = p;
		}
		p += run;
	}
	if (!nsep)
		return fail(&c, "'%s': expected LIB:SYMBOL_GLOB[:NAME]",
			    quote(tok_str(arg), q, sizeof(q)));
	lib = (struct tok){ arg, sep[0] - arg };
	sym.p = sep[0] + 1;
	sym.n = (nsep == 2 ? sep[1] : end) - sym.p;
	if (nsep == 2)
		name = (struct tok){ sep[1] + 1, end - sep[1] - 1 };
	if (!lib.n)
		return fail(&c, "'%s': empty LIB", quote(tok_str(arg), q, sizeof(q)));
	if (memchr(lib.p, ':', lib.n))
		return fail(&c, "'%s': LIB cannot contain ':'", quote(tok_str(arg), q, sizeof(q)));
	if (!sym.n)
		return fail(&c, "'%s': empty SYMBOL_GLOB", quote(tok_str(arg), q, sizeof(q)));
	if (nsep == 2 && !name.n)
		return fail(&c, "'%s': empty NAME", quote(tok_str(arg), q, sizeof(q)));

	spec_init(&s, c.origin, 0);
	err = check_text(&c, "LIB", lib, false);
	err = err ?: copy_field(&c, s.lib, sizeof(s.lib), "LIB", lib);
	err = err ?: check_text(&c, "SYMBOL_GLOB", sym, false);
	err = err ?: copy_field(&c, s.sym, sizeof(s.sym), "SYMBOL_GLOB", sym);
	err = err ?: check_text(&c, "NAME", name, true);
	err = err ?: copy_field(&c, s.name, sizeof(s.name), "NAME", name);
	err = err ?: check_sym_name(&c, &s);
	if (err)
		return err;
	err = table_add(t, &s);
	if (err)
		fail(&c, "out of memory");
	return err;
}

int probes_load_default(struct probe_table *t, char *err, size_t errlen)
{
	return probes_parse_text(t, probes_default_text, "default", err, errlen);
}

static const struct {
	const char *name;
	const char *text;
} builtin[] = {
	{ "spyre", probes_default_text },
	{ "torch", probes_torch_text },
};

const char *probes_builtin_name(size_t i)
{
	return i < sizeof(builtin) / sizeof(builtin[0]) ? builtin[i].name : NULL;
}

bool probes_builtin(const char *name)
{
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (!strcmp(builtin[i].name, name))
			return true;
	return false;
}

int probes_load(struct probe_table *t, const char *arg, char *err, size_t errlen)
{
	struct pctx c = { "--probes", 0, err, errlen };

	if (arg && !strchr(arg, '/')) {
		for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
			if (!strcmp(builtin[i].name, arg))
				return probes_parse_text(t, builtin[i].text, arg, err, errlen);
		if (access(arg, F_OK) && errno == ENOENT) {
			struct nearmiss m = {};
			char near[128];

			for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
				nearmiss_offer(&m, arg, builtin[i].name);
			nearmiss_format(&m, near, sizeof(near));
			nearmiss_free(&m);
			/* a usage error: a typo of a name more often than a file gone */
			fail(&c, "%s: no such file, nor a built-in table (spyre, torch)%s%s%s", arg,
			     *near ? "; did you mean " : "", near, *near ? "?" : "");
			return -EINVAL;
		}
	}
	return probes_parse_file(t, arg, err, errlen);
}

struct name_buf {
	char *p;
	size_t len, cap;
	bool nomem;
};

static void name_put(void *ctx, const char *p, size_t n)
{
	struct name_buf *b = ctx;
	char *np;

	if (b->nomem)
		return;
	if (b->len + n >= b->cap) {
		b->cap = (b->len + n) * 2 + 16;
		np = realloc(b->p, b->cap);
		if (!np) {
			b->nomem = true;
			return;
		}
		b->p = np;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
}

char *probe_name(const struct probe_spec *s, const char *qualname, const char *matched,
		 const struct globcap *caps)
{
	struct name_buf b = {};
	const char *why;
	int bad;

	if (!s->name[0])
		return strdup(qualname && *qualname ? qualname : s->sym);
	/* checked at parse time: only an out-of-range reference could fail, and it gives "" */
	expand_name(s->name, GLOBCAP_MAX, matched ?: "", caps, &why, &bad, name_put, &b);
	if (b.nomem || !b.len) {
		/* a template of captures that all matched nothing: the function's own name */
		free(b.p);
		return b.nomem ? NULL : strdup(qualname && *qualname ? qualname : s->sym);
	}
	return b.p;
}

void probes_free(struct probe_table *t)
{
	if (!t)
		return;
	free(t->specs);
	t->specs = NULL;
	t->cnt = 0;
	t->cap = 0;
}
