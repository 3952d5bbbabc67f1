/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A run's counts of what it traced and what it lost: one model, rendered several ways (as
 * bpftrace's src/output renders format-neutral values). The live run fills it once from the
 * BPF counters and the consumer (report/summary.c: summary_counts) for the summary's first
 * line, the status line, the trace's metadata (spyreStats) and --summary-json; `report` reads
 * it back from a trace's metadata by the same keys (run_count_keys) and prints the run's own
 * summary line. So each figure has one meaning and one name wherever it is shown: before,
 * "dropped" in the summary counted the consumer's unreadable records and lost device spans,
 * the status line's "drops" and the metadata's "drops" did not.
 */
#ifndef SPYRE_FACTS_H
#define SPYRE_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct jw;

struct run_counts {
	uint64_t events;		/* trace events written */
	uint64_t hits;			/* probe hits of traced functions (not the unwinder's) */
	uint64_t ring, depth, nostack;	/* calls the BPF dropped: ring full, too deep, no stack */
	uint64_t unreadable;		/* records the consumer could not read */
	uint64_t device_lost;		/* device spans lost for want of room (device.h) */
	uint64_t unwound;		/* calls left by an exception, a longjmp, a cancel */
	bool causes_known;		/* ring/depth/nostack apart (false: an older trace's) */
};

/* Every loss: the calls the BPF dropped, the records unread, the device spans lost. */
uint64_t run_counts_dropped(const struct run_counts *r);
/*
 * "N events, M probe hits, K dropped (ring full a, too deep b[, no thread stack c][,
 * unreadable records d], device spans dropped e), U unwound": the summary's first line after
 * its "for pid P: ", what scripts read (no newline). The optional parts only when not 0.
 */
void run_counts_text(FILE *f, const struct run_counts *r);
/* As JSON members (spyreStats), by run_count_keys, plus "drops": the BPF's three causes. */
void run_counts_json(struct jw *w, const struct run_counts *r);

/*
 * Each count's names: its JSON key (spyreStats; readers of a trace use them too), its
 * Prometheus series (fleet mode's --prom-file: a counter summed over the windows) and help.
 */
struct run_count_key {
	const char *key;
	size_t off;			/* of its uint64_t in struct run_counts */
	const char *metric;		/* the series' family */
	const char *label;		/* its label, or NULL */
	const char *help;		/* the family's HELP, on its first series */
};
extern const struct run_count_key run_count_keys[];
extern const size_t run_count_nkeys;
/* The member of @r that key @k names; run_count_get: its value. */
static inline uint64_t *run_count_at(struct run_counts *r, const struct run_count_key *k)
{
	return (uint64_t *)((char *)r + k->off);
}

static inline uint64_t run_count_get(const struct run_counts *r, const struct run_count_key *k)
{
	return *(const uint64_t *)((const char *)r + k->off);
}

/*
 * A function's calls, as the summary's table, `report`'s host and kernel tables, the metadata's
 * spyreProbes and --summary-json give them. Exact in `report` (its durations sorted); in a live
 * run p50 and p99 come from a log-linear histogram, within ~1.6 % (stream/stats.h).
 */
struct fn_row {
	uint64_t count;			/* calls (for a span: those that returned) */
	uint64_t total_ns, p50_ns, p99_ns;
	bool counted_only;		/* an instant: calls, no durations */
	bool no_quantiles;		/* durations summed, not kept: no p50, p99 */
};

/* The columns' heads, "      count     total ms    mean µs     p50 µs     p99 µs" */
void fn_row_head(FILE *f);
/* Its columns under fn_row_head (no newline: a table puts its own columns, then the name) */
void fn_row_text(FILE *f, const struct fn_row *r);
/* As JSON members: count, totalNs, meanNs, p50Ns, p99Ns (the durations only when it has them) */
void fn_row_json(struct jw *w, const struct fn_row *r);

#endif
