// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include "common/exitcodes.h"
#include "common/log.h"
#include "common/process.h"

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

int write_file_whole(const char *path, const char *text, size_t len)
{
	char tmp[PATH_MAX];
	ssize_t n = 0;
	int fd, err = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < len && n >= 0; off += n)
		n = write(fd, text + off, len - off);
	if (n < 0)
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (err) {
		unlink(tmp);
		return err;
	}
	return rename(tmp, path) ? -errno : 0;
}

int write_ready_file(const char *path)
{
	char text[24];
	int n = snprintf(text, sizeof(text), "%d\n", getpid());

	return write_file_whole(path, text, n);
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

int stop_signals_fd(bool usr1)
{
	sigset_t mask;
	int fd;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	if (usr1)
		sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

void test_hold(const char *var)
{
	const char *f = getenv(var);
	char held[4096], go[4096];
	int fd;

	if (!f || !*f)
		return;
	snprintf(held, sizeof(held), "%s.held", f);
	snprintf(go, sizeof(go), "%s.go", f);
	fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	/* a minute at most: a test that died leaves no tracer behind for long */
	for (int i = 0; i < 6000 && access(go, F_OK); i++)
		usleep(10000);
}
