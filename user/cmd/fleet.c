// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "stream/consumer.h"
#include "cmd/fleet.h"
#include "common/util.h"
#include "common/log.h"
#include "report/memreport.h"
#include "output/output.h"
#include "report/prom.h"
#include "resolve/resolve.h"
#include "output/rotate.h"
#include "cmd/session.h"
#include "report/summary.h"
#include "attach/uprobe_tier.h"
#include "attach/warm.h"
#include "attach/budget.h"
#include "common/process.h"

struct window_out {
	struct output out;
	char path[4096];
};

/* The file for the next window: rotated in --output-dir, else -o (or a default name). */
static int open_window_output(const struct env *env, struct rotate *rot, struct window_out *wo,
			      bool first)
{
	int err;

	if (!env->output_dir) {
		if (!first)
			return -EEXIST;	/* one file for the whole run */
		snprintf(wo->path, sizeof(wo->path), "%s",
			 env->output ? env->output : "spyre-trace-system.json");
		return output_open(&wo->out, wo->path, env->force);
	}
	/* lost a race with something planting our next name: take the one after */
	for (int tries = 0; tries < 16; tries++) {
		err = rotate_next_path(rot, wo->path, sizeof(wo->path));
		if (err)
			return err;
		err = output_open(&wo->out, wo->path, false);
		if (err != -EEXIST && err != -ELOOP)
			return err;
	}
	return -EEXIST;
}

/*
 * A series is per job and function name: the copies of a library in each container (one file
 * each, so probes of their own, sharing the function's name) add up under it, and so do the
 * functions whose names were made distinct (sharedName).
 */
static const char *prom_func(const struct rprobe *p)
{
	return p->shared_name ?: p->name;
}

static void window_prom(struct prom_window *pw, const struct consumer *c, const struct target *t,
			const struct spyre_counters *counters)
{
	for (uint32_t i = 0; i < c->pcap; i++) {
		const struct pid_probe_stats *ps = &c->pid_stats[i];
		const struct process_info *p;
		struct prom_job job;
		int probe;

		if (!ps->key)
			continue;
		probe = (int)(ps->key & 0xffffffffu) - 1;
		if (probe < 0 || probe >= t->cnt)
			continue;
		p = consumer_process(c, ps->key >> 32);
		job.pid = ps->key >> 32;
		job.comm = p && p->name[0] ? p->name : NULL;
		job.container = p ? p->container : NULL;
		if (t->table->specs[t->probes[probe].spec].type == PROBE_SPAN)
			prom_window_add_span(pw, &job, prom_func(&t->probes[probe]), ps->st);
		else
			prom_window_add_count(pw, &job, prom_func(&t->probes[probe]),
					      ps->delivered);
	}
	/* drops are counted in BPF per probe, not per process */
	for (int i = 0; i < t->cnt; i++)
		prom_window_add_drops(pw, NULL, prom_func(&t->probes[i]), counters[i].drops_ring,
				      counters[i].drops_depth, counters[i].drops_nostack);
}

/*
 * Keep the directory within its limits after a window; with -v say what it holds then, so an
 * operator sizing --max-disk/--max-files sees the totals the limits are checked against.
 */
static void enforce_and_report(struct rotate *rot)
{
	uint64_t bytes;
	int deleted = rotate_enforce(rot), files;

	if (!log_enabled(LOG_DEBUG) || rotate_usage(rot, &files, &bytes))
		return;
	pr_debug("%s holds %d trace file%s, %llu bytes (%d deleted)", rot->dir, files,
		 files == 1 ? "" : "s", (unsigned long long)bytes, deleted > 0 ? deleted : 0);
}

/* The window's file, its trace begun, the session's consumer on it. Returns 0 or an exit code. */
static int begin_window(struct session *s, struct rotate *rot, struct window_out *wo,
			uint64_t win, uint64_t start, uint64_t *real_ns)
{
	const struct env *env = s->env;
	int err;

	if (env->output_dir)
		rotate_enforce(rot);	/* make room first */
	err = open_window_output(env, rot, wo, win == 1);
	if (err) {
		pr_err("cannot create a trace file%s%s: %s", wo->path[0] ? " " : "", wo->path,
		       strerror(-err));
		return EXIT_OUTPUT;
	}
	*real_ns = now_ns(CLOCK_REALTIME);
	if (session_window_open(s, &wo->out, wo->path, start, *real_ns)) {
		pr_err("cannot start the trace %s", wo->path);
		return EXIT_OUTPUT;
	}
	return 0;
}

