// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "attach/cost.h"
#include "attach/feat.h"
#include "stream/spyre_event_user.h"
#include "resolve/resolve.h"
#include "attach/umulti.h"
#include "common/util.h"
#include "common/parallel.h"
#include "attach/warm.h"

/*
 * Our programs on top of the kernel's empty probes: 1.04-1.05x with return sites, 1.11-1.13x
 * with uretprobes (docs/performance.md, section 1): one factor for both.
 */
#define OUR_PROGRAMS	1.08

void cost_defaults(struct hit_costs *c)
{
	/*
	 * docs/performance.md, the VM of 2026-12-04: an empty uprobe on push ~5 µs (by hand with
	 * emptyprobe); on endbr64 (+ uretprobe) 20-25 µs; entry + return-site pair 28.9 µs, so
	 * ~24 µs for the single-stepped ret; uretprobe pair 7.3 µs, so ~2.3 µs for its return.
	 */
	c->emulated_ns = 5000;
	c->stepped_ns = 22000;
	c->uret_ns = 2300;
	c->calibrated = false;
}

double cost_probe(const struct hit_costs *c, const struct target *t, const struct rprobe *p,
		  struct probe_cost *out)
{
	enum probe_type type = t->table->specs[p->spec].type;
	struct probe_cost pc = { .ret = "none" };
	double ret = 0, entry;
	bool ret_insn = false;

	if (p->insn == INSN_EMULATED) {
		entry = c->emulated_ns;
		pc.entry = "emulated";
	} else if (p->entry.len && c->rets_emulated) {
		/* a mov or lea the entry program does (resolve/entryinsn.h): no single step */
		entry = c->emulated_ns;
		pc.entry = "mov/lea done by BPF";
	} else {
		/* not classified (not x86-64): priced as the dearer kind */
		entry = c->stepped_ns;
		pc.entry = p->insn == INSN_SINGLESTEP ? "single-stepped" :
			   "unknown, priced single-stepped";
	}
	if (type == PROBE_SPAN && p->ret == RET_URETPROBE) {
		ret = c->uret_ns;
		pc.ret = "uretprobe";
	} else if (type == PROBE_SPAN && p->ret == RET_SITES) {
		for (int k = 0; k < p->sites.n; k++)
			ret_insn |= !p->sites.v[k].jump;
		/*
		 * A call leaves through one site: a return instruction, single-stepped on x86
		 * (elsewhere not known: priced so too), else a tail jump, emulated
		 */
		ret = ret_insn && !c->rets_emulated ? c->stepped_ns : c->emulated_ns;
		pc.ret = !ret_insn ? "emulated tail jump" : c->rets_emulated ?
			 "ret done by BPF" : "single-stepped ret";
		/*
		 * A followed tail jump (and no ret of its own): the jump, then the return of
		 * the function it reached, single-stepped. That return site is also hit by
		 * every other call of that function, traced or not: `list` says so, the
		 * estimate here is per call of this probe.
		 */
		if (!ret_insn && p->tail_followed) {
			ret += c->rets_emulated ? c->emulated_ns : c->stepped_ns;
			pc.ret = c->rets_emulated ?
				 "emulated tail jump + ret of the tail-called function done by BPF" :
				 "emulated tail jump + single-stepped ret of the tail-called function";
		}
	} else if (type == PROBE_SPAN) {
		pc.ret = "none (entries only)";
	}
	pc.ns = (entry + ret) * OUR_PROGRAMS;
	if (out)
		*out = pc;
	return pc.ns;
}

struct overhead cost_overhead(double extra_ns, double cpu_ns)
{
	struct overhead o = { .share = -1, .extra_ns = extra_ns, .cpu_ns = cpu_ns };

