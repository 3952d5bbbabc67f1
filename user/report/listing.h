/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SPYRE_LISTING_H
#define SPYRE_LISTING_H

#include <stdio.h>

struct target;
struct hit_costs;

/*
 * Every line of @t's table in order: resolved (each function, its entry and return sites, its
 * cost per call when @costs is set), shadowed by an earlier line, or NOT RESOLVED and why; then
 * each library and its probe count.
 */
void listing_probes(const struct target *t, const struct hit_costs *costs, FILE *f);

#endif
