// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>

#include "offline/jsonparse.h"
#include "jv_at.h"
#include "unit.h"

static struct jv *parse(const char *s, char *err, size_t errlen)
{
	return jv_parse(s, strlen(s), err, errlen);
}

/* Expect a parse error whose "line:col: message" starts with @pos and mentions @what. */
static void check_bad(const char *doc, const char *pos, const char *what, int line)
{
	char err[128] = "unset", m[512];
	struct jv *v = parse(doc, err, sizeof(err));

	if (v) {
		snprintf(m, sizeof(m), "accepted invalid document '%s'", doc);
		unit_fail(__FILE__, line, m);
		jv_free(v);
		return;
	}
	if (strncmp(err, pos, strlen(pos)) || (what && !strstr(err, what))) {
		snprintf(m, sizeof(m), "'%s': error '%s', want '%s ...%s'", doc, err, pos,
			 what ? what : "");
		unit_fail(__FILE__, line, m);
	}
}
#define BAD(doc, pos, what) check_bad(doc, pos, what, __LINE__)

TEST(jsonparse_valid)
{
	const char *doc = " {\"a\": [1, -2.5, 3e2, 0, -0, 1E-3, true, false, null],\n"
			  "  \"b\": {\"c\": \"d\", \"e\": {}}, \"f\": [], \"a\": 7}\r\n";
	char err[128] = "";
	struct jv *v = parse(doc, err, sizeof(err)), *a, *c;
	double d;

	CHECK_STR(err, "");
	CHECK(v != NULL);
	if (!v)
		return;
	CHECK_EQ_INT(v->type, JV_OBJECT);
	CHECK_EQ_INT(jv_len(v), 4);
	/* members keep document order; duplicate keys: jv_get returns the first */
	CHECK_STR(jv_first(v)->key, "a");
	CHECK_STR(jv_at(v, 3)->key, "a");
	CHECK(jv_at(v, 4) == NULL);
	a = jv_get(v, "a");
	CHECK_EQ_INT(a->type, JV_ARRAY);
	CHECK_EQ_INT(jv_len(a), 9);
	CHECK(jv_num(jv_at(a, 0), &d) && d == 1);
	CHECK(jv_num(jv_at(a, 1), &d) && d == -2.5);
	CHECK(jv_num(jv_at(a, 2), &d) && d == 300);
	CHECK_STR(jv_at(a, 2)->num.raw, "3e2");
	CHECK(jv_num(jv_at(a, 5), &d) && d == 0.001);
	CHECK_EQ_INT(jv_at(a, 6)->type, JV_BOOL);
	CHECK(jv_at(a, 6)->b == true && jv_at(a, 7)->b == false);
	CHECK_EQ_INT(jv_at(a, 8)->type, JV_NULL);
	CHECK_STR(jv_get_str(jv_get(v, "b"), "c"), "d");
	c = jv_get(jv_get(v, "b"), "e");
	CHECK(c && c->type == JV_OBJECT && jv_len(c) == 0 && !jv_first(c));
	CHECK_EQ_INT(jv_len(jv_get(v, "f")), 0);
	CHECK(jv_get(v, "zz") == NULL);
	CHECK(jv_get(a, "a") == NULL);		/* not an object */
	CHECK(jv_str(a) == NULL);
	CHECK(!jv_num(v, &d));
	jv_free(v);

	/* scalars at top level */
	v = parse("\"x\"", NULL, 0);
	CHECK_STR(jv_str(v), "x");
	jv_free(v);
	v = parse(" 42 ", NULL, 0);
	CHECK(jv_num(v, &d) && d == 42);
	jv_free(v);
}

TEST(jsonparse_numbers)
{
	static const struct {
		const char *in;
		double want;
	} t[] = {
		{ "1234.567", 1234.567 },
		{ "0.005", 0.005 },
		{ "-1.500", -1.5 },
		{ "18446744073709551615", 18446744073709551615.0 },
		{ "-9223372036854775808", -9223372036854775808.0 },
		{ "1.7976931348623157e308", 1.7976931348623157e308 },
		{ "4.9e-324", 4.9e-324 },
		{ "0.1", 0.1 },
		{ "123456789012345678901234567890", 123456789012345678901234567890.0 },
		{ "0.000000000000000000000000000001", 1e-30 },
		{ "9007199254740993", 9007199254740993.0 },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct jv *v = parse(t[i].in, NULL, 0);
		double d = -12345;

		CHECK(jv_num(v, &d));
		if (d != t[i].want) {
			char m[128];

			snprintf(m, sizeof(m), "%s parsed as %.17g", t[i].in, d);
			unit_fail(__FILE__, __LINE__, m);
		}
		CHECK(v && !strcmp(v->num.raw, t[i].in));
		jv_free(v);
	}
}

