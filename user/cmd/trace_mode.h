/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Trace mode: -p PID or -- CMD, one window of the tracing session (session.h). */
#ifndef SPYRE_TRACE_MODE_H
#define SPYRE_TRACE_MODE_H

#include "cmd/env.h"
#include "resolve/probes.h"

/* Trace env->pid (or launch env->argv_cmd) into env->output; returns an exit code (env.h). */
int cmd_trace(struct env *env, struct probe_table *table);

#endif
