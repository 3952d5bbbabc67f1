// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <string.h>
#include "jsonw.h"
#include "memledger.h"
#include "procmaps.h"
#include "summary.h"
#include "util.h"
#include "vfio.h"

static const struct consumer *cmp_c;

static int by_total_desc(const void *a, const void *b)
{
	const struct fn_stats *x = &cmp_c->stats[*(const int *)a];
	const struct fn_stats *y = &cmp_c->stats[*(const int *)b];

	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return *(const int *)a - *(const int *)b;
}

/*
 * Span calls whose return the trace has not got: entered (hits), neither delivered nor counted
 * as dropped, left out or unwound. Still running at the stop, or left by an exception that
 * the thread has not been seen above since (the BPF finds unwound calls only then).
 */
static uint64_t no_return(const struct probe_spec *sp, const struct spyre_counters *k,
			  uint64_t delivered)
{
	uint64_t accounted = delivered + k->drops_ring + k->drops_depth + k->sampled_out +
			     k->drops_rate + k->unwound;

	if (sp->type != PROBE_SPAN || k->hits <= accounted)
		return 0;
	return k->hits - accounted;
}

int run_end_signal(const struct run_end *e)
{
	int sig = e->exit_code & 0x7f;

	return e->exit_known && sig && sig != 0x7f ? sig : 0;
}

const char *run_end_signame(const struct run_end *e, char *buf, size_t len)
{
	const char *name = sigabbrev_np(run_end_signal(e));

	snprintf(buf, len, "SIG%s%s", name ? name : "?",
		 e->exit_code & 0x80 ? " (core dumped)" : "");
	return buf;
}

uint64_t summary_unwound(const struct target *t, const struct spyre_counters *counters,
			 uint64_t untracked)
{
	uint64_t n = untracked;

	for (int i = 0; i < t->cnt; i++)
		n += counters[i].unwound;
	return n;
}

/* "target 123 killed by SIGABRT (core dumped)" and the like, for the summary. */
static void print_target_end(FILE *f, int pid, const struct run_end *e)
{
	char name[48];

	if (!e->target_exited || pid <= 0)
		return;
	if (run_end_signal(e))
		fprintf(f, "target %d killed by %s while traced\n", pid,
			run_end_signame(e, name, sizeof(name)));
	else if (e->exit_known)
		fprintf(f, "target %d exited with status %d\n", pid, (e->exit_code >> 8) & 0xff);
	else
		fprintf(f, "target %d exited\n", pid);
}

