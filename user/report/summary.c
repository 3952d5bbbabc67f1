// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attach/budget.h"
#include "attach/cost.h"
#include "output/facts.h"
#include "output/jsonw.h"
#include "report/memreport.h"
#include "resolve/procmaps.h"
#include "report/summary.h"
#include "stream/lanes.h"
#include "stream/pyspans.h"
#include "stream/pystack.h"
#include "stream/ustack.h"
#include "attach/vfio.h"
#include "report/driver.h"
#include "common/log.h"
#include "common/util.h"

/* qsort_r over probe indexes: the consumer's statistics, most time first */
static int by_total_desc(const void *a, const void *b, void *arg)
{
	const struct consumer *c = arg;
	const struct fn_stats *x = &c->stats[*(const int *)a];
	const struct fn_stats *y = &c->stats[*(const int *)b];

	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return *(const int *)a - *(const int *)b;
}

/*
 * Span calls whose return the trace has not got: entered (hits), neither delivered (an unwound
 * call is delivered too, as its unwound event) nor counted as dropped or left out. Still
 * running at the stop or the process's exit, or left where nothing told the BPF (a longjmp
 * that no traced call has been seen above since): each is in the trace as an instant at its
 * entry, "noReturn": true (SPYRE_EV_NORETURN, not delivered). Every call is counted once, so
 * per probe events + drops + sampledOut + dropsRateCap + noReturn == hits.
 */