/* The window's Prometheus series, then the file (replaced whole). */
static void window_prom_write(struct session *s, struct prom_window *pw, uint64_t traced_ns)
{
	int err;

	struct overhead o = cost_meter_overhead(&s->meter, true);

	struct run_counts rc;

	window_prom(pw, &s->cons, &s->t, s->tr.counters);
	summary_counts(&s->cons, &s->t, s->tr.counters, &rc);
	prom_window_add_counts(pw, &rc);
	prom_window_add_memory(pw, &s->cons, &s->mem);
	pw->overhead_ratio = o.known ? o.pct / 100 : NAN;
	prom_window_end(pw, traced_ns);
	if (s->env->prom_file && (err = prom_write(s->env->prom_file, pw)))
		pr_err("cannot write %s: %s", s->env->prom_file, strerror(-err));
}

/*
 * While its probes are attached, the jobs pay for every moment the tracer is late: a window ends
 * when the tracer runs, and each attach and detach is kernel work done in its context (a
 * breakpoint written into, then out of, each job's pages: probes x processes). On a saturated
 * node a tracer at the jobs' priority or lower gets too little CPU for that: 32 mock jobs on 2
 * CPUs, 2 s windows, the tracer at nice 0 took 2.0-3.3 s to attach and 3.3-4.9 s to detach; at
 * nice 5 with the unit's weight, 76 s and 201 s, its "2 s" window traced 38.7 s. So from a
 * window's scan to the end of its detach the thread runs at FLEET_WINDOW_NICE (it uses a few %
 * of a CPU: the priority brings no more work, only less waiting), and at its own between
 * windows, where it sleeps. Without the right (CAP_SYS_NICE, or the unit's LimitNICE=) it stays
 * as it is, said once.
 */
#define FLEET_WINDOW_NICE	(-10)

static void window_priority(bool in_window, int *base)
{
	static bool said;
	int err;

	if (!in_window) {
		if (*base != INT_MIN)
			thread_nice(*base, NULL);
		return;
	}
	err = thread_nice(FLEET_WINDOW_NICE, base);
	if (err && !said) {
		said = true;
		*base = INT_MIN;
		pr_info("cannot raise the tracer's priority inside windows (%s): on a busy node its "
			"windows may start, end and detach late (CAP_SYS_NICE, or LimitNICE=%d in "
			"the unit)", strerror(-err), FLEET_WINDOW_NICE);
	} else if (err) {
		*base = INT_MIN;
	}
}

/* "; paused 1.2 s in 3 windows (--max-overhead 10%)" for a window's -v line. */
static const char *budget_line(const struct session *s, uint64_t paused, char *buf, size_t len)
{
	snprintf(buf, len, "; paused %.3f s in %u window%s (--max-overhead %g%%)", paused / 1e9,
		 s->budget->windows, s->budget->windows == 1 ? "" : "s", s->env->max_overhead);
	return buf;
}

/*
 * Window @win, begun at @start: its file, the probes attached (after a scan for the processes
 * that appeared meanwhile), traced for @window_ns (0: until the end), detached, its figures
 * written (Prometheus, the summary, -v's line). 0, or an exit code.
 */
