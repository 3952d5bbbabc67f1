// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One tracing session for trace mode and fleet mode (session.h): what both do while tracing and
 * when a trace file closes is here once, so that a stop condition or a closing step added for
 * one mode serves the other.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "output/facts.h"
#include "output/jsonw.h"
#include "common/util.h"
#include "common/log.h"
#include "attach/retcheck.h"
#include "cmd/session.h"
#include "stream/drain.h"
#include "output/output.h"
#include "output/recorder.h"
#include "output/trace_writer.h"
#include "common/process.h"
#include "attach/warm.h"
#include "resolve/pyrt.h"
#include "stream/pyspans.h"
#include "stream/pystack.h"
#include "stream/ustack.h"

/* -a: new processes are looked at every rescan; everything again every 10th (dlopen, reused
 * pids) */
#define FULL_SCAN_EVERY	10

/*
 * The two BPF objects load in threads while the main thread reads the target: each load parses
 * vmlinux BTF (~15 ms) and runs the verifier.
 */
struct bg_load {
	pthread_t th;
	bool running;
	bool started;
	int err;
	/* uprobe tier */
	struct tracer *tr;
	const struct tracer_opts *topts;
	/* driver tier */
	struct vfio_config cfg;
	int ring_fd;
	struct vfio_tracer *vfio;
	char msg[1024];
	uint64_t end_ns, cpu_ns;	/* when it ended (CLOCK_MONOTONIC), its thread's CPU */
};

/* The end of a load: when, and the CPU its thread took (-v's start-up line). */
static void bg_done(struct bg_load *l)
{
	l->end_ns = now_ns(CLOCK_MONOTONIC);
	l->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
}

static void *uprobe_load(void *arg)
{
	struct bg_load *l = arg;

	l->err = tracer_open(l->tr, l->topts);
	bg_done(l);
	return NULL;
}

static void *driver_load(void *arg)
{
	struct bg_load *l = arg;

	l->err = vfio_open(&l->vfio, &l->cfg, l->msg, sizeof(l->msg));
	if (!l->err)
		l->err = vfio_attach(l->vfio, l->ring_fd, l->msg, sizeof(l->msg));
	bg_done(l);
	return NULL;
}

/* Run @fn in a thread, or here if no thread can be made. */
static void bg_start(struct bg_load *l, void *(*fn)(void *))
{
	l->started = true;
	l->running = !pthread_create(&l->th, NULL, fn, l);
	if (!l->running)
		fn(l);
}

static void bg_join(struct bg_load *l)
{
	if (l->running)
		pthread_join(l->th, NULL);
	l->running = false;
}

static void *vfio_detach_bg(void *arg)
{
	vfio_detach(arg);
	return NULL;
}

/* Both tiers' links go side by side: each waits for grace periods in the kernel. */
static void detach_tiers(struct tracer *tr, struct target *t, struct vfio_tracer *vfio)
{
	pthread_t th;
	bool bg = vfio && !pthread_create(&th, NULL, vfio_detach_bg, vfio);

	tracer_detach(tr, t);
	if (bg)
		pthread_join(th, NULL);
	else
		vfio_detach(vfio);
}

int check_pid(pid_t pid)
{
	char path[64], buf[512], *p;
	unsigned long flags = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		pr_err("no such process: %d", pid);
		return EXIT_NO_PID;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		pr_err("no such process: %d", pid);
		return EXIT_NO_PID;
	}
	buf[n] = 0;
	/* comm may contain ')' and spaces: the state follows the last ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ') {
		pr_err("cannot read the state of process %d", pid);
		return EXIT_NO_PID;
	}
	if (p[2] == 'Z' || p[2] == 'X') {
		pr_err("process %d is a zombie (exited, not reaped): nothing to trace", pid);
		return EXIT_NO_PID;
	}
	/* field 9 after the state: flags; PF_KTHREAD = 0x00200000 */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) == 1 && (flags & 0x00200000)) {
		pr_err("process %d is a kernel thread: it has no user-space runtime", pid);
		return EXIT_NO_PID;
	}
	return 0;
}

const char *process_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (!f || !fgets(buf, len, f))
		snprintf(buf, len, "?");
	if (f)
		fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

pid_t thread_process(pid_t pid, const char *doing)
{
	char path[64], line[128];
	pid_t tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return pid;	/* check_pid says why */
	while (fgets(line, sizeof(line), f) && sscanf(line, "Tgid: %d", &tgid) != 1)
		;
	fclose(f);
	if (tgid <= 0 || tgid == pid)
		return pid;
	pr_info("%d is a thread of process %d: %s process %d", pid, tgid, doing, tgid);
	return tgid;
}

