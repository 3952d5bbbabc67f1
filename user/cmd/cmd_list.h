/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The probe table from the command line, and `list -p PID`: what it resolves to there. */
#ifndef SPYRE_CMD_LIST_H
#define SPYRE_CMD_LIST_H

#include "cmd/env.h"
#include "resolve/probes.h"

/* The built-in table, --probes files and --probe lines, in that order; sets
 * env->user_specs_from. Returns 0 or an exit code, after saying why. */
int build_table(struct env *env, struct probe_table *table);
/* `list -p PID`: each line's matches, each probe's cost, the limits. Returns an exit code. */
int cmd_list(const struct env *env, struct probe_table *table);

#endif
