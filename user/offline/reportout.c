// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report's renderings of what reportcalc.c worked out of one file: the tables for people
 * (text_report) and one member of the --json document (json_report).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "offline/jsonparse.h"
#include "offline/reportcalc.h"
#include "offline/reportout.h"
#include "output/facts.h"
#include "output/jsonw.h"

/* the host functions shown beside the host-bound idle time (--json: all) */
#define REPORT_IDLE_ROWS	10

/* Equal figures: by name, then thread (--by-thread), so that the order is the same each run */
static int row_tie(const struct row *x, const struct row *y)
{
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int by_total(const void *a, const void *b)
{
	const struct row *x = *(const struct row *const *)a, *y = *(const struct row *const *)b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return row_tie(x, y);
}

static int by_host_bound(const void *a, const void *b)
{
	const struct row *x = *(const struct row *const *)a, *y = *(const struct row *const *)b;

	if (x->host_bound_ns != y->host_bound_ns)
		return x->host_bound_ns > y->host_bound_ns ? -1 : 1;
	return row_tie(x, y);
}

/* The rows of @kind in the order of @cmp (by_total: the largest total first), or NULL */
static const struct row **rows_sorted(const struct rep *r, int kind,
				      int (*cmp)(const void *, const void *), size_t *n)
{
	const struct row **v = calloc(r->nrows + 1, sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < r->nrows; i++)
		if (r->rows[i]->kind == kind)
			v[(*n)++] = r->rows[i];
	qsort(v, *n, sizeof(*v), cmp);
	return v;
}

/*
 * Process @pid's rank: a trace of one rank names it in distributedInfo (its process is
 * spyreStats.targetPid), a merge of ranks in spyreDistributedInfo, by pid. -1: not known.
 */
static int64_t rank_of_pid(const struct jv *head, int64_t pid)
{
	const struct jv *list = jv_get(head, "spyreDistributedInfo"), *e;
	double p, rank;

	if (list && list->type == JV_ARRAY) {
		jv_foreach(e, list)
			if (jv_get_num(e, "pid", &p) && p == pid && jv_get_num(e, "rank", &rank))
				return (int64_t)rank;
		return -1;
	}
	if (jv_get_num(jv_get(head, "spyreStats"), "targetPid", &p) && p == pid &&
	    jv_get_num(jv_get(head, "distributedInfo"), "rank", &rank))
		return (int64_t)rank;
	return -1;
}

/* A process's rank as the text tables show it: "?" when the trace does not say */
static const char *rank_str(const struct jv *head, int64_t pid, char *buf, size_t len)
{
	int64_t rank = rank_of_pid(head, pid);

	if (rank < 0)
		return "?";
	snprintf(buf, len, "%lld", (long long)rank);
	return buf;
}

/* ... and in the JSON: null when the trace does not say */
static void json_rank(struct jw *w, const struct jv *head, int64_t pid)
{
	int64_t rank = rank_of_pid(head, pid);

	if (rank >= 0)
		jw_kv_i64(w, "rank", rank);
	else
		jw_kv_null(w, "rank");
}

static int coll_cmp(const void *a, const void *b)
{
	const struct coll *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->op, y->op);
}

/* --- rendering ------------------------------------------------------------------------------ */

