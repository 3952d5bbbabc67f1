// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One tracing session for trace mode and fleet mode (session.h): what both do while tracing and
 * when a trace file closes is here once, so that a stop condition or a closing step added for
 * one mode serves the other. Here the windows: a trace begun, the drain loop and its stop
 * conditions, the rescans, the closing sequence; the start in session_start.c, Python's
 * interpreters in session_python.c, the probes' cost and the status line in session_cost.c,
 * the files in session_files.c.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include "output/jsonw.h"
#include "common/util.h"
#include "common/log.h"
#include "cmd/session.h"
#include "stream/drain.h"
#include "output/output.h"
#include "output/recorder.h"
#include "output/trace_writer.h"
#include "common/process.h"

static void *vfio_detach_bg(void *arg)
{
	vfio_detach(arg);
	return NULL;
}

/* Both tiers' links go side by side: each waits for grace periods in the kernel. */
static void detach_tiers(struct tracer *tr, struct target *t, struct vfio_tracer *vfio)
{
	pthread_t th;
	bool bg = vfio && !pthread_create(&th, NULL, vfio_detach_bg, vfio);

	tracer_detach(tr, t);
	if (bg)
		pthread_join(th, NULL);
	else
		vfio_detach(vfio);
}

uint64_t session_bytes(const struct session *s)
{
	/* the flight recorder: what it holds in memory now */
	if (s->rec)
		return recorder_bytes(s->rec) + (s->tw ? jw_bytes(trace_jw(s->tw)) : 0);
	return s->bytes_done + (s->tw ? jw_bytes(trace_jw(s->tw)) : 0);
}

/* The consumer, the ledger and the loop on trace @tw, whose ts 0 is @start_ns. */
static int window_begin(struct session *s, struct trace_writer *tw, const char *path,
			uint64_t start_ns)
{
	int err;

	s->tw = tw;
	s->path = path;
	s->hup = false;
	file_begin(s, tw, path, start_ns);
	err = consumer_init(&s->cons, tw, &s->t, "/proc");
	if (err)
		return err;
	s->cons.per_pid = s->fleet;
	apply_triggers(s);
	if (s->vfio) {
		err = consumer_driver(&s->cons, s->vroot, s->vfuncs, s->nvfuncs);
		if (err) {
			pr_err("driver tier: %s", strerror(-err));
			return err;
		}
	}
	s->cons.py = s->py;
	s->cons.ustack = s->ustack;
	/* every probe brings its stack: the frames' spans can be derived (pyspans.h) */
	if (s->py && s->env->python && consumer_python_spans(&s->cons))
		return -ENOMEM;
	s->cons.mem = &s->mem;
	memledger_start(&s->mem, s->cons.tw, start_ns);
	/* the target's end, zombie or reaped, wakes the loop through s->pidfd (session_init) */
	if (s->sfd < 0)
		s->sfd = stop_signals_fd(s->rec != NULL);
	return 0;
}

int session_window_open(struct session *s, struct output *out, const char *path,
			uint64_t mono_ns, uint64_t real_ns)
{
	struct trace_meta meta = { .mono_base_ns = mono_ns, .real_base_ns = real_ns,
				   .trace_name = path, .tool_version = SPYRE_VERSION,
				   .hostname = s->hostname };
	struct trace_writer *tw = NULL;
	int err = trace_begin(&tw, out->jw, &meta);

	out->jw = NULL;	/* owned (and on failure closed) by the trace writer */
	s->mono_base = mono_ns;
	s->real_base = real_ns;
	return err ?: window_begin(s, tw, path, mono_ns);
}

/* A full disk will not empty itself: stop instead of tracing into nothing. */
static void check_written(struct session *s)
{
	int err = jw_error(trace_jw(s->tw));

	if (!err || s->write_err)
		return;
	pr_err("writing %s failed: %s; stopping", s->path, strerror(-err));
	s->write_err = err;
	s->stop = true;
}

