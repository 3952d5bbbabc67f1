// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include "consumer.h"
#include "fleet.h"
#include "intset.h"
#include "jsonw.h"
#include "memledger.h"
#include "output.h"
#include "prom.h"
#include "resolve.h"
#include "rotate.h"
#include "summary.h"
#include "tracer.h"
#include "warm.h"
#include "util.h"

/* new processes are looked at every rescan; everything again every 10th (dlopen, reused pids) */
#define FULL_SCAN_EVERY	10

int fleet_scan(struct target *t, struct intset *seen, bool all, const char *procfs)
{
	struct dirent *de;
	int added = 0, self = getpid();
	DIR *d = opendir(procfs);

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[300], mf[300];
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		FILE *f;
		int n;

		if (*end || pid <= 0 || pid == self)
			continue;
		if (!all && intset_has(seen, pid))
			continue;
		if (intset_insert(seen, pid) < 0)
			break;
		snprintf(path, sizeof(path), "%s/%ld/maps", procfs, pid);
		snprintf(mf, sizeof(mf), "%s/%ld/map_files", procfs, pid);
		f = fopen(path, "re");
		if (!f)
			continue;	/* gone, or a kernel thread's empty maps */
		n = target_scan_maps(t, f, mf);
		fclose(f);
		if (n == -E2BIG || n == -ENOMEM) {
			closedir(d);
			return n;
		}
		if (n > 0)
			added += n;
	}
	closedir(d);
	return added;
}

struct window_out {
	struct output out;
	char path[4096];
};

/* The file for the next window: rotated in --output-dir, else -o (or a default name). */
static int open_window_output(const struct env *env, struct rotate *rot, struct window_out *wo,
			      bool first)
{
	int err;

	if (!env->output_dir) {
		if (!first)
			return -EEXIST;	/* one file for the whole run */
		snprintf(wo->path, sizeof(wo->path), "%s",
			 env->output ? env->output : "spyre-trace-system.json");
		return output_open(&wo->out, wo->path, env->force);
	}
	/* lost a race with something planting our next name: take the one after */
	for (int tries = 0; tries < 16; tries++) {
		err = rotate_next_path(rot, wo->path, sizeof(wo->path));
		if (err)
			return err;
		err = output_open(&wo->out, wo->path, false);
		if (err != -EEXIST && err != -ELOOP)
			return err;
	}
	return -EEXIST;
}

char *fleet_trace_metadata(const struct env *env, const struct consumer *c,
			   const struct target *t, const struct spyre_counters *counters,
			   const struct run_end *end, uint64_t window_index)
{
	char *base = summary_trace_metadata(c, t, counters, end);
	struct jw *w = jw_memopen();
	const char *data;
	char *out = NULL;
	size_t len;

	if (!w || !base) {
		free(base);
		if (w)
			jw_close(w);
		return NULL;
	}
	jw_lit(w, base);
	/* statistics of a sampled trace must be scaled: say how it was sampled */
	jw_lit(w, ",\n\"spyreSampling\":{\"systemWide\":");
	jw_lit(w, env->system_wide ? "true" : "false");
	jw_lit(w, ",\"sampleEvery\":");
	jw_u64(w, env->sample_every > 1 ? env->sample_every : 1);
	jw_lit(w, ",\"rateCapPerProcess\":");
	jw_u64(w, env->rate_cap);
	jw_lit(w, ",\"windowSeconds\":");
	jw_dbl(w, env->window, 3);
	jw_lit(w, ",\"periodSeconds\":");
	jw_dbl(w, env->period, 3);
	jw_lit(w, ",\"window\":");
	jw_u64(w, window_index);
	jw_lit(w, "}");
	data = jw_mem_data(w, &len);
	if (data && (out = malloc(len + 1))) {
		memcpy(out, data, len);
		out[len] = 0;
	}
	jw_close(w);
	free(base);
	return out;
}

/*
 * A series is per job and function name: the copies of a library in each container (one file
 * each, so probes of their own, with names made distinct) add up under the function's name.
 */
static const char *prom_func(const struct rprobe *p)
{
	return p->shared_name ?: p->name;
}

