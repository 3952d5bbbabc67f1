// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Trace mode: one job (-p PID, or -- CMD launched held before exec) traced in one window of
 * the session (session.h) until a signal, -d, the job's end or a write error.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "cmd/env.h"
#include "cmd/launch.h"
#include "common/util.h"
#include "common/log.h"
#include "output/output.h"
#include "resolve/probes.h"
#include "resolve/procmaps.h"
#include "resolve/resolve.h"
#include "cmd/session.h"
#include "report/summary.h"
#include "common/process.h"
#include "report/driver.h"
#include "attach/warm.h"

#include "cmd/trace_mode.h"

/*
 * --summary-json FILE: the summary's facts as one JSON object, made by the code that writes
 * them into the trace's metadata (one model, two renderings: the text summary and this).
 */
static void write_summary_json(const char *path, struct session *s)
{
	char *members = summary_trace_metadata(&s->cons, &s->t, s->tr.counters, &s->end);
	char *text = NULL;
	int n, err;

	if (!members || (n = asprintf(&text, "{%s}\n", members)) < 0) {
		pr_err("--summary-json %s: %s", path, strerror(ENOMEM));
		free(members);
		return;
	}
	err = write_file_whole(path, text, n);
	if (err)
		pr_err("--summary-json %s: %s", path, strerror(-err));
	free(members);
	free(text);
}

static int add_lib_cb(const char *path, const char *name, void *ctx)
{
	int n = target_add_lib(ctx, path, name);

	return n < 0 && n != -ENOENT ? n : 0;
}

/*
 * Launch mode: what the job will map, before it runs: the program image (the executable, or
 * a script's interpreter: its own functions are probe targets as by PID, under its file's
 * name and the command's), then the libraries the loader will load for it.
 */
static int resolve_launched(struct target *t, char **argv)
{
	char exe[PATH_MAX];
	int err;

	err = launch_find_image(argv[0], exe, sizeof(exe));
	/* a wrapper script run by a script: what it runs in the end is found by the rescan */
	if (err == -ENOEXEC)
		return 0;
	if (err)
		return err;
	err = add_lib_cb(exe, path_basename(exe), t);
	return err ?: launch_needed_libs(exe, argv, add_lib_cb, t);
}

/*
 * What to trace in the target, before anything is attached: the libraries a launched job
 * will load, or those the process maps now, with the refusals that go with each. Returns 0 or
 * an exit code, after saying why.
 */
static int resolve_target(struct session *s, struct probe_table *table)
{
	const struct env *env = s->env;
	struct target *t = &s->t;
	int err;

	if (env->argv_cmd) {
		err = resolve_launched(t, env->argv_cmd);
		if (err == -E2BIG) {
			target_warn_too_many(t, false);
			return EXIT_USAGE;
		}
		if (err) {
			pr_err("cannot list the libraries of %s: %s", env->argv_cmd[0],
			       strerror(-err));
			return EXIT_ERROR;
		}
		/* every library it links is known now: where its tail calls go */
		err = target_follow_tails(t);
		if (err) {
			pr_err("cannot follow tail calls: %s", strerror(-err));
			return EXIT_ERROR;
		}
		/*
		 * A line whose library is the program or one it will load, lacking the symbol,
		 * is a typo; one naming no such file may come with a dlopen: said at the end
		 * if it never came
		 */
		if (target_say_missing(t, env->allow_missing ? "warning: " : "", true, s->said) &&
		    !env->allow_missing) {
			pr_err("not starting %s: a --probe/--probes line resolves nowhere in the "
			       "program or the libraries it loads (--allow-missing traces the "
			       "others)", env->argv_cmd[0]);
			return EXIT_NO_MATCH;
		}
		return 0;
	}
	err = session_scan(s, true);
	if (err == -E2BIG)	/* said */
		return EXIT_USAGE;
	if (err < 0) {
		pr_err("cannot read the mappings of %d: %s", env->pid, strerror(-err));
		return err == -ENOENT || err == -ESRCH ? EXIT_NO_PID :
		       err == -EACCES || err == -EPERM ? EXIT_PERM : EXIT_ERROR;
	}
	/* a runtime we cannot read is not the same as no runtime: say which */
	if (target_warn_unreadable(t) && !t->cnt)
		return EXIT_NO_RUNTIME;
	/* the user's own lines first: a typo there is the likelier story */
	if (target_say_missing(t, env->allow_missing ? "warning: " : "", false, s->said) &&
	    !env->allow_missing) {
		pr_err("not tracing process %d: a --probe/--probes line resolves nowhere "
		       "(--allow-missing traces the others, e.g. for a library loaded later; "
		       "`spyre-bpftrace list -p %d` shows what resolves)", env->pid, env->pid);
		return EXIT_NO_MATCH;
	}
	if (!t->cnt && t->user_from < table->cnt) {
		pr_err("nothing to trace in process %d: none of the probe table's lines resolves "
		       "(see `spyre-bpftrace list -p %d`)", env->pid, env->pid);
		return EXIT_NO_RUNTIME;
	}
	if (!t->cnt) {
		pr_err("no Spyre runtime in process %d: no mapped library matches the probe table "
		       "(see `spyre-bpftrace list -p %d`)", env->pid, env->pid);
		return EXIT_NO_RUNTIME;
	}
	return 0;
}

