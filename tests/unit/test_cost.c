// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The per-call cost of a probe from what the kernel does with its instructions, the overhead
 * estimate, and which probes --max-overhead detaches first. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "attach/cost.h"
#include "common/util.h"
#include "resolve/probes.h"
#include "resolve/resolve.h"
#include "stream/spyre_event_user.h"
#include "unit.h"

static const struct hit_costs costs = { .emulated_ns = 1000, .stepped_ns = 10000,
					.uret_ns = 500, .calibrated = true };

TEST(cost_per_call_by_instruction)
{
	struct probe_table tab = {};
	struct target t = { .table = &tab };
	struct ret_site ret = { .off = 8 }, jmp = { .off = 12, .jump = true };
	struct rprobe p[4] = {};
	struct probe_cost pc;
	char err[128];

	CHECK_EQ_INT(probes_parse_text(&tab, "lib f\nlib g type=instant\n", "t", err,
				       sizeof(err)), 0);
	t.probes = p;
	t.cnt = 4;
	/* push; ... ret: emulated entry, single-stepped return */
	p[0].insn = INSN_EMULATED;
	p[0].ret = RET_SITES;
	p[0].sites.v = &ret;
	p[0].sites.n = 1;
	CHECK_EQ_INT((long)cost_probe(&costs, &t, &p[0], &pc), 11880);
	CHECK_STR(pc.entry, "emulated");
	CHECK_STR(pc.ret, "single-stepped ret");
	/* only a tail jump: emulated too */
	p[1] = p[0];
	p[1].insn = INSN_SINGLESTEP;
	p[1].sites.v = &jmp;
	CHECK_EQ_INT((long)cost_probe(&costs, &t, &p[1], &pc), 11880);
	CHECK_STR(pc.entry, "single-stepped");
	CHECK_STR(pc.ret, "emulated tail jump");
	/* ... followed: the tail-called function's ret, single-stepped, on top */
	p[1].tail_followed = 1;
	CHECK_EQ_INT((long)cost_probe(&costs, &t, &p[1], &pc), 22680);
	CHECK(strstr(pc.ret, "single-stepped ret of the tail-called function"));
	/* returns done by BPF (emulated returns): a ret costs what an emulated probe does */
	{
		struct hit_costs e = costs;

		e.rets_emulated = true;
		CHECK_EQ_INT((long)cost_probe(&e, &t, &p[0], &pc), 2160);
		CHECK_STR(pc.ret, "ret done by BPF");
		CHECK_EQ_INT((long)cost_probe(&e, &t, &p[1], &pc), 12960);
		CHECK(strstr(pc.ret, "ret of the tail-called function done by BPF"));
	}
	p[1].tail_followed = 0;
	/* --uretprobes */
	p[2].insn = INSN_EMULATED;
	p[2].ret = RET_URETPROBE;
	CHECK_EQ_INT((long)cost_probe(&costs, &t, &p[2], &pc), 1620);
	/* an instant: its entry only */
	p[3].spec = 1;
	p[3].insn = INSN_SINGLESTEP;
	CHECK_EQ_INT((long)cost_probe(&costs, &t, &p[3], &pc), 10800);
	probes_free(&tab);
}

