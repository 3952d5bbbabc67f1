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

static int write_atomic(const char *path, const char *text)
{
	char tmp[4096];
	size_t len = strlen(text);
	int fd, err = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		err = -EIO;
	close(fd);
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
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
	int c, sig, reps = 15, rep_ms = 40, phase = 0;
	char line[1024], path[4096], pid[32];
	sigset_t set;

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			reps = atoi(optarg);
			break;
		case 'm':
			rep_ms = atoi(optarg);
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
	if (optind != argc || reps < 1 || rep_ms < 1)
		return 2;
	if (!result) {
		run_phase(1, reps, rep_ms, line, sizeof(line));
		fputs(line, stdout);
		return 0;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	/* one normal call and one throw before ready: PLT bound, unwind tables read */
	run_phase(0, 1, 1, line, sizeof(line));
	if (ready) {
		snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
		if (write_atomic(ready, pid)) {
			fprintf(stderr, "excbench: cannot write %s\n", ready);
			return 1;
		}
	}
	for (;;) {
		if (sigwait(&set, &sig))
			return 1;
		if (sig != SIGUSR1)
			return 0;
		phase++;
		run_phase(phase, reps, rep_ms, line, sizeof(line));
		snprintf(path, sizeof(path), "%s.%d", result, phase);
		if (write_atomic(path, line)) {
			fprintf(stderr, "excbench: cannot write %s\n", path);
			return 1;
		}
	}
}