static uint64_t no_return(const struct probe_spec *sp, const struct spyre_counters *k,
			  uint64_t delivered)
{
	uint64_t accounted = delivered + summary_dropped(k) + k->sampled_out + k->drops_rate;

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

uint64_t summary_unwound(const struct target *t, const struct spyre_counters *counters)
{
	uint64_t n = 0;

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

/*
 * What the probes cost the job: the estimate over the whole run, the probes that cost the most
 * (calls/s over the run, per-call estimate, share of the job's CPU time) and the time
 * --max-overhead kept traced.
 */
static void print_cost(FILE *f, const struct target *t, const struct spyre_counters *counters,
		       const struct run_end *end)
{
	const struct cost_meter *m = end->cost;
	/* under a budget, calls are seen while traced only: rates per second traced */
	double secs = end->budget ? budget_traced_ns(end->budget->b, end->budget->now_ns) / 1e9 :
				    (m->last_ns - m->start_ns) / 1e9;
	struct overhead o = cost_meter_overhead(m, true);
	int order[m->n > 0 ? m->n : 1], n = 0;
	char pct[32], how[64];

	if (m->costs.calibrated)
		snprintf(how, sizeof(how), "measured here %d time%s", m->recals ?: 1,
			 m->recals > 1 ? "s" : "");
	else
		snprintf(how, sizeof(how), "of the reference VM");
	if (o.known)
		fprintf(f, "overhead of tracing: %s of the job's untraced CPU time (%.2f s of probes "
			"in %.2f s of job CPU; per-hit costs %s)\n",
			cost_overhead_str(&o, pct, sizeof(pct)), o.extra_ns / 1e9, o.cpu_ns / 1e9,
			how);
	else if (o.share >= 0)
		fprintf(f, "overhead of tracing: unknown, too high to measure: the probes took ~%.0f%% "
			"of the job's CPU time (%.2f s of probes in %.2f s of job CPU; per-hit costs "
			"%s)\n", o.share, o.extra_ns / 1e9, o.cpu_ns / 1e9, how);
	if (end->budget) {
		const struct run_budget *rb = end->budget;
		double run = (rb->now_ns - rb->start_ns) / 1e9;
		double traced = budget_traced_ns(rb->b, rb->now_ns) / 1e9;

		fprintf(f, "--max-overhead %g%%: traced %.1f s of %.1f s (%.0f%%) in %u window%s, "
			"paused %s to hold the budget: nothing was recorded while paused",
			end->max_overhead, traced, run, run > 0 ? 100 * traced / run : 100,
			rb->b->windows, rb->b->windows == 1 ? "" : "s",
			rb->b->windows == 1 ? "after it" : "between them");
		if (rb->launches_cut)
			fprintf(f, "; %llu device op%s in flight at a pause not drawn",
				(unsigned long long)rb->launches_cut, rb->launches_cut == 1 ? "" : "s");
		fprintf(f, "; the overhead counts %.1f s for the windows' attach and detach (%d ms "
			"each, measured, at most the job's CPU time beyond its calls')\n",
			cost_meter_charge_counted(m) / 1e9, BUDGET_SWITCH_MS);
	}
	for (int i = 0; i < m->n && i < t->cnt; i++)
		if (counters[i].hits)
			order[n++] = i;
	/* by estimated total cost: hits x cost per call */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && counters[order[j]].hits * m->ns[order[j]] >
				   counters[order[j - 1]].hits * m->ns[order[j - 1]]; j--) {
			int x = order[j];

			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	for (int k = 0; k < n && k < 5; k++) {
		int i = order[k];

		fprintf(f, "  %-26s %10.0f calls/s  ~%.1f us/call", t->probes[i].name,
			secs > 0 ? counters[i].hits / secs : 0, m->ns[i] / 1000);
		if (m->cpu_ns > 0)
			fprintf(f, "  %.1f%% of job CPU",
				100 * counters[i].hits * m->ns[i] / m->cpu_ns);
		fputc('\n', f);
	}
}

/*
 * A summary row's label: the probe's name, and for a function traced in two files of its
 * library (one name, as in the trace) the file, as its events' "file" argument says.
 */
static const char *row_label(const struct target *t, const struct rprobe *p, char *buf,
			     size_t len)
{
	if (!p->other_file)
		return p->name;
	snprintf(buf, len, "%s [%s]", p->name, t->libs[p->lib].path);
	return buf;
}
/*
 * Probes whose entry instruction the entry program did (resolve/entryinsn.h; instants not):
 * read after the detach, so those the kernel took (not refused)
 */
static int entries_done_by_bpf(const struct target *t)
{
	int n = 0;

	for (int i = 0; i < t->cnt; i++)
		n += !t->probes[i].failed && t->probes[i].entry.len &&
		     t->table->specs[t->probes[i].spec].type == PROBE_SPAN &&
		     t->probes[i].ret != RET_NONE;
	return n;
}


/* Trace mode's files: the bound, how many, and what stopping at the bound left unwritten. */
static void print_output(FILE *f, const struct run_end *end)
{
	const struct run_file *o = end->file;
	char size[32];

	fmt_bytes(o->max_size, size, sizeof(size));
	if (o->index)
		fprintf(f, "output: %u files of at most %s (--max-size, --switch-output)\n",
			o->index + 1, size);
	if (!strcmp(o->reason, "max-size"))
		fprintf(f, "output: stopped at --max-size %s: %llu records after it not written "
			"(--switch-output goes on in numbered files)\n", size,
			(unsigned long long)end->unwritten);
}

void summary_counts(const struct consumer *c, const struct target *t,
		    const struct spyre_counters *counters, struct run_counts *rc)
{
	*rc = (struct run_counts){ .events = c->events, .unreadable = c->bad,
				   .device_lost = device_lost(&c->dev), .causes_known = true,
				   .unwound = summary_unwound(t, counters) };
	for (int i = 0; i < t->cnt && i < c->nprobes; i++) {
		rc->ring += counters[i].drops_ring;
		rc->depth += counters[i].drops_depth;
		rc->nostack += counters[i].drops_nostack;
		/* an unwinder's hits are exceptions, not calls of the runtime */
		if (!probe_records_nothing(t->table->specs[t->probes[i].spec].type))
			rc->hits += counters[i].hits;
	}
}

/* What the summary's paragraphs say of the run, summed over its probes once. */
struct summary_totals {
	struct run_counts rc;		/* its first line's, the metadata's (output/facts.h) */
	uint64_t unmatched, noret;
	uint64_t lane_spans, lane_threads, lanes_crossed;	/* other-stack tracks (lanes.h) */
	uint64_t throws, catches;	/* the unwinder probes' hits */
};

static void summary_sum(const struct consumer *c, const struct target *t,
			const struct spyre_counters *counters, struct summary_totals *s)
{
	*s = (struct summary_totals){ .lane_spans = c->lane_spans };
	summary_counts(c, t, counters, &s->rc);
	s->lanes_crossed = consumer_lanes_crossed(c, &s->lane_threads);
	for (int i = 0; i < t->cnt && i < c->nprobes; i++) {
		const struct probe_spec *sp = &t->table->specs[t->probes[i].spec];

		s->unmatched += counters[i].unmatched;
		s->noret += no_return(sp, &counters[i], c->delivered[i]);
		if (sp->type == PROBE_UNWIND)
			s->throws += counters[i].hits;
		else if (sp->type == PROBE_CATCH)
			s->catches += counters[i].hits;
	}
}

/* The summary's first line (what scripts read), then how the run ended and what it wrote. */
static void summary_head(FILE *f, const struct consumer *c, const struct target *t,
			 const struct summary_totals *s, const struct run_end *end)
{
	int pid = t->pid;	/* -1: every process (fleet mode's -a) */

	if (pid > 0)
		fprintf(f, "\nspyre-bpftrace summary for pid %d: ", pid);
	else
		fprintf(f, "\nspyre-bpftrace summary for all processes: ");
	run_counts_text(f, &s->rc);
	fputc('\n', f);
	print_target_end(f, pid, end);
	if (end->file)
		print_output(f, end);
	if (end->rets_why)
		fprintf(f, "returns at return sites: %s (%s)\n", end->rets_emulated ?
			"done by BPF, no single step" : "single-stepped by the kernel",
			end->rets_why);
	if (end->rets_emulated)
		fprintf(f, "entries done by BPF (mov/lea, no single step): %d of %d probes\n",
			entries_done_by_bpf(t), t->cnt);
}

/* Probe @i's calls as the model the report and the metadata share (output/facts.h). */
static struct fn_row probe_row(const struct consumer *c, const struct target *t, int i)
{
	if (t->table->specs[t->probes[i].spec].type == PROBE_INSTANT)
		return (struct fn_row){ .count = c->delivered[i], .counted_only = true };
	return fn_stats_row(&c->stats[i]);
}

/*
 * Per function that delivered calls: count, total, mean, p50, p99, in the columns `report`
 * prints (fn_row_text); then the renamed ones.
 */
static void summary_table(FILE *f, const struct consumer *c, const struct target *t)
{
	int *order, n = 0, renamed = 0;
	char label[PATH_MAX + 512];

	order = malloc(sizeof(int) * (t->cnt ? t->cnt : 1));
	if (!order)
		return;
	for (int i = 0; i < t->cnt && i < c->nprobes; i++)
		if (c->delivered[i])
			order[n++] = i;
	qsort_r(order, n, sizeof(int), by_total_desc, (void *)c);
	fn_row_head(f);
	fprintf(f, "  function\n");
	for (int k = 0; k < n; k++) {
		struct fn_row r = probe_row(c, t, order[k]);

		fn_row_text(f, &r);
		fprintf(f, "  %s\n", row_label(t, &t->probes[order[k]], label, sizeof(label)));
	}
	if (!n)
		fprintf(f, "(no calls traced)\n");
	/* a row whose name was made distinct says which function it is */
	for (int k = 0; k < n; k++) {
		const struct rprobe *p = &t->probes[order[k]], *h;

		/* an overload's parameters after its name say it themselves: spyreAllocate(...) */
		if (!p->shared_name || (!strncmp(p->name, p->shared_name, strlen(p->shared_name)) &&
					p->name[strlen(p->shared_name)] == '('))
			continue;
		if (renamed++ == 20) {
			fprintf(f, "(more renamed functions: spyreProbes[].sharedName in the trace)\n");
			break;
		}
		for (h = t->probes; h < t->probes + t->cnt && strcmp(h->name, p->shared_name); h++)
			;
		fprintf(f, "renamed: %s is %s in %s", p->name, p->qualname, t->libs[p->lib].path);
		if (h < t->probes + t->cnt)
			fprintf(f, " (%s is %s in %s)", h->name, h->qualname, t->libs[h->lib].path);
		fputc('\n', f);
	}
	free(order);
}

/* Per probe, what was lost of its calls or their contents, and the stacks' own losses. */
static void summary_losses(FILE *f, const struct consumer *c, const struct target *t,
			   const struct spyre_counters *counters)
{
	for (int i = 0; i < t->cnt && i < c->nprobes; i++)
		if (summary_dropped(&counters[i]))
			fprintf(f, "drops: %s: %llu ring full, %llu too deep, %llu no thread stack\n",
				t->probes[i].name, (unsigned long long)counters[i].drops_ring,
				(unsigned long long)counters[i].drops_depth,
				(unsigned long long)counters[i].drops_nostack);
	for (int i = 0; i < t->cnt && i < c->nprobes; i++)
		if (counters[i].deref_faults)
			fprintf(f, "memory reads that faulted: %s: %llu (values read as 0, strings "
				"empty: check the probe's offsets)\n", t->probes[i].name,
				(unsigned long long)counters[i].deref_faults);
	for (int i = 0; i < t->cnt && i < c->nprobes; i++)
		if (counters[i].py_none || counters[i].py_trunc)
			fprintf(f, "python: %s: %llu calls from threads running no Python "
				"(no stack), %llu stacks cut (deeper than %d frames, or a frame "
				"torn down while read)\n", t->probes[i].name,
				(unsigned long long)counters[i].py_none,
				(unsigned long long)counters[i].py_trunc, SPYRE_PY_FRAMES);
	for (int i = 0; i < t->cnt && i < c->nprobes; i++)
		if (counters[i].ustack_lost)
			fprintf(f, "native stacks: %s: %llu calls without one (the stack map held "
				"another stack in its slot, or %d stacks were kept already, or no "
				"frame could be read)\n", t->probes[i].name,
				(unsigned long long)counters[i].ustack_lost, SPYRE_USTACK_MAX);
	if (c->ustack) {
		uint64_t unnamed, cut;

		ustack_counts(c->ustack, &unnamed, &cut);
		fprintf(f, "native stacks: %llu calls carried one (%llu with their caller taken "
			"from the return address: not in the frame-pointer walk), %llu could not "
			"be read back; %llu distinct stacks cut where the walk left the code (a "
			"caller built without frame pointers), %llu frames not named (no symbol, "
			"or the library not found)\n", (unsigned long long)c->us_stacks,
			(unsigned long long)c->us_callers, (unsigned long long)c->us_unread,
			(unsigned long long)cut, (unsigned long long)unnamed);
	}
	if (c->py_lost)
		fprintf(f, "python: %llu of %llu stacks had no frame that could be named (code "
			"objects gone or not code objects when read)\n",
			(unsigned long long)c->py_lost, (unsigned long long)c->py_stacks);
	if (c->py) {
		struct pystack_stats ps;

		pystack_counts(c->py, &ps);
		if (ps.lt_long || ps.evicted)
			fprintf(f, "python: %llu code objects read, %llu with a line table longer "
				"than %u KiB (not read: their frames' lines are \"?\"), %llu "
				"forgotten at the code cache's bound (%u MiB, %u code objects: "
				"read again when met)\n", (unsigned long long)ps.codes,
				(unsigned long long)ps.lt_long, PY_LINETABLE_MAX >> 10,
				(unsigned long long)ps.evicted, PY_CACHE_BYTES >> 20, PY_CACHE_CODES);
	}
}

/* Calls that did not end as calls: without an entry, left by exceptions, never returned. */
static void summary_unwinding(FILE *f, const struct target *t, const struct summary_totals *s)
{
	if (s->unmatched)
		fprintf(f, "returns without a seen entry: %llu (calls already running while the "
			"probes were being attached)\n", (unsigned long long)s->unmatched);
	if (s->throws)
		fprintf(f, "C++ exceptions thrown: %llu\n", (unsigned long long)s->throws);
	if (s->catches)
		fprintf(f, "C++ exceptions caught: %llu\n", (unsigned long long)s->catches);
	if (s->rc.unwound)
		fprintf(f, "unwound: %llu calls left without returning (a C++ exception, a "
			"longjmp, a thread cancelled or exiting inside them): in the trace with "
			"\"unwound\": true\n", (unsigned long long)s->rc.unwound);
	/* only where it can matter: a stack switch would have been taken for an unwind */
	if (s->rc.unwound && t->one_stack)
		fprintf(f, "stack switches are not told apart on this kernel (no bpf_find_vma "
			"with a callback: before 5.17, no BPF JIT, or SPYRE_NO_STACK_REGIONS=1): "
			"calls open on a coroutine's stack while it was switched away from may be "
			"among the unwound\n");
	if (s->lane_spans) {
		char b1[32], b2[32];

		fprintf(f, "other stacks: %s spans of %s thread%s on tracks of their own (calls on "
			"coroutine, fiber or signal stacks that cross their thread's others)",
			fmt_count(s->lane_spans, b1, sizeof(b1)),
			fmt_count(s->lane_threads, b2, sizeof(b2)), s->lane_threads == 1 ? "" : "s");
		if (s->lanes_crossed)
			fprintf(f, "; %s crossed one on each of a thread's %d tracks and still "
				"cross on the last", fmt_count(s->lanes_crossed, b1, sizeof(b1)),
				LANES_MAX + 1);
		fputc('\n', f);
	}
	if (s->noret)
		fprintf(f, "calls with no return seen: %llu (still running when tracing stopped or "
			"the process exited, or left where nothing tells): in the trace as "
			"instants at their entry with \"noReturn\": true\n",
			(unsigned long long)s->noret);
}

/* Probes that trace less than a span: refused, entries only, ended at tail jumps. */
static void summary_probe_notes(FILE *f, const struct consumer *c, const struct target *t,
				const struct spyre_counters *counters)
{
	for (int i = 0; i < t->cnt; i++) {
		const struct rprobe *p = &t->probes[i];

		if (p->failed)
			fprintf(f, "not traced: %s (the kernel refused its uprobe)\n", p->name);
		else if (p->ret == RET_NONE && t->table->specs[p->spec].type == PROBE_SPAN)
			fprintf(f, "entries only: %s (%s): its returns cannot be seen safely%s\n",
				p->name, p->sites.why,
				/* --ustack, --python, stack=1, py=1: said, not left to be noticed */
				c->ustack || c->py ? "; its calls carry no stacks (instants record "
				"none)" : "");
		/* spans that ended at a tail jump: their return values are unknown (ret= 0) */
		if (i < c->nprobes && counters[i].tail_exits)
			fprintf(f, "tail exits: %s: %llu calls ended at a tail jump not followed, "
				"return value unknown (%s)\n", p->name,
				(unsigned long long)counters[i].tail_exits,
				p->tail_lost ? p->tail_why : "a jump the tracer does not follow");
	}
}

static void summary_write(FILE *f, const struct consumer *c, const struct target *t,
			  const struct spyre_counters *counters, const struct run_end *end)
{
	struct summary_totals s;

	summary_sum(c, t, counters, &s);
	summary_head(f, c, t, &s, end);
	summary_table(f, c, t);
	summary_losses(f, c, t, counters);
	summary_unwinding(f, t, &s);
	if (end->cost)
		print_cost(f, t, counters, end);
	if (t->sites_off)
		fprintf(f, "%s: every span probe recorded entries only\n", t->sites_off);
	summary_probe_notes(f, c, t, counters);
	if (c->mem)
		memledger_summary(c->mem, c, f);
}

/*
 * The summary names what traced processes chose (library paths, symbols, names made of their
 * captures, Python files): written whole, then to @out with its control bytes escaped
 */
void summary_print(FILE *out, const struct consumer *c, const struct target *t,
		   const struct spyre_counters *counters, const struct run_end *end)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f) {
		summary_write(out, c, t, counters, end);
		return;
	}
	summary_write(f, c, t, counters, end);
	if (!fclose(f))
		log_write_lines(out, text, len);
	free(text);
}