int session_init(struct session *s, const struct env *env, struct probe_table *table, int pid,
		 bool fleet)
{
	memset(s, 0, sizeof(*s));
	s->env = env;
	gethostname(s->hostname, sizeof(s->hostname) - 1);
	s->fleet = fleet;
	s->ring_fd = s->sfd = s->pidfd = -1;
	cost_defaults(&s->costs);
	s->upl = calloc(1, sizeof(*s->upl));
	s->drv = calloc(1, sizeof(*s->drv));
	s->said = calloc(table->cnt, sizeof(*s->said));
	/* --max-overhead: the run's budget; in fleet mode each window's */
	if (env->max_overhead)
		s->budget = calloc(1, sizeof(*s->budget));
	if (!s->upl || !s->drv || !s->said || (env->max_overhead && !s->budget) ||
	    memledger_init(&s->mem))
		return EXIT_ERROR;
	/*
	 * The target's end is watched on the process it is now, taken before anything loads: taken
	 * when the first window began (after the load and the attach, 150 ms and more), a target
	 * that ended meanwhile could have its pid handed to another process, the tracer then
	 * watching that one until -d, forever without it (issue 43)
	 */
	if (pid > 0) {
		s->pidfd = syscall(SYS_pidfd_open, pid, 0);
		if (s->pidfd < 0 && errno == ESRCH) {
			pr_err("no such process: %d (it ended)", pid);
			return EXIT_NO_PID;
		}
	}
	if (target_init(&s->t, pid, table, env->max_probes ? env->max_probes : SPYRE_MAX_PROBES))
		return EXIT_ERROR;
	s->t.uretprobes = env->uretprobes;
	s->t.user_from = env->user_specs_from;
	s->py_wanted = env->python;
	s->ustack_wanted = env->ustack;
	for (int i = 0; i < table->cnt; i++) {
		s->py_wanted |= table->specs[i].py;
		s->ustack_wanted |= table->specs[i].stack;
	}
	if (s->py_wanted && !(s->py = pystack_new()))
		return EXIT_ERROR;
	/* probes are attached again in later windows, maybe after the process whose map_files
	 * gave us a library is gone: hold the libraries open (resolve.h) */
	s->t.pin_libs = fleet;
	/* SIGHUP ends a trace as SIGINT does (a closed terminal), unless nohup ignored it */
	if (!fleet) {
		struct sigaction sa;

		s->hup_stops = !sigaction(SIGHUP, NULL, &sa) && sa.sa_handler != SIG_IGN;
	}
	if (env->flight_recorder > 0) {
		s->keep_ns = (uint64_t)(env->flight_recorder * 1e9);
		s->slice_ns = s->keep_ns / 4;
		/* the slices stay under the bound with room for a dump's own metadata */
		s->rec = recorder_new(s->keep_ns, env->max_size - env->max_size / 16);
		if (!s->rec)
			return EXIT_ERROR;
	}
	s->tty = isatty(STDERR_FILENO);
	s->status = env->status < 0 ? s->tty : env->status;
	/* whether return sites work here, found out while the objects load (retcheck.h) */
	if (!env->uretprobes)
		s->rcheck = retcheck_start();
	/* and whether they can return by themselves: the load says, then a call in a child */
	if (!env->uretprobes && retcheck_emulation_loads(s->emu_why, sizeof(s->emu_why)))
		s->emucheck = retcheck_start_mode(RETCHECK_EMULATED);
	/*
	 * The kernel's wait before the first uprobe link, taken while everything else runs;
	 * after launch_start(), so that a child is forked from a single-threaded tracer.
	 */
	s->warm = warm_start();
	return 0;
}

void session_free(struct session *s)
{
	/* an error while the loads ran: they finish, and their work is undone below */
	if (s->upl)
		bg_join(s->upl);
	if (s->drv) {
		bg_join(s->drv);
		vfio_close(s->drv->vfio);
	}
	warm_free(s->warm);
	retcheck_free(s->rcheck);
	retcheck_free(s->emucheck);
	if (s->ring_fd >= 0)
		close(s->ring_fd);
	if (s->tw)	/* error path after the header: still leave a loadable file */
		trace_end(s->tw, NULL);
	consumer_free(&s->cons);
	memledger_free(&s->mem);
	drain_close(s->drain);
	if (s->upl && s->upl->started && !s->upl->err)	/* loaded */
		tracer_close(&s->tr);
	target_free(&s->t);
	pystack_free(s->py);
	ustack_free(s->ustack);
	recorder_free(s->rec);
	intset_free(&s->seen);
	intset_free(&s->jobs);
	intset_free(&s->py_seen);
	cost_calibrate_free(s->cal);
	cost_meter_free(&s->meter);
	free(s->said);
	free(s->budget);
	free(s->upl);
	free(s->drv);
	if (s->sfd >= 0)
		close(s->sfd);
	if (s->pidfd >= 0)
		close(s->pidfd);
}

int session_load_begin(struct session *s, int resolved, bool driver)
{
	const struct env *env = s->env;

	s->up.begin = now_ns(CLOCK_MONOTONIC);
	s->ring_fd = tracer_ring_create(env->ringbuf_mb);
	if (s->ring_fd < 0) {
		pr_err("cannot create the ring buffer: %s", strerror(-s->ring_fd));
		return s->ring_fd == -EPERM ? EXIT_PERM : EXIT_ERROR;
	}
	s->topts = (struct tracer_opts){ .emulated_returns = s->emucheck != NULL,
					 .sample_every = env->sample_every,
					 .rate_cap = env->rate_cap, .uretprobes = env->uretprobes,
					 .python = env->python,
					 .ustack = env->ustack,
					 .ustack_map = s->ustack_wanted,
					 .ring_fd = s->ring_fd,
					 .follow_pid = env->follow && s->t.pid > 0 ? s->t.pid : 0 };
	/* not resolved yet: the room is looked at again once it is (session_load_end) */
	s->topts.room = tracer_room(resolved, env->max_probes);
	s->upl->tr = &s->tr;
	s->upl->topts = &s->topts;
	bg_start(s->upl, uprobe_load);
	if (driver) {
		s->drv->cfg = (struct vfio_config){ .mode = env->driver, .funcs = env->driver_funcs,
						    .tgid = s->t.pid, .root = "",
						    .verbose = env->verbose };
		s->drv->ring_fd = s->ring_fd;
		bg_start(s->drv, driver_load);
	}
	return 0;
}

/*
 * The BPF object loaded while the table resolved, its counters sized for SPYRE_PROBE_ROOM
 * probes: a table that resolved to more loads it again with room for them (tracer_room).
 * Loading with room for SPYRE_MAX_PROBES from the start would cost every run the memory and
 * the map's creation time (see tracer_room); a table this large took far longer to resolve
 * than a load (libtorch_cpu.so, 5,498 functions: ~500 ms to resolve, 90-180 ms to load again).
 */
