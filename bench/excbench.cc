// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * excbench: what a C++ exception thrown through a traced call costs. Calls exc_call() of
 * libexc.so (bench/exclib.cc) in a timed loop, in batches that alternate between calls that
 * return normally and calls whose callee throws (caught here, around the call): a tracer on
 * exc_call shows its cost per call and per throw + catch, measured under the same load.
 * Same handshake as callbench: --ready-file, then each SIGUSR1 runs one phase and writes
 * RESULT.<phase>, a key=value line: the calling thread's CPU time per normal call and per
 * throw + catch (medians over repetitions), the exceptions caught and a checksum (the bench
 * compares them with the count of calls made: a tracer must change neither).
 */
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <unistd.h>
#include <vector>
#include "benchio.h"

extern "C" uint64_t exc_call(uint64_t a, uint64_t b, int bad);

namespace excbench {
struct bench_error {
	uint64_t v;
};
}

static uint64_t clk(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

struct share {
	int bad;
	uint64_t n = 0, cpu = 0, batch = 1, caught = 0;
};

/* one batch of calls; the throwing ones are caught around each call, as a caller would */
static uint64_t batch(share &s, uint64_t &sum)
{
	uint64_t t = clk(CLOCK_MONOTONIC), c = clk(CLOCK_THREAD_CPUTIME_ID);

	for (uint64_t i = 0; i < s.batch; i++) {
		try {
			sum += exc_call(i, s.n + i, s.bad);
		} catch (const excbench::bench_error &e) {
			sum += e.v;
			s.caught++;
		}
	}
	s.cpu += clk(CLOCK_THREAD_CPUTIME_ID) - c;
	s.n += s.batch;
	return clk(CLOCK_MONOTONIC) - t;
}

static double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v.empty() ? 0 : v[v.size() / 2];
}

/*
 * REPS+1 repetitions of REP_MS (the first a warm-up), batches of normal and throwing calls
 * alternating, each batch grown to ~1/64 of the repetition (see callbench.c).
 */
static void run_phase(int phase, int reps, int rep_ms, char *out, size_t outlen)
{
	std::vector<double> normal, thrown;
	uint64_t rep_ns = rep_ms * 1000000ull, sum = 0, calls = 0, throws = 0, caught = 0;

	for (int r = 0; r <= reps; r++) {
		share sh[2];
		uint64_t t = 0;

		sh[0].bad = 0;
		sh[1].bad = 1;
		for (int k = 0; t < rep_ns; k ^= 1) {
			uint64_t d = batch(sh[k], sum);

			t += d;
			if (d * 64 < rep_ns && sh[k].batch < (1u << 20))
				sh[k].batch *= 2;
		}
		if (r) {
			normal.push_back((double)sh[0].cpu / sh[0].n);
			thrown.push_back((double)sh[1].cpu / sh[1].n);
		}
		calls += sh[0].n + sh[1].n;
		throws += sh[1].n;
		caught += sh[1].caught;
	}
	snprintf(out, outlen, "phase=%d reps=%d normal_cpu_ns=%.3f throw_cpu_ns=%.3f calls=%llu "
		 "throws=%llu caught=%llu sum=%llu\n", phase, reps, median(normal), median(thrown),
		 (unsigned long long)calls, (unsigned long long)throws,
		 (unsigned long long)caught, (unsigned long long)sum);
}

struct opts {
	int reps, rep_ms;
};

static void serve_run(int phase, char *line, size_t len, void *arg)
{
	const opts *o = static_cast<const opts *>(arg);

	run_phase(phase, o->reps, o->rep_ms, line, len);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "reps", required_argument, NULL, 'r' },
		{ "rep-ms", required_argument, NULL, 'm' },
		{ "ready-file", required_argument, NULL, 'R' },
		{ "result", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *ready = NULL, *result = NULL;
	struct opts o = { 15, 40 };
	char line[1024];
	int c;
	sigset_t set;

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			o.reps = atoi(optarg);
			break;
		case 'm':
			o.rep_ms = atoi(optarg);
			break;
		case 'R':
			ready = optarg;
			break;
		case 'o':
			result = optarg;
			break;
		default:
			fprintf(c == 'h' ? stdout : stderr,
				"usage: excbench [--reps R] [--rep-ms M] [--ready-file F] [--result F]\n"
				"Each SIGUSR1 runs one phase and writes F.<phase>; SIGTERM or SIGINT ends.\n"
				"Without --result, runs one phase at once and prints it.\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind != argc || o.reps < 1 || o.rep_ms < 1)
		return 2;
	if (!result) {
		run_phase(1, o.reps, o.rep_ms, line, sizeof(line));
		fputs(line, stdout);
		return 0;
	}
	block_phase_signals(&set);
	/* one normal call and one throw before ready: PLT bound, unwind tables read */
	run_phase(0, 1, 1, line, sizeof(line));
	return serve_phases("excbench", &set, ready, result, serve_run, &o);
}