void summary_print(FILE *f, const struct consumer *c, const struct target *t,
		   const struct spyre_counters *counters, int pid, const struct run_end *end)
{
	uint64_t hits = 0, ring = 0, depth = 0, unmatched = 0, noret = 0, throws = 0;
	uint64_t unwound;
	int *order, n = 0;
	char b1[32], b2[32], b3[32], b4[32];

	order = malloc(sizeof(int) * (t->cnt ? t->cnt : 1));
	if (!order)
		return;
	unwound = summary_unwound(t, counters, end->unwound_untracked);
	for (int i = 0; i < t->cnt && i < c->nprobes; i++) {
		const struct probe_spec *sp = &t->table->specs[t->probes[i].spec];

		ring += counters[i].drops_ring;
		depth += counters[i].drops_depth;
		unmatched += counters[i].unmatched;
		noret += no_return(sp, &counters[i], c->delivered[i]);
		/* an unwinder's hits are exceptions, not calls of the runtime */
		if (sp->type == PROBE_UNWIND)
			throws += counters[i].hits;
		else
			hits += counters[i].hits;
		if (c->delivered[i])
			order[n++] = i;
	}
	cmp_c = c;
	qsort(order, n, sizeof(int), by_total_desc);

	if (pid > 0)
		fprintf(f, "\nspyre-bpftrace summary for pid %d: ", pid);
	else
		fprintf(f, "\nspyre-bpftrace summary for all processes: ");
	fprintf(f, "%llu events, %llu probe hits, "
		"%llu dropped (ring full %llu, too deep %llu), %llu unwound\n",
		(unsigned long long)c->events, (unsigned long long)hits,
		(unsigned long long)(ring + depth), (unsigned long long)ring,
		(unsigned long long)depth, (unsigned long long)unwound);
	print_target_end(f, pid, end);
	fprintf(f, "%-28s %10s %10s %10s %10s %10s\n", "function", "count", "total", "mean",
		"p50", "p99");
	for (int k = 0; k < n; k++) {
		int i = order[k];
		const struct fn_stats *s = &c->stats[i];
		const struct probe_spec *sp = &t->table->specs[t->probes[i].spec];

		if (sp->type == PROBE_INSTANT) {
			fprintf(f, "%-28s %10llu %10s %10s %10s %10s\n", t->probes[i].name,
				(unsigned long long)c->delivered[i], "-", "-", "-", "-");
			continue;
		}
		fprintf(f, "%-28s %10llu %10s %10s %10s %10s\n", t->probes[i].name,
			(unsigned long long)s->count, fmt_duration(s->total_ns, b1, sizeof(b1)),
			fmt_duration(s->count ? s->total_ns / s->count : 0, b2, sizeof(b2)),
			fmt_duration(fn_stats_quantile(s, 0.5), b3, sizeof(b3)),
			fmt_duration(fn_stats_quantile(s, 0.99), b4, sizeof(b4)));
	}
	if (!n)
		fprintf(f, "(no calls traced)\n");
	for (int i = 0; i < t->cnt && i < c->nprobes; i++)
		if (counters[i].drops_ring || counters[i].drops_depth)
			fprintf(f, "drops: %s: %llu ring full, %llu too deep\n", t->probes[i].name,
				(unsigned long long)counters[i].drops_ring,
				(unsigned long long)counters[i].drops_depth);
	if (unmatched)
		fprintf(f, "returns without a seen entry: %llu (calls already running while the "
			"probes were being attached)\n", (unsigned long long)unmatched);
	if (throws)
		fprintf(f, "C++ exceptions thrown: %llu\n", (unsigned long long)throws);
	if (unwound)
		fprintf(f, "unwound: %llu calls left without returning (a C++ exception, a "
			"longjmp, a thread cancelled or exiting inside them)%s\n",
			(unsigned long long)unwound,
			end->unwound_untracked ? "; per probe in the trace metadata, except those "
			"nested too deep to track" : "");
	if (noret)
		fprintf(f, "calls with no return seen: %llu (still running when tracing stopped, "
			"or left by an exception the thread was not seen above since)\n",
			(unsigned long long)noret);
	for (int i = 0; i < t->cnt; i++) {
		const struct rprobe *p = &t->probes[i];

		if (p->failed)
			fprintf(f, "not traced: %s (the kernel refused its uprobe)\n", p->name);
		else if (p->ret == RET_NONE && t->table->specs[p->spec].type == PROBE_SPAN)
			fprintf(f, "entries only: %s (%s): its returns cannot be seen safely\n",
				p->name, p->sites.why);
	}
	if (c->mem)
		memledger_summary(c->mem, c, f);
	free(order);
}

