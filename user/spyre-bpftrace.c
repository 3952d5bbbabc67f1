// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * spyre-bpftrace: attach to a running Spyre job, trace its runtime calls, write a Chrome trace.
 * Lifecycle as in libbpf-tools: open -> configure -> load -> attach, then a timed drain loop.
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "consumer.h"
#include "memledger.h"
#include "check.h"
#include "env.h"
#include "fleet.h"
#include "launch.h"
#include "merge.h"
#include "output.h"
#include "probes.h"
#include "resolve.h"
#include "retsite.h"
#include "summary.h"
#include "tracer.h"
#include "util.h"
#include "spyre.skel.h"
#include "vfio.h"
#include "warm.h"

static struct env env;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (libbpf_is_quiet())
		return 0;
	if (level == LIBBPF_DEBUG && !env.verbose)
		return 0;
	if (level == LIBBPF_INFO && !env.verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

/*
 * The two BPF objects load in threads while the main thread reads the target (see cmd_trace):
 * each load parses vmlinux BTF (~15 ms) and runs the verifier.
 */
struct bg_load {
	pthread_t th;
	bool running;
	int err;
	/* uprobe tier */
	struct tracer *tr;
	const struct tracer_opts *topts;
	/* driver tier */
	struct vfio_config cfg;
	int ring_fd;
	struct vfio_tracer *vfio;
	char msg[1024];
};

static void *uprobe_load(void *arg)
{
	struct bg_load *l = arg;

	l->err = tracer_open(l->tr, l->topts);
	return NULL;
}

static void *driver_load(void *arg)
{
	struct bg_load *l = arg;

	l->err = vfio_open(&l->vfio, &l->cfg, l->msg, sizeof(l->msg));
	if (!l->err)
		l->err = vfio_attach(l->vfio, l->ring_fd, l->msg, sizeof(l->msg));
	return NULL;
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

/* Run @fn in a thread, or here if no thread can be made. */
static void bg_start(struct bg_load *l, void *(*fn)(void *))
{
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

/* Refuse what cannot be traced, with the reason: gone, zombie, kernel thread. */
static int check_pid(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		die_msg("no such process: %d", pid);
		return EXIT_NO_PID;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		die_msg("no such process: %d", pid);
		return EXIT_NO_PID;
	}
	buf[n] = 0;
	/* comm may contain ')' and spaces: the state follows the last ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ') {
		die_msg("cannot read the state of process %d", pid);
		return EXIT_NO_PID;
	}
	if (p[2] == 'Z' || p[2] == 'X') {
		die_msg("process %d is a zombie (exited, not reaped): nothing to trace", pid);
		return EXIT_NO_PID;
	}
	{
		/* field 9 after the state: flags; PF_KTHREAD = 0x00200000 */
		unsigned long flags = 0;

		if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) == 1 &&
		    (flags & 0x00200000)) {
			die_msg("process %d is a kernel thread: it has no user-space runtime", pid);
			return EXIT_NO_PID;
		}
	}
	return 0;
}

static int add_lib_cb(const char *path, void *ctx)
{
	int n = target_add_lib(ctx, path);

	return n < 0 && n != -ENOENT ? n : 0;
}

static int cmd_list(struct probe_table *table)
{
	struct target t;
	int err, rc;

	rc = check_pid(env.pid);
	if (rc)
		return rc;
	if (!have_privileges()) {
		die_msg("reading another process's libraries needs root (or CAP_SYS_PTRACE)");
		return EXIT_PERM;
	}
	err = target_init(&t, env.pid, table, SPYRE_MAX_PROBES);
	t.uretprobes = env.uretprobes;
	if (!err)
		err = target_scan(&t);
	if (err < 0) {
		die_msg("cannot resolve probes in %d: %s", env.pid, strerror(-err));
		target_free(&t);
		return err == -ENOENT || err == -ESRCH ? EXIT_NO_PID : EXIT_ERROR;
	}
	rc = 0;
	for (int i = 0; i < table->cnt; i++)
		rc += t.spec_hits[i] > 0;
	printf("process %d: %d of %d probe specs resolved to %d functions\n", env.pid, rc,
	       table->cnt, t.cnt);
	target_report(&t, stdout);
	rc = t.cnt ? EXIT_OK : EXIT_NO_RUNTIME;
	target_free(&t);
	return rc;
}

