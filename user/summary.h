/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What a run saw: the one-screen summary at exit and the same facts in the trace's metadata. */
#ifndef SPYRE_SUMMARY_H
#define SPYRE_SUMMARY_H

#include <stdbool.h>
#include <stdio.h>
#include "consumer.h"

/* Per function: count, total, mean, p50, p99; then hits/drops. */
void summary_print(FILE *f, const struct consumer *c, const struct target *t,
		   const struct spyre_counters *counters, int pid);
/* Top-level trace members ("spyreProbes":[...],"spyreStats":{...}), malloc'd. */
char *summary_trace_metadata(const struct consumer *c, const struct target *t,
			     const struct spyre_counters *counters, bool target_exited);

/* The once-a-second status line on stderr: events, events/s, drops, probes, driver path. */
void summary_status_line(const struct consumer *c, uint64_t drops, uint64_t *last_events,
			 uint64_t *last_ns, int nprobes, bool tty);

#endif
