/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Shell wildcard matching with captures, for probe symbols: fnmatch(3) without flags tells
 * whether a name matches, but a display name template ("name=aten::{1}") needs what each '*'
 * matched, and the two must agree, so both come from this one matcher.
 *
 * Syntax, as fnmatch(3) with flags 0 in the C locale (bytes, not characters):
 *   *        any run of bytes, '/' and a leading '.' included; captured
 *   ?        any one byte
 *   [...]    one byte of the set: ranges a-z, classes [:alpha:] (the 12 POSIX ones), a ']'
 *            first is literal, [!...] and [^...] negate; "\x" inside is x
 *   \x       the byte x
 * globcap_check refuses what fnmatch reads in surprising ways: a '[' without its closing ']'
 * (fnmatch takes some as a literal '[', others, like "[a-", match nothing), a trailing '\'
 * (matches nothing), and equivalence classes [=a=] and collating symbols [.a.].
 *
 * Captures: each '*' matches as little as it can, left to right (like ".*?" in an anchored
 * regex): "*::*" on "a::b::c" captures "a" and "b::c". Matching takes O(pattern x name) time,
 * whatever the pattern (no backtracking beyond the last '*').
 */
#ifndef SPYRE_GLOBCAP_H
#define SPYRE_GLOBCAP_H

#include <stdbool.h>

/* Captures kept per match: a pattern may have more '*', only the first ones are captured. */
#define GLOBCAP_MAX 16

struct globcap {
	int n;			/* captures set: min(number of '*', GLOBCAP_MAX) */
	struct {
		unsigned int off;	/* into the matched string */
		unsigned int len;
	} v[GLOBCAP_MAX];
};

/* Does @s match @pat? With @caps non-NULL, what each '*' matched (valid only on true). */
bool globcap_match(const char *pat, const char *s, struct globcap *caps);
/* Number of '*' in @pat (its captures), or -EINVAL with *@why set when @pat is refused. */
int globcap_check(const char *pat, const char **why);

#endif
