// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * callbench: calls bench_call() of a shared library (bench/benchlib.c) in a timed loop, so a
 * tracer attached to that library shows its cost per call. One process serves several
 * measurements: each SIGUSR1 runs one phase and writes RESULT.<phase>, and between phases the
 * bench attaches or detaches tracers. Same handshake as the mock job (--ready-file, --wait-go).
 *
 * Timed phase (default): every thread runs REPS+1 repetitions of at least REP_MS each (the first
 * is a warm-up and is not counted); a repetition's cost is its elapsed time / its calls. The
 * phase reports the median over threads x repetitions, so one preempted repetition on a shared
 * VM moves nothing.
 * Count phase (--calls N[,N...]): exactly N calls split over the threads (the list is indexed by
 * phase, its last value repeats); reports elapsed time and calls/s.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "benchio.h"

uint64_t bench_call(uint64_t a, uint64_t b);
uint64_t bench_ref(uint64_t a, uint64_t b);

#define MAX_THREADS	64
#define MAX_REPS	1000
#define MAX_COUNTS	16

struct opts {
	int threads;
	int reps;
	int rep_ms;
	bool interleave;
	long long counts[MAX_COUNTS];
	int ncounts;
	const char *ready_file;
	const char *result;
};

struct worker {
	pthread_t th;
	const struct opts *o;
	long long calls;	/* count phase: calls to make */
	uint64_t elapsed_ns;
	uint64_t done;		/* calls made */
	double per_call[MAX_REPS + 1];
	double cpu_per_call[MAX_REPS + 1];
	double ref_per_call[MAX_REPS + 1];	/* --interleave: bench_ref's */
	double ref_cpu_per_call[MAX_REPS + 1];
	uint64_t sink;
};

static pthread_barrier_t start_barrier;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * The thread's own CPU time: on a shared VM the wall clock also counts the time the
 * hypervisor ran someone else (steal) and preemptions, the thread's CPU clock does not; a
 * probe's cost (trap, handler, BPF programs) is CPU time of the probed thread either way.
 */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* One function's share of a repetition. */
struct share {
	uint64_t (*fn)(uint64_t, uint64_t);
	uint64_t n, wall, cpu, batch;
};

/*
 * One repetition: batches of the @nfn functions alternate until it is over, each batch grown
 * until it is ~1/64 of the repetition (the clocks are read rarely when a call costs 2 ns, and
 * the repetition still ends on time at 30 µs). The times are taken around each batch.
 */
static uint64_t run_rep(struct share *sh, int nfn, uint64_t rep_ns)
{
	uint64_t t0 = now_ns(), t = t0, sink = 0;

	for (int k = 0; t - t0 < rep_ns; k = (k + 1) % nfn) {
		struct share *x = &sh[k];
		uint64_t c = cpu_ns(), b = now_ns();

		for (uint64_t i = 0; i < x->batch; i++)
			sink += x->fn(i, x->n);
		t = now_ns();
		x->cpu += cpu_ns() - c;
		x->wall += t - b;
		x->n += x->batch;
		if ((t - b) * 64 < rep_ns && x->batch < (1u << 20))
			x->batch *= 2;
	}
	return sink;
}

/*
 * Timed repetitions of bench_call, or with --interleave of bench_call and bench_ref in
 * alternating batches: a tracer on one and the empty pair on the other are then measured under
 * the same load, milliseconds apart (on a shared VM the same phase run seconds later can cost
 * 25 % more, which swamps a ratio of two phases).
 */
static void *timed_worker(void *arg)
{
	struct worker *w = arg;
	uint64_t rep_ns = w->o->rep_ms * 1000000ull, sink = 0;
	int nfn = w->o->interleave ? 2 : 1;

	pthread_barrier_wait(&start_barrier);
	for (int r = 0; r <= w->o->reps; r++) {
		struct share sh[2] = { { .fn = bench_call, .batch = 1 },
				       { .fn = bench_ref, .batch = 1 } };

		sink += run_rep(sh, nfn, rep_ns);
		w->per_call[r] = (double)sh[0].wall / sh[0].n;
		w->cpu_per_call[r] = (double)sh[0].cpu / sh[0].n;
		if (nfn == 2) {
			w->ref_per_call[r] = (double)sh[1].wall / sh[1].n;
			w->ref_cpu_per_call[r] = (double)sh[1].cpu / sh[1].n;
		}
		w->done += sh[0].n + sh[1].n;
	}
	w->sink = sink;
	return NULL;
}