	if (cpu_ns < 0)
		return o;
	if (extra_ns < 0)
		extra_ns = o.extra_ns = 0;
	/* no CPU time and no probe time: the job did nothing, tracing added nothing */
	o.share = cpu_ns > 0 ? 100 * extra_ns / cpu_ns : extra_ns > 0 ? 100 : 0;
	if (o.share > 100 * COST_KNOWN_SHARE)
		return o;
	o.known = true;
	o.pct = extra_ns > 0 ? 100 * extra_ns / (cpu_ns - extra_ns) : 0;
	return o;
}

const char *cost_overhead_str(const struct overhead *o, char *buf, size_t len)
{
	if (o->known)
		snprintf(buf, len, "~%.0f%%", o->pct);
	else
		snprintf(buf, len, "unknown");
	return buf;
}

/*
 * The CPU time (user + system, ns) process @pid has used, into @ns: false when it cannot be
 * read (a process that has not run yet has used 0).
 */
static bool process_cpu_ns(int pid, uint64_t *ns)
{
	struct timespec ts;
	clockid_t clk;

	/* the scheduler's own count, in ns: /proc/PID/stat has 10 ms ticks */
	if (pid <= 0 || clock_getcpuclockid(pid, &clk) || clock_gettime(clk, &ts))
		return false;
	*ns = ts.tv_sec * 1000000000ull + ts.tv_nsec;
	return true;
}

int cost_meter_watch(struct cost_meter *m, int pid)
{
	struct cost_job *j;
	uint64_t cpu;

	if (pid <= 0)
		return -ESRCH;
	for (int i = 0; i < m->njobs; i++)
		if (m->jobs[i].pid == pid)
			return 0;
	if (!process_cpu_ns(pid, &cpu))
		return -ESRCH;	/* gone already: nothing of it to weigh */
	if (m->njobs == m->jcap) {
		j = realloc(m->jobs, (m->jcap ? 2 * m->jcap : 4) * sizeof(*j));
		if (!j)
			return -ENOMEM;
		m->jobs = j;
		m->jcap = m->jcap ? 2 * m->jcap : 4;
	}
	m->jobs[m->njobs++] = (struct cost_job){ .pid = pid, .last = cpu };
	m->clock_ok = true;
	return 0;
}

/*
 * The jobs' CPU time so far (@m->clock), read now: false while there is no job. A pid that
 * reads less than before is another process by now: it counts from this reading.
 */
static bool meter_clock(struct cost_meter *m, uint64_t *cpu)
{
	m->sampled_ns = now_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < m->njobs; i++) {
		struct cost_job *j = &m->jobs[i];
		uint64_t now;

		if (!j->pid)
			continue;
		if (!process_cpu_ns(j->pid, &now)) {
			j->pid = 0;	/* gone: its time counts as of the last reading */
			continue;
		}
		if (now >= j->last)
			m->clock += now - j->last;
		j->last = now;
	}
	*cpu = m->clock;
	return m->clock_ok;
}

void cost_meter_init(struct cost_meter *m, const struct hit_costs *c, int pid)
{
	memset(m, 0, sizeof(*m));
	m->costs = *c;
	m->iv = cost_overhead(0, -1);
	m->start_ns = m->last_ns = now_ns(CLOCK_MONOTONIC);
	cost_meter_watch(m, pid);
}

void cost_meter_restart(struct cost_meter *m, const struct hit_costs *c, int pid)
{
	struct cost_job *jobs = m->jobs;
	int n = m->njobs;

	m->jobs = NULL;
	cost_meter_free(m);
	cost_meter_init(m, c, pid);
	for (int i = 0; i < n; i++)
		if (jobs[i].pid)
			cost_meter_watch(m, jobs[i].pid);
	free(jobs);
}

