// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * spyre-bpftrace: attach to a running Spyre job, trace its runtime calls, write a Chrome trace.
 * Lifecycle as in libbpf-tools: open -> configure -> load -> attach, then a timed drain loop.
 */
#include <errno.h>
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
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "consumer.h"
#include "check.h"
#include "env.h"
#include "launch.h"
#include "output.h"
#include "probes.h"
#include "resolve.h"
#include "spyre.skel.h"
#include "summary.h"

/* Drain interval: the ringbuf holds rate x interval events; 10 ms keeps it small. */
#define DRAIN_MS	10
/* Records per consume call before we look at the clock and signals again. */
#define DRAIN_BATCH	65536
/* How often the target's maps are re-read for libraries loaded later (dlopen). */
#define RESCAN_MS	1000

static struct env env;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !env.verbose)
		return 0;
	if (level == LIBBPF_INFO && !env.verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static void die_msg(const char *fmt, ...)
{
	va_list ap;

	fputs("spyre-bpftrace: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Root, or CAP_BPF + CAP_PERFMON (+ CAP_SYS_PTRACE for /proc/PID/map_files). */
static bool have_privileges(void)
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

static int attach_probes(struct spyre_bpf *skel, struct target *t, struct bpf_link **links,
			 int *attached)
{
	for (int i = 0; i < t->cnt; i++) {
		struct rprobe *p = &t->probes[i];
		const struct probe_spec *s = &t->table->specs[p->spec];
		const char *path = t->libs[p->lib].open_path;
		LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = i);
		struct bpf_link *l;

		if (p->attached)
			continue;
		/* entry (or the instant) first, return second */
		l = bpf_program__attach_uprobe_opts(s->type == PROBE_INSTANT ?
						    skel->progs.spyre_instant :
						    skel->progs.spyre_entry,
						    t->pid, path, p->attach_off, &opts);
		if (!l)
			goto fail;
		links[2 * i] = l;
		if (s->type == PROBE_SPAN) {
			opts.retprobe = true;
			l = bpf_program__attach_uprobe_opts(skel->progs.spyre_exit, t->pid, path,
							    p->attach_off, &opts);
			if (!l)
				goto fail;
			links[2 * i + 1] = l;
		}
		p->attached = true;
		(*attached)++;
		continue;
fail:
		{
			int err = -errno;

			die_msg("cannot attach to %s (%s+0x%lx): %s", p->qualname,
				t->libs[p->lib].path, p->attach_off, strerror(-err));
			return err;
		}
	}
	return 0;
}

/*
 * Return probes go first: a call entered after its return probe is gone leaves a frame that
 * is simply never closed, while the reverse order would report returns without entries.
 */
static void detach_all(struct bpf_link **links, int n)
{
	for (int pass = 1; pass >= 0; pass--) {
		for (int i = pass; i < n; i += 2) {
			bpf_link__destroy(links[i]);
			links[i] = NULL;
		}
	}
}

/* libbpf 1.1 binds the callback context at ring_buffer__new() */
struct drain_ctx {
	struct consumer *c;
	long batch;
};

static int on_event(void *ctx, void *data, size_t len)
{
	struct drain_ctx *d = ctx;

	if (len < sizeof(struct spyre_event))
		return 0;
	consumer_event(d->c, data);
	/* libbpf 1.1 keeps consuming while the producer keeps pace: stop to look around */
	return ++d->batch >= DRAIN_BATCH ? -EAGAIN : 0;
}

static void drain(struct ring_buffer *rb, struct drain_ctx *d, bool all)
{
	int n;

	do {
		d->batch = 0;
		n = ring_buffer__consume(rb);
	} while (all && n == -EAGAIN);
}

static void read_counters(struct spyre_bpf *skel, int nprobes, struct spyre_counters *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct spyre_counters *v;

	memset(out, 0, nprobes * sizeof(*out));
	if (ncpu <= 0)
		return;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return;
	for (int i = 0; i < nprobes; i++) {
		__u32 key = i;

		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.counters), &key, v))
			continue;
		for (int c = 0; c < ncpu; c++) {
			out[i].hits += v[c].hits;
			out[i].drops_ring += v[c].drops_ring;
			out[i].drops_depth += v[c].drops_depth;
			out[i].unmatched += v[c].unmatched;
		}
	}
	free(v);
}

