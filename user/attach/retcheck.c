// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/perf_event.h>
#include "common/util.h"
#include "common/log.h"
#include "attach/retcheck.h"
#include "attach/feat.h"
#include "attach/umulti.h"
#include "common/parallel.h"
#include "attach/warm.h"

/*
 * The function under test: 1 from the code before its return instruction (the probed one), 2
 * from the code after it, which only a return that went on at the next instruction reaches.
 * Written in assembly so that the probed instruction is exactly the return.
 */
#if defined(__x86_64__)
__asm__(".pushsection .text\n"
	".p2align 4\n"
	".type spyre_retcheck_fn, @function\n"
	"spyre_retcheck_fn:\n\tmov $1, %eax\n"
	"spyre_retcheck_ret:\n\tret\n"
	"spyre_retcheck_next:\n\tmov $2, %eax\n\tret\n"
	".size spyre_retcheck_fn, . - spyre_retcheck_fn\n"
	".popsection\n");
#define HAVE_RETCHECK_FN	1
#elif defined(__s390x__)
__asm__(".pushsection .text\n"
	".p2align 3\n"
	".type spyre_retcheck_fn, @function\n"
	"spyre_retcheck_fn:\n\tlghi %r2, 1\n"
	"spyre_retcheck_ret:\n\tbr %r14\n"
	"spyre_retcheck_next:\n\tlghi %r2, 2\n\tbr %r14\n"
	".size spyre_retcheck_fn, . - spyre_retcheck_fn\n"
	".popsection\n");
#define HAVE_RETCHECK_FN	1
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* no TOC use: the global and the local entry are one */
__asm__(".pushsection .text\n"
	".p2align 3\n"
	".type spyre_retcheck_fn, @function\n"
	"spyre_retcheck_fn:\n\tli 3, 1\n"
	"spyre_retcheck_ret:\n\tblr\n"
	"spyre_retcheck_next:\n\tli 3, 2\n\tblr\n"
	".size spyre_retcheck_fn, . - spyre_retcheck_fn\n"
	".popsection\n");
#define HAVE_RETCHECK_FN	1
#endif

#ifdef HAVE_RETCHECK_FN
int spyre_retcheck_fn(void);
int spyre_retcheck_ret(void);
int spyre_retcheck_next(void);
#endif

/* The child's exit codes besides the function's 1 and 2 */
#define CHILD_NO_GO	100

/* A child that does not come back in this long is taken as hung in the return. */
#define CHILD_DEADLINE_MS	5000
/* The verdict's deadline: the child's and the setup's (0.1-2 s in the TCG guests) */
#define WAIT_S			(CHILD_DEADLINE_MS / 1000 + 3)

struct retcheck {
	enum retcheck_mode mode;
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	enum retcheck_verdict v;
	const char *why;
};

#define FAILED_PREFIX	"return sites off: the start-up self-test's call through a probed " \
			"return instruction "
static const char why_next[] = FAILED_PREFIX "went on at the instruction after it instead of "
	"returning (an emulator that loses the target of a branch it single-steps: QEMU before "
	"9.1 on s390x)";
static const char why_signal[] = FAILED_PREFIX "was killed by a signal";
static const char why_value[] = FAILED_PREFIX "came back with a wrong value";
static const char why_hung[] = FAILED_PREFIX "did not come back within 5 s";
/* unknown is not safe: the test's own setup and child fit in its deadline many times over */
static const char why_late[] = "return sites off: the start-up self-test of a probed return "
	"instruction gave no verdict within 8 s";

#ifdef HAVE_RETCHECK_FN
/*
 * What counts the hits: a uprobe_multi link to a program that counts in an array map (6.6+),
 * else a perf uprobe event, whose count read() gives.
 */
struct probe {
	int map, prog, link, perf;
};

#if defined(__x86_64__)
/* the probed ret done by the program (spyre_feat.bpf.c's feat_count_ret) */
#define HAVE_EMULATED_RET	1
#endif

/* The uprobe PMU's type (sysfs), or -errno. */
static int uprobe_pmu_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");
	int type = -ENOENT;

	if (f) {
		if (fscanf(f, "%d", &type) != 1)
			type = -EINVAL;
		fclose(f);
	}
	return type;
}

/*
 * A uprobe at @off of @path for process @pid only, its program doing the return itself with
 * @emulate; 0 or -errno.
 */
static int probe_attach(struct probe *p, const char *path, unsigned long off, int pid,
			bool emulate)
{
	struct perf_event_attr a = { .size = sizeof(a) };
	int type;

	if (umulti_supported() || emulate) {
		p->map = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, 8, 1, NULL);
		if (p->map < 0)
			return p->map;
		p->prog = feat_count_prog(p->map, emulate, umulti_supported(), NULL, 0);
		if (p->prog < 0)
			return p->prog;
	}
	if (umulti_supported()) {
		p->link = umulti_link(p->prog, path, &off, NULL, 1, false, pid);
		return p->link < 0 ? p->link : 0;
	}
	type = uprobe_pmu_type();
	if (type < 0)
		return type;
	a.type = type;
	a.config1 = (uint64_t)(uintptr_t)path;
	a.config2 = off;
	p->perf = syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (p->perf < 0)
		return -errno;
	if (p->prog >= 0 && ioctl(p->perf, PERF_EVENT_IOC_SET_BPF, p->prog))
		return -errno;
	return 0;
}