/* Room for @n probes (the rescan adds some); new ones priced at once. */
static int meter_grow(struct cost_meter *m, const struct target *t, int n)
{
	double *ns, *rate, *iv;
	uint64_t *last;

	if (n <= m->n)
		return 0;
	ns = realloc(m->ns, n * sizeof(*ns));
	if (ns)
		m->ns = ns;
	rate = realloc(m->rate, n * sizeof(*rate));
	if (rate)
		m->rate = rate;
	iv = realloc(m->iv_ns, n * sizeof(*iv));
	if (iv)
		m->iv_ns = iv;
	last = realloc(m->last_hits, n * sizeof(*last));
	if (last)
		m->last_hits = last;
	if (!ns || !rate || !iv || !last)
		return -ENOMEM;
	for (int i = m->n; i < n; i++) {
		m->ns[i] = cost_probe(&m->costs, t, &t->probes[i], NULL);
		m->rate[i] = m->iv_ns[i] = 0;
		m->last_hits[i] = 0;
	}
	m->n = n;
	return 0;
}

void cost_meter_sample(struct cost_meter *m)
{
	uint64_t cpu;

	if (now_ns(CLOCK_MONOTONIC) - m->sampled_ns >= COST_SAMPLE_MS * 1000000ull)
		meter_clock(m, &cpu);
}

int cost_meter_update(struct cost_meter *m, const struct target *t,
		      const struct spyre_counters *k)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC), cpu;
	bool read = meter_clock(m, &cpu);
	double dt = (now - m->last_ns) / 1e9, sum = 0;
	int err = meter_grow(m, t, t->cnt);

	if (err)
		return err;
	if (dt <= 0)
		return 0;
	/* per-hit costs measured again meanwhile: the whole interval at the new ones */
	if (cost_calibrate_poll(m->cal, &m->costs, &m->cal_gen)) {
		m->recals++;
		for (int i = 0; i < m->n; i++)
			m->ns[i] = cost_probe(&m->costs, t, &t->probes[i], NULL);
	}
	for (int i = 0; i < m->n; i++) {
		uint64_t d = k[i].hits >= m->last_hits[i] ? k[i].hits - m->last_hits[i] : 0;

		m->rate[i] = d / dt;
		m->iv_ns[i] = d * m->ns[i];
		m->last_hits[i] = k[i].hits;
		sum += m->iv_ns[i];
	}
	/* a job gone: its CPU time when last seen, at most a drain interval old */
	if (read) {
		m->iv = cost_overhead(sum, cpu - m->last_cpu);
		m->probe_ns += sum;
		m->cpu_ns += cpu - m->last_cpu;
		m->cpu_read = true;
	} else {
		m->iv = cost_overhead(sum, -1);
	}
	m->last_cpu = cpu;
	m->last_ns = now;
	return 0;
}

void cost_meter_charge(struct cost_meter *m, double ns)
{
	m->charged_ns += ns;
}

double cost_meter_extra(const struct cost_meter *m, double hits_ns, double cpu_ns)
{
	double room = cpu_ns - hits_ns;

	if (cpu_ns < 0)
		return hits_ns + m->charged_ns;
	return hits_ns + (room <= 0 ? 0 : m->charged_ns < room ? m->charged_ns : room);
}

struct overhead cost_meter_peek(struct cost_meter *m, const struct target *t,
			       const struct spyre_counters *k)
{
	uint64_t cpu;
	bool read = meter_clock(m, &cpu);
	double extra = m->probe_ns, cpu_ns;

	if (meter_grow(m, t, t->cnt))
		return cost_overhead(0, -1);
	for (int i = 0; i < m->n; i++)
		if (k[i].hits > m->last_hits[i])
			extra += (k[i].hits - m->last_hits[i]) * m->ns[i];
	if (!read)
		return cost_overhead(cost_meter_extra(m, extra, -1), -1);
	cpu_ns = m->cpu_ns + (cpu - m->last_cpu);
	return cost_overhead(cost_meter_extra(m, extra, cpu_ns), cpu_ns);
}

struct overhead cost_meter_overhead(const struct cost_meter *m, bool whole_run)
{
	double cpu_ns = m->cpu_read ? m->cpu_ns : -1;

	if (!whole_run)
		return m->iv;
	return cost_overhead(cost_meter_extra(m, m->probe_ns, cpu_ns), cpu_ns);
}

