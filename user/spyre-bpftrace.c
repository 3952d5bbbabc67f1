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
#include "recover.h"
#include "cost.h"
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
#include "umulti.h"
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

/*
 * The BPF object loaded while the table resolved, its counters sized for SPYRE_PROBE_ROOM
 * probes: a table that resolved to more loads it again with room for them (tracer_room).
 * Loading with room for SPYRE_MAX_PROBES from the start would cost every run the memory and
 * the map's creation time (see tracer_room); a table this large took far longer to resolve
 * than a load (libtorch_cpu.so, 5,498 functions: ~500 ms to resolve, 90-180 ms to load again).
 */
static int reload_room(struct tracer *tr, struct tracer_opts *o, int resolved)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	int err;

	tracer_close(tr);
	o->room = tracer_room(resolved, env.max_probes);
	err = tracer_open(tr, o);
	if (!err && env.verbose)
		die_msg("%d functions: loaded again with room for %d in %.1f ms", resolved,
			tr->room, (now_ns(CLOCK_MONOTONIC) - t0) / 1e6);
	return err;
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

/* What bounds a run with this table (docs/user-guide.md, "Limits"), one line. */
static void print_limits(const struct target *t)
{
	int uprobes = 0;

	/* an entry, plus the return sites or the uretprobe of a span (see kind_offsets) */
	for (int i = 0; i < t->cnt; i++)
		uprobes += 1 + (t->probes[i].ret == RET_SITES ? t->probes[i].sites.n :
				t->probes[i].ret == RET_URETPROBE);
	printf("limits: %d functions a run (--max-probes), these %d take %d uprobes; ",
	       t->max_probes, t->cnt, uprobes);
	if (umulti_supported())
		printf("uprobe_multi links\n");
	else
		printf("no uprobe_multi in this kernel: at most %d uprobes (perf events)\n",
		       SPYRE_PERF_MAX_UPROBES);
}

/* How much a call of a probe costs here, said before tracing; see cost.h. */
static void print_costs(FILE *f, const struct hit_costs *c)
{
	fprintf(f, "cost per probe hit %s: %.1f us on an emulated instruction (push), %.1f us "
		"single-stepped (endbr64, mov, ret at a return site), %.1f us for a uretprobe's "
		"return; a call pays its entry and one return (docs/performance.md)\n",
		c->calibrated ? "measured on this machine" :
		"of the reference VM (not measured here)", c->emulated_ns / 1000,
		c->stepped_ns / 1000, c->uret_ns / 1000);
}

