// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Wildcard matching with captures (syntax and capture rule in globcap.h). */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "resolve/globcap.h"

static const struct {
	const char *name;
	int (*fn)(int);
} classes[] = {
	{ "alnum", isalnum }, { "alpha", isalpha }, { "blank", isblank }, { "cntrl", iscntrl },
	{ "digit", isdigit }, { "graph", isgraph }, { "lower", islower }, { "print", isprint },
	{ "punct", ispunct }, { "space", isspace }, { "upper", isupper }, { "xdigit", isxdigit },
};

/* The class "[:name:]" starting at @p, or -1 (unknown or unterminated); *@len its length. */
static int class_at(const char *p, size_t *len)
{
	const char *end = strstr(p + 2, ":]");

	if (!end)
		return -1;
	for (size_t k = 0; k < sizeof(classes) / sizeof(classes[0]); k++) {
		if (strlen(classes[k].name) == (size_t)(end - p - 2) &&
		    !memcmp(classes[k].name, p + 2, end - p - 2)) {
			*len = end + 2 - p;
			return (int)k;
		}
	}
	return -1;
}

/*
 * The bracket expression at @p ('['): its length, with *@ok whether byte @c is in its set; 0
 * when it has no closing ']' (then the '[' is an ordinary byte, as for fnmatch).
 */
static size_t bracket(const char *p, unsigned char c, bool *ok)
{
	const char *q = p + 1;
	bool neg = false, in = false, first = true;
	unsigned char lo, hi;
	size_t clen;
	int k;

	if (*q == '!' || *q == '^') {
		neg = true;
		q++;
	}
	for (;;) {
		if (!*q)
			return 0;
		if (*q == ']' && !first)
			break;
		first = false;
		if (q[0] == '[' && q[1] == ':' && (k = class_at(q, &clen)) >= 0) {
			in |= classes[k].fn(c) != 0;
			q += clen;
			continue;
		}
		if (*q == '\\' && q[1])
			q++;
		lo = (unsigned char)*q++;
		hi = lo;
		if (q[0] == '-' && q[1] && q[1] != ']') {
			q++;
			if (*q == '\\' && q[1])
				q++;
			hi = (unsigned char)*q++;
		}
		in |= c >= lo && c <= hi;
	}
	*ok = in != neg;
	return q + 1 - p;
}

/* One single-byte element of the pattern at @p (not '*'): its length, *@ok if @c matches. */
static size_t element(const char *p, unsigned char c, bool *ok)
{
	size_t n;

	if (*p == '?') {
		*ok = true;
		return 1;
	}
	if (*p == '[' && (n = bracket(p, c, ok)))
		return n;
	if (*p == '\\' && p[1]) {
		*ok = (unsigned char)p[1] == c;
		return 2;
	}
	*ok = (unsigned char)*p == c;
	return 1;
}

bool globcap_match(const char *pat, const char *s, struct globcap *caps)
{
	const char *p = pat, *str = s, *star_p = NULL, *star_s = NULL;
	int nstar = 0, last = -1;
	size_t n;
	bool ok;

	while (*s) {
		if (*p == '*') {
			/* every star starts empty; on a mismatch the last one takes one more byte */
			last = nstar++;
			if (caps && last < GLOBCAP_MAX) {
				caps->v[last].off = s - str;
				caps->v[last].len = 0;
			}
			star_p = ++p;
			star_s = s;
			continue;
		}
		if (*p) {
			n = element(p, (unsigned char)*s, &ok);
			if (ok) {
				p += n;
				s++;
				continue;
			}
		}
		if (!star_p)
			return false;
		p = star_p;
		s = ++star_s;
		if (caps && last < GLOBCAP_MAX)
			caps->v[last].len = s - str - caps->v[last].off;
	}
	while (*p == '*') {
		if (caps && nstar < GLOBCAP_MAX) {
			caps->v[nstar].off = s - str;
			caps->v[nstar].len = 0;
		}
		nstar++;
		p++;
	}
	if (*p)
		return false;
	if (caps)
		caps->n = nstar < GLOBCAP_MAX ? nstar : GLOBCAP_MAX;
	return true;
}

int globcap_check(const char *pat, const char **why)
{
	const char *p = pat, *q;
	size_t clen;
	int stars = 0;

	while (*p) {
		if (*p == '*') {
			stars++;
		} else if (*p == '\\') {
			if (!p[1]) {
				*why = "a trailing '\\' escapes nothing";
				return -EINVAL;
			}
			p++;
		} else if (*p == '[') {
			bool ok;
			size_t n = bracket(p, 0, &ok);

			/* what bracket() would skip or misread: refuse it rather than guess */
			for (q = p + 1; q < p + n - 1; q++) {
				if (q[0] == '\\' && q[1]) {
					q++;
				} else if (q[0] == '[' && (q[1] == '=' || q[1] == '.')) {
					*why = "[=x=] and [.x.] are not supported";
					return -EINVAL;
				} else if (q[0] == '[' && q[1] == ':') {
					if (class_at(q, &clen) < 0) {
						*why = "unknown character class (alnum alpha blank cntrl "
						       "digit graph lower print punct space upper xdigit)";
						return -EINVAL;
					}
					q += clen - 1;
				}
			}
			/* fnmatch reads some unclosed ones as literal, others ("[a-") as no match */
			if (!n) {
				*why = "'[' without its closing ']' (\\[ is a literal '[')";
				return -EINVAL;
			}
			p += n - 1;
		}
		p++;
	}
	return stars;
}