static int reload_room(struct session *s, int resolved)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	int err;

	tracer_close(&s->tr);
	s->topts.room = tracer_room(resolved, s->env->max_probes);
	err = tracer_open(&s->tr, &s->topts);
	if (!err)
		pr_debug("%d functions: loaded again with room for %d in %.1f ms", resolved,
			 s->tr.room, (now_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	return err;
}

int session_load_end(struct session *s)
{
	int err;

	s->up.resolved = now_ns(CLOCK_MONOTONIC);
	s->up.main_cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
	bg_join(s->upl);
	if (!s->upl->err && s->t.cnt > s->tr.room)
		s->upl->err = reload_room(s, s->t.cnt);
	err = s->upl->err;
	if (err) {
		/* EACCES is the verifier's verdict, EPERM a missing privilege or lockdown */
		pr_err("cannot load the BPF programs: %s%s", strerror(-err),
		       log_enabled(LOG_DEBUG) ? "" : " (run with -v for the details)");
		return err == -EPERM ? EXIT_PERM : EXIT_ERROR;
	}
	s->loaded = true;
	if (s->ustack_wanted && !(s->ustack = ustack_new(tracer_ustack_fd(&s->tr), "/proc")))
		return EXIT_ERROR;
	if (s->ustack && s->t.pid > 0)	/* the libraries its stacks name, while it lives */
		ustack_add_proc(s->ustack, (uint32_t)s->t.pid);
	/* later libraries (dlopen) and processes get what room is left */
	s->t.max_probes = s->tr.room;
	pr_debug("%s links; per-thread call stacks in %s",
		 s->tr.multi ? "uprobe_multi" : "perf-event uprobe",
		 s->tr.stage ? "task storage, spans staged per thread" :
		 s->tr.task_storage ? "task storage" : "a hash map");
	s->t.one_stack = !s->tr.stack_regions;
	pr_debug("open calls kept per stack: %s", s->tr.stack_regions ? "yes (coroutine and "
		 "signal stacks told apart by their mapping)" : "no, one stack per thread (no "
		 "bpf_find_vma with a callback: before 5.17 or no BPF JIT, or "
		 "SPYRE_NO_STACK_REGIONS=1)");
	pr_debug("returns seen by %s", s->env->uretprobes ? (s->tr.unwind_guard ?
		 "uretprobes, C++ exception unwind guard on" : "uretprobes, NO unwind guard "
		 "(bpf_probe_write_user refused, not x86-64, or SPYRE_NO_UNWIND_GUARD=1)") :
		 "uprobes on return instructions, where they can be found safely (the stack "
		 "is never modified)");
	return 0;
}

bool session_driver_failed(struct session *s)
{
	/* a driver path asked for by name must work before anything is attached */
	if (s->drv->started && s->env->driver != VFIO_MODE_AUTO)
		bg_join(s->drv);
	return !s->drv->running && s->drv->err;
}

int session_driver_end(struct session *s)
{
	int err;

	bg_join(s->drv);
	s->vfio = s->drv->vfio;
	/* its records are decoded by each window's consumer: which kind of fd each function takes */
	s->nvfuncs = 0;
	for (int i = 0; s->vfio && vfio_func(s->vfio, i) && i < SPYRE_DRV_MAX_FUNCS; i++)
		s->vfuncs[s->nvfuncs++] = vfio_func(s->vfio, i);
	/* each BPF object holds the ring now */
	close(s->ring_fd);
	s->ring_fd = -1;
	if (s->drv->err) {
		pr_err("driver tier: %s", s->drv->msg);
		return EXIT_ERROR;
	}
	if (s->drv->msg[0])	/* auto mode found no working path: say why, trace on without */
		pr_info("%s", s->drv->msg);
	else if (s->drv->started)
		pr_debug("driver tier: %s", vfio_path_name(vfio_path(s->vfio)));
	/*
	 * Both loads are over: the memory they freed goes back before the ring is mapped (16 MiB
	 * at once), else the two added up: VmHWM at ready 41-44 MB instead of 24-29 MB, for the
	 * 3-10 ms the trim takes here (2026-12-07)
	 */
	heap_start_end();
	err = s->drain ? 0 : drain_open(&s->drain, tracer_ring_fd(&s->tr));
	if (err) {
		pr_err("cannot map the ring buffer: %s", strerror(-err));
		return EXIT_ERROR;
	}
	return 0;
}

int session_scan(struct session *s, bool all)
{
	int n = s->env->system_wide ?
		target_scan_procs(&s->t, &s->seen, &s->jobs,
				  all || s->scans++ % FULL_SCAN_EVERY == 0, "/proc") :
		target_scan(&s->t);

	/* past --max-probes: at the start an error, later what fits is attached (said once) */
	if (n == -E2BIG)
		target_warn_too_many(&s->t, s->scanned);
	s->scanned = true;
	return n;
}

/*
 * Emulated returns: their programs loaded and the self-test's call through a return done by
 * BPF came back right. Else the kernel single-steps every probed ret, as before, and why is
 * said (-v), in `list`, the summary and the metadata.
 */
static void emulation_check(struct session *s)
{
	unsigned int own[RETCHECK_EMU_PROGS];

	if (s->env->uretprobes)
		return;
	s->tr.emulate = retcheck_emulation_ok(s->emucheck, own,
					      tracer_emu_prog_ids(&s->tr, own, RETCHECK_EMU_PROGS),
					      s->emu_why, sizeof(s->emu_why)) && s->tr.emu_loaded;
	s->costs.rets_emulated = s->tr.emulate;
	s->meter.costs.rets_emulated = s->tr.emulate;
	pr_debug("returns at return sites: %s (%s)", s->tr.emulate ?
		 "done by BPF, no single step" : "single-stepped by the kernel", s->emu_why);
}

/*
 * The return-site self-test's verdict, before the first uprobe goes on a job: where a probed
 * return instruction does not return, no span probe may have return sites (retcheck.h).
 */
static void sites_check(struct session *s)
{
	enum retcheck_verdict v;
	const char *why;

	if (s->sites_checked)
		return;
	s->sites_checked = true;
	emulation_check(s);
	if (!s->rcheck)
		return;
	/* its uprobe goes in the background: retcheck_free waits for that, at the end */
	v = retcheck_wait(s->rcheck, &why);
	if (v != RETCHECK_FAILED) {
		pr_debug("return-site self-test: %s", why);
		return;
	}
	target_sites_off(&s->t, why);
	pr_warn("%s: every span probe records entries only (--uretprobes sees their returns, "
		"but a C++ exception thrown through a traced call then ends the job)", why);
}

/* Is process @pid still running our own program (a launched child before its exec)? */
static bool runs_our_exe(pid_t pid)
{
	char a[512], b[512], path[64];
	ssize_t n, m;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, a, sizeof(a) - 1);
	m = readlink("/proc/self/exe", b, sizeof(b) - 1);
	return n > 0 && n == m && !memcmp(a, b, n);
}

