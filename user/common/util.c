// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "common/exitcodes.h"
#include "common/log.h"
#include "common/util.h"

int errf(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Root, or CAP_BPF + CAP_PERFMON (+ CAP_SYS_PTRACE for /proc/PID/map_files). */
bool have_privileges(void)
{
	unsigned long long eff = 0;
	char line[256];
	FILE *f;

	if (geteuid() == 0)
		return true;
	f = fopen("/proc/self/status", "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	if (eff & (1ull << 21))	/* CAP_SYS_ADMIN */
		return true;
	return (eff & (1ull << 39)) && (eff & (1ull << 38)) && (eff & (1ull << 19));
}

int write_ready_file(const char *path)
{
	char tmp[PATH_MAX];
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	dprintf(fd, "%d\n", getpid());
	close(fd);
	return rename(tmp, path) ? -errno : 0;
}

int preflight_bpf(void)
{
	if (!have_privileges()) {
		pr_err("tracing needs root (or CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE)");
		return EXIT_PERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		pr_err("this kernel has no BTF (/sys/kernel/btf/vmlinux): CONFIG_DEBUG_INFO_BTF=y "
		       "is required");
		return EXIT_NO_BTF;
	}
	return 0;
}

int stop_signals_fd(void)
{
	sigset_t mask;
	int fd;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

static __thread bool quiet_libbpf;

void libbpf_quiet(bool on)
{
	quiet_libbpf = on;
}

bool libbpf_is_quiet(void)
{
	return quiet_libbpf;
}

bool env_is_1(const char *name)
{
	const char *v = getenv(name);

	return v && !strcmp(v, "1");
}

/* Threads for for_each_parallel(); thread t takes items t, t + PARALLEL_THREADS, ... */
#define PARALLEL_THREADS	32

struct parallel_job {
	int n;
	int first;
	void (*fn)(int i, void *ctx);
	void *ctx;
};

static void *run_job(void *arg)
{
	const struct parallel_job *j = arg;

	for (int i = j->first; i < j->n; i += PARALLEL_THREADS)
		j->fn(i, j->ctx);
	return NULL;
}

void for_each_parallel(int n, void (*fn)(int i, void *ctx), void *ctx)
{
	struct parallel_job jobs[PARALLEL_THREADS];
	pthread_t th[PARALLEL_THREADS];
	bool started[PARALLEL_THREADS] = {};

	for (int t = 0; t < PARALLEL_THREADS && t < n; t++) {
		jobs[t] = (struct parallel_job){ .n = n, .first = t, .fn = fn, .ctx = ctx };
		started[t] = !pthread_create(&th[t], NULL, run_job, &jobs[t]);
		if (!started[t])
			run_job(&jobs[t]);	/* no thread: the slow way */
	}
	for (int t = 0; t < PARALLEL_THREADS && t < n; t++)
		if (started[t])
			pthread_join(th[t], NULL);
}

static void close_at(int i, void *ctx)
{
	const int *fds = ctx;

	if (fds[i] >= 0)
		close(fds[i]);
}

void close_parallel(const int *fds, int n)
{
	for_each_parallel(n, close_at, (void *)fds);
}

static void destroy_at(int i, void *ctx)
{
	bpf_link__destroy(((struct bpf_link **)ctx)[i]);
}

void destroy_links_parallel(struct bpf_link **links, int n)
{
	int m = 0;

	/* only the slots in use get a thread */
	for (int i = 0; i < n; i++) {
		struct bpf_link *l = links[i];

		links[i] = NULL;
		if (l)
			links[m++] = l;
	}
	for_each_parallel(m, destroy_at, links);
	for (int i = 0; i < m; i++)
		links[i] = NULL;
}

int thread_start_nosig(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

void cond_init_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
}