double cost_meter_charge_counted(const struct cost_meter *m)
{
	return cost_meter_overhead(m, true).extra_ns - m->probe_ns;
}

/* qsort_r over probe indexes: the meter's last interval, dearest first */
static int by_iv_desc(const void *a, const void *b, void *arg)
{
	const struct cost_meter *m = arg;
	double x = m->iv_ns[*(const int *)a], y = m->iv_ns[*(const int *)b];

	if (x != y)
		return x < y ? 1 : -1;
	return *(const int *)a - *(const int *)b;
}

/* Indexes of the probes that cost something in the last interval, dearest first. */
static int hottest(const struct cost_meter *m, int *order)
{
	int n = 0;

	for (int i = 0; i < m->n; i++)
		if (m->iv_ns[i] > 0)
			order[n++] = i;
	qsort_r(order, n, sizeof(int), by_iv_desc, (void *)m);
	return n;
}

const char *cost_meter_status(const struct cost_meter *m, const struct target *t, char *buf,
			      size_t len)
{
	int *order = m->n ? malloc(m->n * sizeof(int)) : NULL, n = 0;
	size_t off = 0;

	char pct[32];

	if (len)
		buf[0] = 0;
	/* no job CPU clock (-a: many jobs): no figure to give, nothing said */
	if (m->iv.known)
		off += snprintf(buf, len, ", %s overhead", cost_overhead_str(&m->iv, pct,
									 sizeof(pct)));
	else if (m->iv.share >= 0)
		off += snprintf(buf, len, ", overhead unknown (probes ~%.0f%% of the job's CPU)",
				m->iv.share);
	else if (m->njobs)
		off += snprintf(buf, len, ", overhead unknown (no CPU reading)");
	if (order)
		n = hottest(m, order);
	/* the three that cost the most */
	for (int j = 0; j < n && j < 3 && off < len; j++)
		off += snprintf(buf + off, len - off, "%s%s %.0f/s", j ? ", " : " (top: ",
				t->probes[order[j]].name, m->rate[order[j]]);
	if (n && off < len)
		snprintf(buf + off, len - off, ")");
	free(order);
	return buf;
}

void cost_meter_free(struct cost_meter *m)
{
	free(m->ns);
	free(m->rate);
	free(m->iv_ns);
	free(m->last_hits);
	free(m->jobs);
	memset(m, 0, sizeof(*m));
}

/* ---- calibration ---------------------------------------------------------------------------- */

#if defined(__x86_64__)
/*
 * Four copies of one function, each on a cache line of its own; what differs is the probe on
 * it: none (the baseline), an entry uprobe on push (emulated), a uprobe on ret (single-stepped,
 * as at a return site), and an entry + uretprobe pair. Written in assembly so that the
 * instructions under the probes are exactly these.
 */
__asm__(".pushsection .text\n"
	".p2align 6\n"
	"spyre_calib_base:\n\tpush %rbp\n\tpop %rbp\n\tret\n"
	".p2align 6\n"
	"spyre_calib_emul:\n\tpush %rbp\n\tpop %rbp\n\tret\n"
	".p2align 6\n"
	"spyre_calib_step:\n\tpush %rbp\n\tpop %rbp\n\tret\n"
	".p2align 6\n"
	"spyre_calib_uret:\n\tpush %rbp\n\tpop %rbp\n\tret\n"
	".popsection\n");
void spyre_calib_base(void);
void spyre_calib_emul(void);
void spyre_calib_step(void);
void spyre_calib_uret(void);
#define CALIB_RET_OFF	2	/* push %rbp (1 byte), pop %rbp (1 byte), ret */
#endif

/* Rounds of the four functions in turn; calls per function and round. */
#define CALIB_ROUNDS	9
#define CALIB_CALLS	40
/* measurements while tracing whose median is used */
#define CALIB_KEEP	5

struct calibration {
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;		/* the first measurement (or the defaults) is in @c */
	bool stop;		/* cost_calibrate_free: no more measurements */
	unsigned int gen;	/* measurements published so far */
	struct hit_costs c;
};