/*
 * Process @pid's CPython interpreter, for the BPF walks (its entry in py_procs) and the naming
 * of its code objects; settled (looked for no more) when found, and else when @settle. What
 * stops it (not Python, stripped, a version not supported yet) is said (@say: a warning; else
 * only with -v: a fleet node runs processes of every kind); its calls then carry no stack.
 */
static void python_proc(struct session *s, int pid, bool say, bool settle)
{
	int level = say ? LOG_WARN : LOG_DEBUG;
	struct py_proc pp;
	char why[320] = "";
	int err;

	if (pid <= 0 || intset_has(&s->py_seen, pid))
		return;
	err = pyrt_find(pid, "/proc", &pp, why, sizeof(why));
	if (err && !settle)
		return;	/* not Python yet: a child before its exec */
	intset_insert(&s->py_seen, pid);
	if (err) {
		log_msg(level, "Python stacks: process %d: %s; its calls carry no Python stack", pid,
			err == -ENOENT ? why : strerror(-err));
		return;
	}
	if (!pp.off) {
		if (pp.major)
			log_msg(level, "Python %u.%u (%s): stacks not supported yet (CPython "
				"3.11-3.13 only); its calls carry no Python stack", pp.major,
				pp.minor, pp.path);
		else
			log_msg(level, "Python of unknown version (%s): stacks not supported yet "
				"(CPython 3.11-3.13 only); its calls carry no Python stack",
				pp.path);
		return;
	}
	err = tracer_py_proc(&s->tr, &pp);
	err = err ?: pystack_add_proc(s->py, &pp);
	if (err) {
		pr_warn("Python stacks: process %d: %s", pid, strerror(-err));
		return;
	}
	pr_debug("Python %u.%u in process %d: %s, _PyRuntime at 0x%llx", pp.major, pp.minor,
		 pid, pp.path, (unsigned long long)pp.runtime);
}

#define PY_CHILDREN_MAX	4096
/*
 * -f: process @pid's descendants (its threads' /proc children lists), each looked for as it
 * comes; settled if not Python only once it brought traced calls (it runs what it exec'd).
 */
static void python_children(struct session *s, int pid, int *budget)
{
	char path[64], buf[4096];
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((de = readdir(dir)) && *budget > 0) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", pid, de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fscanf(f, "%4095s", buf) == 1 && (*budget)-- > 0) {
			int child = atoi(buf);

			python_proc(s, child, false, consumer_process(&s->cons, child) != NULL);
			python_children(s, child, budget);
		}
		fclose(f);
	}
	closedir(dir);
}

/*
 * Python stacks: the target's interpreter, looked for at attach and at each rescan until
 * settled (a launched command runs its interpreter only after its exec); with -f each process
 * it starts, at each rescan until it runs Python or brought traced calls (a worker found before
 * its first traced call has all its stacks); in fleet mode each process the scan found.
 */
static void python_scan(struct session *s)
{
	int budget = PY_CHILDREN_MAX;

	if (!s->py_wanted || !s->loaded)
		return;
	if (!s->py_settled && s->t.pid > 0 &&
	    !(s->launch_pid == s->t.pid && runs_our_exe(s->t.pid))) {	/* not exec'd yet */
		s->py_settled = true;
		python_proc(s, s->t.pid, true, true);
	}
	if (s->env->follow && s->t.pid > 0)
		python_children(s, s->t.pid, &budget);
	/*
	 * -a: each process the scan looked at (once: a process that maps no python3* or
	 * libpython3* is told at once), so a job found at a scan has its stacks from its first
	 * traced call; and (-a, -f) those that brought traced calls before a scan saw them
	 */
	for (size_t i = 0; s->env->system_wide && i < s->seen.n; i++)
		python_proc(s, (int)s->seen.v[i], false, true);
	for (int i = 0; (s->env->follow || s->env->system_wide) && i < s->cons.nprocs; i++)
		python_proc(s, (int)s->cons.procs[i].pid, false, true);
}

/*
 * -a: the processes the scans found with the runtime mapped are the jobs the meter weighs
 * from the attach on (with --sample-every, one that calls little brings no event for long);
 * those gone are forgotten.
 */
static void watch_scanned(struct session *s)
{
	struct intset alive = {};

	for (size_t i = 0; i < s->jobs.n; i++)
		if (!cost_meter_watch(&s->meter, (int)s->jobs.v[i]))
			intset_insert(&alive, s->jobs.v[i]);
	intset_free(&s->jobs);
	s->jobs = alive;
}

int session_attach(struct session *s)
{
	int err;

	python_scan(s);
	sites_check(s);
	/*
	 * the jobs' CPU clocks from here on go with the hits (per-hit costs come later); a fleet
	 * window's jobs are the last one's still alive, and those that bring calls
	 */
	cost_meter_restart(&s->meter, &s->costs, s->t.pid);
	s->jobs_watched = 0;
	if (s->env->system_wide)
		watch_scanned(s);
	/* --max-overhead's first window: from here, as the meter */
	if (!s->attach_ns)
		s->attach_ns = now_ns(CLOCK_MONOTONIC);
	/* following forks: probes on every process, the BPF keeps to the target's tree */
	err = tracer_attach(&s->tr, &s->t, s->env->follow ? -1 : s->t.pid);
	if (!s->up.attached)
		s->up.attached = now_ns(CLOCK_MONOTONIC);
	return err;
}

uint64_t session_bytes(const struct session *s)
{
	/* the flight recorder: what it holds in memory now */
	if (s->rec)
		return recorder_bytes(s->rec) + (s->tw ? jw_bytes(trace_jw(s->tw)) : 0);
	return s->bytes_done + (s->tw ? jw_bytes(trace_jw(s->tw)) : 0);
}

