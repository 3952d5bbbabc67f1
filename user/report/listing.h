/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SPYRE_LISTING_H
#define SPYRE_LISTING_H

#include <stdbool.h>
#include <stdio.h>

struct target;
struct hit_costs;

/*
 * @verbose: every line of @t's table in order: resolved (each function, its entry and return
 * sites, its cost per call when @costs is set), shadowed by an earlier line, or NOT RESOLVED and
 * why; then each library and its probe count. Else one line a probe (name, function, library
 * and offset, cost), the user's lines that resolve nowhere with why, a count of the others.
 * @glob (NULL: all): only the probes whose display name or function it matches.
 */
void listing_probes(const struct target *t, const struct hit_costs *costs, bool verbose,
		    const char *glob, FILE *f);
/* The table's lines (`list` without -p), those whose name or function @glob matches (NULL: all) */
struct probe_table;
void listing_table(const struct probe_table *t, const char *glob, FILE *f);

#endif