static int build_table(struct probe_table *table)
{
	char err[512];
	int e;

	if (!env.no_default && (e = probes_load_default(table, err, sizeof(err)))) {
		die_msg("built-in probe table: %s", err);
		return EXIT_ERROR;
	}
	for (int i = 0; i < env.n_probe_files; i++) {
		e = probes_parse_file(table, env.probe_files[i], err, sizeof(err));
		if (e) {
			die_msg("%s", err);
			return e == -EINVAL ? EXIT_USAGE : EXIT_ERROR;
		}
	}
	for (int i = 0; i < env.n_probe_args; i++) {
		if (probes_parse_cli(table, env.probe_args[i], err, sizeof(err))) {
			die_msg("%s", err);
			return EXIT_USAGE;
		}
	}
	if (!table->cnt) {
		die_msg("the probe table is empty (--no-default without --probe/--probes)");
		return EXIT_USAGE;
	}
	return 0;
}

static int cmd_trace(struct probe_table *table)
{
	struct tracer_opts topts = { .sample_every = env.sample_every,
				     .rate_cap = env.rate_cap, .uretprobes = env.uretprobes };
	struct launch launch = { .pid = -1, .go_fd = -1 };
	struct trace_writer *tw = NULL;
	struct tracer tr = {};
	struct vfio_tracer *vfio = NULL;
	struct bg_load upl = {}, drv = {};
	struct warmer *warm = NULL;
	struct consumer cons = {};
	struct memledger mem = {};
	struct output out = {};
	struct target t = {};
	struct trace_meta meta = {};
	struct run_end end = {};
	char default_out[96], hostname[64] = "", signame[48];
	int rc = EXIT_ERROR, err, sfd = -1, pidfd = -1, ring_fd = -1, nwarm;
	uint64_t start_ns, deadline = 0, next_status, next_rescan, last_events = 0, last_ns;
	bool tty, target_gone = false, stop = false, backlog = false;

	/* preflight, cheapest and most specific first */
	if (env.pid && (rc = check_pid(env.pid)))
		return rc;
	if ((rc = preflight_bpf()))
		return rc;
	rc = EXIT_ERROR;

	if (env.argv_cmd) {
		err = launch_start(&launch, env.argv_cmd);
		if (err) {
			die_msg("cannot start %s: %s", env.argv_cmd[0], strerror(-err));
			return EXIT_ERROR;
		}
		env.pid = launch.pid;
	}
	err = target_init(&t, env.pid, table, SPYRE_MAX_PROBES);
	t.uretprobes = env.uretprobes;
	if (err)
		goto cleanup;

	/* ts 0 comes before anything is attached: no event can predate the trace */
	meta.mono_base_ns = now_ns(CLOCK_MONOTONIC);
	meta.real_base_ns = now_ns(CLOCK_REALTIME);

	/*
	 * Both BPF objects load in threads, into one ring buffer made first, while this thread
	 * resolves the probes: on two CPUs, start to ready in about the time of the longest load.
	 */
	/*
	 * The kernel's wait before the first uprobe link, taken while everything else runs;
	 * after launch_start(), so that the child is forked from a single-threaded tracer.
	 */
	warm = warm_start();
	ring_fd = tracer_ring_create(env.ringbuf_mb);
	if (ring_fd < 0) {
		die_msg("cannot create the ring buffer: %s", strerror(-ring_fd));
		rc = ring_fd == -EPERM ? EXIT_PERM : EXIT_ERROR;
		goto cleanup;
	}
	topts.follow_pid = env.follow ? env.pid : 0;
	topts.ring_fd = ring_fd;
	upl.tr = &tr;
	upl.topts = &topts;
	bg_start(&upl, uprobe_load);
	drv.cfg = (struct vfio_config){ .mode = env.driver, .funcs = env.driver_funcs,
					.tgid = env.pid, .procfs = "/proc", .verbose = env.verbose };
	drv.ring_fd = ring_fd;
	bg_start(&drv, driver_load);

	if (env.argv_cmd) {
		err = launch_needed_libs(env.argv_cmd, add_lib_cb, &t);
		if (err) {
			die_msg("cannot list the libraries of %s: %s", env.argv_cmd[0],
				strerror(-err));
			goto cleanup;
		}
	} else {
		err = target_scan(&t);
		if (err < 0) {
			die_msg("cannot read the mappings of %d: %s", env.pid, strerror(-err));
			rc = err == -ENOENT || err == -ESRCH ? EXIT_NO_PID : EXIT_ERROR;
			if (err == -E2BIG)
				die_msg("more than %d functions match the probe table",
					SPYRE_MAX_PROBES);
			goto cleanup;
		}
		/* a runtime we cannot read is not the same as no runtime: say which */
		if (target_warn_unreadable(&t) && !t.cnt) {
			rc = EXIT_NO_RUNTIME;
			goto cleanup;
		}
		if (!t.cnt) {
			die_msg("no Spyre runtime in process %d: no mapped library matches the probe "
				"table (see `spyre-bpftrace list -p %d`)", env.pid, env.pid);
			rc = EXIT_NO_RUNTIME;
			goto cleanup;
		}
	}

	if (!env.output) {
		snprintf(default_out, sizeof(default_out), "spyre-trace-%d.json", env.pid);
		env.output = default_out;
	}
	err = output_open(&out, env.output, env.force);
	if (err) {
		die_msg("cannot create %s: %s%s", env.output, strerror(-err),
			err == -EEXIST ? " (use --force to replace it)" : "");
		rc = EXIT_OUTPUT;
		goto cleanup;
	}

	bg_join(&upl);
	err = upl.err;
	if (err) {
		/* EACCES is the verifier's verdict, EPERM a missing privilege or lockdown */
		die_msg("cannot load the BPF programs: %s%s", strerror(-err),
			env.verbose ? "" : " (run with -v for the details)");
		rc = err == -EPERM ? EXIT_PERM : EXIT_ERROR;
		goto cleanup;
	}
	if (env.verbose)
		fprintf(stderr, "spyre-bpftrace: %s links; per-thread call stacks in %s\n",
			tr.multi ? "uprobe_multi" : "perf-event uprobe",
			tr.stage ? "task storage, spans staged per thread" :
			tr.task_storage ? "task storage" : "a hash map");
	if (env.verbose)
		die_msg("returns seen by %s", env.uretprobes ? (tr.unwind_guard ?
			"uretprobes, C++ exception unwind guard on" : "uretprobes, NO unwind guard "
			"(bpf_probe_write_user refused, not x86-64, or SPYRE_NO_UNWIND_GUARD=1)") :
			"uprobes on return instructions, where they can be found safely (the stack "
			"is never modified)");

	/*
	 * Attach while the driver tier may still be loading (without the warm-up, the first
	 * uprobe link waits 8-20 ms in the kernel, time the other thread uses). Records wait in
	 * the ring until it is mapped below. A driver path asked for by name must work first.
	 */
	if (env.driver != VFIO_MODE_AUTO)
		bg_join(&drv);
	if (!drv.err) {
		start_ns = now_ns(CLOCK_MONOTONIC);
		/* following forks: probes on every process, the BPF keeps to the target's tree */
		err = tracer_attach(&tr, &t, env.follow ? -1 : env.pid);
		if (err) {
			rc = err == -EPERM || err == -EACCES ? EXIT_PERM : EXIT_ERROR;
			goto cleanup;
		}
		nwarm = warm_end(warm);
		if (t.entry_only)
			die_msg("warning: %d probe%s record%s entries only: %s returns cannot be seen "
				"safely (`spyre-bpftrace list -p %d` says why)", t.entry_only,
				t.entry_only > 1 ? "s" : "", t.entry_only > 1 ? "" : "s",
				t.entry_only > 1 ? "their" : "its", env.pid);
		if (env.verbose)
			fprintf(stderr, "spyre-bpftrace: %d probes attached in %.1f ms (%d uprobes "
				"kept the registration lock warm)\n", tr.attached,
				(now_ns(CLOCK_MONOTONIC) - start_ns) / 1e6, nwarm);
	}
	bg_join(&drv);
	vfio = drv.vfio;
	/* each BPF object holds the ring now */
	close(ring_fd);
	ring_fd = -1;
	if (drv.err) {
		die_msg("driver tier: %s", drv.msg);
		goto cleanup;
	}
	if (drv.msg[0])	/* auto mode found no working path: say why, trace on without */
		die_msg("%s", drv.msg);
	else if (env.verbose)
		die_msg("driver tier: %s", vfio_path_name(vfio_path(vfio)));
	err = tracer_map_ring(&tr);
	if (err) {
		die_msg("cannot map the ring buffer: %s", strerror(-err));
		goto cleanup;
	}

	gethostname(hostname, sizeof(hostname) - 1);
	meta.trace_name = env.output;
	meta.tool_version = SPYRE_VERSION;
	meta.hostname = hostname;
	meta.device_id = 0;
	err = trace_begin(&tw, out.jw, &meta);
	out.jw = NULL;	/* owned (and on failure closed) by the trace writer */
	if (err)
		goto cleanup;
	err = consumer_init(&cons, tw, &t, "/proc");
	if (err || (err = memledger_init(&mem)))
		goto cleanup;
	cons.vfio = vfio;
	memledger_attach(&mem, &cons, meta.mono_base_ns);

	sfd = stop_signals_fd();
	pidfd = syscall(SYS_pidfd_open, env.pid, 0);

	if (env.ready_file && (err = write_ready_file(env.ready_file)))
		die_msg("cannot write ready file %s: %s", env.ready_file, strerror(-err));
	if (env.argv_cmd)
		launch_release(&launch);

	tty = isatty(STDERR_FILENO);
	if (env.status < 0)
		env.status = tty;
	last_ns = now_ns(CLOCK_MONOTONIC);
	next_status = last_ns + 1000000000ull;
	next_rescan = last_ns + TRACER_RESCAN_MS * 1000000ull;
	if (env.duration > 0)
		deadline = last_ns + (uint64_t)(env.duration * 1e9);

	while (!stop) {
		struct pollfd pfd[2] = {
			{ .fd = sfd, .events = POLLIN },
			{ .fd = pidfd, .events = POLLIN },
		};
		uint64_t now;

		poll(pfd, pidfd >= 0 ? 2 : 1, backlog ? 0 : TRACER_DRAIN_MS);
		backlog = tracer_drain(&tr, &cons, false);
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo != SIGHUP)
				stop = true;
		}
		if (pidfd >= 0 && (pfd[1].revents & POLLIN))
			target_gone = stop = true;
		if (pidfd < 0 && kill(env.pid, 0) && errno == ESRCH)
			target_gone = stop = true;
		now = now_ns(CLOCK_MONOTONIC);
		if (deadline && now >= deadline)
			stop = true;
		if (!stop && now >= next_rescan) {
			int n = target_scan(&t);

			if (n > 0 && !consumer_resize(&cons, t.cnt))
				tracer_attach(&tr, &t, env.follow ? -1 : env.pid);
			target_warn_unreadable(&t);
			next_rescan = now + TRACER_RESCAN_MS * 1000000ull;
			/* a full disk will not empty itself: stop instead of tracing into nothing */
			if (jw_error(trace_jw(tw))) {
				die_msg("writing %s failed: %s; stopping", env.output,
					strerror(-jw_error(trace_jw(tw))));
				stop = true;
			}
		}
		if (env.status && now >= next_status) {
			uint64_t drops = 0;

			tracer_read_counters(&tr, t.cnt);
			for (int i = 0; i < t.cnt; i++)
				drops += tr.counters[i].drops_ring + tr.counters[i].drops_depth;
			summary_status_line(&cons, drops,
					    summary_unwound(&t, tr.counters, tr.unwound_untracked),
					    &last_events, &last_ns, tr.attached, t.entry_only, tty);
			next_status = now + 1000000000ull;
		}
	}
	if (env.status && tty)
		fputc('\n', stderr);

	/* detach first so the counters stop moving, then take everything left in the ring */
	detach_tiers(&tr, &t, vfio);
	tracer_drain(&tr, &cons, true);
	tracer_read_counters(&tr, t.cnt);
	consumer_write_metadata(&cons);
	end.target_exited = target_gone;
	end.unwound_untracked = tr.unwound_untracked;
	/* the exit hook's record of the target's end (a launched child is also reaped here) */
	end.exit_known = consumer_exit_code(&cons, env.pid, &end.exit_code);
	if (!end.exit_known && env.argv_cmd && target_gone &&
	    waitpid(launch.pid, &end.exit_code, WNOHANG) == launch.pid)
		end.exit_known = true;
	if (run_end_signal(&end))
		die_msg("target %d was killed by %s while traced", env.pid,
			run_end_signame(&end, signame, sizeof(signame)));
	{
		char *extra = fleet_trace_metadata(&env, &cons, &t, tr.counters, &end, 0);

		err = trace_end(tw, extra);
		tw = NULL;
		free(extra);
	}
	if (err) {
		die_msg("writing %s failed: %s", env.output, strerror(-err));
		rc = EXIT_OUTPUT;
	} else {
		rc = run_end_signal(&end) ? EXIT_TARGET_KILLED : EXIT_OK;
	}
	if (!env.quiet)
		summary_print(stdout, &cons, &t, tr.counters, env.pid, &end);
	if (!env.quiet && vfio)
		vfio_summary(vfio, stdout);
	fprintf(stderr, "spyre-bpftrace: wrote %s (%llu events)%s; open it in "
		"https://ui.perfetto.dev or chrome://tracing\n", env.output,
		(unsigned long long)cons.events, !target_gone ? "" :
		run_end_signal(&end) ? ", target killed" : ", target exited");