/* Member @key, a number with three decimals. */
static void kv_fixed(struct jw *w, const char *key, double v)
{
	char b[48];

	snprintf(b, sizeof(b), "%.3f", v);
	jw_key(w, key);
	jw_lit(w, b);
}

/* An overhead figure: its percentage, or null when it is not known. */
static void overhead_json(struct jw *w, const char *key, const struct overhead *o)
{
	if (o->known)
		kv_fixed(w, key, o->pct);
	else
		jw_kv_null(w, key);
}

/*
 * "budget": --max-overhead's windows: how many, the time traced in them, each one's [start,
 * end] in the trace's microseconds (the first BUDGET_MAX_WINDOWS)
 */
static void budget_json(struct jw *w, const struct run_budget *rb, const struct cost_meter *m)
{
	const struct budget *b = rb->b;
	uint32_t n = b->windows < BUDGET_MAX_WINDOWS ? b->windows : BUDGET_MAX_WINDOWS;

	jw_key(w, "budget");
	jw_obj_begin(w);
	jw_kv_u64(w, "windows", b->windows);
	kv_fixed(w, "tracedSec", budget_traced_ns(b, rb->now_ns) / 1e9);
	kv_fixed(w, "runSec", (rb->now_ns - rb->start_ns) / 1e9);
	jw_kv_u64(w, "launchesCutAtPause", rb->launches_cut);
	kv_fixed(w, "switchChargedSec", cost_meter_charge_counted(m) / 1e9);
	jw_key(w, "windowsUs");
	jw_arr_begin(w);
	for (uint32_t k = 0; k < n; k++) {
		uint64_t end = b->w[k].end_ns ? b->w[k].end_ns : rb->now_ns;

		jw_arr_begin(w);
		jw_elem(w);
		jw_us_signed(w, (int64_t)(b->w[k].start_ns - rb->base_ns));
		jw_elem(w);
		jw_us_signed(w, (int64_t)(end - rb->base_ns));
		jw_arr_end(w);
	}
	jw_arr_end(w);
	/* what each window's attach and detach took the tracer (the first attach: not here) */
	for (int d = 0; d < 2; d++) {
		jw_key(w, d ? "detachMs" : "attachMs");
		jw_arr_begin(w);
		for (uint32_t k = 0; k < n; k++) {
			jw_elem(w);
			jw_dbl(w, (d ? b->w[k].detach_ns : b->w[k].attach_ns) / 1e6, 3);
		}
		jw_arr_end(w);
	}
	jw_obj_end(w);
}

