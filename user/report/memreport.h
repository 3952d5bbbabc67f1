/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SPYRE_MEMREPORT_H
#define SPYRE_MEMREPORT_H

#include <stdio.h>

struct consumer;
struct jw;
struct memledger;
struct prom_window;
/* Fleet mode: every account's current and peak bytes into @pw (prom.h), per job. */
void prom_window_add_memory(struct prom_window *pw, const struct consumer *c,
			    const struct memledger *m);

/*
 * The member "spyreMemory":{...} of the metadata @w is writing (jw_key): accounts, peaks, every
 * group of live blocks, the oldest blocks.
 */
void memledger_json(struct memledger *m, const struct consumer *c, struct jw *w);
/* A few lines for the summary: peaks, what is still allocated (top groups, oldest first). */
void memledger_summary(struct memledger *m, const struct consumer *c, FILE *f);

#endif