static void *count_worker(void *arg)
{
	struct worker *w = arg;
	uint64_t t0, sink = 0;

	pthread_barrier_wait(&start_barrier);
	t0 = now_ns();
	for (long long i = 0; i < w->calls; i++)
		sink += bench_call(i, sink);
	w->elapsed_ns = now_ns() - t0;
	w->done = w->calls;
	w->sink = sink;
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* " key=v1,v2,...": what fits of it in @out, its length */
static size_t list(char *out, size_t outlen, const char *key, const double *v, int n)
{
	size_t len = snprintf(out, outlen, "%s", key);

	for (int i = 0; i < n && len < outlen; i++)
		len += snprintf(out + len, outlen - len, "%s%.3f", i ? "," : "", v[i]);
	return len < outlen ? len : outlen - 1;
}

static int run_phase(const struct opts *o, int phase, char *out, size_t outlen)
{
	static struct worker w[MAX_THREADS];
	long long calls = 0;
	uint64_t t0, wall;
	int err = 0;

	memset(w, 0, sizeof(w));
	if (o->ncounts) {
		int k = phase - 1 < o->ncounts ? phase - 1 : o->ncounts - 1;

		calls = o->counts[k];
	}
	pthread_barrier_init(&start_barrier, NULL, o->threads + 1);
	for (int i = 0; i < o->threads; i++) {
		w[i].o = o;
		w[i].calls = calls / o->threads + (i < calls % o->threads);
		err = pthread_create(&w[i].th, NULL, o->ncounts ? count_worker : timed_worker,
				     &w[i]);
		if (err) {
			fprintf(stderr, "callbench: pthread_create: %s\n", strerror(err));
			exit(1);	/* the others wait at the barrier forever: nothing to save */
		}
	}
	t0 = now_ns();
	pthread_barrier_wait(&start_barrier);
	for (int i = 0; i < o->threads; i++)
		pthread_join(w[i].th, NULL);
	wall = now_ns() - t0;
	pthread_barrier_destroy(&start_barrier);

	if (o->ncounts) {
		snprintf(out, outlen, "phase=%d mode=count threads=%d calls=%lld elapsed_ns=%llu "
			 "calls_per_s=%.0f\n", phase, o->threads, calls, (unsigned long long)wall,
			 wall ? calls * 1e9 / wall : 0.0);
	} else {
		static double all[MAX_THREADS * MAX_REPS], cpu[MAX_THREADS * MAX_REPS];
		static double ref[MAX_THREADS * MAX_REPS], ref_cpu[MAX_THREADS * MAX_REPS];
		uint64_t done = 0;
		size_t len;
		int n = 0;

		for (int i = 0; i < o->threads; i++) {
			done += w[i].done;
			for (int r = 1; r <= o->reps; r++) {	/* [0] is the warm-up */
				cpu[n] = w[i].cpu_per_call[r];
				ref[n] = w[i].ref_per_call[r];
				ref_cpu[n] = w[i].ref_cpu_per_call[r];
				all[n++] = w[i].per_call[r];
			}
		}
		/* unsorted first: --interleave pairs bench_call's and bench_ref's repetitions */
		len = snprintf(out, outlen, "phase=%d mode=%s threads=%d reps=%d", phase,
			       o->interleave ? "interleave" : "timed", o->threads, o->reps);
		if (o->interleave) {
			len += list(out + len, outlen - len, " rep_cpu_ns=", cpu, n);
			len += list(out + len, outlen - len, " ref_rep_cpu_ns=", ref_cpu, n);
			qsort(ref, n, sizeof(ref[0]), cmp_double);
			qsort(ref_cpu, n, sizeof(ref_cpu[0]), cmp_double);
			len += snprintf(out + len, outlen - len, " ref_median_ns=%.3f "
					"ref_cpu_median_ns=%.3f", ref[n / 2], ref_cpu[n / 2]);
		}
		qsort(all, n, sizeof(all[0]), cmp_double);
		qsort(cpu, n, sizeof(cpu[0]), cmp_double);
		snprintf(out + len, outlen - len, " median_ns=%.3f min_ns=%.3f max_ns=%.3f "
			 "cpu_median_ns=%.3f cpu_min_ns=%.3f calls=%llu elapsed_ns=%llu\n",
			 all[n / 2], all[0], all[n - 1], cpu[n / 2], cpu[0],
			 (unsigned long long)done, (unsigned long long)wall);
	}
	return 0;
}

static void serve_run(int phase, char *line, size_t len, void *o)
{
	run_phase(o, phase, line, len);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: callbench [--threads T] [--reps R] [--rep-ms M] [--calls N[,N...]]\n"
		"                 [--interleave] [--ready-file F] [--result F]\n"
		"Each SIGUSR1 runs one phase and writes F.<phase> (key=value line); SIGTERM or SIGINT\n"
		"ends. Without --result, runs one phase at once and prints it.\n");
}

static int parse_counts(struct opts *o, const char *s)
{
	char *end;

	o->ncounts = 0;
	while (*s && o->ncounts < MAX_COUNTS) {
		long long v = strtoll(s, &end, 10);

		if (end == s || v <= 0)
			return -EINVAL;
		o->counts[o->ncounts++] = v;
		if (*end == ',')
			end++;
		else if (*end)
			return -EINVAL;
		s = end;
	}
	return o->ncounts ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "reps", required_argument, NULL, 'r' },
		{ "rep-ms", required_argument, NULL, 'm' },
		{ "calls", required_argument, NULL, 'n' },
		{ "interleave", no_argument, NULL, 'i' },
		{ "ready-file", required_argument, NULL, 'R' },
		{ "result", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct opts o = { .threads = 1, .reps = 15, .rep_ms = 40 };
	char line[16384];
	sigset_t set;
	int c;

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 't':
			o.threads = atoi(optarg);
			break;
		case 'r':
			o.reps = atoi(optarg);
			break;
		case 'm':
			o.rep_ms = atoi(optarg);
			break;
		case 'n':
			if (parse_counts(&o, optarg)) {
				fprintf(stderr, "callbench: bad --calls '%s'\n", optarg);
				return 2;
			}
			break;
		case 'i':
			o.interleave = true;
			break;
		case 'R':
			o.ready_file = optarg;
			break;
		case 'o':
			o.result = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || o.threads < 1 || o.threads > MAX_THREADS || o.reps < 1 ||
	    o.reps > MAX_REPS || o.rep_ms < 1) {
		usage(stderr);
		return 2;
	}
	if (!o.result) {
		run_phase(&o, 1, line, sizeof(line));
		fputs(line, stdout);
		return 0;
	}

	block_phase_signals(&set);
	/* one call before ready: the PLT slot is bound and the library's page is in */
	bench_call(1, 2);
	return serve_phases("callbench", &set, o.ready_file, o.result, serve_run, &o);
}
