// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "resolve/nearmiss.h"

/* Names longer than this are not scored: a row of the distance table lives on the stack. */
#define NAME_MAX_SCORED	1024

/* The glob's next element at @p: '*', '?' (also a [...] set) or a literal; advances @p. */
static int glob_elem(const char **p)
{
	const char *s = *p;
	int c = (unsigned char)*s++;

	if (c == '\\' && *s) {
		c = (unsigned char)*s++;
	} else if (c == '[') {
		const char *e = s + (*s == '!' || *s == '^') + (*s == ']');

		e = strchr(e, ']');
		if (e) {
			s = e + 1;
			c = '?';
		}
	} else if (c == '*' || c == '?') {
		/* as is */
	} else {
		c = tolower(c) | 0x100;	/* a literal, never mistaken for '*' or '?' */
	}
	*p = s;
	return c;
}

/* The glob's literal characters, lowercased, into @buf; their count. */
static size_t glob_literal(const char *pat, char *buf, size_t len)
{
	size_t n = 0;

	while (*pat && n + 1 < len) {
		int c = glob_elem(&pat);

		if (c & 0x100)
			buf[n++] = c & 0xff;
	}
	buf[n] = 0;
	return n;
}

/*
 * Edit distance between @name and the strings @pat matches (Levenshtein, each pattern element
 * a row), or @limit + 1 as soon as every entry of a row exceeds @limit: most names of a large
 * library differ within a few characters, so a row or two is all they cost.
 */
static int glob_distance(const char *pat, const char *name, size_t n, int limit)
{
	int row[2][NAME_MAX_SCORED + 1], *prev = row[0], *cur = row[1], *t;

	for (size_t j = 0; j <= n; j++)
		prev[j] = j;
	while (*pat) {
		int c = glob_elem(&pat), min;

		if (c == '*') {
			cur[0] = prev[0];
			for (size_t j = 1; j <= n; j++)
				cur[j] = prev[j] < cur[j - 1] ? prev[j] : cur[j - 1];
		} else {
			cur[0] = prev[0] + 1;
			for (size_t j = 1; j <= n; j++) {
				int ch = tolower((unsigned char)name[j - 1]);
				int sub = prev[j - 1] + (c != '?' && (c & 0xff) != ch);
				int v = prev[j] + 1;

				if (cur[j - 1] + 1 < v)
					v = cur[j - 1] + 1;
				cur[j] = sub < v ? sub : v;
			}
		}
		min = cur[0];
		for (size_t j = 1; j <= n; j++)
			if (cur[j] < min)
				min = cur[j];
		if (min > limit)
			return limit + 1;
		t = prev;
		prev = cur;
		cur = t;
	}
	return prev[n];
}

int nearmiss_score(const char *pat, const char *name)
{
	char lit[512], low[NAME_MAX_SCORED + 1];
	size_t nl, n = strlen(name);
	int limit, d;

	if (n > NAME_MAX_SCORED || !*pat)
		return -1;
	if (!fnmatch(pat, name, FNM_CASEFOLD))
		return 1;
	nl = glob_literal(pat, lit, sizeof(lit));
	/* a short literal ("f", "at") is inside half of any library: no hint in that */
	if (nl >= 4) {
		for (size_t j = 0; j <= n; j++)
			low[j] = tolower((unsigned char)name[j]);
		if (!strncmp(low, lit, nl))
			return 2;
		if (strstr(low, lit))
			return 3;
	}
	limit = nl / 4 > 2 ? nl / 4 : 2;
	/* without '*' a name much longer or shorter than the literal is that many edits away */
	if (!strchr(pat, '*') && (n > nl + limit || nl > n + limit))
		return -1;
	d = glob_distance(pat, name, n, limit);
	return d <= limit ? 4 + 2 * d : -1;
}

/* Is (@s1, @n1) better than (@s2, @n2)? */
static bool better(int s1, const char *n1, int s2, const char *n2)
{
	size_t l1 = strlen(n1), l2 = strlen(n2);

	if (s1 != s2)
		return s1 < s2;
	if (l1 != l2)
		return l1 < l2;
	return strcmp(n1, n2) < 0;
}

int nearmiss_add(struct nearmiss *m, int score, const char *name)
{
	int pos;
	char *dup;

	if (score < 0)
		return 0;
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->name[i], name))
			return 0;
	for (pos = m->n; pos > 0 && better(score, name, m->score[pos - 1], m->name[pos - 1]);
	     pos--)
		;
	if (pos >= NEARMISS_MAX)
		return 0;
	dup = strdup(name);
	if (!dup)
		return -ENOMEM;
	if (m->n == NEARMISS_MAX)
		free(m->name[--m->n]);
	memmove(&m->name[pos + 1], &m->name[pos], (m->n - pos) * sizeof(m->name[0]));
	memmove(&m->score[pos + 1], &m->score[pos], (m->n - pos) * sizeof(m->score[0]));
	m->name[pos] = dup;
	m->score[pos] = score;
	m->n++;
	return 0;
}

int nearmiss_offer(struct nearmiss *m, const char *pat, const char *name)
{
	return nearmiss_add(m, nearmiss_score(pat, name), name);
}

const char *nearmiss_format(const struct nearmiss *m, char *buf, size_t len)
{
	size_t off = 0;

	if (len)
		buf[0] = 0;
	for (int i = 0; i < m->n && off < len; i++) {
		int w = snprintf(buf + off, len - off, "%s%s", i ? ", " : "", m->name[i]);

		if (w < 0)
			break;
		off += w;
	}
	return buf;
}

void nearmiss_free(struct nearmiss *m)
{
	for (int i = 0; i < m->n; i++)
		free(m->name[i]);
	memset(m, 0, sizeof(*m));
}
