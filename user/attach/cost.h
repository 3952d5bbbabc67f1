/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a probe costs the traced job per call, before and while it is traced. The kernel's part
 * dominates: a breakpoint trap at each probed instruction, then either the instruction emulated
 * (push, nop, jmp, jcc on x86) or copied out and single-stepped (endbr64, mov, ret, ...: two
 * more traps), and for a uretprobe its trampoline's system call. Those per-hit costs differ 10x
 * from one machine to the next (docs/performance.md), so they are measured at start-up on this
 * machine, on functions of the tracer's own, with empty programs.
 */
#ifndef SPYRE_COST_H
#define SPYRE_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct target;
struct rprobe;

/* Nanoseconds of the traced thread's CPU time per probe hit, by what the kernel does there. */
struct hit_costs {
	double emulated_ns;	/* uprobe on an instruction the kernel emulates (push) */
	double stepped_ns;	/* ... one it single-steps (endbr64, mov; ret at a return site) */
	double uret_ns;		/* a uretprobe's return through its trampoline */
	bool calibrated;	/* measured here (else the figures of docs/performance.md) */
	/*
	 * The programs may write registers here (emulated returns): return sites return by
	 * themselves, and the entry program does a probed mov or lea; both cost what a push does
	 */
	bool rets_emulated;
};

/* One probe's estimated cost per call and how it is made up. */
struct probe_cost {
	double ns;		/* all of it, our programs included */
	const char *entry;	/* "emulated", "single-stepped", "unknown, ..." */
	const char *ret;	/* "single-stepped ret", "uretprobe", "none", ... */
};

/* The figures measured on the development VM (docs/performance.md, 2026-12-04). */
void cost_defaults(struct hit_costs *c);
/*
 * Measure @c on this machine: start in the background (~20-50 ms of one thread's CPU, links in
 * this process only), then wait for the result. Without uprobe_multi links, on other
 * architectures than x86-64, or with SPYRE_NO_CALIBRATE=1 the defaults stay.
 */
struct calibration;
struct calibration *cost_calibrate_start(void);
/*
 * Wait (at most ~2 s) for the figures, into @c (defaults if none came). The thread measures
 * again every COST_RECAL_S until freed (its probes are on the tracer's own functions).
 */
void cost_calibrate_result(struct calibration *cal, struct hit_costs *c);
#define COST_RECAL_S	2
/* A measurement newer than the last one taken into @c: true and @c updated (not how returns
 * are done). */
bool cost_calibrate_poll(struct calibration *cal, struct hit_costs *c, unsigned int *gen);
/* Stop the measuring, wait for the background work to end and free. */
void cost_calibrate_free(struct calibration *cal);

/* Probe @p of @t: estimated ns per call (one entry, one return), with the parts named. */
double cost_probe(const struct hit_costs *c, const struct target *t, const struct rprobe *p,
		  struct probe_cost *out);

/*
 * The overhead of tracing, one figure: the job's extra CPU time caused by the probes over the
 * CPU time it would have used untraced (its CPU time traced minus that extra), in percent. The
 * extra is the probes' hits times their per-hit costs (measured here, again every
 * COST_RECAL_S while tracing: they drift on VMs); the CPU time is the job's own clock.
 * The figure divides by what is left of the job: its relative error is the per-hit costs' (here
 * 10-25 % against the job's own calls, docs/performance.md) over 1 - share, so where the probes
 * take more than COST_KNOWN_SHARE of the job's CPU time (above 200 %) it is off by more than
 * it says (a 25 % error: 200 % may be 113 % or 500 %; at 95 % of the CPU time it read 10000 %,
 * a cap): the figure is unknown, not a number, and the share is said instead. Unknown too
 * without a reading of the job's CPU clock.
 */
struct overhead {
	bool known;		/* pct is the figure */
	double pct;		/* extra / (cpu - extra), %; 0 when not known */
	double share;		/* extra / cpu, %: the probes' share of the job's CPU time; < 0
				 * without a CPU reading */
	double extra_ns, cpu_ns;
};
#define COST_KNOWN_SHARE	(2.0 / 3)
/* The figure from @extra_ns of probe time in @cpu_ns of the job's CPU time (< 0: no reading). */
struct overhead cost_overhead(double extra_ns, double cpu_ns);
/* "~12%" or "unknown", into @buf. */
const char *cost_overhead_str(const struct overhead *o, char *buf, size_t len);

struct spyre_counters;

/*
 * The probes' cost while tracing, updated once per status interval from the hit counters and
 * the job's CPU clock: hits/s per probe and the overhead (cost_overhead) of the last interval
 * and of the whole run. Per-hit costs come from @cal (cost_calibrate_start) when set: its
 * newest measurement at each update.
 */
/* A traced process whose CPU time counts, and its clock when last read. */
struct cost_job {
	int pid;		/* 0: gone (its clock could not be read) */
	uint64_t last;
};