#if defined(__x86_64__)
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Thread CPU time of @n calls of @fn, per call: what the kernel charges the caller. */
static double per_call_ns(void (*fn)(void), int n)
{
	uint64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);

	for (int i = 0; i < n; i++)
		fn();
	return (double)(now_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / n;
}

/*
 * Medians over rounds of each probed function's time minus the baseline's in the same round:
 * this VM's other guests and builds move absolute times by 10-30 % from one moment to the next.
 */
static void measure(struct hit_costs *c)
{
	void (*fns[4])(void) = { spyre_calib_base, spyre_calib_emul, spyre_calib_step,
				 spyre_calib_uret };
	double d[3][CALIB_ROUNDS];

	per_call_ns(spyre_calib_step, 2);	/* the first hit maps the out-of-line slot page */
	for (int r = 0; r < CALIB_ROUNDS; r++) {
		double t[4];

		for (int k = 0; k < 4; k++)
			t[k] = per_call_ns(fns[k], CALIB_CALLS);
		for (int k = 0; k < 3; k++)
			d[k][r] = t[k + 1] - t[0];
	}
	for (int k = 0; k < 3; k++)
		qsort(d[k], CALIB_ROUNDS, sizeof(double), cmp_double);
	c->emulated_ns = d[0][CALIB_ROUNDS / 2];
	c->stepped_ns = d[1][CALIB_ROUNDS / 2];
	c->uret_ns = d[2][CALIB_ROUNDS / 2] - c->emulated_ns;
	/* below what a trap can cost: noise, not a figure */
	if (c->emulated_ns < 50)
		c->emulated_ns = 50;
	if (c->stepped_ns < c->emulated_ns)
		c->stepped_ns = c->emulated_ns;
	if (c->uret_ns < 50)
		c->uret_ns = 50;
	c->calibrated = true;
}

/*
 * Each figure's median over the last @n measurements: one measurement takes ~12 ms, and a
 * moment of the host's load moves it by 5-10 % (two mock runs here: the probe time estimated
 * 3.5 % and 10 % above the CPU time tracing added); the median of the last CALIB_KEEP (the
 * last ~COST_RECAL_S x CALIB_KEEP seconds) follows a drift without following each moment.
 */
static struct hit_costs median_costs(const struct hit_costs *h, int n)
{
	struct hit_costs m = h[0];
	double v[3][CALIB_KEEP];

	for (int k = 0; k < n; k++) {
		v[0][k] = h[k].emulated_ns;
		v[1][k] = h[k].stepped_ns;
		v[2][k] = h[k].uret_ns;
	}
	for (int f = 0; f < 3; f++)
		qsort(v[f], n, sizeof(double), cmp_double);
	m.emulated_ns = n % 2 ? v[0][n / 2] : (v[0][n / 2 - 1] + v[0][n / 2]) / 2;
	m.stepped_ns = n % 2 ? v[1][n / 2] : (v[1][n / 2 - 1] + v[1][n / 2]) / 2;
	m.uret_ns = n % 2 ? v[2][n / 2] : (v[2][n / 2 - 1] + v[2][n / 2]) / 2;
	return m;
}