/*
 * Attach while the driver tier may still be loading (without the warm-up, the first uprobe
 * link waits 8-20 ms in the kernel, time the other thread uses). Records wait in the ring
 * until it is mapped. Returns 0 or an exit code.
 */
static int attach_target(struct session *s)
{
	const struct env *env = s->env;
	uint64_t start_ns = now_ns(CLOCK_MONOTONIC);
	struct target *t = &s->t;
	int err, nwarm;

	if (session_driver_failed(s))
		return session_driver_end(s);
	err = session_attach(s);
	if (err)
		return err == -EPERM || err == -EACCES ? EXIT_PERM :
		       err == -E2BIG ? EXIT_USAGE : EXIT_ERROR;
	nwarm = warm_end(s->warm);
	if (t->entry_only)
		pr_warn("%d probe%s record%s entries only: %s returns cannot be seen safely "
			"(`spyre-bpftrace list -p %d` says why)", t->entry_only,
			t->entry_only > 1 ? "s" : "", t->entry_only > 1 ? "" : "s",
			t->entry_only > 1 ? "their" : "its", env->pid);
	pr_debug("%d probes attached in %.1f ms, %d links (%d uprobes kept the registration "
		 "lock warm)", s->tr.attached, (now_ns(CLOCK_MONOTONIC) - start_ns) / 1e6,
		 s->tr.multi ? s->tr.nmlinks : s->tr.perf_uprobes, nwarm);
	return session_driver_end(s);
}

/*
 * The run's last line: where the trace is, how many events and bytes (JSON text), what stopped
 * it; "wrote t.000.json ... t.004.json (5 files, ...)" for a run in parts.
 */
static void say_written(const struct session *s)
{
	char size[32], count[32], files[2 * PATH_MAX + 64], unwritten[96] = "", first[PATH_MAX];
	const struct run_file *f = &s->file;

	if (s->rec) {
		pr_info("flight recorder: %u file%s written, the last %s; triggers fired %llu "
			"times, %u written for them (one in %.1f s at most: a later one's moment is "
			"in the next file)", s->dumps, s->dumps == 1 ? "" : "s",
			s->dumps ? s->last_dump : "none", (unsigned long long)s->cons.triggers,
			s->trigger_dumps, s->keep_ns / 1e9);
		return;
	}
	if (f->index && s->env->max_files && f->index + 1 > (unsigned int)s->env->max_files &&
	    !output_part_name(s->env->output, f->index + 1 - s->env->max_files, first,
			      sizeof(first)))	/* --max-files: the older ones are gone */
		snprintf(files, sizeof(files), "%s ... %s (the last %d of %u files, ", first,
			 s->cur_path, s->env->max_files, f->index + 1);
	else if (f->index)
		snprintf(files, sizeof(files), "%s ... %s (%u files, ", s->first_path, s->cur_path,
			 f->index + 1);
	else
		snprintf(files, sizeof(files), "%s (", s->cur_path);
	if (s->full)
		snprintf(unwritten, sizeof(unwritten), "; stopped at --max-size, %s records "
			 "after it not written", fmt_count(s->unwritten, size, sizeof(size)));
	pr_info("wrote %s%s events, %s)%s%s; open it in https://ui.perfetto.dev or "
		"chrome://tracing", files, fmt_count(s->cons.events, count, sizeof(count)),
		fmt_bytes(session_bytes(s), size, sizeof(size)), !s->target_gone ? "" :
		run_end_signal(&s->end) ? ", target killed" : ", target exited", unwritten);
}