/* spyreStats' cost members: the per-hit costs, the estimate, --max-overhead's budget. */
static void cost_json(struct jw *w, const struct target *t, const struct run_end *end)
{
	const struct cost_meter *m = end->cost;
	struct overhead o = cost_meter_overhead(m, true);

	jw_key(w, "hitCostNs");
	jw_obj_begin(w);
	jw_kv_u64(w, "emulated", (uint64_t)m->costs.emulated_ns);
	jw_kv_u64(w, "singleStepped", (uint64_t)m->costs.stepped_ns);
	jw_kv_u64(w, "uretprobeReturn", (uint64_t)m->costs.uret_ns);
	jw_kv_bool(w, "calibrated", m->costs.calibrated);
	jw_kv_u64(w, "measurements", m->recals);
	jw_obj_end(w);
	jw_kv_u64(w, "estProbeNs", (uint64_t)o.extra_ns);	/* the charges as counted */
	jw_kv_u64(w, "jobCpuNs", (uint64_t)m->cpu_ns);
	/* the one figure (cost_overhead): null where it cannot be known */
	overhead_json(w, "estOverheadPct", &o);
	if (o.share >= 0)
		kv_fixed(w, "estProbeCpuPct", o.share);
	else
		jw_kv_null(w, "estProbeCpuPct");
	if (!end->max_overhead)
		return;
	kv_fixed(w, "maxOverheadPct", end->max_overhead);
	if (end->budget)
		budget_json(w, end->budget, end->cost);
}

