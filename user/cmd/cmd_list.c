// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cmd/cmd_list.h"
#include "attach/cost.h"
#include "common/log.h"
#include "report/listing.h"
#include "resolve/resolve.h"
#include "attach/retcheck.h"
#include "cmd/session.h"
#include "attach/uprobe_tier.h"
#include "attach/umulti.h"
#include "common/process.h"

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

/* Whether return sites work here (retcheck.h), applied to @t and said, when it ran. */
static void sites_check(struct retcheck *rcheck, struct target *t, bool verbose)
{
	enum retcheck_verdict v;
	const char *why;

	if (!rcheck)
		return;
	v = retcheck_wait(rcheck, &why);
	if (v == RETCHECK_FAILED) {
		target_sites_off(t, why);
		printf("%s: every span probe records entries only\n", why);
	} else if (verbose) {
		printf("return sites: start-up self-test %s\n", v == RETCHECK_PASSED ? "passed" :
		       why);
	}
}

/*
 * `list` without -p: the table's lines and the processes on this node that map a library of
 * it (as `bpftrace -l` lists its probes without a process).
 */
static int list_node(const struct env *env, const struct probe_table *table)
{
	int n = 0, self = getpid(), unreadable = 0;
	struct dirent *de;
	DIR *d;

	listing_table(table, env->list_glob, stdout);
	d = opendir("/proc");
	if (!d) {
		pr_err("cannot read /proc: %s", strerror(errno));
		return EXIT_ERROR;
	}
	while ((de = readdir(d))) {
		char path[300], lib[64], comm[32];
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		FILE *f;
		bool has;

		if (*end || pid <= 0 || pid == self)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
		f = fopen(path, "re");
		if (!f) {
			unreadable += errno == EACCES;
			continue;
		}
		has = table_maps_runtime(table, f, lib, sizeof(lib));
		fclose(f);
		if (!has)
			continue;
		if (!n++)
			printf("\nprocesses with the runtime (`spyre-bpftrace list -p PID` shows "
			       "what resolves in one):\n%8s  %-16s %s\n", "PID", "COMMAND", "MAPS");
		printf("%8ld  %-16s %s\n", pid, process_comm(pid, comm, sizeof(comm)), lib);
	}
	closedir(d);
	if (!n)
		printf("\nno process on this node maps a library of these tables%s\n",
		       unreadable ? " (of those this user may read: root sees them all)" : "");
	return EXIT_OK;
}

int cmd_list(const struct env *env, struct probe_table *table)
{
	struct retcheck *rcheck = NULL, *emucheck = NULL;
	char emu_why[512], comm[32];
	struct calibration *cal;
	struct hit_costs costs;
	struct target t;
	int err, rc, missing = 0;

	if (!env->pid)
		return list_node(env, table);
	rc = check_pid(env->pid);
	if (rc)
		return rc;
	if (!have_privileges()) {
		pr_err("reading another process's libraries needs root (or CAP_SYS_PTRACE)");
		return EXIT_PERM;
	}
	cal = cost_calibrate_start();
	if (!env->uretprobes)
		rcheck = retcheck_start();
	if (!env->uretprobes && retcheck_emulation_loads(emu_why, sizeof(emu_why)))
		emucheck = retcheck_start_mode(RETCHECK_EMULATED);
	err = target_init(&t, env->pid, table,
			  env->max_probes ? env->max_probes : SPYRE_MAX_PROBES);
	t.uretprobes = env->uretprobes;
	t.user_from = env->user_specs_from;
	if (!err)
		err = target_scan(&t);
	cost_calibrate_result(cal, &costs);
	if (err == -E2BIG) {
		target_warn_too_many(&t, false);
		target_free(&t);
		cost_calibrate_free(cal);
		retcheck_free(rcheck);
		retcheck_free(emucheck);
		return EXIT_USAGE;
	}
	if (err < 0) {
		pr_err("cannot resolve probes in %d: %s", env->pid, strerror(-err));
		target_free(&t);
		cost_calibrate_free(cal);
		retcheck_free(rcheck);
		retcheck_free(emucheck);
		return err == -ENOENT || err == -ESRCH ? EXIT_NO_PID :
		       err == -EACCES || err == -EPERM ? EXIT_PERM : EXIT_ERROR;
	}
	rc = 0;
	for (int i = 0; i < table->cnt; i++) {
		rc += t.spec_hits[i] > 0;
		missing += target_spec_missing(&t, i);
	}
	printf("process %d (%s): %d of %d probe specs resolved to %d functions%s\n", env->pid,
	       process_comm(env->pid, comm, sizeof(comm)), rc, table->cnt, t.cnt,
	       env->verbose ? "" : " (-v: return sites, costs and libraries in full)");
	if (!env->uretprobes && env->verbose) {
		costs.rets_emulated = retcheck_emulation_ok(emucheck, NULL, 0, emu_why,
							    sizeof(emu_why));
		printf("returns at return sites: %s (%s)\n", costs.rets_emulated ?
		       "done by BPF, no single step" : "single-stepped by the kernel", emu_why);
	}
	if (env->verbose)
		print_costs(stdout, &costs);
	sites_check(rcheck, &t, env->verbose);
	listing_probes(&t, &costs, env->verbose, env->list_glob, stdout);
	print_limits(&t);
	/* a line of the user's that resolves nowhere is what they will want to hear about */
	rc = missing && !env->allow_missing ? EXIT_NO_MATCH : t.cnt ? EXIT_OK : EXIT_NO_RUNTIME;
	target_free(&t);
	cost_calibrate_free(cal);
	retcheck_free(rcheck);
	retcheck_free(emucheck);
	return rc;
}

int build_table(struct env *env, struct probe_table *table)
{
	char err[512];
	int e;

	if (!env->no_default && (e = probes_load_default(table, err, sizeof(err)))) {
		pr_err("built-in probe table: %s", err);
		return EXIT_ERROR;
	}
	/*
	 * Built-in tables first: like the default one, each covers a whole stack (PyTorch's ops,
	 * autograd, allocator) of which a given version or build may lack a function, so their
	 * lines are not the user's typos; files and --probe lines after them are.
	 */
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			env->user_specs_from = table->cnt;
		for (int i = 0; i < env->n_probe_files; i++) {
			const char *arg = env->probe_files[i];

			if (!probes_builtin(arg) != pass)
				continue;
			/* a built-in table's name wins: say so when a file of that name is here */
			if (!pass && !access(arg, F_OK))
				pr_info("--probes %s is the built-in table; the file is ./%s", arg,
					arg);
			e = probes_load(table, arg, err, sizeof(err));
			if (e) {
				pr_err("%s", err);
				return e == -EINVAL ? EXIT_USAGE : EXIT_ERROR;
			}
		}
	}
	for (int i = 0; i < env->n_probe_args; i++) {
		if (probes_parse_cli(table, env->probe_args[i], err, sizeof(err))) {
			pr_err("%s", err);
			return EXIT_USAGE;
		}
	}
	if (!table->cnt) {
		pr_err("the probe table is empty (--no-default without --probe/--probes)");
		return EXIT_USAGE;
	}
	return 0;
}