/* New libraries (dlopen) and processes: attach to what they add. */
static void session_rescan(struct session *s)
{
	int n = session_scan(s, false);

	python_scan(s);
	if ((n > 0 || n == -E2BIG) && !consumer_resize(&s->cons, s->t.cnt)) {
		apply_triggers(s);
		tracer_attach(&s->tr, &s->t, s->env->follow ? -1 : s->t.pid);
	}
	/* a library loaded now that lacks a user's symbol: too late to refuse */
	if (n >= 0)
		target_say_missing(&s->t, "warning: ", true, s->said);
	target_warn_unreadable(&s->t);
	check_written(s);
}

/* A stop signal, or SIGHUP: in fleet mode the window's file closes and a new one begins. */
static void take_signal(struct session *s)
{
	struct signalfd_siginfo si;

	if (read(s->sfd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGUSR1)
		s->dump_asked = true;
	else if (si.ssi_signo != SIGHUP || s->hup_stops)
		s->stop = true;
	else if (s->fleet)
		s->hup = true;
}

/* One poll for a signal, the target's end or @timeout_ms; then the deadline. */
static void wait_events(struct session *s, int timeout_ms)
{
	struct pollfd pfd[2] = {
		{ .fd = s->sfd, .events = POLLIN },
		{ .fd = s->pidfd, .events = POLLIN },
	};
	uint64_t now;

	poll(pfd, s->pidfd >= 0 ? 2 : 1, timeout_ms);
	if (pfd[0].revents & POLLIN)
		take_signal(s);
	if (s->pidfd >= 0 && (pfd[1].revents & POLLIN))
		s->target_gone = s->stop = true;
	if (s->pidfd < 0 && s->t.pid > 0 && kill(s->t.pid, 0) && errno == ESRCH)
		s->target_gone = s->stop = true;
	now = now_ns(CLOCK_MONOTONIC);
	if (s->deadline && now >= s->deadline)
		s->stop = true;
}

/*
 * The wait before the next drain, after a drain that found the ring @fill full (0..1) and was
 * cut short (@backlog): none then; longer while the ring stays nearly empty, back to
 * TRACER_DRAIN_MS on a burst (uprobe_tier.h); Python stacks keep 10 ms (code objects are named
 * from the live process: its last calls before it exits lose no more than that); never past
 * the next status line, rescan, deadline or window end (@until_ns).
 */
static int drain_wait_ms(struct session *s, double fill, bool backlog, uint64_t now,
			 uint64_t until_ns)
{
	uint64_t ends[5] = { s->next_status, s->next_rescan, s->deadline, until_ns,
			     s->budget ? s->next_budget : 0 };
	int ms;

	if (backlog || fill > TRACER_DRAIN_BUSY)
		s->drain_ms = TRACER_DRAIN_MS;
	else if (fill < TRACER_DRAIN_IDLE && !s->py_wanted)
		s->drain_ms = s->drain_ms * 2 > TRACER_DRAIN_MAX_MS ? TRACER_DRAIN_MAX_MS :
								       s->drain_ms * 2;
	if (backlog)
		return 0;
	ms = s->drain_ms;
	for (int i = 0; i < 5; i++)
		if (ends[i] && ends[i] > now && (ends[i] - now) / 1000000 < (uint64_t)ms)
			ms = (int)((ends[i] - now) / 1000000);
	return ms;
}

/* Everything left in the ring, into the files as bounded (the end of a window). */
void drain_rest(struct session *s)
{
	for (;;) {
		bool more = drain_run(s->drain, &s->cons, false);

		if (file_full(s)) {
			s->unwritten += drain_skip(s->drain);
			return;
		}
		if (!more && !drain_full(s->drain))
			return;
	}
}

void session_loop(struct session *s, uint64_t until_ns)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	bool backlog = false;
	double fill = 0;

	/* -d counts from the first window's start */
	if (!s->trace_start)
		s->trace_start = now;
	if (!s->deadline && s->env->duration > 0)
		s->deadline = now + (uint64_t)(s->env->duration * 1e9);
	s->last = (struct status_prev){ .events = s->cons.events, .bytes = session_bytes(s),
					.ns = now };
	s->next_status = now + 1000000000ull;
	s->next_rescan = now + TRACER_RESCAN_MS * 1000000ull;
	if (s->budget && !s->rb.b) {	/* the first window: since the attach */
		budget_init(s->budget, s->env->max_overhead, s->attach_ns ?: now);
		cost_meter_charge(&s->meter, BUDGET_SWITCH_MS * 1e6);	/* the first one's */
		s->rb = (struct run_budget){ .b = s->budget, .start_ns = s->attach_ns ?: now,
					     .base_ns = s->mono_base };
		s->next_budget = now + BUDGET_TICK_MS * 1000000ull;
	}
	s->drain_ms = TRACER_DRAIN_MS;
	while (!s->stop && !s->hup) {
		wait_events(s, drain_wait_ms(s, fill, backlog, now, until_ns));
		fill = drain_fill(s->drain);	/* what came in while it waited */
		backlog = drain_run(s->drain, &s->cons, false);
		if (file_full(s))
			break;
		recorder_check(s, now_ns(CLOCK_MONOTONIC));
		watch_jobs(s);
		cost_meter_sample(&s->meter);
		now = now_ns(CLOCK_MONOTONIC);
		if (s->stop || s->hup || (until_ns && now >= until_ns))
			break;
		budget_check(s, now);
		if (now >= s->next_rescan) {
			/* paused: a library loaded meanwhile is resolved at the next window */
			if (!s->budget || s->budget->on)
				session_rescan(s);
			s->next_rescan = now + TRACER_RESCAN_MS * 1000000ull;
			/* once a second on disk: a SIGKILL loses at most that (and the ring's) */
			if (s->tw)
				jw_flush(trace_jw(s->tw));
		}
		if (now >= s->next_status)
			session_status(s);
	}
}

