/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Near misses of a glob that matched nothing: the few names a user most likely meant, for the
 * message that says their probe resolves nowhere (a typo, a missing '*', a wrong case).
 */
#ifndef SPYRE_NEARMISS_H
#define SPYRE_NEARMISS_H

/* How many are kept and printed. */
#define NEARMISS_MAX	3

struct nearmiss {
	int n;
	int score[NEARMISS_MAX];
	char *name[NEARMISS_MAX];
};

/*
 * How close @name comes to matching the fnmatch(3) glob @pat; lower is closer, -1 when not
 * close at all. 1: only the case differs; 2: the glob's literal text starts @name (a missing
 * '*'); 3: it is inside @name; 4 + 2d: d edits away ('*' matches any run for free, '?' and
 * [...] any one character), for d up to a quarter of the literal text (at least 2).
 */
int nearmiss_score(const char *pat, const char *name);
/* Offer @name with @score (< 0: ignored); the best NEARMISS_MAX are kept, ties to the shorter
 * name, then the alphabetically first; a name already kept is not added twice. -ENOMEM. */
int nearmiss_add(struct nearmiss *m, int score, const char *name);
/* Score @name against @pat and offer it. */
int nearmiss_offer(struct nearmiss *m, const char *pat, const char *name);
/* "a, b, c" into @buf (truncated), or "" when none. */
const char *nearmiss_format(const struct nearmiss *m, char *buf, size_t len);
void nearmiss_free(struct nearmiss *m);

#endif
