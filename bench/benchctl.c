// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * benchctl: the timing a shell cannot do precisely.
 *
 *   benchctl spawn --out F [--mark NAME:FILE[:TEXT]]... -- CMD [ARGS...]
 *	Runs CMD and times it: each mark is the moment FILE exists (and contains TEXT), measured
 *	from just before exec (the caller removes stale mark files first; an output file the
 *	shell redirects CMD into may be a mark file too). Once every mark is seen it writes
 *	F.ready ("pid=... NAME_ns=..."), the bench's handshake. SIGUSR1 to benchctl sends SIGINT
 *	to CMD and times the exit (the detach time); SIGTERM/SIGINT to benchctl stop CMD (SIGKILL
 *	after 5 s). When CMD exits it writes F: marks, stop_ns, exit status, CPU time and peak RSS
 *	(wait4 rusage). CMD dies with benchctl (PR_SET_PDEATHSIG): nothing outlives a killed bench.
 *
 *   benchctl phase PID RESULT_FILE TIMEOUT_S
 *	Sends SIGUSR1 to PID and prints the ns until RESULT_FILE appears (inotify: no polling
 *	granularity in the measurement). Exit 1 on timeout or when PID is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "benchio.h"

#define MAX_MARKS	8
/* Mark polling interval: fine next to the 50 ms attach target, cheap on a 2-core VM. */
#define POLL_US		250

