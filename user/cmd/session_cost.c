// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What the probes cost (declared in session.h): each probe's estimate said at the start, the
 * cost weighed every second (the status line, the advice when it is high), the jobs it is
 * weighed against, and --max-overhead's tick that pauses the probes or attaches them again.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "output/facts.h"
#include "common/util.h"
#include "common/log.h"
#include "cmd/session.h"

/* The start-up line: each probe's estimated cost per call, dearest first. */
static void print_startup_costs(const struct target *t, const struct hit_costs *c)
{
	int order[t->cnt > 0 ? t->cnt : 1], n = 0;
	double ns[t->cnt > 0 ? t->cnt : 1];
	char line[1024];
	size_t off;

	for (int i = 0; i < t->cnt; i++) {
		ns[i] = cost_probe(c, t, &t->probes[i], NULL);
		if (t->probes[i].attached)
			order[n++] = i;
	}
	/* insertion sort: tens of probes */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && ns[order[j]] > ns[order[j - 1]]; j--) {
			int x = order[j];

			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	off = snprintf(line, sizeof(line), "estimated cost per call (%s: %.1f us emulated, %.1f us "
		       "single-stepped, %.1f us uretprobe return; rets %s):", c->calibrated ?
		       "measured here" : "reference VM", c->emulated_ns / 1000,
		       c->stepped_ns / 1000, c->uret_ns / 1000,
		       c->rets_emulated ? "done by BPF" : "single-stepped");
	for (int k = 0; k < n && k < 8 && off < sizeof(line); k++)
		off += snprintf(line + off, sizeof(line) - off, "%s %s %.1f us", k ? "," : "",
				t->probes[order[k]].name, ns[order[k]] / 1000);
	if (n > 8 && off < sizeof(line))
		off += snprintf(line + off, sizeof(line) - off, ", ... (%d more)", n - 8);
	if (!n && off < sizeof(line))
		snprintf(line + off, sizeof(line) - off, " no probe attached");
	pr_info("%s", line);
}

void session_calibrate(struct session *s)
{
	/* the meter (new each window) takes the per-hit costs measured while tracing */
	s->meter.cal = s->cal;
	if (s->cal)
		return;
	/*
	 * What the probes cost per call, measured now that the job runs (about 20-50 ms of this
	 * thread's wait; the ring holds what comes meanwhile), said before it hurts
	 */
	s->cal = cost_calibrate_start();
	cost_calibrate_result(s->cal, &s->costs);
	s->meter.costs = s->costs;
	s->meter.cal = s->cal;
	if (!s->env->quiet)
		print_startup_costs(&s->t, &s->costs);
}

/*
 * Above this overhead, said once with what would lower it. 10 %: the mock's default workload,
 * every probe, runs at ~+250 % here with returns single-stepped, and real PyTorch's ops (6
 * probes, ~27 us each) cross it at ~4 k calls/s, a small model's training loop. An overhead
 * too high to be known is above it.
 */
#define OVERHEAD_ADVICE_PCT 10.0

/*
 * What the user can do when tracing costs much (issue 25): the cheaper return probes when
 * returns are single-stepped here, sampling, a budget. Nothing when --max-overhead already
 * keeps a budget, or once said.
 */
static void advise_overhead(struct session *s)
{
	const struct env *e = s->env;
	struct overhead o = cost_meter_overhead(&s->meter, false);
	char opts[512], what[96];
	size_t off = 0;

	if (s->advised || e->quiet || e->max_overhead || o.share < 0 ||
	    (o.known && o.pct < OVERHEAD_ADVICE_PCT))
		return;
	s->advised = true;
	if (!e->uretprobes && !s->costs.rets_emulated)
		off += snprintf(opts + off, sizeof(opts) - off, "--uretprobes (returns by the "
				"kernel's return probes, %.1f us instead of %.1f us single-stepped; "
				"only where nothing the probes cover throws), ",
				s->costs.uret_ns / 1000, s->costs.stepped_ns / 1000);
	if (e->sample_every <= 1)
		off += snprintf(opts + off, sizeof(opts) - off, "--sample-every N (1 call in N), ");
	snprintf(opts + off, sizeof(opts) - off, "--max-overhead PCT (trace in windows that hold "
		 "the overhead to PCT %%)");
	if (o.known)
		snprintf(what, sizeof(what), "an estimated %.0f%% to the job's CPU time", o.pct);
	else
		snprintf(what, sizeof(what), "an overhead too high to measure (the probes take "
			 "~%.0f%% of the job's CPU time)", o.share);
	pr_info("tracing adds %s (the last second)%s; to trace for less: %s", what,
		!e->uretprobes && !s->costs.rets_emulated ?
		" (returns single-stepped by the kernel here)" : "", opts);
}

/* The terminal's width in columns (80 when it says nothing). */
static int terminal_width(int fd)
{
	struct winsize ws;

	return !ioctl(fd, TIOCGWINSZ, &ws) && ws.ws_col ? ws.ws_col : 80;
}

