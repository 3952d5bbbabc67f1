/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --max-overhead PCT: the probes come and go in windows so that, over the run, the job's extra
 * CPU time (the probes' estimated time, cost.h) stays within PCT % of the CPU time it used
 * untraced. Detaching is the only lever that works here: a probe's cost is the kernel's trap,
 * paid whether its program records the call or not (sampling keeps the trap).
 *
 * The rule, checked every BUDGET_TICK_MS: a window that has lasted BUDGET_MIN_ON_MS ends once
 * the run's extra exceeds PCT % of its untraced CPU time; a pause ends once one more window of
 * the last one's length (BUDGET_MIN_ON_MS at least), at its rates (extra and untraced CPU
 * per second) and its BUDGET_SWITCH_MS, would stay within it. Cheap stretches (a job waiting
 * on the device) stay traced for as long as they stay cheap. A run shorter than its first
 * window is over the budget by that window only.
 */
#ifndef SPYRE_BUDGET_H
#define SPYRE_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

/*
 * 50 ms: a tick reads the probes' hit counters and the job's CPU clock (~0.1 ms of the
 * tracer's time, 0.2 % of a CPU). 200 ms of trace at least: at the mock job's +260 % a first
 * window of that length adds ~0.2 s of CPU time to the job, 1.3 points over a 15 s run.
 */
#define BUDGET_TICK_MS		50
#define BUDGET_MIN_ON_MS	200
/*
 * What a window costs the job beyond its probes' hits, charged at its start: measured here,
 * one attach and detach of the default table on the mock job cost it 0.09-0.47 s of CPU time
 * more than its hits priced (6 runs of -d 0.05, median ~0.25 s), budgeted runs 0.11-0.25 s a
 * window. Not explained yet: the tracer's own work at a switch (links, the task iterator, the
 * drain) competing with the job's threads on 2 CPUs is the first suspect. Unpriced, a 20 %
 * budget measured +37 % in 5 windows.
 */
#define BUDGET_SWITCH_MS	200
/* Windows kept for the metadata; the others are counted. */
#define BUDGET_MAX_WINDOWS	256

enum budget_act {
	BUDGET_KEEP,
	BUDGET_PAUSE,		/* detach every probe now */
	BUDGET_RESUME,		/* attach them again */
};

struct budget_window {
	uint64_t start_ns, end_ns;	/* CLOCK_MONOTONIC; end 0: still open */
	uint64_t attach_ns, detach_ns;	/* what its attach and its detach took the tracer */
};

struct budget {
	double max_pct;
	bool on;			/* the probes are attached */
	uint64_t since_ns;		/* the last switch */
	double e0, u0;			/* extra and untraced CPU ns at the window's start */
	double rate_e, rate_u;		/* the last window's, per second of it */
	double last_s;			/* ... its length */
	uint64_t traced_ns;		/* closed windows' time */
	uint32_t windows;		/* windows begun (the first included) */
	struct budget_window w[BUDGET_MAX_WINDOWS];
};

/* A budget of @max_pct, its first window begun at @now_ns (the probes attached). */
void budget_init(struct budget *b, double max_pct, uint64_t now_ns);
/*
 * The run so far at @now_ns: @extra_ns of the probes' estimated time (the windows' switches
 * included, cost_meter_charge) in @cpu_ns of the job's CPU time (both since the attach;
 * cpu < 0: no reading, nothing decided). What to do; the
 * caller does it, then budget_switched.
 */
enum budget_act budget_tick(struct budget *b, uint64_t now_ns, double extra_ns, double cpu_ns);
/* The probes are now detached (@on false) or attached again, at @now_ns. */
void budget_switched(struct budget *b, bool on, uint64_t now_ns, double extra_ns, double cpu_ns);
/* The switch just made (budget_switched) took the tracer @ns: the window's attach or detach. */
void budget_took(struct budget *b, bool attach, uint64_t ns);
/* Traced time so far at @now_ns, the open window included. */
uint64_t budget_traced_ns(const struct budget *b, uint64_t now_ns);
/* The pauses' time so far at @now_ns, since the first window began. */
uint64_t budget_paused_ns(const struct budget *b, uint64_t now_ns);

#endif