/*
 * Launch mode's end, once the trace is written: a job the tracer outlived (-d, a signal to
 * the tracer alone, a write error) is stopped (--kill) or said to run on; one that ended by
 * itself is reaped. The exit code is the tracer's own failure (@rc) if any, else the job's
 * failure as a shell's $? has it (perf, strace), else no runtime ever loaded (5, as by PID).
 */
static int launch_end(struct session *s, struct launch *l, int rc)
{
	const struct env *env = s->env;
	const char *cmd = env->argv_cmd[0];
	int status = 0, job_rc = 0, err;
	char sig[32];

	if (!s->target_gone && !env->kill_sig) {
		pr_info("%s (pid %d) still runs: tracing stopped, the job was left running "
			"(--kill none)", cmd, l->pid);
		l->pid = -1;	/* not ours to reap */
	} else if (!s->target_gone) {
		snprintf(sig, sizeof(sig), "SIG%s", sigabbrev_np(env->kill_sig) ?: "?");
		pr_info("stopping %s (pid %d) with %s: tracing stopped before it ended (--kill "
			"none leaves it running)", cmd, l->pid, sig);
		err = launch_stop(l, env->kill_sig, LAUNCH_GRACE_S * 1000, &status);
		if (err < 0)
			pr_warn("cannot stop %s: %s", cmd, strerror(-err));
		else if (err)
			pr_info("%s had not ended %d s after %s: killed (SIGKILL)", cmd,
				LAUNCH_GRACE_S, sig);
	} else {
		/* an exit the session saw may be reaped already (session_window_end) */
		if (waitpid(l->pid, &status, 0) != l->pid)
			status = s->end.exit_known ? s->end.exit_code : 0;
		l->pid = -1;
		job_rc = launch_shell_status(status);
	}
	if (rc != EXIT_OK && rc != EXIT_TARGET_KILLED)
		return rc;
	if (!s->t.cnt)
		pr_warn("no Spyre runtime in %s: %s no library the probe table matches "
			"(`spyre-bpftrace list` shows the tables)", cmd,
			s->target_gone ? "it ended having mapped" : "while traced it mapped");
	if (job_rc)
		return job_rc;
	return s->t.cnt ? EXIT_OK : EXIT_NO_RUNTIME;
}

/* The start line, once the probes are live (before a launched job runs, so before its output). */
static void say_start(const struct session *s)
{
	const struct env *env = s->env;
	char comm[32], n[32], stop[64] = "Ctrl-C to stop", size[32], into[PATH_MAX + 160];
	char budget[128] = "";

	if (env->argv_cmd)
		snprintf(comm, sizeof(comm), "%s", path_basename(env->argv_cmd[0]));
	else
		process_comm(env->pid, comm, sizeof(comm));
	if (env->duration > 0)
		snprintf(stop, sizeof(stop), "stops after %g s (Ctrl-C sooner)", env->duration);
	/* where the trace goes, and its bound (--max-size) */
	fmt_bytes(env->max_size, size, sizeof(size));
	if (env->flight_recorder)
		snprintf(into, sizeof(into), "into the flight recorder (the last %.1f s, at most %s, "
			 "written to %s named by the time on SIGUSR1%s and at the end)",
			 env->flight_recorder, size, env->output, env->ntriggers ? ", a --trigger" : "");
	else
		snprintf(into, sizeof(into), "writing %s (at most %s a file, --max-size; then %s)",
			 s->cur_path, size, env->switch_output ? "the next numbered one" :
			 "stopping: --switch-output goes on in numbered files");
	if (env->max_overhead)
		snprintf(budget, sizeof(budget), "; overhead held to %g%% (--max-overhead%s; none "
			 "traces all the time)", env->max_overhead,
			 env->overhead_default ? ", the default" : "");
	pr_info("attached %s probe%s to %d (%s)%s, %s%s; %s",
		fmt_count(s->tr.attached, n, sizeof(n)), s->tr.attached == 1 ? "" : "s", env->pid,
		comm, env->argv_cmd ? " before it runs" : "", into, budget, stop);
}

/*
 * The trace's file @env->output into @out (@first holds a numbered name, @len bytes), or the
 * flight recorder's memory; its name into *@path. 0, or an exit code (said).
 */