static void window_prom(struct prom_window *pw, const struct consumer *c, const struct target *t,
			const struct spyre_counters *counters)
{
	for (uint32_t i = 0; i < c->pcap; i++) {
		const struct pid_probe_stats *ps = &c->pid_stats[i];
		const struct process_info *p;
		struct prom_job job;
		int probe;

		if (!ps->key)
			continue;
		probe = (int)(ps->key & 0xffffffffu) - 1;
		if (probe < 0 || probe >= t->cnt)
			continue;
		p = consumer_process(c, ps->key >> 32);
		job.pid = ps->key >> 32;
		job.comm = p && p->name[0] ? p->name : NULL;
		job.container = p ? p->container : NULL;
		if (t->table->specs[t->probes[probe].spec].type == PROBE_SPAN)
			prom_window_add_span(pw, &job, prom_func(&t->probes[probe]), ps->st);
		else
			prom_window_add_count(pw, &job, prom_func(&t->probes[probe]),
					      ps->delivered);
	}
	/* drops are counted in BPF per probe, not per process */
	for (int i = 0; i < t->cnt; i++)
		prom_window_add_drops(pw, NULL, prom_func(&t->probes[i]), counters[i].drops_ring,
				      counters[i].drops_depth);
}

enum wait_result { WAIT_TIMEOUT, WAIT_STOP, WAIT_HUP };

static enum wait_result wait_signal(int sfd, int timeout_ms)
{
	struct pollfd pfd = { .fd = sfd, .events = POLLIN };
	struct signalfd_siginfo si;

	if (poll(&pfd, 1, timeout_ms) <= 0 || !(pfd.revents & POLLIN))
		return WAIT_TIMEOUT;
	if (read(sfd, &si, sizeof(si)) != sizeof(si))
		return WAIT_TIMEOUT;
	return si.ssi_signo == SIGHUP ? WAIT_HUP : WAIT_STOP;
}