/* The consumer, the ledger and the loop on trace @tw, whose ts 0 is @start_ns. */
static int window_begin(struct session *s, struct trace_writer *tw, const char *path,
			uint64_t start_ns)
{
	int err;

	s->tw = tw;
	s->path = path;
	s->hup = false;
	file_begin(s, tw, path, start_ns);
	err = consumer_init(&s->cons, tw, &s->t, "/proc");
	if (err)
		return err;
	s->cons.per_pid = s->fleet;
	apply_triggers(s);
	if (s->vfio) {
		err = consumer_driver(&s->cons, s->drv->cfg.root, s->vfuncs, s->nvfuncs);
		if (err) {
			pr_err("driver tier: %s", strerror(-err));
			return err;
		}
	}
	s->cons.py = s->py;
	s->cons.ustack = s->ustack;
	/* every probe brings its stack: the frames' spans can be derived (pyspans.h) */
	if (s->py && s->env->python && consumer_python_spans(&s->cons))
		return -ENOMEM;
	s->cons.mem = &s->mem;
	memledger_start(&s->mem, s->cons.tw, start_ns);
	/* the target's end, zombie or reaped, wakes the loop through s->pidfd (session_init) */
	if (s->sfd < 0)
		s->sfd = stop_signals_fd(s->rec != NULL);
	return 0;
}

int session_window_open(struct session *s, struct output *out, const char *path,
			uint64_t mono_ns, uint64_t real_ns)
{
	struct trace_meta meta = { .mono_base_ns = mono_ns, .real_base_ns = real_ns,
				   .trace_name = path, .tool_version = SPYRE_VERSION,
				   .hostname = s->hostname };
	struct trace_writer *tw = NULL;
	int err = trace_begin(&tw, out->jw, &meta);

	out->jw = NULL;	/* owned (and on failure closed) by the trace writer */
	s->mono_base = mono_ns;
	s->real_base = real_ns;
	return err ?: window_begin(s, tw, path, mono_ns);
}

/*
 * -v: where the start went, in ms since the ring's creation began (the first step of loading),
 * each thread's step at its end, with the CPU it took: the way to see which path is the
 * longest (docs/performance.md, "Attach and detach").
 */
static void say_startup(struct session *s)
{
	const struct startup_times *u = &s->up;
	double ms = 1e6;

	if (!u->begin || !log_enabled(LOG_DEBUG))
		return;
	pr_debug("start-up, ms from the ring's creation (thread CPU): table resolved %.1f (%.1f), "
		 "uprobe object loaded %.1f (%.1f), driver tier %.1f (%.1f), probes attached %.1f, "
		 "ready %.1f", (u->resolved - u->begin) / ms, u->main_cpu / ms,
		 (s->upl->end_ns - u->begin) / ms, s->upl->cpu_ns / ms,
		 s->drv->end_ns ? (s->drv->end_ns - u->begin) / ms : 0.0, s->drv->cpu_ns / ms,
		 (u->attached - u->begin) / ms, (now_ns(CLOCK_MONOTONIC) - u->begin) / ms);
}

void session_ready(struct session *s)
{
	int err;

	say_startup(s);
	s->up.begin = 0;	/* said once */
	if (s->ready || !s->env->ready_file)
		return;
	s->ready = true;
	if ((err = write_ready_file(s->env->ready_file)))
		pr_warn("cannot write ready file %s: %s", s->env->ready_file, strerror(-err));
}

/* The start-up line: each probe's estimated cost per call, dearest first. */
static void print_startup_costs(const struct target *t, const struct hit_costs *c)
{
	int order[t->cnt > 0 ? t->cnt : 1], n = 0;
	double ns[t->cnt > 0 ? t->cnt : 1];
	char line[1024];
	size_t off;

	for (int i = 0; i < t->cnt; i++) {
		ns[i] = cost_probe(c, t, &t->probes[i], NULL);
		if (t->probes[i].attached)
			order[n++] = i;
	}
	/* insertion sort: tens of probes */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && ns[order[j]] > ns[order[j - 1]]; j--) {
			int x = order[j];

			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	off = snprintf(line, sizeof(line), "estimated cost per call (%s: %.1f us emulated, %.1f us "
		       "single-stepped, %.1f us uretprobe return; rets %s):", c->calibrated ?
		       "measured here" : "reference VM", c->emulated_ns / 1000,
		       c->stepped_ns / 1000, c->uret_ns / 1000,
		       c->rets_emulated ? "done by BPF" : "single-stepped");
	for (int k = 0; k < n && k < 8 && off < sizeof(line); k++)
		off += snprintf(line + off, sizeof(line) - off, "%s %s %.1f us", k ? "," : "",
				t->probes[order[k]].name, ns[order[k]] / 1000);
	if (n > 8 && off < sizeof(line))
		off += snprintf(line + off, sizeof(line) - off, ", ... (%d more)", n - 8);
	if (!n && off < sizeof(line))
		snprintf(line + off, sizeof(line) - off, " no probe attached");
	pr_info("%s", line);
}

void session_calibrate(struct session *s)
{
	/* the meter (new each window) takes the per-hit costs measured while tracing */
	s->meter.cal = s->cal;
	if (s->cal)
		return;
	/*
	 * What the probes cost per call, measured now that the job runs (about 20-50 ms of this
	 * thread's wait; the ring holds what comes meanwhile), said before it hurts
	 */
	s->cal = cost_calibrate_start();
	cost_calibrate_result(s->cal, &s->costs);
	s->meter.costs = s->costs;
	s->meter.cal = s->cal;
	if (!s->env->quiet)
		print_startup_costs(&s->t, &s->costs);
}

/*
 * Above this overhead, said once with what would lower it. 10 %: the mock's default workload,
 * every probe, runs at ~+250 % here with returns single-stepped, and real PyTorch's ops (6
 * probes, ~27 us each) cross it at ~4 k calls/s, a small model's training loop. An overhead
 * too high to be known is above it.
 */
#define OVERHEAD_ADVICE_PCT 10.0

/*
 * What the user can do when tracing costs much (issue 25): the cheaper return probes when
 * returns are single-stepped here, sampling, a budget. Nothing when --max-overhead already
 * keeps a budget, or once said.
 */
