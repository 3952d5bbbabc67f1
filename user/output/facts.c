// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stddef.h>

#include "common/util.h"
#include "output/jsonw.h"
#include "output/facts.h"

#define DROPPED_HELP "Calls dropped before the trace, by reason (summed over the windows)."
const struct run_count_key run_count_keys[] = {
	{ "events", offsetof(struct run_counts, events), "spyre_trace_events_total", NULL,
	  "Trace events written (summed over the windows)." },
	{ "probeHits", offsetof(struct run_counts, hits), "spyre_probe_hits_total", NULL,
	  "Probe hits of traced functions, the unwinder's apart (summed over the windows)." },
	{ "dropsRingFull", offsetof(struct run_counts, ring), "spyre_calls_dropped_total",
	  "reason=\"ring_full\"", DROPPED_HELP },
	{ "dropsTooDeep", offsetof(struct run_counts, depth), "spyre_calls_dropped_total",
	  "reason=\"too_deep\"", DROPPED_HELP },
	{ "dropsNoStack", offsetof(struct run_counts, nostack), "spyre_calls_dropped_total",
	  "reason=\"no_stack\"", DROPPED_HELP },
	{ "recordsUnreadable", offsetof(struct run_counts, unreadable),
	  "spyre_calls_dropped_total", "reason=\"unreadable\"", DROPPED_HELP },
	{ "deviceOverflow", offsetof(struct run_counts, device_lost),
	  "spyre_device_spans_dropped_total", NULL,
	  "Device spans lost for want of room (summed over the windows)." },
	{ "unwound", offsetof(struct run_counts, unwound), "spyre_unwound_calls_total", NULL,
	  "Calls left by an exception, a longjmp or a cancel (summed over the windows)." },
};
const size_t run_count_nkeys = sizeof(run_count_keys) / sizeof(run_count_keys[0]);

uint64_t run_counts_dropped(const struct run_counts *r)
{
	return r->ring + r->depth + r->nostack + r->unreadable + r->device_lost;
}

void run_counts_text(FILE *f, const struct run_counts *r)
{
	char b1[32], b2[32], b3[32];

	fprintf(f, "%s events, %s probe hits, ", fmt_count(r->events, b1, sizeof(b1)),
		fmt_count(r->hits, b2, sizeof(b2)));
	fprintf(f, "%s dropped (", fmt_count(run_counts_dropped(r), b1, sizeof(b1)));
	if (r->causes_known)
		fprintf(f, "ring full %s, too deep %s, ", fmt_count(r->ring, b2, sizeof(b2)),
			fmt_count(r->depth, b3, sizeof(b3)));
	else	/* a trace from before the causes were kept: their sum only */
		fprintf(f, "in the BPF %s, ", fmt_count(r->ring + r->depth + r->nostack, b2,
							sizeof(b2)));
	/* said only when it happened: the line's usual form is what scripts read */
	if (r->causes_known && r->nostack)
		fprintf(f, "no thread stack %s, ", fmt_count(r->nostack, b2, sizeof(b2)));
	if (r->unreadable)
		fprintf(f, "unreadable records %s, ", fmt_count(r->unreadable, b2, sizeof(b2)));
	/* "device spans dropped": "device spans 0" read as none made */
	fprintf(f, "device spans dropped %s), %s unwound", fmt_count(r->device_lost, b2,
		sizeof(b2)), fmt_count(r->unwound, b3, sizeof(b3)));
}

void run_counts_json(struct jw *w, const struct run_counts *r)
{
	for (size_t i = 0; i < run_count_nkeys; i++)
		jw_kv_u64(w, run_count_keys[i].key, run_count_get(r, &run_count_keys[i]));
	/* the BPF's losses in one figure, as traces have always had it */
	jw_kv_u64(w, "drops", r->ring + r->depth + r->nostack);
}

void fn_row_head(FILE *f)
{
	fprintf(f, "      count     total ms    mean µs     p50 µs     p99 µs");
}

void fn_row_text(FILE *f, const struct fn_row *r)
{
	char c[32];

	fprintf(f, "%11s", fmt_count(r->count, c, sizeof(c)));
	if (r->counted_only)
		fprintf(f, " %12s %10s %10s %10s", "-", "-", "-", "-");
	else if (r->no_quantiles)
		fprintf(f, " %12.3f %10.1f %10s %10s", r->total_ns / 1e6,
			r->count ? r->total_ns / 1e3 / r->count : 0, "-", "-");
	else
		fprintf(f, " %12.3f %10.1f %10.1f %10.1f", r->total_ns / 1e6,
			r->count ? r->total_ns / 1e3 / r->count : 0, r->p50_ns / 1e3,
			r->p99_ns / 1e3);
}

void fn_row_json(struct jw *w, const struct fn_row *r)
{
	jw_kv_u64(w, "count", r->count);
	if (r->counted_only)
		return;
	jw_kv_u64(w, "totalNs", r->total_ns);
	jw_kv_dbl(w, "meanNs", r->count ? (double)r->total_ns / r->count : 0, 1);
	if (r->no_quantiles)
		return;
	jw_kv_u64(w, "p50Ns", r->p50_ns);
	jw_kv_u64(w, "p99Ns", r->p99_ns);
}