static int cmd_list(struct probe_table *table)
{
	struct calibration *cal;
	struct hit_costs costs;
	struct target t;
	int err, rc, missing = 0;

	rc = check_pid(env.pid);
	if (rc)
		return rc;
	if (!have_privileges()) {
		die_msg("reading another process's libraries needs root (or CAP_SYS_PTRACE)");
		return EXIT_PERM;
	}
	cal = cost_calibrate_start();
	err = target_init(&t, env.pid, table, env.max_probes ? env.max_probes : SPYRE_MAX_PROBES);
	t.uretprobes = env.uretprobes;
	t.user_from = env.user_specs_from;
	t.costs = &costs;
	if (!err)
		err = target_scan(&t);
	cost_calibrate_result(cal, &costs);
	if (err == -E2BIG) {
		target_warn_too_many(&t, false);
		target_free(&t);
		cost_calibrate_free(cal);
		return EXIT_USAGE;
	}
	if (err < 0) {
		die_msg("cannot resolve probes in %d: %s", env.pid, strerror(-err));
		target_free(&t);
		cost_calibrate_free(cal);
		return err == -ENOENT || err == -ESRCH ? EXIT_NO_PID : EXIT_ERROR;
	}
	rc = 0;
	for (int i = 0; i < table->cnt; i++) {
		rc += t.spec_hits[i] > 0;
		missing += target_spec_missing(&t, i);
	}
	printf("process %d: %d of %d probe specs resolved to %d functions\n", env.pid, rc,
	       table->cnt, t.cnt);
	print_costs(stdout, &costs);
	target_report(&t, stdout);
	print_limits(&t);
	/* a line of the user's that resolves nowhere is what they will want to hear about */
	rc = missing && !env.allow_missing ? EXIT_NO_MATCH : t.cnt ? EXIT_OK : EXIT_NO_RUNTIME;
	target_free(&t);
	cost_calibrate_free(cal);
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
	/*
	 * Built-in tables first: like the default one, each covers a whole stack (PyTorch's ops,
	 * autograd, allocator) of which a given version or build may lack a function, so their
	 * lines are not the user's typos; files and --probe lines after them are.
	 */
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			env.user_specs_from = table->cnt;
		for (int i = 0; i < env.n_probe_files; i++) {
			const char *arg = env.probe_files[i];

			if (!probes_builtin(arg) != pass)
				continue;
			/* a built-in table's name wins: say so when a file of that name is here */
			if (!pass && !access(arg, F_OK))
				fprintf(stderr, "spyre-bpftrace: --probes %s is the built-in table; the "
					"file is ./%s\n", arg, arg);
			e = probes_load(table, arg, err, sizeof(err));
			if (e) {
				die_msg("%s", err);
				return e == -EINVAL ? EXIT_USAGE : EXIT_ERROR;
			}
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

/* The start-up line: each probe's estimated cost per call, dearest first. */
static void print_startup_costs(const struct target *t, const struct hit_costs *c)
{
	int order[t->cnt > 0 ? t->cnt : 1], n = 0;
	double ns[t->cnt > 0 ? t->cnt : 1];

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
	fprintf(stderr, "spyre-bpftrace: estimated cost per call (%s: %.1f us emulated, %.1f us "
		"single-stepped, %.1f us uretprobe return):", c->calibrated ? "measured here" :
		"reference VM", c->emulated_ns / 1000, c->stepped_ns / 1000, c->uret_ns / 1000);
	for (int k = 0; k < n && k < 8; k++)
		fprintf(stderr, "%s %s %.1f us", k ? "," : "", t->probes[order[k]].name,
			ns[order[k]] / 1000);
	if (n > 8)
		fprintf(stderr, ", ... (%d more)", n - 8);
	fprintf(stderr, "%s\n", n ? "" : " no probe attached");
}

/*
 * --max-overhead, once per interval: the returns of the probes whose entries went last time
 * (their calls have returned by now), then the entries of the hottest probes while the
 * estimate is over the budget. An entry goes first so that no call is entered whose return
 * would go unseen. Returns the new count of @shed.
 */
static int shed_probes(struct tracer *tr, struct target *t, struct cost_meter *m, int *shed,
		       int nshed)
{
	int first = m->nactions, n;

	for (int k = 0; k < nshed; k++)
		tracer_detach_probe(tr, t, shed[k], true);
	n = cost_meter_over_budget(m, t, env.max_overhead, shed, SPYRE_MAX_PROBES);
	for (int k = 0; k < n; k++) {
		const struct cost_action *a = first + k < COST_MAX_ACTIONS ?
					      &m->actions[first + k] : NULL;

		tracer_detach_probe(tr, t, shed[k], false);
		if (a)
			die_msg("--max-overhead %g%%: estimated %.0f%% over the last second; detached "
				"%s (%.0f calls/s at ~%.1f us each), estimate now %.0f%%",
				env.max_overhead, a->pct_before, t->probes[shed[k]].name, a->rate,
				m->ns[shed[k]] / 1000, a->pct_after);
		else
			die_msg("--max-overhead %g%%: detached %s", env.max_overhead,
				t->probes[shed[k]].name);
	}
	return n;
}

static int cmd_trace(struct probe_table *table)
{
	struct tracer_opts topts = { .sample_every = env.sample_every,
				     .rate_cap = env.rate_cap, .uretprobes = env.uretprobes,
				     .per_probe_links = env.max_overhead > 0 };
	struct calibration *cal = NULL;
	struct cost_meter meter = {};
	struct hit_costs costs;
	int *shed = NULL, nshed = 0;	/* --max-overhead: entries detached, returns to go */
	bool *said = NULL;		/* user specs said to resolve nowhere */
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
	err = target_init(&t, env.pid, table, env.max_probes ? env.max_probes : SPYRE_MAX_PROBES);
	t.uretprobes = env.uretprobes;
	t.user_from = env.user_specs_from;
	said = calloc(table->cnt, sizeof(*said));
	shed = calloc(SPYRE_MAX_PROBES, sizeof(*shed));
	if (!err && (!said || !shed))
		err = -ENOMEM;
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
	/* the table is not resolved yet: its room is looked at again once it is (below) */
	topts.room = tracer_room(0, env.max_probes);
	upl.tr = &tr;
	upl.topts = &topts;
	bg_start(&upl, uprobe_load);
	drv.cfg = (struct vfio_config){ .mode = env.driver, .funcs = env.driver_funcs,
					.tgid = env.pid, .procfs = "/proc", .verbose = env.verbose };
	drv.ring_fd = ring_fd;
	bg_start(&drv, driver_load);

	if (env.argv_cmd) {
		err = launch_needed_libs(env.argv_cmd, add_lib_cb, &t);
		if (err == -E2BIG) {
			target_warn_too_many(&t, false);
			rc = EXIT_USAGE;
			goto cleanup;
		}
		if (err) {
			die_msg("cannot list the libraries of %s: %s", env.argv_cmd[0],
				strerror(-err));
			goto cleanup;
		}
		/*
		 * A library the job will load that lacks the symbol is a typo; one not among
		 * those it links may come with a dlopen: said at the end if it never came
		 */
		if (target_say_missing(&t, env.allow_missing ? "warning: " : "", true, said) &&
		    !env.allow_missing) {
			die_msg("not starting %s: a --probe/--probes line resolves nowhere in the "
				"libraries it loads (--allow-missing traces the others)",
				env.argv_cmd[0]);
			rc = EXIT_NO_MATCH;
			goto cleanup;
		}
	} else {
		err = target_scan(&t);
		if (err == -E2BIG) {
			target_warn_too_many(&t, false);
			rc = EXIT_USAGE;
			goto cleanup;
		}
		if (err < 0) {
			die_msg("cannot read the mappings of %d: %s", env.pid, strerror(-err));
			rc = err == -ENOENT || err == -ESRCH ? EXIT_NO_PID : EXIT_ERROR;
			goto cleanup;
		}
		/* a runtime we cannot read is not the same as no runtime: say which */
		if (target_warn_unreadable(&t) && !t.cnt) {
			rc = EXIT_NO_RUNTIME;
			goto cleanup;
		}
		/* the user's own lines first: a typo there is the likelier story */
		if (target_say_missing(&t, env.allow_missing ? "warning: " : "", false, said) &&
		    !env.allow_missing) {
			die_msg("not tracing process %d: a --probe/--probes line resolves "
				"nowhere (--allow-missing traces the others, e.g. for a library "
				"loaded later; `spyre-bpftrace list -p %d` shows what resolves)",
				env.pid, env.pid);
			rc = EXIT_NO_MATCH;
			goto cleanup;
		}
		if (!t.cnt && t.user_from < table->cnt) {
			die_msg("nothing to trace in process %d: none of the probe table's lines "
				"resolves (see `spyre-bpftrace list -p %d`)", env.pid, env.pid);
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
	if (!upl.err && t.cnt > tr.room)
		upl.err = reload_room(&tr, &topts, t.cnt);
	err = upl.err;
	if (err) {
		/* EACCES is the verifier's verdict, EPERM a missing privilege or lockdown */
		die_msg("cannot load the BPF programs: %s%s", strerror(-err),
			env.verbose ? "" : " (run with -v for the details)");
		rc = err == -EPERM ? EXIT_PERM : EXIT_ERROR;
		goto cleanup;
	}
	/* later libraries (dlopen) get what room is left */
	t.max_probes = tr.room;
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
		/* the job's CPU clock from here on goes with the hits (per-hit costs come later) */
		cost_defaults(&costs);
		cost_meter_init(&meter, &costs, env.pid);
		/* following forks: probes on every process, the BPF keeps to the target's tree */
		err = tracer_attach(&tr, &t, env.follow ? -1 : env.pid);
		if (err) {
			rc = err == -EPERM || err == -EACCES ? EXIT_PERM :
			     err == -E2BIG ? EXIT_USAGE : EXIT_ERROR;
			goto cleanup;
		}
		nwarm = warm_end(warm);
		if (t.entry_only)
			die_msg("warning: %d probe%s record%s entries only: %s returns cannot be seen "
				"safely (`spyre-bpftrace list -p %d` says why)", t.entry_only,
				t.entry_only > 1 ? "s" : "", t.entry_only > 1 ? "" : "s",
				t.entry_only > 1 ? "their" : "its", env.pid);
		if (env.verbose)
			fprintf(stderr, "spyre-bpftrace: %d probes attached in %.1f ms, %d links "
				"(%d uprobes kept the registration lock warm)\n", tr.attached,
				(now_ns(CLOCK_MONOTONIC) - start_ns) / 1e6,
				tr.multi ? tr.nmlinks : tr.perf_uprobes, nwarm);
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

	/*
	 * What the probes cost per call, measured now that the job runs (about 20-50 ms of this
	 * thread's wait; the ring holds what comes meanwhile), said before it hurts
	 */
	cal = cost_calibrate_start();
	cost_calibrate_result(cal, &costs);
	meter.costs = costs;
	if (!env.quiet)
		print_startup_costs(&t, &costs);

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
		cost_meter_sample(&meter);
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

			if (n == -E2BIG)	/* what fits is attached */
				target_warn_too_many(&t, true);
			if ((n > 0 || n == -E2BIG) && !consumer_resize(&cons, t.cnt))
				tracer_attach(&tr, &t, env.follow ? -1 : env.pid);
			/* a library loaded now that lacks a user's symbol: too late to refuse */
			if (n >= 0)
				target_say_missing(&t, "warning: ", true, said);
			target_warn_unreadable(&t);
			next_rescan = now + TRACER_RESCAN_MS * 1000000ull;
			/* a full disk will not empty itself: stop instead of tracing into nothing */
			if (jw_error(trace_jw(tw))) {
				die_msg("writing %s failed: %s; stopping", env.output,
					strerror(-jw_error(trace_jw(tw))));
				stop = true;
			}
		}
		/* the probes' cost is weighed every second, shown or not (--max-overhead) */
		if (now >= next_status) {
			uint64_t drops = 0;
			char cost[512];

			tracer_read_counters(&tr, t.cnt);
			cost_meter_update(&meter, &t, tr.counters);
			if (env.max_overhead)
				nshed = shed_probes(&tr, &t, &meter, shed, nshed);
			for (int i = 0; i < t.cnt; i++)
				drops += tr.counters[i].drops_ring + tr.counters[i].drops_depth;
			if (env.status) {
				cost_meter_status(&meter, &t, cost, sizeof(cost));
				summary_status_line(&cons, drops, summary_unwound(&t, tr.counters,
						    tr.unwound_untracked), &last_events, &last_ns,
						    tr.attached, t.entry_only, cost, tty);
			}
			/* from now: detaching can take a while (grace periods) */
			next_status = now_ns(CLOCK_MONOTONIC) + 1000000000ull;
		}
	}
	if (env.status && tty)
		fputc('\n', stderr);

	/* the last stretch of the cost estimate, while the job's CPU clock can still be read */
	tracer_read_counters(&tr, t.cnt);
	cost_meter_update(&meter, &t, tr.counters);
	/* detach first so the counters stop moving, then take everything left in the ring */
	detach_tiers(&tr, &t, vfio);
	tracer_drain(&tr, &cons, true);
	tracer_read_counters(&tr, t.cnt);
	consumer_write_metadata(&cons);
	end.target_exited = target_gone;
	end.unwound_untracked = tr.unwound_untracked;
	end.cost = &meter;
	end.max_overhead = env.max_overhead;
	/* launch mode: a user's library the job never loaded */
	target_say_missing(&t, "warning: ", false, said);
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
	cost_calibrate_free(cal);
	cost_meter_free(&meter);
	free(said);
	free(shed);
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