static void advise_overhead(struct session *s)
{
	const struct env *e = s->env;
	struct overhead o = cost_meter_overhead(&s->meter, false);
	char opts[512], what[96];
	size_t off = 0;

	if (s->advised || e->quiet || e->max_overhead || o.share < 0 ||
	    (o.known && o.pct < OVERHEAD_ADVICE_PCT))
		return;
	s->advised = true;
	if (!e->uretprobes && !s->costs.rets_emulated)
		off += snprintf(opts + off, sizeof(opts) - off, "--uretprobes (returns by the "
				"kernel's return probes, %.1f us instead of %.1f us single-stepped; "
				"only where nothing the probes cover throws), ",
				s->costs.uret_ns / 1000, s->costs.stepped_ns / 1000);
	if (e->sample_every <= 1)
		off += snprintf(opts + off, sizeof(opts) - off, "--sample-every N (1 call in N), ");
	snprintf(opts + off, sizeof(opts) - off, "--max-overhead PCT (trace in windows that hold "
		 "the overhead to PCT %%)");
	if (o.known)
		snprintf(what, sizeof(what), "an estimated %.0f%% to the job's CPU time", o.pct);
	else
		snprintf(what, sizeof(what), "an overhead too high to measure (the probes take "
			 "~%.0f%% of the job's CPU time)", o.share);
	pr_info("tracing adds %s (the last second)%s; to trace for less: %s", what,
		!e->uretprobes && !s->costs.rets_emulated ?
		" (returns single-stepped by the kernel here)" : "", opts);
}

/* The terminal's width in columns (80 when it says nothing). */
static int terminal_width(int fd)
{
	struct winsize ws;

	return !ioctl(fd, TIOCGWINSZ, &ws) && ws.ws_col ? ws.ws_col : 80;
}

/* The probes' cost is weighed every second, shown or not (--max-overhead); the status line. */
static void session_status(struct session *s)
{
	struct run_counts rc;
	char cost[512];

	tracer_read_counters(&s->tr, s->t.cnt);
	cost_meter_update(&s->meter, &s->t, s->tr.counters);
	advise_overhead(s);
	if (s->status) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		struct status_facts f;

		/* the summary's "dropped" and "unwound", as they stand now */
		summary_counts(&s->cons, &s->t, s->tr.counters, &rc);
		f = (struct status_facts){
			.drops = run_counts_dropped(&rc), .unwound = rc.unwound,
			.nprobes = s->tr.attached, .entry_only = s->t.entry_only,
			.cost = cost_meter_status(&s->meter, &s->t, cost, sizeof(cost)),
			.driver = s->vfio, .elapsed_s = (now - s->trace_start) / 1e9,
			.left_s = s->deadline ? (s->deadline > now ? s->deadline - now : 0) / 1e9 : -1,
			.bytes = session_bytes(s), .file = s->file.index,
			.max_size = s->fleet || s->rec ? 0 : s->env->max_size, .tty = s->tty,
			.in_memory = s->rec != NULL,
			.width = terminal_width(STDERR_FILENO),
		};

		if (s->rb.b && now > s->rb.start_ns) {
			f.budget_pct = s->env->max_overhead;
			f.paused = !s->budget->on;
			f.traced_pct = 100.0 * budget_traced_ns(s->budget, now) /
				       (now - s->rb.start_ns);
		}

		summary_status_line(&s->cons, &f, &s->last);
	}
	/* from now: detaching can take a while (grace periods) */
	s->next_status = now_ns(CLOCK_MONOTONIC) + 1000000000ull;
}

/* A full disk will not empty itself: stop instead of tracing into nothing. */
static void check_written(struct session *s)
{
	int err = jw_error(trace_jw(s->tw));

	if (!err || s->write_err)
		return;
	pr_err("writing %s failed: %s; stopping", s->path, strerror(-err));
	s->write_err = err;
	s->stop = true;
}

/* New libraries (dlopen) and processes: attach to what they add. */
static void session_rescan(struct session *s)
{
	int n = session_scan(s, false);

	python_scan(s);
	if ((n > 0 || n == -E2BIG) && !consumer_resize(&s->cons, s->t.cnt)) {
		apply_triggers(s);
		tracer_attach(&s->tr, &s->t, s->env->follow ? -1 : s->t.pid);
	}
	/* a library loaded now that lacks a user's symbol: too late to refuse */
	if (n >= 0)
		target_say_missing(&s->t, "warning: ", true, s->said);
	target_warn_unreadable(&s->t);
	check_written(s);
}