static void *calib_main(void *arg)
{
	struct calibration *cal = arg;
	struct hit_costs c, hist[CALIB_KEEP];
	unsigned long offs[3];
	char path[PATH_MAX];
	int prog = -1, links[2] = { -1, -1 }, n = 0;

	cost_defaults(&c);
	if (!umulti_supported() ||
	    warm_self_site(spyre_calib_emul, path, sizeof(path), &offs[0]) ||
	    warm_self_site(spyre_calib_step, path, sizeof(path), &offs[1]) ||
	    warm_self_site(spyre_calib_uret, path, sizeof(path), &offs[2]) ||
	    (prog = feat_empty_prog(true)) < 0)
		goto out;
	offs[1] += CALIB_RET_OFF;
	links[0] = umulti_link(prog, path, offs, NULL, 2, false, getpid());
	links[1] = umulti_link(prog, path, &offs[2], NULL, 1, true, getpid());
	if (links[0] >= 0 && links[1] >= 0)
		measure(&c);
out:
	pthread_mutex_lock(&cal->lock);
	cal->c = c;
	cal->done = true;
	cal->gen++;
	pthread_cond_broadcast(&cal->cond);
	/*
	 * Per-hit costs drift on these VMs (the host's load moves a trap's cost: 5.0-6.3 us
	 * emulated, 18.9-22.9 us single-stepped within 20 minutes here): measured again every
	 * COST_RECAL_S, ~12 ms of this thread each time, the probes left on this process's own
	 * functions meanwhile (they cost no other process anything).
	 */
	hist[n++] = c;
	while (c.calibrated && !cal->stop) {
		struct timespec until;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += COST_RECAL_S;
		while (!cal->stop &&
		       pthread_cond_timedwait(&cal->cond, &cal->lock, &until) != ETIMEDOUT)
			;
		if (cal->stop)
			break;
		pthread_mutex_unlock(&cal->lock);
		measure(&c);
		pthread_mutex_lock(&cal->lock);
		hist[n++ % CALIB_KEEP] = c;
		cal->c = median_costs(hist, n < CALIB_KEEP ? n : CALIB_KEEP);
		cal->gen++;
	}
	pthread_mutex_unlock(&cal->lock);
	/* removing uprobes waits for grace periods: after the result, off anyone's path */
	close_parallel(links, 2);
	if (prog >= 0)
		close(prog);
	return NULL;
}
#endif

struct calibration *cost_calibrate_start(void)
{
#if defined(__x86_64__)
	struct calibration *cal;

	if (env_is_1("SPYRE_NO_CALIBRATE"))
		return NULL;
	cal = calloc(1, sizeof(*cal));
	if (!cal)
		return NULL;
	pthread_mutex_init(&cal->lock, NULL);
	cond_init_monotonic(&cal->cond);
	/* no signal for this thread: the tracer takes them from a signalfd */
	if (thread_start_nosig(&cal->th, calib_main, cal)) {
		pthread_cond_destroy(&cal->cond);
		pthread_mutex_destroy(&cal->lock);
		free(cal);
		return NULL;
	}
	return cal;
#else
	return NULL;
#endif
}

void cost_calibrate_result(struct calibration *cal, struct hit_costs *c)
{
	struct timespec until;

	cost_defaults(c);
	if (!cal)
		return;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += 2;
	pthread_mutex_lock(&cal->lock);
	while (!cal->done && pthread_cond_timedwait(&cal->cond, &cal->lock, &until) != ETIMEDOUT)
		;
	if (cal->done) {
		bool emulated = c->rets_emulated;	/* how returns are done: not measured */

		*c = cal->c;
		c->rets_emulated = emulated;
	}
	pthread_mutex_unlock(&cal->lock);
}

bool cost_calibrate_poll(struct calibration *cal, struct hit_costs *c, unsigned int *gen)
{
	bool newer;

	if (!cal)
		return false;
	pthread_mutex_lock(&cal->lock);
	newer = cal->done && cal->gen != *gen;
	if (newer) {
		bool emulated = c->rets_emulated;	/* how returns are done: not measured */

		*c = cal->c;
		c->rets_emulated = emulated;
		*gen = cal->gen;
	}
	pthread_mutex_unlock(&cal->lock);
	return newer;
}

void cost_calibrate_free(struct calibration *cal)
{
	if (!cal)
		return;
	pthread_mutex_lock(&cal->lock);
	cal->stop = true;
	pthread_cond_broadcast(&cal->cond);
	pthread_mutex_unlock(&cal->lock);
	pthread_join(cal->th, NULL);
	pthread_cond_destroy(&cal->cond);
	pthread_mutex_destroy(&cal->lock);
	free(cal);
}