/* How often the uprobe was hit (-1: not known). */
static long long probe_hits(const struct probe *p)
{
	uint64_t n = 0;
	uint32_t key = 0;

	if (p->map >= 0)
		return bpf_map_lookup_elem(p->map, &key, &n) ? -1 : (long long)n;
	if (p->perf >= 0)
		return read(p->perf, &n, sizeof(n)) == sizeof(n) ? (long long)n : -1;
	return -1;
}

/* Removing a uprobe waits for grace periods: after the verdict, off anyone's path. */
static void probe_close(struct probe *p)
{
	int fds[] = { p->link, p->perf, p->prog, p->map };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* The child: wait for the go (or the parent's end), call, exit with what came back. */
static void __attribute__((noreturn)) child_main(int go, bool fallthrough)
{
	char c;

	if (read(go, &c, 1) != 1)
		_exit(CHILD_NO_GO);
	/* where a broken emulator makes the probed call go on */
	_exit(fallthrough ? spyre_retcheck_next() : spyre_retcheck_fn());
}

/* The child's end within the deadline (killed and reaped past it); false when it hung. */
static bool child_wait(int pid, int *status)
{
	for (int ms = 0; ms < CHILD_DEADLINE_MS; ms++) {
		int r = waitpid(pid, status, WNOHANG);

		if (r == pid || (r < 0 && errno != EINTR))
			return r == pid;
		usleep(1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
	return false;
}

static enum retcheck_verdict run(struct retcheck *rc, struct probe *p)
{
	unsigned long off;
	char path[PATH_MAX];
	int go[2], pid, err, status = 0;
	long long hits;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);

	if (warm_self_site(spyre_retcheck_ret, path, sizeof(path), &off)) {
		rc->why = "this program's own file cannot be probed";
		return RETCHECK_NOT_RUN;
	}
	if (pipe2(go, O_CLOEXEC)) {
		rc->why = "no pipe";
		return RETCHECK_NOT_RUN;
	}
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		child_main(go[0], env_is_1("SPYRE_TEST_RETSITE_FALLTHROUGH"));
	}
	close(go[0]);
	if (pid < 0) {
		close(go[1]);
		rc->why = "no child process";
		return RETCHECK_NOT_RUN;
	}
	err = probe_attach(p, path, off, pid, rc->mode == RETCHECK_EMULATED);
	/* no probe: the child exits without calling (end of file on the pipe) */
	if (!err && write(go[1], "g", 1) != 1)
		err = -EPIPE;
	close(go[1]);
	if (!child_wait(pid, &status)) {
		rc->why = why_hung;
		return RETCHECK_FAILED;
	}
	if (err) {
		pr_debug("return-site self-test: no uprobe on %s+0x%lx: %s", path, off,
			 strerror(-err));
		rc->why = "its uprobe could not be made";
		return RETCHECK_NOT_RUN;
	}
	if (WIFSIGNALED(status)) {
		pr_debug("return-site self-test: the child was killed by signal %d",
			 WTERMSIG(status));
		rc->why = why_signal;
		return RETCHECK_FAILED;
	}
	switch (WEXITSTATUS(status)) {
	case 1:
		break;
	case 2:
		rc->why = why_next;
		return RETCHECK_FAILED;
	default:
		pr_debug("return-site self-test: the child exited with %d", WEXITSTATUS(status));
		rc->why = why_value;
		return RETCHECK_FAILED;
	}
	hits = probe_hits(p);
	pr_debug("return-site self-test: %s+0x%lx hit %lld time%s, returned right, in %.1f ms",
		 path, off, hits, hits == 1 ? "" : "s", (now_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	if (hits < 1) {
		rc->why = "its uprobe was not hit";
		return RETCHECK_UNSURE;
	}
	rc->why = "passed";
	return RETCHECK_PASSED;
}

static void *retcheck_main(void *arg)
{
	struct retcheck *rc = arg;
	struct probe p = { -1, -1, -1, -1 };
	enum retcheck_verdict v = run(rc, &p);

	pthread_mutex_lock(&rc->lock);
	rc->v = v;
	rc->done = true;
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
	probe_close(&p);
	return NULL;
}
#endif

/* Where return sites are branches an emulator single-steps: s390x, ppc64le; else if asked. */
static bool wanted(void)
{
	const char *e = getenv("SPYRE_RETSITE_SELFTEST");

	if (e && *e)
		return !strcmp(e, "1");
#if defined(__x86_64__)
	return false;
#else
	return true;
#endif
}

bool retcheck_emulation_loads(char *why, size_t len)
{
#ifdef HAVE_EMULATED_RET
	char log[4096] = "";
	int map, fd, err;
	const char *line;

	if (env_is_1("SPYRE_NO_EMULATED_RETURNS")) {
		snprintf(why, len, "SPYRE_NO_EMULATED_RETURNS=1");
		return false;
	}
	map = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, 8, 1, NULL);
	fd = map < 0 ? -errno : feat_count_prog(map, true, umulti_supported(), log, sizeof(log));
	err = fd < 0 ? -fd : 0;
	line = strstr(log, "invalid bpf_context access");

	if (map >= 0)
		close(map);
	if (fd >= 0) {
		close(fd);
		snprintf(why, len, "the kernel lets a uprobe program return for the probed code");
		return true;
	}
	if (line)
		snprintf(why, len, "this kernel refuses a uprobe program that writes its registers "
			 "(%.*s)", (int)strcspn(line, "\n"), line);
	else
		snprintf(why, len, "a uprobe program that writes its registers does not load here: "
			 "%s", strerror(err ? err : EINVAL));
	return false;
#else
	snprintf(why, len, "not on this architecture (x86-64 only so far)");
	return false;
#endif
}

const char *const retcheck_emu_progs[RETCHECK_EMU_PROGS] = {
	"spyre_ret_site_emu", "spyre_tail_ret_emu", "spyre_entry_emu",
};

/* Another process's program that does probed instructions: its id, else 0 */
static unsigned int other_emulator(const unsigned int *own, int nown)
{
	__u32 id = 0;

	while (!bpf_prog_get_next_id(id, &id)) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		bool mine = false;
		int fd;

		for (int i = 0; i < nown; i++)
			mine |= own[i] == id;
		if (mine)
			continue;
		fd = bpf_prog_get_fd_by_id(id);
		if (fd < 0)
			continue;	/* gone since, or not ours to see */
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			info.name[0] = 0;
		close(fd);
		/* the kernel keeps BPF_OBJ_NAME_LEN - 1 characters of a program's name */
		for (int k = 0; k < RETCHECK_EMU_PROGS; k++)
			if (info.name[0] &&
			    !strncmp(info.name, retcheck_emu_progs[k], sizeof(info.name) - 1))
				return id;
	}
	return 0;
}

struct retcheck *retcheck_start_mode(enum retcheck_mode mode)
{
#ifdef HAVE_RETCHECK_FN
	struct retcheck *rc;

	if (mode == RETCHECK_STEPPED && !wanted())
		return NULL;
#ifndef HAVE_EMULATED_RET
	if (mode == RETCHECK_EMULATED)
		return NULL;
#endif
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return NULL;
	rc->mode = mode;
	pthread_mutex_init(&rc->lock, NULL);
	cond_init_monotonic(&rc->cond);
	/* no signal for this thread (nor its child): the tracer takes them from a signalfd */
	if (thread_start_nosig(&rc->th, retcheck_main, rc)) {
		pthread_cond_destroy(&rc->cond);
		pthread_mutex_destroy(&rc->lock);
		free(rc);
		return NULL;
	}
	return rc;
#else
	return NULL;
#endif
}

struct retcheck *retcheck_start(void)
{
	return retcheck_start_mode(RETCHECK_STEPPED);
}

bool retcheck_emulation_ok(struct retcheck *rc, const unsigned int *own, int nown, char *why,
			   size_t len)
{
	enum retcheck_verdict v;
	unsigned int other;
	const char *w;

	if (!rc)
		return false;	/* @why says why it did not run (retcheck_emulation_loads) */
	v = retcheck_wait(rc, &w);
	if (v != RETCHECK_PASSED) {
		snprintf(why, len, "the start-up self-test of a return done by BPF: %s", w);
		return false;
	}
	other = other_emulator(own, nown);
	if (other) {
		snprintf(why, len, "another spyre-bpftrace on this machine does probed instructions "
			 "in BPF (its program %u): the kernel single-steps them here, so that none "
			 "is done twice", other);
		return false;
	}
	snprintf(why, len, "the start-up self-test's call through a return done by BPF came "
		 "back right");
	return true;
}

enum retcheck_verdict retcheck_wait(struct retcheck *rc, const char **why)
{
	enum retcheck_verdict v = RETCHECK_NOT_RUN;
	struct timespec until;

	*why = "not run on this architecture (SPYRE_RETSITE_SELFTEST=1 runs it)";
	if (!rc)
		return v;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += WAIT_S;
	pthread_mutex_lock(&rc->lock);
	while (!rc->done && pthread_cond_timedwait(&rc->cond, &rc->lock, &until) != ETIMEDOUT)
		;
	v = RETCHECK_FAILED;
	*why = why_late;
	if (rc->done) {
		v = rc->v;
		*why = rc->why;
	}
	pthread_mutex_unlock(&rc->lock);
	return v;
}

void retcheck_free(struct retcheck *rc)
{
	if (!rc)
		return;
	pthread_join(rc->th, NULL);
	pthread_cond_destroy(&rc->cond);
	pthread_mutex_destroy(&rc->lock);
	free(rc);
}