/* A stop signal, or SIGHUP: in fleet mode the window's file closes and a new one begins. */
static void take_signal(struct session *s)
{
	struct signalfd_siginfo si;

	if (read(s->sfd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGUSR1)
		s->dump_asked = true;
	else if (si.ssi_signo != SIGHUP || s->hup_stops)
		s->stop = true;
	else if (s->fleet)
		s->hup = true;
}

/* One poll for a signal, the target's end or @timeout_ms; then the deadline. */
static void wait_events(struct session *s, int timeout_ms)
{
	struct pollfd pfd[2] = {
		{ .fd = s->sfd, .events = POLLIN },
		{ .fd = s->pidfd, .events = POLLIN },
	};
	uint64_t now;

	poll(pfd, s->pidfd >= 0 ? 2 : 1, timeout_ms);
	if (pfd[0].revents & POLLIN)
		take_signal(s);
	if (s->pidfd >= 0 && (pfd[1].revents & POLLIN))
		s->target_gone = s->stop = true;
	if (s->pidfd < 0 && s->t.pid > 0 && kill(s->t.pid, 0) && errno == ESRCH)
		s->target_gone = s->stop = true;
	now = now_ns(CLOCK_MONOTONIC);
	if (s->deadline && now >= s->deadline)
		s->stop = true;
}

/*
 * The wait before the next drain, after a drain that found the ring @fill full (0..1) and was
 * cut short (@backlog): none then; longer while the ring stays nearly empty, back to
 * TRACER_DRAIN_MS on a burst (uprobe_tier.h); Python stacks keep 10 ms (code objects are named
 * from the live process: its last calls before it exits lose no more than that); never past
 * the next status line, rescan, deadline or window end (@until_ns).
 */
static int drain_wait_ms(struct session *s, double fill, bool backlog, uint64_t now,
			 uint64_t until_ns)
{
	uint64_t ends[5] = { s->next_status, s->next_rescan, s->deadline, until_ns,
			     s->budget ? s->next_budget : 0 };
	int ms;

	if (backlog || fill > TRACER_DRAIN_BUSY)
		s->drain_ms = TRACER_DRAIN_MS;
	else if (fill < TRACER_DRAIN_IDLE && !s->py_wanted)
		s->drain_ms = s->drain_ms * 2 > TRACER_DRAIN_MAX_MS ? TRACER_DRAIN_MAX_MS :
								       s->drain_ms * 2;
	if (backlog)
		return 0;
	ms = s->drain_ms;
	for (int i = 0; i < 5; i++)
		if (ends[i] && ends[i] > now && (ends[i] - now) / 1000000 < (uint64_t)ms)
			ms = (int)((ends[i] - now) / 1000000);
	return ms;
}

/* Everything left in the ring, into the files as bounded (the end of a window). */
static void drain_rest(struct session *s)
{
	for (;;) {
		bool more = drain_run(s->drain, &s->cons, false);

		if (file_full(s)) {
			s->unwritten += drain_skip(s->drain);
			return;
		}
		if (!more && !drain_full(s->drain))
			return;
	}
}

/*
 * --max-overhead: every probe detached, the trace going on. What threads had open becomes an
 * instant each (noReturn, as at a stop), their frames forgotten; device work in flight now is
 * forgotten too (device_pause): nothing seen while paused may end it.
 */
static void budget_pause(struct session *s)
{
	tracer_detach(&s->tr, &s->t);
	drain_rest(s);
	s->rb.launches_cut += device_pause(&s->cons.dev);
	s->mem.pauses++;
}

/*
 * -a, -f: the processes that brought a traced call are the jobs the meter weighs the probes
 * against (cost_meter_watch), each from its first call on.
 */
static void watch_jobs(struct session *s)
{
	if (!s->env->system_wide && !s->env->follow)
		return;
	for (; s->jobs_watched < s->cons.nprocs; s->jobs_watched++)
		if (cost_meter_watch(&s->meter, (int)s->cons.procs[s->jobs_watched].pid) ==
		    -ENOMEM)
			break;	/* again at the next drain */
}

/* The budget's tick (budget.h): the run's estimate so far decides a pause or a new window. */
static void budget_check(struct session *s, uint64_t now)
{
	uint64_t t0, took;
	enum budget_act act;
	struct overhead o, so;
	char pct[32];
	int err = 0;

	if (!s->budget || now < s->next_budget)
		return;
	s->next_budget = now + BUDGET_TICK_MS * 1000000ull;
	tracer_read_counters(&s->tr, s->t.cnt);
	o = cost_meter_peek(&s->meter, &s->t, s->tr.counters);
	act = budget_tick(s->budget, now, o.extra_ns, o.cpu_ns);
	if (act == BUDGET_KEEP)
		return;
	/* a window spans its attach and its detach: what the probes saw is inside it */
	t0 = now_ns(CLOCK_MONOTONIC);
	if (act == BUDGET_PAUSE) {
		budget_pause(s);
		now = now_ns(CLOCK_MONOTONIC);
	} else {
		now = t0;
		err = tracer_attach(&s->tr, &s->t, s->env->follow ? -1 : s->t.pid);
		cost_meter_charge(&s->meter, BUDGET_SWITCH_MS * 1e6);
		/* the window's start as the figure counts the charge (cost_meter_extra) */
		o = cost_meter_peek(&s->meter, &s->t, s->tr.counters);
	}
	took = now_ns(CLOCK_MONOTONIC) - t0;
	budget_switched(s->budget, act == BUDGET_RESUME, now, o.extra_ns, o.cpu_ns);
	budget_took(s->budget, act == BUDGET_RESUME, took);
	so = cost_overhead(o.extra_ns, o.cpu_ns);
	pr_debug("--max-overhead %g%%: %s at %.3f s in %.1f ms (overhead so far %s, %.0f ms of "
		 "probes in %.0f ms of job CPU)%s%s", s->env->max_overhead, act == BUDGET_PAUSE ?
		 "paused" : "traced again", (now - s->rb.start_ns) / 1e9, took / 1e6,
		 cost_overhead_str(&so, pct, sizeof(pct)), o.extra_ns / 1e6, o.cpu_ns / 1e6,
		 err ? ": " : "", err ? strerror(-err) : "");
}

void session_loop(struct session *s, uint64_t until_ns)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	bool backlog = false;
	double fill = 0;

	/* -d counts from the first window's start */
	if (!s->trace_start)
		s->trace_start = now;
	if (!s->deadline && s->env->duration > 0)
		s->deadline = now + (uint64_t)(s->env->duration * 1e9);
	s->last = (struct status_prev){ .events = s->cons.events, .bytes = session_bytes(s),
					.ns = now };
	s->next_status = now + 1000000000ull;
	s->next_rescan = now + TRACER_RESCAN_MS * 1000000ull;
	if (s->budget && !s->rb.b) {	/* the first window: since the attach */
		budget_init(s->budget, s->env->max_overhead, s->attach_ns ?: now);
		cost_meter_charge(&s->meter, BUDGET_SWITCH_MS * 1e6);	/* the first one's */
		s->rb = (struct run_budget){ .b = s->budget, .start_ns = s->attach_ns ?: now,
					     .base_ns = s->mono_base };
		s->next_budget = now + BUDGET_TICK_MS * 1000000ull;
	}
	s->drain_ms = TRACER_DRAIN_MS;
	while (!s->stop && !s->hup) {
		wait_events(s, drain_wait_ms(s, fill, backlog, now, until_ns));
		fill = drain_fill(s->drain);	/* what came in while it waited */
		backlog = drain_run(s->drain, &s->cons, false);
		if (file_full(s))
			break;
		recorder_check(s, now_ns(CLOCK_MONOTONIC));
		watch_jobs(s);
		cost_meter_sample(&s->meter);
		now = now_ns(CLOCK_MONOTONIC);
		if (s->stop || s->hup || (until_ns && now >= until_ns))
			break;
		budget_check(s, now);
		if (now >= s->next_rescan) {
			/* paused: a library loaded meanwhile is resolved at the next window */
			if (!s->budget || s->budget->on)
				session_rescan(s);
			s->next_rescan = now + TRACER_RESCAN_MS * 1000000ull;
			/* once a second on disk: a SIGKILL loses at most that (and the ring's) */
			if (s->tw)
				jw_flush(trace_jw(s->tw));
		}
		if (now >= s->next_status)
			session_status(s);
	}
}