cleanup:
	/* an error while the loads ran: they finish, and their work is undone below */
	bg_join(&upl);
	bg_join(&drv);
	warm_free(warm);
	if (ring_fd >= 0)
		close(ring_fd);
	if (env.argv_cmd && launch.go_fd >= 0)
		launch_abort(&launch);
	else if (env.argv_cmd && launch.pid > 0)
		waitpid(launch.pid, NULL, WNOHANG);
	if (tw) {
		/* error path after the header: still leave a loadable file */
		trace_end(tw, NULL);
	}
	if (out.jw) {
		/* failed before the trace began: do not leave an empty, unloadable file behind */
		output_close(&out);
		unlink(env.output);
	}
	consumer_free(&cons);
	memledger_free(&mem);
	vfio_close(drv.vfio);	/* vfio, once the driver tier's load was joined */
	if (upl.tr && !upl.err)	/* loaded */
		tracer_close(&tr);
	target_free(&t);
	if (sfd >= 0)
		close(sfd);
	if (pidfd >= 0)
		close(pidfd);
	return rc;
}

int main(int argc, char **argv)
{
	struct probe_table table = {};
	int rc;

	rc = env_parse(&env, argc, argv);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	/* to try s390x return sites on hardware (user guide: C++ exceptions) */
	s390x_br_sites = env_is_1("SPYRE_S390X_BR_SITES");
	libbpf_set_print(libbpf_print);

	switch (env.cmd) {
	case CMD_CHECK:
		rc = cmd_check(env.file_arg);
		goto out;
	case CMD_RECOVER:
		rc = cmd_recover(env.file_arg);
		goto out;
	case CMD_MERGE: {
		struct merge_opts mo = { .tol_ns = env.nest_tol_ns >= 0 ? env.nest_tol_ns :
					 MERGE_DEFAULT_TOL_NS,
					 .profiler_start_ns = env.profiler_start_ns };

		rc = cmd_merge(env.file_arg, env.file_arg2, env.output, env.force, &mo);
		goto out;
	}
	default:
		break;
	}
	rc = build_table(&table);
	if (rc)
		goto out;
	if (env.cmd == CMD_LIST)
		rc = cmd_list(&table);
	else if (env.system_wide || env.window)
		rc = env.pid && (rc = check_pid(env.pid)) ? rc : cmd_fleet(&env, &table);
	else
		rc = cmd_trace(&table);
out:
	probes_free(&table);
	env_free(&env);
	return rc;
}