/* The probes' cost is weighed every second, shown or not (--max-overhead); the status line. */
void session_status(struct session *s)
{
	struct run_counts rc;
	char cost[512];

	tracer_read_counters(&s->tr, s->t.cnt);
	cost_meter_update(&s->meter, &s->t, s->tr.counters);
	advise_overhead(s);
	if (s->status) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		struct status_facts f;

		/* the summary's "dropped" and "unwound", as they stand now */
		summary_counts(&s->cons, &s->t, s->tr.counters, &rc);
		f = (struct status_facts){
			.drops = run_counts_dropped(&rc), .unwound = rc.unwound,
			.nprobes = s->tr.attached, .entry_only = s->t.entry_only,
			.cost = cost_meter_status(&s->meter, &s->t, cost, sizeof(cost)),
			.driver = s->vfio, .elapsed_s = (now - s->trace_start) / 1e9,
			.left_s = s->deadline ? (s->deadline > now ? s->deadline - now : 0) / 1e9 : -1,
			.bytes = session_bytes(s), .file = s->file.index,
			.max_size = s->fleet || s->rec ? 0 : s->env->max_size, .tty = s->tty,
			.in_memory = s->rec != NULL,
			.width = terminal_width(STDERR_FILENO),
		};

		if (s->rb.b && now > s->rb.start_ns) {
			f.budget_pct = s->env->max_overhead;
			f.paused = !s->budget->on;
			f.traced_pct = 100.0 * budget_traced_ns(s->budget, now) /
				       (now - s->rb.start_ns);
		}

		summary_status_line(&s->cons, &f, &s->last);
	}
	/* from now: detaching can take a while (grace periods) */
	s->next_status = now_ns(CLOCK_MONOTONIC) + 1000000000ull;
}

/*
 * --max-overhead: every probe detached, the trace going on. What threads had open becomes an
 * instant each (noReturn, as at a stop), their frames forgotten; device work in flight now is
 * forgotten too (device_pause): nothing seen while paused may end it.
 */
static void budget_pause(struct session *s)
{
	vfio_record(s->vfio, false);	/* the job's ioctls: not recorded while paused either */
	tracer_detach(&s->tr, &s->t);
	drain_rest(s);
	s->rb.launches_cut += device_pause(&s->cons.dev);
	s->mem.pauses++;
}

/*
 * -a, -f: the processes that brought a traced call are the jobs the meter weighs the probes
 * against (cost_meter_watch), each from its first call on.
 */
void watch_jobs(struct session *s)
{
	if (!s->env->system_wide && !s->env->follow)
		return;
	for (; s->jobs_watched < s->cons.nprocs; s->jobs_watched++)
		if (cost_meter_watch(&s->meter, (int)s->cons.procs[s->jobs_watched].pid) ==
		    -ENOMEM)
			break;	/* again at the next drain */
}

/* The budget's tick (budget.h): the run's estimate so far decides a pause or a new window. */
void budget_check(struct session *s, uint64_t now)
{
	uint64_t t0, took;
	enum budget_act act;
	struct overhead o, so;
	char pct[32];
	int err = 0;

	if (!s->budget || now < s->next_budget)
		return;
	s->next_budget = now + BUDGET_TICK_MS * 1000000ull;
	tracer_read_counters(&s->tr, s->t.cnt);
	o = cost_meter_peek(&s->meter, &s->t, s->tr.counters);
	act = budget_tick(s->budget, now, o.extra_ns, o.cpu_ns);
	if (act == BUDGET_KEEP)
		return;
	/* a window spans its attach and its detach: what the probes saw is inside it */
	t0 = now_ns(CLOCK_MONOTONIC);
	if (act == BUDGET_PAUSE) {
		budget_pause(s);
		now = now_ns(CLOCK_MONOTONIC);
	} else {
		now = t0;
		err = tracer_attach(&s->tr, &s->t, s->env->follow ? -1 : s->t.pid);
		vfio_record(s->vfio, true);
		cost_meter_charge(&s->meter, BUDGET_SWITCH_MS * 1e6);
		/* the window's start as the figure counts the charge (cost_meter_extra) */
		o = cost_meter_peek(&s->meter, &s->t, s->tr.counters);
	}
	took = now_ns(CLOCK_MONOTONIC) - t0;
	budget_switched(s->budget, act == BUDGET_RESUME, now, o.extra_ns, o.cpu_ns);
	budget_took(s->budget, act == BUDGET_RESUME, took);
	so = cost_overhead(o.extra_ns, o.cpu_ns);
	pr_debug("--max-overhead %g%%: %s at %.3f s in %.1f ms (overhead so far %s, %.0f ms of "
		 "probes in %.0f ms of job CPU)%s%s", s->env->max_overhead, act == BUDGET_PAUSE ?
		 "paused" : "traced again", (now - s->rb.start_ns) / 1e9, took / 1e6,
		 cost_overhead_str(&so, pct, sizeof(pct)), o.extra_ns / 1e6, o.cpu_ns / 1e6,
		 err ? ": " : "", err ? strerror(-err) : "");
}
