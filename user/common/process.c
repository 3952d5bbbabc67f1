// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include "common/exitcodes.h"
#include "common/log.h"
#include "common/process.h"
#include "common/util.h"

/*
 * The heap start-up grows into: libbpf parses vmlinux BTF for each BPF object (two loads side
 * by side, ~11 MB each: the file read, then copied, then indexed), the target's symbol tables
 * and the return-site analysis add a few MB. Virtual space only: what is never touched costs
 * nothing.
 */
#define START_HEAP	(64u << 20)
#define HUGE_PAGE	(2ul << 20)
/* glibc's default top pad (mallopt(3)) */
#define MALLOC_DEFAULT_PAD	(128u << 10)
/*
 * Past start-up, blocks from this size on are mmap'd. Without mallopt glibc raises its threshold
 * to the largest mmap'd block freed (from 128 KiB), and libbpf's 5.5 MB copies of vmlinux BTF had
 * set it there before: the tracer ran with ~5.5 MB and a trim threshold twice that. Set, it stays.
 */
#define MALLOC_MMAP_AFTER	(8u << 20)

static bool huge_heap;

/*
 * Why: on this project's VM (a PVM guest under Firecracker) the first touch of a 4 KiB page
 * costs ~17 us, and start-up touches ~25 MB it frees again: two vmlinux BTF parses side by side
 * took 100 ms there, 16-18 ms in huge pages (2026-12-07, a test program around
 * btf__load_vmlinux_btf). Elsewhere it saves page faults at no cost. Large blocks come from
 * the heap (not mmap, which madvise could not reach before they exist), no thread gets an
 * arena of its own (each would be mmap'd apart), and freed memory is kept for the next parse.
 */
void heap_start_huge(void)
{
	unsigned long lo, hi;
	void *p;

	if (env_is_1("SPYRE_NO_HUGE_HEAP"))
		return;
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_MMAP_THRESHOLD, 32u << 20);	/* glibc's largest: HEAP_MAX_SIZE / 2 */
	mallopt(M_TRIM_THRESHOLD, 2 * START_HEAP);
	mallopt(M_TOP_PAD, START_HEAP);
	/* more than the initial heap holds: the heap grows by START_HEAP now */
	p = malloc(1u << 20);
	if (!p)
		return;
	lo = ((unsigned long)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	hi = (unsigned long)sbrk(0) & ~(HUGE_PAGE - 1);
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
	free(p);
	huge_heap = true;
}

void heap_start_end(void)
{
	if (!huge_heap)
		return;
	huge_heap = false;
	mallopt(M_TOP_PAD, MALLOC_DEFAULT_PAD);
	mallopt(M_TRIM_THRESHOLD, 2 * MALLOC_MMAP_AFTER);
	mallopt(M_MMAP_THRESHOLD, MALLOC_MMAP_AFTER);
	malloc_trim(0);
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

int thread_nice(int nice, int *old)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	int cur;

	errno = 0;
	cur = getpriority(PRIO_PROCESS, tid);
	if (cur == -1 && errno)
		return -errno;
	if (old)
		*old = cur;
	if (cur != nice && setpriority(PRIO_PROCESS, tid, nice))
		return -errno;
	return 0;
}