void session_wait(struct session *s, uint64_t until_ns)
{
	while (!s->stop && !s->hup) {
		uint64_t now = now_ns(CLOCK_MONOTONIC), end = until_ns;

		/* -d first: no file is begun for a window that would end at once */
		if (s->deadline && now >= s->deadline)
			s->stop = true;
		if (s->stop || now >= until_ns)
			break;
		if (s->deadline && s->deadline < end)
			end = s->deadline;
		wait_events(s, (int)((end - now) / 1000000 + 1));
	}
}

/* A process that crashed while traced is worth a line in the operator's log. */
static void say_killed(struct session *s)
{
	char name[48];

	if (!s->fleet && run_end_signal(&s->end))
		pr_info("target %d was killed by %s while traced", s->t.pid,
			run_end_signame(&s->end, name, sizeof(name)));
	for (int i = 0; i < s->cons.nexits; i++) {
		const struct run_end e = { .exit_known = true, .exit_code = s->cons.exits[i].code };

		if (!s->fleet && (int)s->cons.exits[i].pid == s->t.pid)
			continue;	/* said above */
		if (run_end_signal(&e))
			pr_info("process %u was killed by %s while traced", s->cons.exits[i].pid,
				run_end_signame(&e, name, sizeof(name)));
	}
}

int session_window_end(struct session *s, uint64_t index)
{
	const struct env *env = s->env;
	struct run_sampling sampling;
	char *extra;
	int err;

	if (s->status && s->tty)
		fputc('\n', stderr);
	/* the last stretch of the cost estimate, while the job's CPU clock can still be read */
	tracer_read_counters(&s->tr, s->t.cnt);
	cost_meter_update(&s->meter, &s->t, s->tr.counters);
	test_hold("SPYRE_TEST_HOLD_END");
	/* detach first so the counters stop moving, then take everything left in the ring; in
	 * fleet mode the jobs pay nothing between windows: no probe stays behind */
	s->detach_start = now_ns(CLOCK_MONOTONIC);
	detach_tiers(&s->tr, &s->t, s->vfio);
	s->rb.now_ns = now_ns(CLOCK_MONOTONIC);
	s->detach_ns = s->rb.now_ns - s->detach_start;
	if (s->budget && s->budget->on)	/* the last window ends here */
		budget_switched(s->budget, false, s->rb.now_ns, 0, 0);
	if (s->fleet)
		drain_run(s->drain, &s->cons, true);
	else if (s->full)	/* stopped at the bound: the rest is counted, not written */
		s->unwritten += drain_skip(s->drain);
	else
		drain_rest(s);
	tracer_read_counters(&s->tr, s->t.cnt);
	consumer_write_metadata(&s->cons);
	s->end = (struct run_end){ .target_exited = s->target_gone, .driver = s->vfio,
				   .rets_emulated = s->tr.emulate,
				   .rets_why = s->env->uretprobes ? NULL : s->emu_why,
				   .cost = &s->meter, .max_overhead = env->max_overhead,
				   .budget = s->rb.b ? &s->rb : NULL };
	/*
	 * launch mode: a user's library the job never loaded (nor dlopen'ed) is exit 10, as a
	 * missing one is by PID; --allow-missing (and fleet mode) make it a warning
	 */
	if (s->launch_pid > 0 && !env->allow_missing)
		s->unresolved += target_say_missing(&s->t, "", false, s->said);
	else
		target_say_missing(&s->t, "warning: ", false, s->said);
	if (s->unresolved && s->launch_pid > 0 && !env->allow_missing)
		pr_err("a --probe/--probes line resolved nowhere while %s ran: exit 10 (a "
		       "typo? --allow-missing makes it a warning)", env->argv_cmd ?
		       env->argv_cmd[0] : "the job");
	/* the exit hook's record of the target's end (a launched child is also reaped here) */
	if (s->t.pid > 0)
		s->end.exit_known = consumer_exit_code(&s->cons, s->t.pid, &s->end.exit_code);
	if (!s->end.exit_known && s->launch_pid > 0 && s->target_gone &&
	    waitpid(s->launch_pid, &s->end.exit_code, WNOHANG) == s->launch_pid)
		s->end.exit_known = true;
	say_killed(s);
	sampling = (struct run_sampling){ .system_wide = env->system_wide,
					  .sample_every = env->sample_every, .rate_cap = env->rate_cap,
					  .window_s = env->window, .period_s = env->period,
					  .window = index };
	s->end.sampling = &sampling;
	s->end.file = file_facts(s, now_ns(CLOCK_MONOTONIC), true, s->full ? "max-size" : "end");
	s->end.unwritten = s->unwritten;
	if (s->rec) {	/* the last DUR, once more, and the slice in memory gone */
		s->stop = true;
		err = dump(s, "exit");
		trace_end(s->tw, NULL);
		s->tw = NULL;
		s->end.sampling = NULL;
		s->end.file = NULL;
		if (err) {
			s->write_err = err;
			return err;
		}
		return 0;
	}
	extra = summary_trace_metadata(&s->cons, &s->t, s->tr.counters, &s->end);
	s->end.sampling = NULL;
	if (!s->fleet)
		s->bytes_done += jw_bytes(trace_jw(s->tw));
	err = trace_end(s->tw, extra);
	s->tw = NULL;
	free(extra);
	if (err) {
		pr_err("writing %s failed: %s", s->path, strerror(-err));
		/* the next file would go the same way */
		s->write_err = err;
		s->stop = true;
	}
	return err;
}

void session_window_close(struct session *s)
{
	/* fleet mode: each window has a budget of its own, from its attach */
	if (s->budget) {
		memset(s->budget, 0, sizeof(*s->budget));
		s->rb = (struct run_budget){};
		s->attach_ns = 0;
	}
	/* a job that ended holds nothing now */
	for (int i = 0; i < s->cons.nexits; i++)
		memledger_forget(&s->mem, s->cons.exits[i].pid);
	tracer_reset_counters(&s->tr, s->t.cnt);
	consumer_free(&s->cons);
}

int session_exit_code(const struct session *s)
{
	if (s->write_err)
		return EXIT_OUTPUT;
	if (run_end_signal(&s->end))
		return EXIT_TARGET_KILLED;
	return s->unresolved ? EXIT_NO_MATCH : EXIT_OK;
}