TEST(cost_overhead_and_budget)
{
	struct probe_table tab = {};
	struct target t = { .table = &tab };
	struct rprobe p[3] = {};
	struct spyre_counters k[3] = {};
	struct cost_meter m;
	char err[128], names[3][8];

	struct overhead o;
	char buf[32];

	/* probe time over what the job would have used without it */
	o = cost_overhead(1e9, 2e9);
	CHECK(o.known);
	CHECK_EQ_INT((long)o.pct, 100);
	CHECK_EQ_INT((long)o.share, 50);
	CHECK_STR(cost_overhead_str(&o, buf, sizeof(buf)), "~100%");
	o = cost_overhead(0, 2e9);
	CHECK(o.known && o.pct == 0);
	/* the job idle, nothing traced: nothing added */
	o = cost_overhead(0, 0);
	CHECK(o.known && o.pct == 0);
	/* two thirds of the job's CPU time in probes: 200 %, the highest figure given */
	o = cost_overhead(6.66e8, 1e9);
	CHECK(o.known);
	CHECK_EQ_INT((long)(o.pct + 0.5), 199);
	/* beyond: unknown, no number (it was a 10000 % cap), the share said instead */
	o = cost_overhead(6.7e8, 1e9);
	CHECK(!o.known && o.pct == 0);
	CHECK_EQ_INT((long)(o.share + 0.5), 67);
	o = cost_overhead(9e8, 1e9);
	CHECK(!o.known && o.pct == 0);
	CHECK_EQ_INT((long)(o.share + 0.5), 90);
	CHECK_STR(cost_overhead_str(&o, buf, sizeof(buf)), "unknown");
	o = cost_overhead(3e9, 2e9);
	CHECK(!o.known);
	o = cost_overhead(1e9, 0);
	CHECK(!o.known);
	/* no reading of the job's CPU clock: unknown, no share */
	o = cost_overhead(1e9, -1);
	CHECK(!o.known && o.share < 0);

	CHECK_EQ_INT(probes_parse_text(&tab, "lib f type=instant\n", "t", err, sizeof(err)), 0);
	t.probes = p;
	t.cnt = 3;
	for (int i = 0; i < 3; i++) {
		p[i].insn = INSN_EMULATED;	/* 1,080 ns per call */
		p[i].attached = true;
		snprintf(names[i], sizeof(names[i]), "p%d", i);
		p[i].name = names[i];
	}
	cost_meter_init(&m, &costs, -1);
	/* no CPU clock: rates, no overhead */
	k[0].hits = 100000;
	k[1].hits = 400000;
	k[2].hits = 10000;
	m.last_ns -= 1000000000;	/* a second ago */
	CHECK_EQ_INT(cost_meter_update(&m, &t, k), 0);
	CHECK(!cost_meter_overhead(&m, false).known);
	CHECK(cost_meter_overhead(&m, false).share < 0);
	CHECK(!cost_meter_overhead(&m, true).known);
	CHECK(m.rate[1] > 390000 && m.rate[1] < 410000);
	/*
	 * --max-overhead's ticks: the hits since the update, priced, on top of the run's; the
	 * interval goes on (peeking twice gives the same)
	 */
	k[1].hits += 1000;
	o = cost_meter_peek(&m, &t, k);
	CHECK(o.share < 0);	/* no CPU clock */
	CHECK_EQ_INT((long)(o.extra_ns + 0.5), (long)(1000 * m.ns[1] + 0.5));
	CHECK_EQ_INT(m.last_hits[1], 400000);
	o = cost_meter_peek(&m, &t, k);
	CHECK_EQ_INT((long)(o.extra_ns + 0.5), (long)(1000 * m.ns[1] + 0.5));
	cost_meter_free(&m);
	/* with this process's own CPU clock: the CPU time since the meter started */
	cost_meter_init(&m, &costs, getpid());
	for (volatile long spin = 0; spin < 20000000; spin++)
		;
	o = cost_meter_peek(&m, &t, k);
	CHECK(o.cpu_ns > 0 && o.share >= 0);
	cost_meter_free(&m);
	probes_free(&tab);
}