char *summary_trace_metadata(const struct consumer *c, const struct target *t,
			     const struct spyre_counters *counters, const struct run_end *end)
{
	uint64_t drops = 0, hits = 0;
	struct jw *w = jw_memopen();
	const char *data;
	char *out = NULL;
	size_t len;

	if (!w)
		return NULL;
	jw_lit(w, "\"spyreProbes\":[");
	for (int i = 0; i < t->cnt && i < c->nprobes; i++) {
		const struct rprobe *p = &t->probes[i];

		if (t->table->specs[p->spec].type != PROBE_UNWIND)
			hits += counters[i].hits;
		drops += counters[i].drops_ring + counters[i].drops_depth;
		jw_lit(w, i ? ",\n{\"name\":" : "\n{\"name\":");
		jw_str(w, p->name);
		jw_lit(w, ",\"symbol\":");
		jw_str(w, p->qualname);
		jw_lit(w, ",\"library\":");
		jw_str(w, t->libs[p->lib].path);
		jw_lit(w, ",\"offset\":");
		jw_hex(w, p->attach_off);
		jw_lit(w, ",\"hits\":");
		jw_u64(w, counters[i].hits);
		jw_lit(w, ",\"events\":");
		jw_u64(w, c->delivered[i]);
		jw_lit(w, ",\"dropsRingFull\":");
		jw_u64(w, counters[i].drops_ring);
		jw_lit(w, ",\"dropsTooDeep\":");
		jw_u64(w, counters[i].drops_depth);
		jw_lit(w, ",\"unmatchedReturns\":");
		jw_u64(w, counters[i].unmatched);
		jw_lit(w, ",\"sampledOut\":");
		jw_u64(w, counters[i].sampled_out);
		jw_lit(w, ",\"dropsRateCap\":");
		jw_u64(w, counters[i].drops_rate);
		jw_lit(w, ",\"noReturn\":");
		jw_u64(w, no_return(&t->table->specs[p->spec], &counters[i], c->delivered[i]));
		jw_lit(w, ",\"unwound\":");
		jw_u64(w, counters[i].unwound);
		if (p->failed)
			jw_lit(w, ",\"attachFailed\":true");
		if (t->table->specs[p->spec].type == PROBE_SPAN) {
			jw_lit(w, ",\"tailExits\":");
			jw_u64(w, counters[i].tail_exits);
			jw_lit(w, ",\"returnProbe\":");
			jw_str(w, p->ret == RET_SITES ? "sites" : p->ret == RET_URETPROBE ?
				  "uretprobe" : "none");
			if (p->ret == RET_SITES) {
				jw_lit(w, ",\"returnSites\":");
				jw_u64(w, p->sites.n);
			} else if (p->ret == RET_NONE) {
				jw_lit(w, ",\"entriesOnlyReason\":");
				jw_str(w, p->sites.why);
			}
		}
		jw_lit(w, "}");
	}
	jw_lit(w, "],\n\"spyreStats\":{\"targetPid\":");
	jw_u64(w, t->pid);
	jw_lit(w, ",\"events\":");
	jw_u64(w, c->events);
	jw_lit(w, ",\"probeHits\":");
	jw_u64(w, hits);
	jw_lit(w, ",\"drops\":");
	jw_u64(w, drops);
	jw_lit(w, ",\"deviceSpans\":");
	jw_u64(w, c->dev.st.matched);
	jw_lit(w, ",\"launchesInFlight\":");
	jw_u64(w, c->dev.st.launches_unmatched);
	jw_lit(w, ",\"completionsWithoutLaunch\":");
	jw_u64(w, c->dev.st.completions_unmatched);
	jw_lit(w, ",\"deviceOverflow\":");
	jw_u64(w, c->dev.st.overflow + c->dev.st.streams_overflow);
	if (c->vfio)	/* driver tier: driverPath, driverSpans, ... (user/vfio.c) */
		vfio_stats_json(c->vfio, w);
	jw_lit(w, ",\"unwound\":");
	jw_u64(w, summary_unwound(t, counters, end->unwound_untracked));
	jw_lit(w, ",\"unwoundUntracked\":");
	jw_u64(w, end->unwound_untracked);
	jw_lit(w, ",\"entryOnlyProbes\":");
	jw_u64(w, t->entry_only);
	jw_lit(w, ",\"targetSignal\":");
	jw_u64(w, run_end_signal(end));
	jw_lit(w, ",\"targetExitCode\":");
	if (end->exit_known && !run_end_signal(end))
		jw_u64(w, (end->exit_code >> 8) & 0xff);
	else
		jw_lit(w, "-1");
	jw_lit(w, end->target_exited ? ",\"targetExited\":true" : ",\"targetExited\":false");
	/* every traced process whose end was seen (fleet mode: many), as wait(2) would say */
	jw_lit(w, ",\"processExits\":[");
	for (int i = 0; i < c->nexits; i++) {
		const struct run_end e = { .exit_known = true, .exit_code = c->exits[i].code };

		jw_lit(w, i ? ",{\"pid\":" : "{\"pid\":");
		jw_u64(w, c->exits[i].pid);
		jw_lit(w, ",\"signal\":");
		jw_u64(w, run_end_signal(&e));
		jw_lit(w, ",\"exitCode\":");
		if (run_end_signal(&e))
			jw_lit(w, "-1");
		else
			jw_u64(w, (e.exit_code >> 8) & 0xff);
		jw_lit(w, "}");
	}
	jw_lit(w, "]}");
	if (c->mem)	/* ,"spyreMemory":{...} */
		memledger_json(c->mem, c, w);
	data = jw_mem_data(w, &len);
	if (data) {
		out = malloc(len + 1);
		if (out) {
			memcpy(out, data, len);
			out[len] = 0;
		}
	}
	jw_close(w);
	return out;
}

void summary_status_line(const struct consumer *c, uint64_t drops, uint64_t unwound,
			 uint64_t *last_events, uint64_t *last_ns, int nprobes, int entry_only,
			 bool tty)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	double dt = (now - *last_ns) / 1e9;
	double rate = dt > 0 ? (c->events - *last_events) / dt : 0;

	/* on a terminal the line redraws itself; in a log it is one line per second */
	fprintf(stderr, "%sspyre-bpftrace: %llu events, %.0f ev/s, %llu drops, %llu unwound, "
		"%d probes", tty ? "\r" : "", (unsigned long long)c->events, rate,
		(unsigned long long)drops, (unsigned long long)unwound, nprobes);
	if (entry_only)
		fprintf(stderr, " (%d entries only)", entry_only);
	fprintf(stderr, ", driver %s%s", vfio_path_name(vfio_path(c->vfio)), tty ? "   " : "\n");
	*last_events = c->events;
	*last_ns = now;
}
