/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `check`: validate a trace against the rules the trace viewers and analyzers depend on. */
#ifndef SPYRE_CHECK_H
#define SPYRE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "offline/checkkind.h"

struct jv;

/*
 * Check each of @paths (a directory: its *.json and *.json.gz files): problem lines and a
 * summary line a file, a total line for several; with @json one JSON document instead
 * (docs/check-recover.md). Exit codes per exitcodes.h: 0 clean, EXIT_CHECK problems found,
 * EXIT_ERROR when a file could not be read or parsed.
 */
int cmd_check(char *const *paths, int n, bool json);
int check_files(char *const *paths, int n, bool json, FILE *out);

/*
 * Check a parsed trace. Problem lines (at most CHECK_MAX_LINES, then a count) go to @out,
 * prefixed "check: @label: "; @out may be NULL to only count. Does not print the summary line.
 * Returns the number of problems or -ENOMEM.
 */
long check_doc(const struct jv *root, const char *label, FILE *out, struct check_result *res);

/* cmd_check with the report going to @out (errors still go to stderr). Returns an exit code. */
int check_file(const char *path, FILE *out);

#endif