static int write_ready_file(const char *path)
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

static void status_line(const struct consumer *c, uint64_t drops, uint64_t *last_events,
			uint64_t *last_ns, int nprobes, bool tty)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	double dt = (now - *last_ns) / 1e9;
	double rate = dt > 0 ? (c->events - *last_events) / dt : 0;

	fprintf(stderr, "%sspyre-bpftrace: %llu events, %.0f ev/s, %llu drops, %d probes%s",
		tty ? "\r" : "", (unsigned long long)c->events, rate, (unsigned long long)drops,
		nprobes, tty ? "   " : "\n");
	*last_events = c->events;
	*last_ns = now;
}

static int cmd_trace(struct probe_table *table)
{
	struct bpf_link **links = NULL;
	struct spyre_counters *counters = NULL;
	struct spyre_bpf *skel = NULL;
	struct ring_buffer *rb = NULL;
	struct trace_writer *tw = NULL;
	struct launch launch = { .pid = -1, .go_fd = -1 };
	struct consumer cons = {};
	struct drain_ctx dctx = {};
	struct output out = {};
	struct target t = {};
	struct trace_meta meta = {};
	char default_out[96], hostname[64] = "";
	int rc = EXIT_ERROR, err, attached = 0, sfd = -1, pidfd = -1;
	uint64_t start_ns, deadline = 0, next_status, next_rescan, last_events = 0, last_ns;
	bool tty, target_gone = false, stop = false;
	sigset_t mask;

	/* preflight, cheapest and most specific first */
	if (env.pid && (rc = check_pid(env.pid)))
		return rc;
	if (!have_privileges()) {
		die_msg("tracing needs root (or CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE)");
		return EXIT_PERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		die_msg("this kernel has no BTF (/sys/kernel/btf/vmlinux): CONFIG_DEBUG_INFO_BTF=y "
			"is required");
		return EXIT_NO_BTF;
	}
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
	if (err)
		goto cleanup;
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
			err == -EEXIST ? " (use -f to replace it)" : "");
		rc = EXIT_OUTPUT;
		goto cleanup;
	}

	skel = spyre_bpf__open();
	if (!skel) {
		die_msg("cannot open the BPF object: %s", strerror(errno));
		goto cleanup;
	}
	bpf_map__set_max_entries(skel->maps.events, env.ringbuf_mb << 20);
	err = spyre_bpf__load(skel);
	if (err) {
		/* EACCES here is the verifier's verdict, EPERM a missing privilege or lockdown */
		die_msg("cannot load the BPF programs: %s%s", strerror(-err),
			env.verbose ? "" : " (run with -v for the verifier log)");
		rc = err == -EPERM ? EXIT_PERM : EXIT_ERROR;
		goto cleanup;
	}
	links = calloc(2 * SPYRE_MAX_PROBES, sizeof(*links));
	counters = calloc(SPYRE_MAX_PROBES, sizeof(*counters));
	if (!links || !counters)
		goto cleanup;

	gethostname(hostname, sizeof(hostname) - 1);
	meta.mono_base_ns = now_ns(CLOCK_MONOTONIC);
	meta.real_base_ns = now_ns(CLOCK_REALTIME);
	meta.trace_name = env.output;
	meta.tool_version = SPYRE_VERSION;
	meta.hostname = hostname;
	meta.device_id = 0;
	err = trace_begin(&tw, out.jw, &meta);
	if (err)
		goto cleanup;
	out.jw = NULL;	/* owned by the trace writer now */
	err = consumer_init(&cons, tw, &t, "/proc");
	if (err)
		goto cleanup;
	dctx.c = &cons;
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, &dctx, NULL);
	if (!rb) {
		die_msg("cannot create the ring buffer reader: %s", strerror(errno));
		goto cleanup;
	}

	start_ns = now_ns(CLOCK_MONOTONIC);
	err = attach_probes(skel, &t, links, &attached);
	if (err) {
		rc = err == -EPERM || err == -EACCES ? EXIT_PERM : EXIT_ERROR;
		goto cleanup;
	}
	if (env.verbose)
		fprintf(stderr, "spyre-bpftrace: %d probes attached in %.1f ms\n", attached,
			(now_ns(CLOCK_MONOTONIC) - start_ns) / 1e6);

	/* signals arrive as fd events in the drain loop, never mid-write */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	pidfd = syscall(SYS_pidfd_open, env.pid, 0);

	if (env.ready_file && (err = write_ready_file(env.ready_file)))
		die_msg("cannot write ready file %s: %s", env.ready_file, strerror(-err));
	if (env.argv_cmd) {
		launch_release(&launch);
	}

	tty = isatty(STDERR_FILENO);
	if (env.status < 0)
		env.status = tty;
	last_ns = now_ns(CLOCK_MONOTONIC);
	next_status = last_ns + 1000000000ull;
	next_rescan = last_ns + RESCAN_MS * 1000000ull;
	if (env.duration > 0)
		deadline = last_ns + (uint64_t)(env.duration * 1e9);
	while (!stop) {
		struct pollfd pfd[2] = {
			{ .fd = sfd, .events = POLLIN },
			{ .fd = pidfd, .events = POLLIN },
		};
		uint64_t now;

		poll(pfd, pidfd >= 0 ? 2 : 1, DRAIN_MS);
		drain(rb, &dctx, false);
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
				attach_probes(skel, &t, links, &attached);
			next_rescan = now + RESCAN_MS * 1000000ull;
		}
		if (env.status && now >= next_status) {
			uint64_t drops = 0;

			read_counters(skel, t.cnt, counters);
			for (int i = 0; i < t.cnt; i++)
				drops += counters[i].drops_ring + counters[i].drops_depth;
			status_line(&cons, drops, &last_events, &last_ns, attached, tty);
			next_status = now + 1000000000ull;
		}
	}
	if (env.status && tty)
		fputc('\n', stderr);

	/* detach first so the counters stop moving, then take everything left in the ring */
	detach_all(links, 2 * SPYRE_MAX_PROBES);
	drain(rb, &dctx, true);
	read_counters(skel, t.cnt, counters);
	consumer_write_metadata(&cons);
	{
		char *extra = summary_trace_metadata(&cons, &t, counters, target_gone);

		err = trace_end(tw, extra);
		tw = NULL;
		free(extra);
	}
	if (err) {
		die_msg("writing %s failed: %s", env.output, strerror(-err));
		rc = EXIT_OUTPUT;
	} else {
		rc = EXIT_OK;
	}
	if (!env.quiet)
		summary_print(stdout, &cons, &t, counters, env.pid);
	fprintf(stderr, "spyre-bpftrace: wrote %s (%llu events)%s; open it in "
		"https://ui.perfetto.dev or chrome://tracing\n", env.output,
		(unsigned long long)cons.events, target_gone ? ", target exited" : "");

cleanup:
	if (env.argv_cmd && launch.go_fd >= 0)
		launch_abort(&launch);
	else if (env.argv_cmd && launch.pid > 0)
		waitpid(launch.pid, NULL, WNOHANG);
	ring_buffer__free(rb);
	if (links)
		detach_all(links, 2 * SPYRE_MAX_PROBES);
	if (tw) {
		/* error path: still leave a loadable file */
		trace_end(tw, NULL);
	}
	if (out.jw) {
		/* failed before the trace began: do not leave an empty, unloadable file behind */
		output_close(&out);
		unlink(env.output);
	}
	consumer_free(&cons);
	spyre_bpf__destroy(skel);
	free(links);
	free(counters);
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
	libbpf_set_print(libbpf_print);

	switch (env.cmd) {
	case CMD_CHECK:
		rc = cmd_check(env.file_arg);
		goto out;
	case CMD_RECOVER:
		rc = cmd_recover(env.file_arg);
		goto out;
	default:
		break;
	}
	rc = build_table(&table);
	if (rc)
		goto out;
	rc = env.cmd == CMD_LIST ? cmd_list(&table) : cmd_trace(&table);
out:
	probes_free(&table);
	env_free(&env);
	return rc;
}