struct mark {
	char name[32];
	const char *file;
	const char *text;	/* NULL: existence is enough */
	int64_t ns;		/* -1 until seen */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* TEXT is searched in the first 64 KiB only: marks are startup messages. */
static bool mark_seen(const struct mark *m)
{
	static char buf[65536 + 1];
	ssize_t n;
	int fd;

	if (!m->text)
		return access(m->file, F_OK) == 0;
	fd = open(m->file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	return memmem(buf, n, m->text, strlen(m->text)) != NULL;
}

static int parse_mark(struct mark *m, char *arg)
{
	char *file = strchr(arg, ':'), *text;

	if (!file || file == arg || (size_t)(file - arg) >= sizeof(m->name))
		return -EINVAL;
	*file++ = 0;
	text = strchr(file, ':');
	if (text)
		*text++ = 0;
	snprintf(m->name, sizeof(m->name), "%s", arg);
	m->file = file;
	m->text = text && *text ? text : NULL;
	m->ns = -1;
	return *file ? 0 : -EINVAL;
}

static size_t put_marks(char *buf, size_t len, const struct mark *marks, int n)
{
	size_t off = 0;

	for (int i = 0; i < n && off < len; i++)
		off += snprintf(buf + off, len - off, " %s_ns=%lld", marks[i].name,
				(long long)marks[i].ns);
	return off < len ? off : len;
}

static int cmd_spawn(int argc, char **argv)
{
	struct mark marks[MAX_MARKS];
	const char *out = NULL;
	char path[4096], text[2048];
	int nmarks = 0, sfd, status = 0, i;
	uint64_t t0, t_stop = 0, t_exit, t_kill = 0;
	bool ready_written = false, exited = false;
	struct rusage ru;
	sigset_t set;
	pid_t child;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (!strcmp(argv[i], "--out") && i + 1 < argc) {
			out = argv[++i];
		} else if (!strcmp(argv[i], "--mark") && i + 1 < argc && nmarks < MAX_MARKS) {
			if (parse_mark(&marks[nmarks], argv[++i])) {
				fprintf(stderr, "benchctl: bad --mark %s\n", argv[i]);
				return 2;
			}
			nmarks++;
		} else {
			fprintf(stderr, "benchctl spawn: bad argument %s\n", argv[i]);
			return 2;
		}
	}
	if (!out || i >= argc) {
		fprintf(stderr, "usage: benchctl spawn --out F [--mark NAME:FILE[:TEXT]]... -- CMD\n");
		return 2;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		perror("benchctl: signalfd");
		return 1;
	}

	t0 = now_ns();
	child = fork();
	if (child < 0) {
		perror("benchctl: fork");
		return 1;
	}
	if (child == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(127);	/* benchctl died before the prctl */
		execvp(argv[i], &argv[i]);
		fprintf(stderr, "benchctl: exec %s: %s\n", argv[i], strerror(errno));
		_exit(127);
	}

	while (!exited) {
		struct pollfd pfd = { .fd = sfd, .events = POLLIN };
		struct signalfd_siginfo si;
		bool all = true;

		poll(&pfd, 1, ready_written ? 100 : 0);
		if (!ready_written) {
			for (int k = 0; k < nmarks; k++) {
				if (marks[k].ns < 0 && mark_seen(&marks[k]))
					marks[k].ns = now_ns() - t0;
				all &= marks[k].ns >= 0;
			}
			if (all) {
				size_t n = snprintf(text, sizeof(text), "pid=%d", (int)child);

				n += put_marks(text + n, sizeof(text) - n, marks, nmarks);
				snprintf(text + n, sizeof(text) - n, "\n");
				snprintf(path, sizeof(path), "%s.ready", out);
				write_atomic(path, text);
				ready_written = true;
			} else {
				usleep(POLL_US);
			}
		}
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGUSR1) {
				if (!t_stop) {
					t_stop = now_ns();
					kill(child, SIGINT);
				}
			} else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
				kill(child, SIGTERM);
				if (!t_kill)
					t_kill = now_ns() + 5000000000ull;
			}
		}
		if (t_kill && now_ns() > t_kill)
			kill(child, SIGKILL);
		if (wait4(child, &status, WNOHANG, &ru) == child)
			exited = true;
	}
	t_exit = now_ns();

	{
		size_t n = snprintf(text, sizeof(text), "pid=%d", (int)child);
		uint64_t ut = ru.ru_utime.tv_sec * 1000000000ull + ru.ru_utime.tv_usec * 1000ull;
		uint64_t st = ru.ru_stime.tv_sec * 1000000000ull + ru.ru_stime.tv_usec * 1000ull;

		n += put_marks(text + n, sizeof(text) - n, marks, nmarks);
		snprintf(text + n, sizeof(text) - n,
			 " stop_ns=%lld rc=%d signal=%d wall_ns=%llu utime_ns=%llu stime_ns=%llu "
			 "maxrss_kb=%ld\n", t_stop ? (long long)(t_exit - t_stop) : -1LL,
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1,
			 WIFSIGNALED(status) ? WTERMSIG(status) : 0,
			 (unsigned long long)(t_exit - t0), (unsigned long long)ut,
			 (unsigned long long)st, ru.ru_maxrss);
		write_atomic(out, text);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int cmd_phase(int argc, char **argv)
{
	char dir[4096];
	uint64_t t0, deadline;
	int pid, ifd, wd;

	if (argc != 3) {
		fprintf(stderr, "usage: benchctl phase PID RESULT_FILE TIMEOUT_S\n");
		return 2;
	}
	pid = atoi(argv[0]);
	snprintf(dir, sizeof(dir), "%s", argv[1]);
	ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (ifd < 0) {
		perror("benchctl: inotify");
		return 1;
	}
	/* watch first, then check and signal: a file that appears in between is not missed */
	wd = inotify_add_watch(ifd, dirname(dir), IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE);
	if (wd < 0) {
		perror("benchctl: inotify_add_watch");
		return 1;
	}
	if (access(argv[1], F_OK) == 0) {
		fprintf(stderr, "benchctl: %s exists before the phase\n", argv[1]);
		return 1;
	}
	deadline = now_ns() + (uint64_t)(atof(argv[2]) * 1e9);
	t0 = now_ns();
	if (kill(pid, SIGUSR1)) {
		perror("benchctl: kill");
		return 1;
	}
	for (;;) {
		struct pollfd pfd = { .fd = ifd, .events = POLLIN };
		char evbuf[8192];

		poll(&pfd, 1, 50);
		while (read(ifd, evbuf, sizeof(evbuf)) > 0)
			;
		if (access(argv[1], F_OK) == 0)
			break;
		if (kill(pid, 0) && errno == ESRCH) {
			fprintf(stderr, "benchctl: pid %d exited during the phase\n", pid);
			return 1;
		}
		if (now_ns() > deadline) {
			fprintf(stderr, "benchctl: timed out waiting for %s\n", argv[1]);
			return 1;
		}
	}
	printf("%llu\n", (unsigned long long)(now_ns() - t0));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "spawn"))
		return cmd_spawn(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "phase"))
		return cmd_phase(argc - 2, argv + 2);
	fprintf(stderr, "usage: benchctl spawn|phase ... (see bench/benchctl.c)\n");
	return 2;
}