/* Spin for about @ms of this thread's CPU time. */
static void spin_cpu(int ms)
{
	struct timespec a, b;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

TEST(cost_meter_weighs_every_watched_job_and_keeps_a_gone_ones_time)
{
	struct probe_table tab = {};
	struct target t = { .table = &tab };
	struct spyre_counters k[1] = {};
	int go[2], done[2], status;
	struct cost_meter m;
	struct overhead o;
	char c = 0;
	pid_t child;

	CHECK_EQ_INT(pipe(go), 0);
	CHECK_EQ_INT(pipe(done), 0);
	child = fork();
	if (child == 0) {	/* a second job: 300 ms of CPU when told, then it waits to be reaped */
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		spin_cpu(300);
		_exit(write(done[1], &c, 1) == 1 ? 0 : 1);
	}
	CHECK(child > 0);
	/* no job: no clock */
	cost_meter_init(&m, &costs, -1);
	o = cost_meter_peek(&m, &t, k);
	CHECK(o.share < 0);
	/* two jobs (-a: the processes that brought calls), each from its first reading */
	CHECK_EQ_INT(cost_meter_watch(&m, getpid()), 0);
	CHECK_EQ_INT(cost_meter_watch(&m, child), 0);
	CHECK_EQ_INT(cost_meter_watch(&m, child), 0);	/* once */
	CHECK_EQ_INT(m.njobs, 2);
	spin_cpu(100);
	CHECK_EQ_INT(write(go[1], &c, 1), 1);
	CHECK_EQ_INT(read(done[0], &c, 1), 1);
	cost_meter_sample(&m);
	/* both: ~100 ms of ours and ~300 ms of the child's */
	o = cost_meter_peek(&m, &t, k);
	CHECK(o.cpu_ns >= 390e6);
	/* the child gone (reaped): its time stays, ours goes on */
	CHECK_EQ_INT(waitpid(child, &status, 0), child);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	spin_cpu(20);
	o = cost_meter_peek(&m, &t, k);
	CHECK(o.cpu_ns >= 410e6);
	CHECK_EQ_INT(m.jobs[1].pid, 0);
	/* a pid that is no process adds nothing */
	CHECK_EQ_INT(cost_meter_watch(&m, child), -ESRCH);
	CHECK_EQ_INT(m.njobs, 2);
	cost_meter_free(&m);
}

/*
 * Every drain asks for a reading; the jobs' clocks are read at most every COST_SAMPLE_MS (two
 * syscalls a job: -a with 32 jobs read every 10 ms drain was ~6,400/s).
 */
TEST(cost_meter_sample_reads_the_clocks_at_most_every_sample_interval)
{
	struct cost_meter m;
	struct timespec nap = { 0, 2000000 };
	uint64_t first;

	cost_meter_init(&m, &costs, getpid());
	cost_meter_sample(&m);
	first = m.sampled_ns;
	CHECK(first > 0);
	for (int i = 0; i < 5; i++) {	/* drains 2 ms apart: no new reading */
		nanosleep(&nap, NULL);
		cost_meter_sample(&m);
	}
	/* unless the machine stalled us past the interval meanwhile */
	if (now_ns(CLOCK_MONOTONIC) - first < COST_SAMPLE_MS * 1000000ull)
		CHECK(m.sampled_ns == first);
	while (now_ns(CLOCK_MONOTONIC) - m.sampled_ns < COST_SAMPLE_MS * 1000000ull)
		nanosleep(&nap, NULL);
	cost_meter_sample(&m);
	CHECK(m.sampled_ns - first >= COST_SAMPLE_MS * 1000000ull);
	cost_meter_free(&m);
}

/*
 * A budget window's switch is charged (cost_meter_charge), but counts at most what the job's
 * CPU clock grew beyond its hits' estimate: an idle job's figure is no "too high to measure".
 */
TEST(cost_meter_switch_charge_bounded_by_the_jobs_cpu_time)
{
	struct cost_meter m;

	cost_meter_init(&m, &costs, -1);
	cost_meter_charge(&m, 200e6);
	CHECK(cost_meter_extra(&m, 0, 0) == 0);			/* idle: nothing */
	CHECK(cost_meter_extra(&m, 10e6, 50e6) == 50e6);	/* 40 ms beyond the hits */
	CHECK(cost_meter_extra(&m, 10e6, 5e6) == 10e6);		/* hits over the clock */
	CHECK(cost_meter_extra(&m, 10e6, 2e9) == 210e6);	/* busy: all of it */
	CHECK(cost_meter_extra(&m, 10e6, -1) == 210e6);		/* no clock: all of it */
	cost_meter_free(&m);
}