TEST(jsonparse_strings)
{
	const char *doc = "[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\", "
			  "\"\\ud83d\\ude00\", \"x\\u0000y\", \"\xc3\xa9\xf0\x9f\x98\x80\"]";
	char err[128] = "";
	struct jv *v = parse(doc, err, sizeof(err));

	CHECK_STR(err, "");
	CHECK(v != NULL);
	if (!v)
		return;
	CHECK_STR(jv_str(jv_at(v, 0)), "a\"b\\c/d\b\f\n\r\t");
	CHECK_STR(jv_str(jv_at(v, 1)), "\xc3\xa9\xe2\x82\xac");
	CHECK_STR(jv_str(jv_at(v, 2)), "\xf0\x9f\x98\x80");	/* surrogate pair -> U+1F600 */
	CHECK_EQ_INT(jv_at(v, 3)->str.len, 3);
	CHECK(!memcmp(jv_at(v, 3)->str.s, "x\0y", 3));
	CHECK_STR(jv_str(jv_at(v, 4)), "\xc3\xa9\xf0\x9f\x98\x80");
	jv_free(v);
}

TEST(jsonparse_invalid)
{
	char ctl[] = "\"a\x01\"";

	BAD("", "1:1:", "end of input");
	BAD("   \n  ", "2:3:", "end of input");
	BAD("{", "1:2:", "end of input");
	BAD("[1,]", "1:4:", "unexpected ']'");
	BAD("[1 2]", "1:4:", "expected ',' or ']'");
	BAD("{\"a\" 1}", "1:6:", "expected ':'");
	BAD("{\"a\":1,}", "1:8:", "member name");
	BAD("{a:1}", "1:2:", "member name");
	BAD("{\"a\":1 \"b\":2}", "1:8:", "expected ',' or '}'");
	BAD("[01]", "1:3:", "leading zero");
	BAD("[1.]", "1:4:", "invalid number");
	BAD("[.5]", "1:2:", "unexpected '.'");
	BAD("[1e]", "1:4:", "exponent");
	BAD("-", "1:1:", "invalid number");
	BAD("[+1]", "1:2:", "unexpected '+'");
	BAD("[NaN]", "1:2:", NULL);
	BAD("[tru]", "1:2:", NULL);
	BAD("nulll", "1:5:", "trailing");
	BAD("{} {}", "1:4:", "trailing");
	BAD("\"abc", "1:1:", "unterminated");
	BAD("\"abc\\", "1:1:", "unterminated");
	BAD(ctl, "1:3:", "control character");
	BAD("\"\\x\"", "1:2:", "invalid escape");
	BAD("\"\\u12g4\"", "1:2:", "\\u");
	BAD("\"\\u12\"", "1:2:", "\\u");
	BAD("\"\\ud83d\"", "1:2:", "surrogate");
	BAD("\"\\ud83dx\\ude00\"", "1:2:", "surrogate");
	BAD("\"\\ude00\"", "1:2:", "surrogate");
	BAD("\"\\ud83d\\u0041\"", "1:2:", "surrogate");
	BAD("\"a\xff\"", "1:3:", "UTF-8");
	BAD("\"\xed\xa0\x80\"", "1:2:", "UTF-8");
	BAD("\"\xe2\x82\"", "1:2:", "UTF-8");
	/* position across lines: column counts from the last newline */
	BAD("{\n  \"a\": 1,\n  \"b\": x\n}", "3:8:", "unexpected 'x'");
}

