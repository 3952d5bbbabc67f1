// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A session's start (declared in session.h): the target checked, the session made (and
 * unmade), the two BPF objects loaded in threads while the table resolves, the return-site
 * self-tests' verdicts, the attach, and -v's start-up line that times these steps.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "common/util.h"
#include "common/log.h"
#include "attach/retcheck.h"
#include "cmd/session.h"
#include "stream/drain.h"
#include "output/recorder.h"
#include "output/trace_writer.h"
#include "common/process.h"
#include "attach/warm.h"
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
	s->vroot = s->drv->cfg.root;
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