static double pct(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

static int64_t busy_total(const struct rep *r)
{
	int64_t t = 0;

	for (size_t i = 0; i < r->ndevs; i++)
		t += r->devs[i].busy_ns;
	return t;
}

/* A row's calls in the model the summary and the metadata share (output/facts.h). */
static struct fn_row fn_row_of(const struct row *x)
{
	return (struct fn_row){ .count = x->count, .total_ns = (uint64_t)x->total_ns,
				.p50_ns = (uint64_t)x->p50_ns, .p99_ns = (uint64_t)x->p99_ns };
}

static void text_rows(FILE *f, const struct rep *r, int kind, const char *what)
{
	int64_t busy = busy_total(r);
	const struct row **v;
	char c[32], b[32];
	size_t n;

	v = rows_sorted(r, kind, by_total, &n);
	if (!v || !n) {
		free(v);
		return;
	}
	fprintf(f, "\n%s\n", what);
	if (kind == ROW_COPY)
		fprintf(f, "      count           bytes     total ms    mean µs      GB/s");
	else
		fn_row_head(f);
	fprintf(f, "%s  %s\n", kind == ROW_KERNEL ? "  device %" : "",
		kind == ROW_HOST ? "function" : kind == ROW_KERNEL ? "kernel" : "direction");
	for (size_t i = 0; i < n; i++) {
		const struct row *x = v[i];
		struct fn_row fr = fn_row_of(x);

		if (kind == ROW_COPY)
			fprintf(f, "%11s %15s %12.3f %10.1f %9.3f", fmt_count(x->count, c, sizeof(c)),
				fmt_count(x->bytes, b, sizeof(b)), x->total_ns / 1e6,
				x->count ? x->total_ns / 1e3 / x->count : 0,
				x->total_ns ? (double)x->bytes / x->total_ns : 0);
		else
			fn_row_text(f, &fr);
		if (kind == ROW_KERNEL)
			fprintf(f, " %9.1f", pct(x->total_ns, busy));
		fprintf(f, "  %s", x->name);
		if (x->tid >= 0) {	/* --by-thread */
			const char *tn = rep_name_of(r, x->pid, x->tid);

			fprintf(f, "  [tid %lld%s%s]", (long long)x->tid, tn ? " " : "", tn ?: "");
		}
		fputc('\n', f);
	}
	free(v);
}

static int track_cmp(const void *a, const void *b)
{
	const struct track *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void text_devices(FILE *f, struct rep *r)
{
	char c[32];

	if (!r->ndevs)
		return;
	qsort(r->tracks, r->ntracks, sizeof(*r->tracks), track_cmp);
	fprintf(f, "\ndevices: busy = the union of their streams' work, over each device's first "
		"to last\n");
	for (size_t i = 0; i < r->ndevs; i++) {
		const struct device *d = &r->devs[i];
		int64_t span = d->last_ns - d->first_ns;
		const char *name = rep_name_of(r, d->pid, -1);

		fprintf(f, "  device pid %lld%s%s%s: busy %.1f %% of %.3f ms (idle %.3f ms), %s "
			"spans\n", (long long)d->pid, name ? " \"" : "", name ?: "",
			name ? "\"" : "", pct(d->busy_ns, span), span / 1e6,
			(span - d->busy_ns) / 1e6, fmt_count(d->spans, c, sizeof(c)));
		for (size_t k = 0; k < r->ntracks; k++) {
			const struct track *t = &r->tracks[k];
			const char *tn = rep_name_of(r, t->pid, t->tid);

			if (t->pid != d->pid)
				continue;
			fprintf(f, "    tid %lld%s%s%s: busy %.1f %%, %s spans\n",
				(long long)t->tid, tn ? " \"" : "", tn ?: "", tn ? "\"" : "",
				pct(t->busy_ns, span), fmt_count(t->spans, c, sizeof(c)));
		}
	}
}

/*
 * The rows of @kind with time in the host-bound idle time, the largest REPORT_IDLE_ROWS, after
 * @head (nothing when none has any)
 */
static void text_bound_rows(FILE *f, const struct rep *r, int kind, const char *head)
{
	int64_t all = ivs_len(&r->host_bound);
	size_t n, shown = 0;
	const struct row **v = rows_sorted(r, kind, by_host_bound, &n);

	for (size_t i = 0; v && i < n && v[i]->host_bound_ns; i++) {
		if (!shown++)
			fputs(head, f);
		if (shown > REPORT_IDLE_ROWS)
			break;
		fprintf(f, "%12.3f %6.1f %%  %s\n", v[i]->host_bound_ns / 1e6,
			pct(v[i]->host_bound_ns, all), v[i]->name);
	}
	free(v);
}

static void text_idle(FILE *f, const struct rep *r)
{
	int64_t all;
	char head[192];

	if (!r->ndevs)
		return;
	fprintf(f, "\nwhy the devices idled: work queued (launched, not started), the host in a "
		"wait call with nothing queued, host-bound (neither)\n");
	for (size_t i = 0; i < r->ndevs; i++) {
		const struct device *d = &r->devs[i];

		fprintf(f, "  device pid %lld: idle %.3f ms: queued %.3f ms (%.1f %%), waiting %.3f "
			"ms (%.1f %%), host-bound %.3f ms (%.1f %%)\n", (long long)d->pid,
			d->idle_ns / 1e6, d->queued_ns / 1e6, pct(d->queued_ns, d->idle_ns),
			d->waiting_ns / 1e6, pct(d->waiting_ns, d->idle_ns),
			d->host_bound_ns / 1e6, pct(d->host_bound_ns, d->idle_ns));
	}
	all = ivs_len(&r->host_bound);
	snprintf(head, sizeof(head), "while a device idled host-bound (%.3f ms), the host ran "
		 "(inclusive: a call and its callees each count)\n"
		 "    total ms   of it  function\n", all / 1e6);
	text_bound_rows(f, r, ROW_HOST, head);
	text_bound_rows(f, r, ROW_PYLINE, "... and the Python lines that made those calls "
			"(args.python, --python: a line's nested calls count once)\n"
			"    total ms   of it  line\n");
}

static void text_collectives(FILE *f, struct rep *r, const struct jv *head)
{
	char c[32], b[32];

	if (!r->ncolls)
		return;
	qsort(r->colls, r->ncolls, sizeof(*r->colls), coll_cmp);
	fprintf(f, "\ncollectives, by process and op (algbw: bytes over the op's time)\n"
		"   rank         pid       count           bytes     total ms  algbw GB/s  op\n");
	for (size_t i = 0; i < r->ncolls; i++) {
		const struct coll *x = &r->colls[i];
		char rk[24];

		fprintf(f, "%7s %11lld %11s %15s %12.3f %11.3f  %s\n",
			rank_str(head, x->pid, rk, sizeof(rk)), (long long)x->pid,
			fmt_count(x->count, c, sizeof(c)), fmt_count(x->bytes, b, sizeof(b)),
			x->total_ns / 1e6, x->total_ns ? (double)x->bytes / x->total_ns : 0,
			x->op);
	}
}

static void text_overlap(FILE *f, const struct rep *r, const struct jv *head)
{
	if (!r->novl)
		return;
	fprintf(f, "\ncompute/communication overlap, by process (its collectives' time while its "
		"devices ran kernels)\n"
		"   rank         pid    collectives ms  overlapped ms  overlap\n");
	for (size_t i = 0; i < r->novl; i++) {
		const struct overlap *o = &r->ovl[i];
		char rk[24];

		fprintf(f, "%7s %11lld %17.3f %14.3f %7.1f%%\n",
			rank_str(head, o->pid, rk, sizeof(rk)), (long long)o->pid,
			o->comm_ns / 1e6, o->overlap_ns / 1e6, pct(o->overlap_ns, o->comm_ns));
	}
}

static void text_memory(FILE *f, const struct rep *r, const struct jv *head)
{
	const struct jv *procs = jv_get(jv_get(head, "spyreMemory"), "processes"), *p, *g;

	if (!r->nmems)
		return;
	fprintf(f, "\ndevice memory (the [memory] events' allocated bytes)\n");
	for (size_t i = 0; i < r->nmems; i++) {
		const struct mem *m = &r->mems[i];
		char a[32], b[32], n1[32], n2[32];

		fprintf(f, "  pid %lld device %lld: peak %s B at %.3f ms (tid %lld%s%s), %s B "
			"allocated at the end; %s allocations, %s frees\n", (long long)m->pid,
			(long long)m->dev, fmt_count(m->peak, a, sizeof(a)), m->peak_ts / 1e6,
			(long long)m->peak_tid, m->who != UINT32_MAX ? ", in " : "",
			m->who != UINT32_MAX ? r->rows[m->who]->name : "",
			fmt_count(m->last, b, sizeof(b)), fmt_count(m->allocs, n1, sizeof(n1)),
			fmt_count(m->frees, n2, sizeof(n2)));
	}
	/* ours: the ledger's blocks still allocated at the end, by the site that made them */
	jv_foreach(p, procs) {
		double pid, bytes, count;
		int shown = 0;

		jv_foreach(g, jv_get(p, "liveGroups")) {
			const char *py = jv_get_str(g, "python");
			char a[32], n[32];

			if (!jv_get_num(g, "bytes", &bytes) || !jv_get_num(g, "count", &count))
				continue;
			if (!shown++ && jv_get_num(p, "pid", &pid))
				fprintf(f, "  still allocated at the end in pid %.0f, by where it was "
					"allocated:\n", pid);
			/* a group is one site and one block size */
			fprintf(f, "    %s x %s B: %s%s%s\n",
				fmt_count((uint64_t)count, n, sizeof(n)),
				fmt_count((uint64_t)bytes, a, sizeof(a)),
				jv_get_str(g, "probe") ?: "?", py ? " at " : "", py ?: "");
		}
	}
}

static void text_health(FILE *f, const struct health *h)
{
	fprintf(f, "\nhealth: ");
	if (!h->ours) {
		fprintf(f, "not a trace of spyre-bpftrace (no spyreStats): what was lost is not "
			"known\n");
		return;
	}
	/* the run's own summary line, from the counts its metadata kept */
	run_counts_text(f, &h->rc);
	fprintf(f, " (the run's summary line)\n");
	if (h->driver_drops)
		fprintf(f, "  %.0f driver events lost\n", h->driver_drops);
	if (h->sample_every > 1)
		fprintf(f, "  sampled: 1 call in %.0f traced; the host counts above are of the "
			"calls traced, not all\n", h->sample_every);
	if (h->budget)
		fprintf(f, "  budget: traced %.3f s of %.3f s (%.0f %%) in %.0f windows; the figures "
			"above cover the windows only (%.0f launches cut at a pause)\n",
			h->traced_s, h->run_s, h->run_s > 0 ? 100 * h->traced_s / h->run_s : 0,
			h->windows, h->cut_at_pause);
	if (h->rc.unwound)
		fprintf(f, "  %llu calls left by an exception or longjmp: their spans end where the "
			"unwind was seen\n", (unsigned long long)h->rc.unwound);
	if (h->in_flight)
		fprintf(f, "  %.0f launches still in flight at the end: their device spans are "
			"missing\n", h->in_flight);
	if (h->memory_sampled)
		fprintf(f, "  device memory was not followed all the time (budget pauses): its "
			"ledger is sampled\n");
}

static void json_rows(struct jw *w, const struct rep *r, int kind, const char *key)
{
	int64_t busy = busy_total(r);
	const struct row **v;
	size_t n;

	v = rows_sorted(r, kind, by_total, &n);
	jw_key(w, key);
	jw_arr_begin(w);
	for (size_t i = 0; v && i < n; i++) {
		const struct row *x = v[i];

		jw_obj_begin(w);
		jw_kv_str(w, "name", x->name);
		if (x->tid >= 0) {	/* --by-thread */
			jw_kv_i64(w, "pid", x->pid);
			jw_kv_i64(w, "tid", x->tid);
			jw_kv_str(w, "thread", rep_name_of(r, x->pid, x->tid) ?: "");
		}
		if (kind == ROW_COPY) {
			jw_kv_u64(w, "count", x->count);
			jw_kv_i64(w, "totalNs", x->total_ns);
			jw_kv_dbl(w, "meanNs", x->count ? (double)x->total_ns / x->count : 0, 1);
			jw_kv_u64(w, "bytes", x->bytes);
			jw_kv_dbl(w, "gbPerSec", x->total_ns ? (double)x->bytes / x->total_ns : 0, 3);
		} else {	/* count, totalNs, meanNs, p50Ns, p99Ns: as spyreProbes has them */
			struct fn_row fr = fn_row_of(x);

			fn_row_json(w, &fr);
		}
		if (kind == ROW_KERNEL)
			jw_kv_dbl(w, "deviceBusyPct", pct(x->total_ns, busy), 3);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	free(v);
}

/* Member @key: the rows of @kind by their time in the host-bound idle time, largest first */
static void json_bound_rows(struct jw *w, const struct rep *r, int kind, const char *key)
{
	size_t n;
	const struct row **v = rows_sorted(r, kind, by_host_bound, &n);

	jw_key(w, key);
	jw_arr_begin(w);
	for (size_t i = 0; v && i < n && v[i]->host_bound_ns; i++) {
		jw_obj_begin(w);
		jw_kv_str(w, "name", v[i]->name);
		jw_kv_i64(w, "ns", v[i]->host_bound_ns);
		jw_obj_end(w);
	}
	free(v);
	jw_arr_end(w);
}

/* hostBound: the devices' host-bound idle time, who ran on the host meanwhile, which lines */
static void json_host_bound(struct jw *w, const struct rep *r)
{
	jw_key(w, "hostBound");
	jw_obj_begin(w);
	jw_kv_i64(w, "ns", ivs_len(&r->host_bound));
	json_bound_rows(w, r, ROW_HOST, "functions");
	json_bound_rows(w, r, ROW_PYLINE, "pythonLines");
	jw_obj_end(w);
}

/* devices: each device's busy and idle time, and its tracks (streams, copy lanes) */
static void json_devices(struct jw *w, const struct rep *r)
{
	jw_key(w, "devices");
	jw_arr_begin(w);
	for (size_t i = 0; i < r->ndevs; i++) {
		const struct device *d = &r->devs[i];

		jw_obj_begin(w);
		jw_kv_i64(w, "pid", d->pid);
		jw_kv_str(w, "name", rep_name_of(r, d->pid, -1) ?: "");
		jw_kv_u64(w, "spans", d->spans);
		jw_kv_i64(w, "busyNs", d->busy_ns);
		jw_kv_i64(w, "spanNs", d->last_ns - d->first_ns);
		jw_key(w, "idle");
		jw_obj_begin(w);
		jw_kv_i64(w, "ns", d->idle_ns);
		jw_kv_i64(w, "queuedNs", d->queued_ns);
		jw_kv_i64(w, "waitingNs", d->waiting_ns);
		jw_kv_i64(w, "hostBoundNs", d->host_bound_ns);
		jw_obj_end(w);
		jw_key(w, "tracks");
		jw_arr_begin(w);
		for (size_t k = 0; k < r->ntracks; k++) {
			const struct track *t = &r->tracks[k];

			if (t->pid != d->pid)
				continue;
			jw_obj_begin(w);
			jw_kv_i64(w, "tid", t->tid);
			jw_kv_str(w, "name", rep_name_of(r, t->pid, t->tid) ?: "");
			jw_kv_u64(w, "spans", t->spans);
			jw_kv_i64(w, "busyNs", t->busy_ns);
			jw_obj_end(w);
		}
		jw_arr_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* collectives: by process and op, sorted as the text has them */
static void json_collectives(struct jw *w, struct rep *r, const struct jv *head)
{
	qsort(r->colls, r->ncolls, sizeof(*r->colls), coll_cmp);
	jw_key(w, "collectives");
	jw_arr_begin(w);
	for (size_t i = 0; i < r->ncolls; i++) {
		const struct coll *x = &r->colls[i];

		jw_obj_begin(w);
		json_rank(w, head, x->pid);
		jw_kv_i64(w, "pid", x->pid);
		jw_kv_str(w, "op", x->op);
		jw_kv_u64(w, "count", x->count);
		jw_kv_u64(w, "bytes", x->bytes);
		jw_kv_i64(w, "totalNs", x->total_ns);
		jw_kv_dbl(w, "algbwGBps", x->total_ns ? (double)x->bytes / x->total_ns : 0, 3);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* overlap: each process's collectives against its devices' kernels */
static void json_overlap(struct jw *w, const struct rep *r, const struct jv *head)
{
	jw_key(w, "overlap");
	jw_arr_begin(w);
	for (size_t i = 0; i < r->novl; i++) {
		const struct overlap *o = &r->ovl[i];

		jw_obj_begin(w);
		json_rank(w, head, o->pid);
		jw_kv_i64(w, "pid", o->pid);
		jw_kv_i64(w, "collectivesNs", o->comm_ns);
		jw_kv_i64(w, "overlapNs", o->overlap_ns);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* memory: each process and device's peak, the call that made it, and the end */
static void json_memory(struct jw *w, const struct rep *r)
{
	jw_key(w, "memory");
	jw_arr_begin(w);
	for (size_t i = 0; i < r->nmems; i++) {
		const struct mem *m = &r->mems[i];

		jw_obj_begin(w);
		jw_kv_i64(w, "pid", m->pid);
		jw_kv_i64(w, "deviceType", m->type);
		jw_kv_i64(w, "device", m->dev);
		jw_kv_i64(w, "peakBytes", m->peak);
		jw_kv_us(w, "peakTs", m->peak_ts);
		jw_kv_i64(w, "peakTid", m->peak_tid);
		if (m->who != UINT32_MAX)
			jw_kv_str(w, "peakIn", r->rows[m->who]->name);
		else
			jw_kv_null(w, "peakIn");
		jw_kv_i64(w, "endBytes", m->last);
		jw_kv_u64(w, "allocs", m->allocs);
		jw_kv_u64(w, "frees", m->frees);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* health: the run's counts, sampling and budget, from the trace's metadata */
static void json_health(struct jw *w, const struct health *h)
{
	jw_key(w, "health");
	jw_obj_begin(w);
	jw_kv_bool(w, "spyreTrace", h->ours);
	if (h->ours)	/* the run's counts, as its metadata has them */
		run_counts_json(w, &h->rc);
	jw_kv_bool(w, "dropCausesKnown", h->rc.causes_known);
	jw_kv_u64(w, "dropped", run_counts_dropped(&h->rc));
	jw_kv_dbl(w, "driverDrops", h->driver_drops, 0);
	jw_kv_dbl(w, "launchesInFlight", h->in_flight, 0);
	jw_kv_dbl(w, "sampleEvery", h->sample_every ? h->sample_every : 1, 0);
	if (h->budget) {
		jw_kv_dbl(w, "tracedSec", h->traced_s, 3);
		jw_kv_dbl(w, "runSec", h->run_s, 3);
		jw_kv_dbl(w, "windows", h->windows, 0);
	}
	jw_kv_bool(w, "memorySampled", h->memory_sampled);
	jw_obj_end(w);
}

void json_report(struct jw *w, const char *path, struct rep *r, const struct jv *head,
		 const struct health *h)
{
	jw_obj_begin(w);
	jw_kv_str(w, "file", path);
	jw_kv_u64(w, "events", r->events);
	jw_kv_i64(w, "spanNs", r->have_x ? r->last_ns - r->first_ns : 0);
	json_rows(w, r, ROW_HOST, "host");
	json_rows(w, r, ROW_KERNEL, "kernels");
	json_rows(w, r, ROW_COPY, "copies");
	json_devices(w, r);
	json_host_bound(w, r);
	json_collectives(w, r, head);
	json_overlap(w, r, head);
	json_memory(w, r);
	json_health(w, h);
	jw_obj_end(w);
	jw_nl(w);
}

/*
 * The tables for people: names, paths and args are the traced processes' and the trace's
 * (untrusted): written whole, then to @out with their control bytes escaped, as the summary is
 */
void text_report(FILE *out, const char *path, struct rep *r, const struct jv *head,
		 const struct health *h)
{
	char *text = NULL, c[32];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return;
	fprintf(f, "report: %s: %s events over %.3f s (first span to last end)\n", path,
		fmt_count(r->events, c, sizeof(c)), r->have_x ? (r->last_ns - r->first_ns) / 1e9 : 0);
	text_rows(f, r, ROW_HOST, "host calls, by total time");
	text_rows(f, r, ROW_KERNEL, "device kernels, by total time (device %: of the devices' "
		  "busy time)");
	text_rows(f, r, ROW_COPY, "copies, by direction");
	text_devices(f, r);
	text_idle(f, r);
	text_collectives(f, r, head);
	text_overlap(f, r, head);
	text_memory(f, r, head);
	text_health(f, h);
	if (!fclose(f))
		log_write_lines(out, text, len);
	free(text);
}