TEST(jsonparse_depth)
{
	char doc[2 * JV_MAX_DEPTH + 8], err[128] = "", want[64];
	struct jv *v;
	int i, n;

	/* exactly the limit parses */
	for (n = 0; n < JV_MAX_DEPTH; n++)
		doc[n] = '[';
	for (i = 0; i < JV_MAX_DEPTH; i++)
		doc[n++] = ']';
	v = jv_parse(doc, (size_t)n, err, sizeof(err));
	CHECK(v != NULL);
	CHECK_STR(err, "");
	jv_free(v);

	/* one more is rejected at the innermost bracket */
	for (n = 0; n <= JV_MAX_DEPTH; n++)
		doc[n] = '[';
	for (i = 0; i <= JV_MAX_DEPTH; i++)
		doc[n++] = ']';
	v = jv_parse(doc, (size_t)n, err, sizeof(err));
	CHECK(v == NULL);
	snprintf(want, sizeof(want), "1:%d: nesting too deep", JV_MAX_DEPTH + 1);
	CHECK_STR(err, want);

	/* a hostile depth far beyond the stack still fails cleanly */
	{
		size_t big = 1u << 22;
		char *deep = malloc(big);

		memset(deep, '[', big);
		v = jv_parse(deep, big, err, sizeof(err));
		CHECK(v == NULL);
		CHECK(strstr(err, "nesting too deep") != NULL);
		free(deep);
	}
}

TEST(jsonparse_not_nul_terminated)
{
	/* the parser must stop at @len, not at a NUL */
	const char buf[] = { '[', '1', ',', '2', ']', 'x', 'x' };
	struct jv *v = jv_parse(buf, 5, NULL, 0);
	char err[64];

	CHECK(v && jv_len(v) == 2);
	jv_free(v);
	CHECK(jv_parse(buf, 4, err, sizeof(err)) == NULL);
	CHECK_STR(err, "1:5: unexpected end of input in array");
	CHECK(jv_parse(NULL, 0, err, sizeof(err)) == NULL);
	jv_free(NULL);
	CHECK_STR(jv_type_name(JV_OBJECT), "object");
}

TEST(jsonparse_big_string)
{
	/* strings larger than an arena block get their own block */
	size_t n = 3u << 20, i;
	char *doc = malloc(n + 16);
	struct jv *v;

	doc[0] = '[';
	doc[1] = '"';
	for (i = 0; i < n; i++)
		doc[2 + i] = (char)('a' + i % 26);
	memcpy(doc + 2 + n, "\",\"t\"]", 6);
	v = jv_parse(doc, n + 8, NULL, 0);
	CHECK(v && jv_len(v) == 2);
	CHECK(v && jv_at(v, 0)->str.len == n &&
	      jv_at(v, 0)->str.s[n - 1] == (char)('a' + (n - 1) % 26));
	CHECK_STR(jv_str(jv_at(v, 1)), "t");
	jv_free(v);
	free(doc);
}

/* µs to ns from the text: a double holds 5.6e12 µs to ~1 ns only, and d * 1000 + 0.5 rounds
 * up past 2^52 (5618136552135.573 read as ...574) */
TEST(jsonparse_us_to_ns_exactly)
{
	static const struct {
		const char *in;
		int64_t want;
	} t[] = {
		{ "5618136552135.573", 5618136552135573ll },
		{ "5618136552423.451", 5618136552423451ll },
		{ "7889238000000.001", 7889238000000001ll },
		{ "-12.3456", -12346 },
		{ "0.0004", 0 },
		{ "42", 42000 },
		{ "1.5e3", 1500000 },
	};
	int64_t ns;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct jv *v = parse(t[i].in, NULL, 0);

		ns = -1;
		CHECK(jv_us_ns(v, 9000000000000LL, &ns));
		CHECK_EQ_INT(ns, t[i].want);
		jv_free(v);
	}
	{
		struct jv *v = parse("9000000000001.0", NULL, 0);

		CHECK(!jv_us_ns(v, 9000000000000LL, &ns));
		jv_free(v);
	}
}

TEST(jsonparse_ids_as_plain_digits_exactly)
{
	static const struct {
		const char *in;
		bool ok;
		uint64_t want;
	} t[] = {
		{ "4503599627370499", true, 4503599627370499ull },	/* past 2^52 */
		{ "18446744073709551615", true, UINT64_MAX },
		{ "18446744073709551616", false, 0 },			/* past 2^64 */
		{ "-1", false, 0 },
		{ "1e3", false, 0 },
		{ "2.0", false, 0 },
		{ "\"7\"", false, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct jv *v = parse(t[i].in, NULL, 0);
		uint64_t x = 0;

		CHECK(jv_u64_exact(v, &x) == t[i].ok);
		if (t[i].ok)
			CHECK(x == t[i].want);
		jv_free(v);
	}
}