struct cost_meter {
	struct hit_costs costs;
	/*
	 * The jobs: the traced process, and (-a, -f, cost_meter_watch) each process that brought
	 * a traced call. Their CPU time summed since each was first read is the meter's clock.
	 */
	struct cost_job *jobs;
	int njobs, jcap;
	bool clock_ok;		/* a job's clock was read at least once */
	uint64_t clock;		/* their CPU time, ns, summed (stays when they go) */
	int n;			/* probes known so far */
	double *ns;		/* per probe: estimated ns per call (cost_probe) */
	uint64_t *last_hits;	/* hits at the last update */
	double *rate;		/* hits/s over the last interval */
	double *iv_ns;		/* estimated probe time in the last interval */
	uint64_t start_ns, last_ns, last_cpu;	/* last_cpu: @clock at the last update */
	struct calibration *cal;	/* per-hit costs measured again while tracing, or NULL */
	unsigned int cal_gen;	/* the last measurement taken from @cal */
	int recals;		/* measurements taken from @cal while tracing */
	struct overhead iv;	/* the last interval's (share < 0 before the first) */
	double probe_ns, cpu_ns;	/* sums over the intervals with a CPU reading: hits */
	double charged_ns;		/* charged by cost_meter_charge (see cost_meter_extra) */
	bool cpu_read;		/* there was such an interval */
	uint64_t sampled_ns;	/* the jobs' clocks last read (CLOCK_MONOTONIC) */
};

/*
 * Start measuring process @pid (-1: none yet; without a job, no CPU clock and no overhead) now,
 * with per-hit costs @c.
 */
void cost_meter_init(struct cost_meter *m, const struct hit_costs *c, int pid);
/*
 * Process @pid's CPU time counts from now on too (once): 0, -ESRCH (no such process: its clock
 * cannot be read) or -ENOMEM. In fleet mode (-a) these are the processes that map the runtime
 * at a scan, and those that brought a traced call. Each job's time counts from its first
 * reading, so its hits before that weigh against none of its time: the figure errs high.
 */
int cost_meter_watch(struct cost_meter *m, int pid);
/*
 * Start again now (a fleet window's attach), with @pid and the jobs of before that are still
 * alive: a window's jobs are mostly the last one's, and each weighs from the attach on.
 */
void cost_meter_restart(struct cost_meter *m, const struct hit_costs *c, int pid);
/* Hits @k of @t's probes (summed over CPUs) at this moment: rates and overhead. -ENOMEM. */
int cost_meter_update(struct cost_meter *m, const struct target *t,
		      const struct spyre_counters *k);
/*
 * Read the jobs' CPU clocks, at most every COST_SAMPLE_MS (it is called every drain, ~10 ms):
 * when a job exits, its clock goes with it, and its time counts as of the last reading. Only
 * that last reading matters between updates, so a job's exit loses at most COST_SAMPLE_MS of
 * its CPU time from the figure; each reading is two syscalls a job (-a with 32 jobs: ~6,400/s
 * read every drain, ~640/s so).
 */
#define COST_SAMPLE_MS	100
void cost_meter_sample(struct cost_meter *m);
/*
 * THE overhead figure, for everything that shows one (status line, advice, summary, trace
 * metadata, Prometheus file): of the last interval (@whole_run false) or of the whole run.
 */
struct overhead cost_meter_overhead(const struct cost_meter *m, bool whole_run);
/*
 * The whole run's figure as of now, without ending the interval: the hits since the last update
 * at the current per-hit costs, the job's CPU clock read now (--max-overhead's budget ticks).
 */
struct overhead cost_meter_peek(struct cost_meter *m, const struct target *t,
			       const struct spyre_counters *k);
/*
 * The job's CPU time that tracing costs beyond the probes' hits (a --max-overhead window's
 * switch, budget.h): in the run's figure from now on, as far as the job's CPU clock allows
 * (cost_meter_extra).
 */
void cost_meter_charge(struct cost_meter *m, double ns);
/*
 * The run's extra CPU time: the hits' estimate, @hits_ns, and the charges, at most the job's
 * CPU time beyond the hits' (@cpu_ns; < 0: not read). A switch's cost lands in the job's CPU
 * clock like a trap's, so it cannot be more than the clock grew: a job that waits while the
 * probes come and go pays next to nothing (charged in full, the first window's 200 ms alone
 * made an idle job's figure "too high to measure" and paused the probes before it woke).
 */
double cost_meter_extra(const struct cost_meter *m, double hits_ns, double cpu_ns);
/* What the run's figure counts of the charges (cost_meter_extra), ns. */
double cost_meter_charge_counted(const struct cost_meter *m);
/* ", ~12% overhead (top: a 12.1k/s, b 310/s)" for the status line, into @buf. */
const char *cost_meter_status(const struct cost_meter *m, const struct target *t, char *buf,
			      size_t len);
void cost_meter_free(struct cost_meter *m);

#endif