static int open_output(const struct env *env, struct output *out, const char **path, char *first,
		       size_t len)
{
	int err;

	/* --switch-output: every file of the run is numbered, the first too (t.000.json) */
	*path = env->output;
	if (env->switch_output && output_part_name(env->output, 0, first, len)) {
		pr_err("output name too long: %s", env->output);
		return EXIT_USAGE;
	}
	if (env->switch_output)
		*path = first;
	if (env->flight_recorder) {	/* the run in memory: files only when dumped */
		*path = "flight recorder";
		out->jw = jw_memopen();
		err = out->jw ? 0 : -ENOMEM;
	} else {
		err = output_open(out, *path, env->force);
	}
	if (err) {
		pr_err("cannot create %s: %s%s", *path, strerror(-err), output_err_hint(err));
		return EXIT_OUTPUT;
	}
	return 0;
}

/* Trace mode: one process (or a launched command), one trace file, one window until it stops. */
int cmd_trace(struct env *env, struct probe_table *table)
{
	struct launch launch = { .pid = -1, .go_fd = -1 };
	uint64_t mono_ns, real_ns;
	struct output out = {};
	struct session s = {};
	FILE *sum_out = env->argv_cmd ? stderr : stdout;
	char default_out[96], first[PATH_MAX];
	const char *path = NULL;
	int rc;

	/* preflight, cheapest and most specific first */
	if (env->pid && (rc = check_pid(env->pid)))
		return rc;
	if ((rc = preflight_bpf()))
		return rc;

	if (env->argv_cmd) {
		int err = launch_start(&launch, env->argv_cmd);

		if (err) {
			pr_err("cannot start %s: %s", env->argv_cmd[0], strerror(-err));
			return EXIT_ERROR;
		}
		env->pid = launch.pid;
	}
	rc = session_init(&s, env, table, env->pid, false);
	if (rc)
		goto cleanup;
	s.launch_pid = env->argv_cmd ? launch.pid : 0;

	/* ts 0 comes before anything is attached: no event can predate the trace */
	mono_ns = now_ns(CLOCK_MONOTONIC);
	real_ns = now_ns(CLOCK_REALTIME);

	/*
	 * Both BPF objects load in threads, into one ring buffer made first, while this thread
	 * resolves the probes: on two CPUs, start to ready in about the time of the longest load.
	 */
	if ((rc = session_load_begin(&s, 0, true)) || (rc = resolve_target(&s, table)))
		goto cleanup;

	if (!env->output) {
		snprintf(default_out, sizeof(default_out), "spyre-trace-%d.json", env->pid);
		env->output = default_out;
	}
	if ((rc = open_output(env, &out, &path, first, sizeof(first))))
		goto cleanup;
	test_hold("SPYRE_TEST_HOLD_ATTACH");
	if ((rc = session_load_end(&s)) || (rc = attach_target(&s)))
		goto cleanup;

	rc = EXIT_ERROR;
	if (session_window_open(&s, &out, path, mono_ns, real_ns))
		goto cleanup;

	session_ready(&s);
	if (!env->quiet)
		say_start(&s);
	if (env->argv_cmd)
		launch_release(&launch);
	session_calibrate(&s);

	session_loop(&s, 0);
	session_window_end(&s, 0);
	rc = session_exit_code(&s);
	if (env->argv_cmd)
		rc = launch_end(&s, &launch, rc);
	/* launch mode: the job's own output is on stdout, the tracer's goes beside it */
	if (!env->quiet)
		summary_print(sum_out, &s.cons, &s.t, s.tr.counters, &s.end);
	if (!env->quiet && s.vfio)
		driver_summary(s.vfio, s.cons.vfio, sum_out);
	if (env->summary_json)
		write_summary_json(env->summary_json, &s);
	/* the last line, after the summary's */
	fflush(sum_out);
	say_written(&s);

cleanup:
	if (env->argv_cmd && launch.go_fd >= 0)
		launch_abort(&launch);
	else if (env->argv_cmd && launch.pid > 0)
		waitpid(launch.pid, NULL, WNOHANG);
	if (out.jw) {
		/* failed before the trace began: do not leave an empty, unloadable file behind
		 * (the flight recorder's is in memory) */
		output_close(&out);
		if (!env->flight_recorder)
			unlink(path);
	}
	session_free(&s);
	return rc;
}
