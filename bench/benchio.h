/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the bench programs driven by phases (callbench, excbench) share: their result and ready
 * files, written whole under a temporary name, then renamed, so the bench (which waits for the
 * name to appear) never reads half a file; and the loop that runs a phase per SIGUSR1.
 * C and C++ (excbench).
 */
#ifndef SPYRE_BENCHIO_H
#define SPYRE_BENCHIO_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static inline int write_atomic(const char *path, const char *text)
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

/*
 * SIGUSR1, SIGTERM and SIGINT blocked in @set, before any thread exists: only serve_phases()
 * takes them.
 */
static inline void block_phase_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGUSR1);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	pthread_sigmask(SIG_BLOCK, set, NULL);
}

/*
 * The pid to @ready (if not NULL), then each SIGUSR1 runs phase 1, 2, ... (@run writes its
 * key=value line into @line) and writes the line to @result.<phase>. Returns 0 on SIGTERM or
 * SIGINT, 1 on an error (said on stderr, after @prog).
 */
static inline int serve_phases(const char *prog, const sigset_t *set, const char *ready,
			       const char *result, void (*run)(int phase, char *line, size_t len,
							       void *arg), void *arg)
{
	char line[16384], path[4096], pid[32];
	int sig, phase = 0;

	if (ready) {
		snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
		if (write_atomic(ready, pid)) {
			fprintf(stderr, "%s: cannot write %s\n", prog, ready);
			return 1;
		}
	}
	for (;;) {
		if (sigwait(set, &sig))
			return 1;
		if (sig != SIGUSR1)
			return 0;
		phase++;
		run(phase, line, sizeof(line), arg);
		snprintf(path, sizeof(path), "%s.%d", result, phase);
		if (write_atomic(path, line)) {
			fprintf(stderr, "%s: cannot write %s\n", prog, path);
			return 1;
		}
	}
}

#endif