void session_wait(struct session *s, uint64_t until_ns)
{
	while (!s->stop && !s->hup) {
		uint64_t now = now_ns(CLOCK_MONOTONIC), end = until_ns;

		/* -d first: no file is begun for a window that would end at once */
		if (s->deadline && now >= s->deadline)
			s->stop = true;
		if (s->stop || now >= until_ns)
			break;
		if (s->deadline && s->deadline < end)
			end = s->deadline;
		wait_events(s, (int)((end - now) / 1000000 + 1));
	}
}

/* A process that crashed while traced is worth a line in the operator's log. */
static void say_killed(struct session *s)
{
	char name[48];

	if (!s->fleet && run_end_signal(&s->end))
		pr_info("target %d was killed by %s while traced", s->t.pid,
			run_end_signame(&s->end, name, sizeof(name)));
	for (int i = 0; i < s->cons.nexits; i++) {
		const struct run_end e = { .exit_known = true, .exit_code = s->cons.exits[i].code };

		if (!s->fleet && (int)s->cons.exits[i].pid == s->t.pid)
			continue;	/* said above */
		if (run_end_signal(&e))
			pr_info("process %u was killed by %s while traced", s->cons.exits[i].pid,
				run_end_signame(&e, name, sizeof(name)));
	}
}

int session_window_end(struct session *s, uint64_t index)
{
	const struct env *env = s->env;
	struct run_sampling sampling;
	char *extra;
	int err;

	if (s->status && s->tty)
		fputc('\n', stderr);
	/* the last stretch of the cost estimate, while the job's CPU clock can still be read */
	tracer_read_counters(&s->tr, s->t.cnt);
	cost_meter_update(&s->meter, &s->t, s->tr.counters);
	test_hold("SPYRE_TEST_HOLD_END");
	/* detach first so the counters stop moving, then take everything left in the ring; in
	 * fleet mode the jobs pay nothing between windows: no probe stays behind */
	s->detach_start = now_ns(CLOCK_MONOTONIC);
	detach_tiers(&s->tr, &s->t, s->vfio);
	s->rb.now_ns = now_ns(CLOCK_MONOTONIC);
	s->detach_ns = s->rb.now_ns - s->detach_start;
	if (s->budget && s->budget->on)	/* the last window ends here */
		budget_switched(s->budget, false, s->rb.now_ns, 0, 0);
	if (s->fleet)
		drain_run(s->drain, &s->cons, true);
	else if (s->full)	/* stopped at the bound: the rest is counted, not written */
		s->unwritten += drain_skip(s->drain);
	else
		drain_rest(s);
	tracer_read_counters(&s->tr, s->t.cnt);
	consumer_write_metadata(&s->cons);
	s->end = (struct run_end){ .target_exited = s->target_gone, .driver = s->vfio,
				   .rets_emulated = s->tr.emulate,
				   .rets_why = s->env->uretprobes ? NULL : s->emu_why,
				   .cost = &s->meter, .max_overhead = env->max_overhead,
				   .budget = s->rb.b ? &s->rb : NULL };
	/*
	 * launch mode: a user's library the job never loaded (nor dlopen'ed) is exit 10, as a
	 * missing one is by PID; --allow-missing (and fleet mode) make it a warning
	 */
	if (s->launch_pid > 0 && !env->allow_missing)
		s->unresolved += target_say_missing(&s->t, "", false, s->said);
	else
		target_say_missing(&s->t, "warning: ", false, s->said);
	if (s->unresolved && s->launch_pid > 0 && !env->allow_missing)
		pr_err("a --probe/--probes line resolved nowhere while %s ran: exit 10 (a "
		       "typo? --allow-missing makes it a warning)", env->argv_cmd ?
		       env->argv_cmd[0] : "the job");
	/* the exit hook's record of the target's end (a launched child is also reaped here) */
	if (s->t.pid > 0)
		s->end.exit_known = consumer_exit_code(&s->cons, s->t.pid, &s->end.exit_code);
	if (!s->end.exit_known && s->launch_pid > 0 && s->target_gone &&
	    waitpid(s->launch_pid, &s->end.exit_code, WNOHANG) == s->launch_pid)
		s->end.exit_known = true;
	say_killed(s);
	sampling = (struct run_sampling){ .system_wide = env->system_wide,
					  .sample_every = env->sample_every, .rate_cap = env->rate_cap,
					  .window_s = env->window, .period_s = env->period,
					  .window = index };
	s->end.sampling = &sampling;
	s->end.file = file_facts(s, now_ns(CLOCK_MONOTONIC), true, s->full ? "max-size" : "end");
	s->end.unwritten = s->unwritten;
	if (s->rec) {	/* the last DUR, once more, and the slice in memory gone */
		s->stop = true;
		err = dump(s, "exit");
		trace_end(s->tw, NULL);
		s->tw = NULL;
		s->end.sampling = NULL;
		s->end.file = NULL;
		if (err) {
			s->write_err = err;
			return err;
		}
		return 0;
	}
	extra = summary_trace_metadata(&s->cons, &s->t, s->tr.counters, &s->end);
	s->end.sampling = NULL;
	if (!s->fleet)
		s->bytes_done += jw_bytes(trace_jw(s->tw));
	err = trace_end(s->tw, extra);
	s->tw = NULL;
	free(extra);
	if (err) {
		pr_err("writing %s failed: %s", s->path, strerror(-err));
		/* the next file would go the same way */
		s->write_err = err;
		s->stop = true;
	}
	return err;
}

void session_window_close(struct session *s)
{
	/* fleet mode: each window has a budget of its own, from its attach */
	if (s->budget) {
		memset(s->budget, 0, sizeof(*s->budget));
		s->rb = (struct run_budget){};
		s->attach_ns = 0;
	}
	/* a job that ended holds nothing now */
	for (int i = 0; i < s->cons.nexits; i++)
		memledger_forget(&s->mem, s->cons.exits[i].pid);
	tracer_reset_counters(&s->tr, s->t.cnt);
	consumer_free(&s->cons);
}

int session_exit_code(const struct session *s)
{
	if (s->write_err)
		return EXIT_OUTPUT;
	if (run_end_signal(&s->end))
		return EXIT_TARGET_KILLED;
	return s->unresolved ? EXIT_NO_MATCH : EXIT_OK;
}
