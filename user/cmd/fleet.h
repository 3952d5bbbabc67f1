/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Fleet mode: every process that maps the runtime (-a), sampled (--sample-every, --rate-cap),
 * in duty-cycle windows (--window/--period) with probes detached between them, one rotated
 * trace file per window (--output-dir) and a Prometheus textfile summary (--prom-file).
 */
#ifndef SPYRE_FLEET_H
#define SPYRE_FLEET_H

#include "cmd/env.h"
#include "resolve/probes.h"

int cmd_fleet(const struct env *env, struct probe_table *table);

/* The trace's closing metadata (summary_trace_metadata) plus "spyreSampling": how the run was
 * sampled, so statistics can be scaled. @window_index 0 = not windowed. malloc'd. */
struct consumer;
struct target;
struct spyre_counters;
struct run_end;
char *fleet_trace_metadata(const struct env *env, const struct consumer *c,
			   const struct target *t, const struct spyre_counters *counters,
			   const struct run_end *end, uint64_t window_index);

/* Resolve the probe table in every process not scanned before (all of them with @all).
 * Returns new probes or -errno. The session rescans with it (fleet mode's -a, and -p PID
 * --window). */
struct target;
struct intset;
int fleet_scan(struct target *t, struct intset *seen, bool all, const char *procfs);

#endif