static void dist_fields(struct jw *w, const struct dist_info *d)
{
	jw_kv_str(w, "backend", "spyre_ccl");
	if (d->rank >= 0)
		jw_kv_u64(w, "rank", d->rank);
	if (d->world_size >= 0)
		jw_kv_u64(w, "world_size", d->world_size);
	if (d->pci_bus_id[0])
		jw_kv_str(w, "pci_bus_id", d->pci_bus_id);
}

/*
 * The job's place in a distributed run, Kineto's spelling: "distributedInfo" when one traced
 * process knows it (the traces of all ranks then merge by it); with several (-f, fleet), each
 * under "spyreDistributedInfo", by pid, which viewers ignore and our merge can read.
 */
static void dist_json(const struct consumer *c, struct jw *w)
{
	const struct dist_info *one = NULL;
	int n = 0;

	for (int i = 0; i < c->nprocs; i++) {
		const struct dist_info *d = &c->procs[i].dist;

		if (d->rank < 0 && d->world_size < 0)
			continue;
		one = d;
		n++;
	}
	if (!n)
		return;
	jw_nl(w);
	if (n == 1) {
		jw_key(w, "distributedInfo");
		jw_obj_begin(w);
		dist_fields(w, one);
		jw_obj_end(w);
		return;
	}
	jw_key(w, "spyreDistributedInfo");
	jw_arr_begin(w);
	for (int i = 0; i < c->nprocs; i++) {
		const struct dist_info *d = &c->procs[i].dist;

		if (d->rank < 0 && d->world_size < 0)
			continue;
		jw_obj_begin(w);
		jw_kv_u64(w, "pid", c->procs[i].pid);
		dist_fields(w, d);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* statistics of a sampled trace must be scaled: say how it was sampled */
static void sampling_json(const struct run_sampling *s, struct jw *w)
{
	jw_nl(w);
	jw_key(w, "spyreSampling");
	jw_obj_begin(w);
	jw_kv_bool(w, "systemWide", s->system_wide);
	jw_kv_u64(w, "sampleEvery", s->sample_every > 1 ? s->sample_every : 1);
	jw_kv_u64(w, "rateCapPerProcess", s->rate_cap);
	jw_kv_dbl(w, "windowSeconds", s->window_s, 3);
	jw_kv_dbl(w, "periodSeconds", s->period_s, 3);
	jw_kv_u64(w, "window", s->window);
	jw_obj_end(w);
}

/* One probe of spyreProbes: what it is, where, what its counters say. */
static void probe_json(struct jw *w, const struct consumer *c, const struct target *t,
		       const struct spyre_counters *k, const struct run_end *end, int i)
{
	const struct rprobe *p = &t->probes[i];
	const struct probe_spec *sp = &t->table->specs[p->spec];

	jw_obj_begin(w);
	jw_kv_str(w, "name", p->name);
	if (p->shared_name)
		jw_kv_str(w, "sharedName", p->shared_name);
	jw_kv_str(w, "symbol", p->qualname);
	jw_kv_str(w, "library", t->libs[p->lib].path);
	jw_kv_hex(w, "offset", p->attach_off);
	/* span is the rule; the others say so, the two that record nothing among them */
	if (sp->type != PROBE_SPAN)
		jw_kv_str(w, "type", probe_type_name(sp->type));
	jw_kv_u64(w, "hits", k->hits);
	jw_kv_u64(w, "events", c->delivered[i]);
	/* the summary's row: count, totalNs, meanNs, p50Ns, p99Ns, as report's rows have them */
	if (!probe_records_nothing(sp->type)) {
		struct fn_row r = probe_row(c, t, i);

		fn_row_json(w, &r);
	}
	jw_kv_u64(w, "dropsRingFull", k->drops_ring);
	jw_kv_u64(w, "dropsTooDeep", k->drops_depth);
	jw_kv_u64(w, "dropsNoStack", k->drops_nostack);
	jw_kv_u64(w, "unmatchedReturns", k->unmatched);
	jw_kv_u64(w, "sampledOut", k->sampled_out);
	jw_kv_u64(w, "dropsRateCap", k->drops_rate);
	jw_kv_u64(w, "noReturn", no_return(sp, k, c->delivered[i]));
	jw_kv_u64(w, "unwound", k->unwound);
	if (k->deref_faults)
		jw_kv_u64(w, "derefFaults", k->deref_faults);
	if (k->py_none)
		jw_kv_u64(w, "pyNoStack", k->py_none);
	if (k->py_trunc)
		jw_kv_u64(w, "pyTruncated", k->py_trunc);
	if (k->ustack_lost)
		jw_kv_u64(w, "ustackLost", k->ustack_lost);
	if (p->failed)
		jw_kv_bool(w, "attachFailed", true);
	if (end->cost && i < end->cost->n)
		jw_kv_u64(w, "estCostNs", (uint64_t)end->cost->ns[i]);
	if (sp->type == PROBE_SPAN) {
		jw_kv_u64(w, "tailExits", k->tail_exits);
		jw_kv_str(w, "returnProbe", p->ret == RET_SITES ? "sites" :
			  p->ret == RET_URETPROBE ? "uretprobe" : "none");
		if (p->ret == RET_SITES) {
			jw_kv_u64(w, "returnSites", p->sites.n);
			/* tail jumps followed to where the caller gets control back, and those that
			 * end the span at the jump (tailExits counts those) */
			jw_kv_u64(w, "tailJumpsFollowed", p->tail_followed);
			jw_kv_u64(w, "tailReturnSites", p->tail_rets);
			jw_kv_u64(w, "tailJumpsNotFollowed", p->tail_lost);
			if (p->tail_lost)
				jw_kv_str(w, "tailNotFollowedReason", p->tail_why);
		} else if (p->ret == RET_NONE) {
			jw_kv_str(w, "entriesOnlyReason", p->sites.why);
		}
	}
	jw_obj_end(w);
}

/* How a process ended, as wait(2) would say: signal and exit code (-1: none, or not known). */
static void exit_json(struct jw *w, const struct run_end *e, const char *signal_key,
		      const char *code_key)
{
	jw_kv_u64(w, signal_key, run_end_signal(e));
	if (e->exit_known && !run_end_signal(e))
		jw_kv_u64(w, code_key, (e->exit_code >> 8) & 0xff);
	else
		jw_kv_i64(w, code_key, -1);
}

/* "spyreFile": the part of the run this file holds (--max-size, --switch-output) */
static void file_json(const struct run_file *f, uint64_t unwritten, struct jw *w)
{
	jw_key(w, "spyreFile");
	jw_obj_begin(w);
	jw_kv_u64(w, "index", f->index);
	jw_kv_bool(w, "last", f->last);
	jw_kv_str(w, "endedBy", f->reason);
	jw_kv_us(w, "startUs", (int64_t)(f->start_ns - f->base_ns));
	jw_kv_us(w, "endUs", (int64_t)(f->end_ns - f->base_ns));
	jw_kv_u64(w, "events", f->events);
	jw_kv_u64(w, "maxSize", f->max_size);
	jw_kv_u64(w, "deviceSpansLaunchedInPreviousFile", f->launched_before);
	jw_kv_u64(w, "recordsNotWritten", unwritten);
	if (f->window_ns)	/* --flight-recorder DUR */
		jw_kv_us(w, "flightRecorderUs", (int64_t)f->window_ns);
	if (f->previous)
		jw_kv_str(w, "previous", f->previous);
	if (f->next)
		jw_kv_str(w, "next", f->next);
	jw_obj_end(w);
}

char *summary_trace_metadata(const struct consumer *c, const struct target *t,
			     const struct spyre_counters *counters, const struct run_end *end)
{
	struct jw *w = jw_memopen();
	struct run_counts rc;

	if (!w)
		return NULL;
	jw_members_begin(w, true);
	jw_key(w, "spyreProbes");
	jw_arr_begin(w);
	for (int i = 0; i < t->cnt && i < c->nprobes; i++) {
		jw_nl(w);
		probe_json(w, c, t, &counters[i], end, i);
	}
	jw_arr_end(w);
	jw_nl(w);
	jw_key(w, "spyreStats");
	jw_obj_begin(w);
	if (t->pid > 0)	/* -a: every process, none the target (it read 2^64 - 1) */
		jw_kv_u64(w, "targetPid", t->pid);
	/* events, probeHits, drops by cause, recordsUnreadable, deviceOverflow, unwound, drops */
	summary_counts(c, t, counters, &rc);
	run_counts_json(w, &rc);
	jw_kv_u64(w, "deviceSpans", c->dev.st.matched);
	jw_kv_u64(w, "launchesInFlight", c->dev.st.launches_unmatched);
	jw_kv_u64(w, "completionsWithoutLaunch", c->dev.st.completions_unmatched);
	if (c->vfio && end && end->driver)	/* driverPath, driverSpans, ... (report/driver.c) */
		driver_stats_json(end->driver, c->vfio, w);
	if (c->py) {	/* --python, py=1: calls that carried a Python stack, those not named */
		jw_kv_u64(w, "pythonStacks", c->py_stacks);
		jw_kv_u64(w, "pythonStacksUnnamed", c->py_lost);
		{
			struct pystack_stats ps;

			pystack_counts(c->py, &ps);
			jw_kv_u64(w, "pythonCodeObjects", ps.codes);
			jw_kv_u64(w, "pythonLineTablesTooLong", ps.lt_long);
			jw_kv_u64(w, "pythonCodesEvicted", ps.evicted);
		}
		if (c->pyspans) {	/* --python: python_function spans, calls left out of them */
			jw_kv_u64(w, "pythonFunctionSpans", c->py_spans);
			jw_kv_u64(w, "pythonStacksCut", pyspans_left_out(c->pyspans));
		}
	}
	if (c->ustack) {	/* --ustack, stack=1: calls that carried a native stack */
		uint64_t unnamed, cut;

		ustack_counts(c->ustack, &unnamed, &cut);
		jw_kv_u64(w, "nativeStacks", c->us_stacks);
		jw_kv_u64(w, "nativeStacksCut", cut);
		jw_kv_u64(w, "nativeStacksUnread", c->us_unread);
		jw_kv_u64(w, "nativeStacksCallerAdded", c->us_callers);
		jw_kv_u64(w, "nativeFramesUnnamed", unnamed);
	}
	if (c->lane_spans) {	/* spans on other-stack tracks (lanes.h) */
		uint64_t threads, crossed = consumer_lanes_crossed(c, &threads);

		jw_kv_u64(w, "spansOnOtherStacks", c->lane_spans);
		jw_kv_u64(w, "threadsWithOtherStacks", threads);
		jw_kv_u64(w, "spansCrossingOnLastTrack", crossed);
	}
	jw_kv_u64(w, "entryOnlyProbes", t->entry_only);
	if (t->one_stack)
		jw_kv_bool(w, "oneStackPerThread", true);
	if (t->sites_off)	/* the start-up self-test found them broken (retcheck.h) */
		jw_kv_str(w, "returnSitesOff", t->sites_off);
	if (end->rets_why) {	/* who performs a probed ret: BPF (emulated) or the kernel */
		jw_kv_str(w, "returnsDoneBy", end->rets_emulated ? "bpf" : "kernel-single-step");
		jw_kv_str(w, "returnsDoneByReason", end->rets_why);
		jw_kv_u64(w, "entriesDoneByBpf", end->rets_emulated ? entries_done_by_bpf(t) : 0);
	}
	if (end->cost)
		cost_json(w, t, end);
	exit_json(w, end, "targetSignal", "targetExitCode");
	jw_kv_bool(w, "targetExited", end->target_exited);
	/* every traced process whose end was seen (fleet mode: many), as wait(2) would say */
	jw_key(w, "processExits");
	jw_arr_begin(w);
	for (int i = 0; i < c->nexits; i++) {
		const struct run_end e = { .exit_known = true, .exit_code = c->exits[i].code };

		jw_obj_begin(w);
		jw_kv_u64(w, "pid", c->exits[i].pid);
		exit_json(w, &e, "signal", "exitCode");
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	dist_json(c, w);
	if (c->mem)	/* "spyreMemory":{...} */
		memledger_json(c->mem, c, w);
	if (end && end->sampling)
		sampling_json(end->sampling, w);
	if (end && end->file)
		file_json(end->file, end->unwritten, w);
	jw_members_end(w);
	return jw_mem_take(w, NULL);
}

/* A field of the status line; @prio 0 first kept when the terminal is narrow. */
struct status_field {
	char text[320];
	int prio;
};

static void field(struct status_field *f, int *n, int prio, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void field(struct status_field *f, int *n, int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f[*n].text, sizeof(f[*n].text), fmt, ap);
	va_end(ap);
	f[(*n)++].prio = prio;
}

static const char *fmt_clock(double s, char *buf, size_t len)
{
	unsigned long t = s > 0 ? (unsigned long)(s + 0.5) : 0;

	if (t >= 3600)
		snprintf(buf, len, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%lu:%02lu", t / 60, t % 60);
	return buf;
}

void summary_status_line(const struct consumer *c, const struct status_facts *sf,
			 struct status_prev *prev)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	double dt = (now - prev->ns) / 1e9;
	double rate = dt > 0 ? (c->events - prev->events) / dt : 0;
	double brate = dt > 0 && sf->bytes >= prev->bytes ? (sf->bytes - prev->bytes) / dt : 0;
	struct status_field f[12];
	char a[32], b[32], line[1024];
	size_t off = 0;
	int n = 0, width = sf->width > 20 ? sf->width - 1 : 79, used = 0;
	bool keep[12] = {};

	/* in display order; what matters most kept first on a narrow terminal */
	if (sf->left_s >= 0)
		field(f, &n, 0, " %s (%s left)", fmt_clock(sf->elapsed_s, a, sizeof(a)),
		      fmt_clock(sf->left_s, b, sizeof(b)));
	else
		field(f, &n, 0, " %s", fmt_clock(sf->elapsed_s, a, sizeof(a)));
	field(f, &n, 1, ", %llu events, %.0f ev/s", (unsigned long long)c->events, rate);
	if (sf->in_memory) {	/* the flight recorder: what it holds, not a rate to disk */
		field(f, &n, 2, ", %s in memory", fmt_bytes(sf->bytes, a, sizeof(a)));
	} else {
		field(f, &n, 2, ", %s", fmt_bytes(sf->bytes, a, sizeof(a)));
		field(f, &n, 3, " (%s/s)", fmt_bytes((uint64_t)brate, a, sizeof(a)));
	}
	if (sf->max_size)
		field(f, &n, 5, ", file %u of at most %s", sf->file + 1,
		      fmt_bytes(sf->max_size, b, sizeof(b)));
	field(f, &n, 2, ", %llu drops", (unsigned long long)sf->drops);
	field(f, &n, 4, ", %llu unwound", (unsigned long long)sf->unwound);
	if (sf->entry_only)
		field(f, &n, 6, ", %d probes (%d entries only)", sf->nprobes, sf->entry_only);
	else
		field(f, &n, 6, ", %d probes", sf->nprobes);
	if (sf->budget_pct)
		field(f, &n, 3, ", %s (%.0f%% of the time traced, --max-overhead %g%%)",
		      sf->paused ? "paused" : "tracing", sf->traced_pct, sf->budget_pct);
	if (sf->cost && *sf->cost)
		field(f, &n, 8, "%s", sf->cost);
	field(f, &n, 7, ", driver %s", vfio_path_name(vfio_path(sf->driver)));
	/* a terminal: what fits its width, so that no stale half line wraps; a log: all */
	used = (int)strlen("spyre-bpftrace:");
	for (int prio = 0, full = 0; prio <= 8 && !full; prio++)
		for (int i = 0; i < n && !full; i++) {
			int len = (int)strlen(f[i].text);

			if (f[i].prio != prio)
				continue;
			/* the first that does not fit ends it: a less needed field never stands
			 * where a more needed one was cut */
			full = sf->tty && used + len > width;
			keep[i] = !full;
			used += len;
		}
	for (int i = 0; i < n && off < sizeof(line); i++)
		if (keep[i])
			off += snprintf(line + off, sizeof(line) - off, "%s", f[i].text);
	/* on a terminal the line redraws itself (and clears what a longer one left); in a log
	 * it is one line per second */
	fprintf(stderr, "%sspyre-bpftrace:%s%s", sf->tty ? "\r" : "", line,
		sf->tty ? "\033[K" : "\n");
	prev->events = c->events;
	prev->bytes = sf->bytes;
	prev->ns = now;
}