static int run_window(struct session *s, struct rotate *rot, struct prom_window *pw,
		      uint64_t win, uint64_t start, uint64_t window_ns, int *base_nice)
{
	const struct env *env = s->env;
	uint64_t real_start, attached, traced, paused;
	struct window_out wo = {};
	char bl[160];
	int rc, err;

	window_priority(true, base_nice);
	rc = begin_window(s, rot, &wo, win, start, &real_start);
	if (rc)
		return rc;
	/* attach: everything resolved so far, plus processes that appeared meanwhile */
	err = session_scan(s, win == 1);
	if (err == -E2BIG)	/* what fits is attached (said) */
		err = 0;
	if (err >= 0 && !consumer_resize(&s->cons, s->t.cnt))
		err = session_attach(s);
	/*
	 * the window's length is traced time: from its probes attached (a scan of many
	 * processes, on a busy machine, took seconds) to their detach
	 */
	attached = now_ns(CLOCK_MONOTONIC);
	warm_end(s->warm);
	if (err < 0)
		pr_err("resolving probes: %s", strerror(-err));
	/*
	 * Processes come and go: a user probe that resolves nowhere yet is no error here,
	 * but a typo should not go unsaid (once, after the first scan)
	 */
	if (win == 1)
		target_say_missing(&s->t, "warning: ", false, s->said);
	session_ready(s);
	session_calibrate(s);
	prom_window_begin(pw, real_start);
	session_loop(s, window_ns ? attached + window_ns : 0);
	session_window_end(s, win);
	window_priority(false, base_nice);
	traced = s->detach_start > attached ? s->detach_start - attached : 0;
	/* --max-overhead's pauses inside the window are not traced time */
	paused = s->rb.b ? budget_paused_ns(s->budget, s->rb.now_ns) : 0;
	traced = traced > paused ? traced - paused : 0;
	pw->attach_ns = attached - start;
	pw->detach_ns = s->detach_ns;
	pr_debug("window %llu: attach %.1f ms, traced %.3f s, detach %.1f ms%s",
		 (unsigned long long)win, pw->attach_ns / 1e6, traced / 1e9,
		 pw->detach_ns / 1e6, paused ? budget_line(s, paused, bl, sizeof(bl)) : "");
	window_prom_write(s, pw, traced);
	if (!env->quiet && (s->stop || !env->output_dir))
		summary_print(stdout, &s->cons, &s->t, s->tr.counters, &s->end);
	/* on a terminal the status line has it; -v says it there too */
	if (!s->tty)
		pr_info("window %llu: wrote %s (%llu events)", (unsigned long long)win,
			wo.path, (unsigned long long)s->cons.events);
	else
		pr_debug("window %llu: wrote %s (%llu events)", (unsigned long long)win,
			 wo.path, (unsigned long long)s->cons.events);
	session_window_close(s);
	if (env->output_dir)
		enforce_and_report(rot);
	return 0;
}

int cmd_fleet(const struct env *env, struct probe_table *table)
{
	uint64_t period_ns = (uint64_t)(env->period * 1e9);
	uint64_t window_ns = (uint64_t)(env->window * 1e9);
	struct prom_window pw = {};
	struct session s;
	struct rotate rot = {};
	int rc, err, base_nice = INT_MIN;

	/* -p with --window: one process in duty cycles; -a: every process */
	if (!env->system_wide && (rc = check_pid(env->pid)))
		return rc;
	if ((rc = preflight_bpf()))
		return rc;
	rc = session_init(&s, env, table, env->system_wide ? -1 : env->pid, true);
	if (rc)
		goto out;
	if (env->output_dir) {
		err = rotate_init(&rot, env->output_dir, env->max_disk, env->max_files, "spyre",
				  true);
		if (err) {
			pr_err("cannot use output directory %s: %s", env->output_dir,
			       strerror(-err));
			rc = EXIT_OUTPUT;
			goto out;
		}
	}
	/* the counters get room for what resolves now (tracer_room): resolve before the load */
	err = session_scan(&s, true);
	if (err == -E2BIG) {	/* said */
		rc = EXIT_USAGE;
		goto out;
	}
	/* a runtime we cannot read is not the same as no runtime: say which */
	target_warn_unreadable(&s.t);
	/* the driver tier follows one process's ioctls: not in fleet mode (yet) */
	if ((rc = session_load_begin(&s, s.t.cnt, false)) || (rc = session_load_end(&s)) ||
	    (rc = session_driver_end(&s)))
		goto out;
	prom_window_init(&pw, SPYRE_VERSION, env->sample_every, period_ns);

	for (uint64_t win = 1; !s.stop; win++) {
		uint64_t start = now_ns(CLOCK_MONOTONIC);

		/*
		 * -d: whole windows only after the first (with --period 4s, -d 20 began a sixth
		 * one 0.1 s before the end, as the windows began late)
		 */
		if (win > 1 && window_ns && s.deadline && start + window_ns > s.deadline)
			break;
		rc = run_window(&s, &rot, &pw, win, start, window_ns, &base_nice);
		if (rc)
			goto out;
		if (!env->output_dir)
			break;	/* one file: the run is over */
		/* between windows: nothing attached, wait for the next one, a signal, the end */
		if (period_ns)
			session_wait(&s, start + period_ns);
	}
	rc = session_exit_code(&s);
out:
	if (env->output_dir)
		rotate_close(&rot);
	prom_window_free(&pw);
	session_free(&s);
	return rc;
}
