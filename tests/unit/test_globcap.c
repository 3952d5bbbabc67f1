// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>

#include "unit.h"
#include "resolve/globcap.h"

/* capture @i of the last match of @s, as a string (static buffer) */
static const char *cap(const struct globcap *c, const char *s, int i)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "%.*s", (int)c->v[i].len, s + c->v[i].off);
	return buf;
}

TEST(globcap_captures)
{
	const char *q = "at::_ops::addmm::call";
	struct globcap c;

	CHECK(globcap_match("at::_ops::*::call", q, &c));
	CHECK_EQ_INT(c.n, 1);
	CHECK_STR(cap(&c, q, 0), "addmm");
	CHECK(!globcap_match("at::_ops::*::redispatch", q, &c));
	/* each star as short as it can be, left to right */
	CHECK(globcap_match("*::*", "a::b::c", &c));
	CHECK_EQ_INT(c.n, 2);
	CHECK_STR(cap(&c, "a::b::c", 0), "a");
	CHECK_STR(cap(&c, "a::b::c", 1), "b::c");
	CHECK(globcap_match("*::*::call", q, &c));
	CHECK_STR(cap(&c, q, 0), "at");
	CHECK_STR(cap(&c, q, 1), "_ops::addmm");
	/* stars that match nothing: at the start, adjacent, at the end */
	CHECK(globcap_match("**at*", "at", &c));
	CHECK_EQ_INT(c.n, 3);
	CHECK_EQ_INT(c.v[0].len + c.v[1].len + c.v[2].len, 0);
	CHECK_EQ_INT(c.v[2].off, 2);
	CHECK(globcap_match("flex::*", "flex::", &c));
	CHECK_EQ_INT(c.n, 1);
	CHECK_EQ_INT(c.v[0].len, 0);
	/* the last star takes what the tail needs */
	CHECK(globcap_match("a*b?", "aXbYbZ", &c));
	CHECK_STR(cap(&c, "aXbYbZ", 0), "XbY");
	/* ? and sets inside the captured text's neighbours */
	CHECK(globcap_match("ns::[a-c]*_[!0-9]", "ns::bar_x", &c));
	CHECK_STR(cap(&c, "ns::bar_x", 0), "ar");
	CHECK(!globcap_match("ns::[a-c]*_[!0-9]", "ns::bar_1", NULL));
	/* no captures asked for, no literal pattern needs any */
	CHECK(globcap_match("flex::RuntimeStream::query", "flex::RuntimeStream::query", &c));
	CHECK_EQ_INT(c.n, 0);
	CHECK(!globcap_match("", "x", NULL));
	CHECK(globcap_match("", "", NULL));
	CHECK(globcap_match("*", "", NULL));
}

TEST(globcap_many_stars)
{
	char pat[64] = "", s[64];
	struct globcap c;

	/* 20 stars: all match, the first GLOBCAP_MAX are captured */
	for (int i = 0; i < 20; i++)
		strcat(pat, "*x");
	memset(s, 'x', 20);
	s[20] = 0;
	CHECK(globcap_match(pat, s, &c));
	CHECK_EQ_INT(c.n, GLOBCAP_MAX);
	CHECK_EQ_INT(globcap_check(pat, &(const char *){ NULL }), 20);
	/* a pattern that makes a backtracking matcher exponential: quick here */
	CHECK(!globcap_match("*a*a*a*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
			     &c));
}

TEST(globcap_check_refuses)
{
	const char *why = NULL;

	CHECK_EQ_INT(globcap_check("at::_ops::*::call", &why), 1);
	CHECK_EQ_INT(globcap_check("[*]x\\*", &why), 0);	/* literal stars */
	CHECK_EQ_INT(globcap_check("[[:alpha:]_]*", &why), 1);
	CHECK_EQ_INT(globcap_check("x\\", &why), -EINVAL);
	CHECK(why && strstr(why, "trailing"));
	CHECK_EQ_INT(globcap_check("[[:nope:]]", &why), -EINVAL);
	CHECK(why && strstr(why, "character class"));
	CHECK_EQ_INT(globcap_check("[[=a=]]", &why), -EINVAL);
	CHECK_EQ_INT(globcap_check("[[.a.]]", &why), -EINVAL);
	/* an unclosed '[': fnmatch reads "[b*" as a literal '[', "[b-" as no match at all */
	CHECK_EQ_INT(globcap_check("a[b*", &why), -EINVAL);
	CHECK(why && strstr(why, "closing"));
	CHECK_EQ_INT(globcap_check("a\\[b*", &why), 1);
	CHECK(globcap_match("a\\[b*", "a[bc", NULL));
}

/* Random patterns and names over a small alphabet: the same verdict as fnmatch(3), flags 0. */
TEST(globcap_agrees_with_fnmatch)
{
	static const char pal[] = "ab:*?[]!^-\\";
	static const char sal[] = "ab:[]!-*\\";
	const char *classes[] = { "[[:alpha:]]", "[![:punct:]]", "[[:digit:]a]" };
	char pat[16], s[12];
	const char *why;
	unsigned int seed = 12345;
	int n = 0, bad = 0;

	for (int i = 0; i < 200000; i++) {
		int pl = rand_r(&seed) % 9, sl = rand_r(&seed) % 9;

		for (int k = 0; k < pl; k++)
			pat[k] = pal[rand_r(&seed) % (sizeof(pal) - 1)];
		pat[pl] = 0;
		if (rand_r(&seed) % 16 == 0)
			snprintf(pat, sizeof(pat), "%s", classes[rand_r(&seed) % 3]);
		for (int k = 0; k < sl; k++)
			s[k] = sal[rand_r(&seed) % (sizeof(sal) - 1)];
		s[sl] = 0;
		if (globcap_check(pat, &why) < 0)
			continue;
		n++;
		if (globcap_match(pat, s, NULL) != !fnmatch(pat, s, 0) && bad++ < 5) {
			char m[128];

			snprintf(m, sizeof(m), "pattern '%s' name '%s': fnmatch %d", pat, s,
				 fnmatch(pat, s, 0));
			unit_fail(__FILE__, __LINE__, m);
		}
	}
	CHECK(n > 100000);
	CHECK_EQ_INT(bad, 0);
}