int cmd_fleet(const struct env *env, struct probe_table *table)
{
	struct tracer_opts topts = { .sample_every = env->sample_every,
				     .rate_cap = env->rate_cap, .uretprobes = env->uretprobes };
	uint64_t period_ns = (uint64_t)(env->period * 1e9), window_ns = (uint64_t)(env->window * 1e9);
	uint64_t deadline = 0, next_scan = 0, last_events = 0, last_status = 0;
	int rc = EXIT_ERROR, err, sfd = -1, scans = 0;
	struct prom_window pw = {};
	struct memledger mem = {};	/* across windows: what a job holds outlives one */
	struct run_end wend = {};
	bool target_gone = false;
	struct intset seen = {};
	struct rotate rot = {};
	struct tracer tr = {};
	struct warmer *warm = NULL;
	struct target t = {};
	bool stop = false, loaded = false, ready = false, tty;
	char hostname[64] = "";
	bool *said = NULL;	/* user specs said to resolve nowhere */

	if ((rc = preflight_bpf()))
		return rc;
	if (memledger_init(&mem))
		return EXIT_ERROR;
	rc = EXIT_ERROR;
	/* -p with --window: one process in duty cycles; -a: every process */
	err = target_init(&t, env->system_wide ? -1 : env->pid, table,
			  env->max_probes ? env->max_probes : SPYRE_MAX_PROBES);
	t.uretprobes = env->uretprobes;
	t.user_from = env->user_specs_from;
	if (err)
		goto out;
	said = calloc(table->cnt, sizeof(*said));
	t.pin_libs = true;
	if (env->output_dir) {
		err = rotate_init(&rot, env->output_dir, env->max_disk, env->max_files, "spyre",
				  true);
		if (err) {
			die_msg("cannot use output directory %s: %s", env->output_dir, strerror(-err));
			rc = EXIT_OUTPUT;
			goto out;
		}
	}
	/* the first window's ready comes sooner (see warm.h); later attaches are not waited on */
	warm = warm_start();
	/* the counters get room for what resolves now (tracer_room): resolve before the load */
	err = env->system_wide ? fleet_scan(&t, &seen, true, "/proc") : target_scan(&t);
	if (err == -E2BIG) {
		target_warn_too_many(&t, false);
		rc = EXIT_USAGE;
		goto out;
	}
	topts.room = tracer_room(t.cnt, env->max_probes);
	err = tracer_ring_create(env->ringbuf_mb);
	if (err >= 0) {
		topts.ring_fd = err;
		err = tracer_open(&tr, &topts);
		close(topts.ring_fd);	/* the BPF object holds it */
	}
	if (!err) {
		loaded = true;
		err = tracer_map_ring(&tr);
	}
	if (err) {
		die_msg("cannot load the BPF programs: %s", strerror(-err));
		rc = err == -EPERM ? EXIT_PERM : EXIT_ERROR;
		goto out;
	}
	t.max_probes = tr.room;	/* later scans get what room is left */
	prom_window_init(&pw, SPYRE_VERSION, env->sample_every, period_ns);
	gethostname(hostname, sizeof(hostname) - 1);

	sfd = stop_signals_fd();
	tty = isatty(STDERR_FILENO);
	if (env->duration > 0)
		deadline = now_ns(CLOCK_MONOTONIC) + (uint64_t)(env->duration * 1e9);

	for (uint64_t win = 1; !stop; win++) {
		uint64_t start = now_ns(CLOCK_MONOTONIC), end = window_ns ? start + window_ns : 0;
		struct trace_meta meta = { .mono_base_ns = start, .real_base_ns = now_ns(CLOCK_REALTIME),
					   .tool_version = SPYRE_VERSION, .hostname = hostname };
		struct trace_writer *tw = NULL;
		struct window_out wo = {};
		struct consumer cons = {};
		bool hup = false, backlog = false;
		char *extra;

		if (env->output_dir)
			rotate_enforce(&rot);	/* make room first */
		err = open_window_output(env, &rot, &wo, win == 1);
		if (err) {
			die_msg("cannot create a trace file%s%s: %s", wo.path[0] ? " " : "", wo.path,
				strerror(-err));
			rc = EXIT_OUTPUT;
			goto out;
		}
		meta.trace_name = wo.path;
		err = trace_begin(&tw, wo.out.jw, &meta);
		wo.out.jw = NULL;
		if (err || consumer_init(&cons, tw, &t, "/proc")) {
			die_msg("cannot start the trace %s", wo.path);
			if (!err)
				trace_end(tw, NULL);
			consumer_free(&cons);
			rc = EXIT_OUTPUT;
			goto out;
		}
		cons.per_pid = true;
		memledger_attach(&mem, &cons, start);

		/* attach: everything resolved so far, plus processes that appeared meanwhile */
		err = env->system_wide ?
		      fleet_scan(&t, &seen, win == 1 || scans++ % FULL_SCAN_EVERY == 0, "/proc") :
		      target_scan(&t);
		if (err == -E2BIG) {	/* what fits is attached */
			target_warn_too_many(&t, true);
			err = 0;
		}
		if (err >= 0 && !consumer_resize(&cons, t.cnt))
			err = tracer_attach(&tr, &t, t.pid);
		warm_end(warm);
		if (err < 0)
			die_msg("resolving probes: %s", strerror(-err));
		/*
		 * Processes come and go: a user probe that resolves nowhere yet is no error here,
		 * but a typo should not go unsaid (once, after the first scan)
		 */
		if (win == 1 && said)
			target_say_missing(&t, "warning: ", false, said);
		next_scan = now_ns(CLOCK_MONOTONIC) + TRACER_RESCAN_MS * 1000000ull;
		if (!ready && env->ready_file) {
			ready = true;
			if ((err = write_ready_file(env->ready_file)))
				die_msg("cannot write ready file %s: %s", env->ready_file,
					strerror(-err));
		}
		prom_window_begin(&pw, meta.real_base_ns);

		for (;;) {
			enum wait_result w = wait_signal(sfd, backlog ? 0 : TRACER_DRAIN_MS);
			uint64_t now = now_ns(CLOCK_MONOTONIC);

			backlog = tracer_drain(&tr, &cons, false);
			if (w == WAIT_STOP)
				stop = true;
			if (w == WAIT_HUP)
				hup = true;	/* close this file now, go on in a new one */
			if ((deadline && now >= deadline))
				stop = true;
			/* one target (-p): its window ends with it, and so does the run */
			if (env->pid > 0 && kill(env->pid, 0) && errno == ESRCH)
				stop = target_gone = true;
			if (stop || hup || (end && now >= end))
				break;
			if (now >= next_scan) {
				int n = env->system_wide ?
					fleet_scan(&t, &seen, scans++ % FULL_SCAN_EVERY == 0,
						   "/proc") : target_scan(&t);

				if (n == -E2BIG)
					target_warn_too_many(&t, true);
				if ((n > 0 || n == -E2BIG) && !consumer_resize(&cons, t.cnt))
					tracer_attach(&tr, &t, t.pid);
				next_scan = now + TRACER_RESCAN_MS * 1000000ull;
			}
			if (env->status > 0 && now >= last_status + 1000000000ull) {
				uint64_t drops = 0;

				tracer_read_counters(&tr, t.cnt);
				for (int i = 0; i < t.cnt; i++)
					drops += tr.counters[i].drops_ring + tr.counters[i].drops_depth;
				if (!last_status)
					last_status = now;
				summary_status_line(&cons, drops,
						    summary_unwound(&t, tr.counters,
								    tr.unwound_untracked),
						    &last_events, &last_status, tr.attached,
						    t.entry_only, NULL, tty);
			}
		}

		/* the jobs pay nothing between windows: no probe stays behind */
		tracer_detach(&tr, &t);
		tracer_drain(&tr, &cons, true);
		tracer_read_counters(&tr, t.cnt);
		consumer_write_metadata(&cons);
		wend.unwound_untracked = tr.unwound_untracked;
		wend.target_exited = target_gone;
		if (env->pid > 0)
			wend.exit_known = consumer_exit_code(&cons, env->pid, &wend.exit_code);
		/* a job that crashed while traced is worth a line in the operator's log */
		for (int i = 0; i < cons.nexits; i++) {
			const struct run_end e = { .exit_known = true, .exit_code = cons.exits[i].code };
			char name[48];

			if (run_end_signal(&e))
				die_msg("process %u was killed by %s while traced", cons.exits[i].pid,
					run_end_signame(&e, name, sizeof(name)));
		}
		extra = fleet_trace_metadata(env, &cons, &t, tr.counters, &wend, win);
		err = trace_end(tw, extra);
		free(extra);
		if (err)
			die_msg("writing %s failed: %s", wo.path, strerror(-err));
		window_prom(&pw, &cons, &t, tr.counters);
		prom_window_add_memory(&pw, &cons, &mem);
		/* a job that ended holds nothing now */
		for (int i = 0; i < cons.nexits; i++)
			memledger_forget(&mem, cons.exits[i].pid);
		prom_window_end(&pw, now_ns(CLOCK_MONOTONIC) - start);
		if (env->prom_file && (err = prom_write(env->prom_file, &pw)))
			die_msg("cannot write %s: %s", env->prom_file, strerror(-err));
		if (!env->quiet && (stop || !env->output_dir))
			summary_print(stdout, &cons, &t, tr.counters, t.pid, &wend);
		if (env->verbose || !tty)
			fprintf(stderr, "spyre-bpftrace: window %llu: wrote %s (%llu events)\n",
				(unsigned long long)win, wo.path, (unsigned long long)cons.events);
		tracer_reset_counters(&tr, t.cnt);
		tracer_clear_stacks(&tr);
		consumer_free(&cons);
		last_events = 0;
		last_status = 0;
		if (env->output_dir)
			rotate_enforce(&rot);
		if (!env->output_dir)
			break;	/* one file: the run is over */

		/* between windows: nothing attached, just wait for the next one or a signal */
		while (!stop && !hup && period_ns) {
			uint64_t now = now_ns(CLOCK_MONOTONIC);
			enum wait_result w;

			if (now >= start + period_ns || (deadline && now >= deadline))
				break;
			w = wait_signal(sfd, (int)((start + period_ns - now) / 1000000 + 1));
			if (w == WAIT_STOP)
				stop = true;
			if (w == WAIT_HUP)
				break;
		}
		if (deadline && now_ns(CLOCK_MONOTONIC) >= deadline)
			stop = true;
	}
	rc = run_end_signal(&wend) ? EXIT_TARGET_KILLED : EXIT_OK;
out:
	if (sfd >= 0)
		close(sfd);
	warm_free(warm);
	if (loaded)
		tracer_close(&tr);
	if (env->output_dir)
		rotate_close(&rot);
	prom_window_free(&pw);
	memledger_free(&mem);
	intset_free(&seen);
	target_free(&t);
	free(said);
	return rc;
}
