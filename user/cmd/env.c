// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The command line. One table says, for each option, its names, its argument, which
 * subcommands take it and its help: getopt_long's tables are made from it here, the help and
 * the man page's parts in usage.c, and an option given to a subcommand that does not take it
 * is refused (exit 2) instead of being silently ignored.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "cmd/env.h"
#include "cmd/options.h"
#include "cmd/usage.h"
#include "common/log.h"
#include "common/parse.h"
#include "resolve/probes.h"
#include "attach/vfio.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define STR_(x)		#x
#define STR(x)		STR_(x)






static int usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int trigger_parse(const char *arg, struct trigger *t)
{
	const char *gt = strrchr(arg, '>');
	double d;

	memset(t, 0, sizeof(*t));
	if (!strcmp(arg, "exception")) {
		t->kind = TRIGGER_EXCEPTION;
		return 0;
	}
	if (!gt || gt == arg || (size_t)(gt - arg) >= sizeof(t->name))
		return -EINVAL;
	if (!strncmp(arg, "memory>", 7)) {
		t->kind = TRIGGER_MEMORY;
		return parse_size(gt + 1, &t->bytes) || !t->bytes ? -EINVAL : 0;
	}
	if (parse_duration(gt + 1, &d) || d <= 0)
		return -EINVAL;
	t->kind = TRIGGER_SLOW;
	t->ns = (uint64_t)(d * 1e9);
	memcpy(t->name, arg, (size_t)(gt - arg));
	return 0;
}


static int push(const char ***arr, int *n, const char *v)
{
	const char **a = realloc(*arr, (*n + 1) * sizeof(*a));

	if (!a)
		return -ENOMEM;
	a[(*n)++] = v;
	*arr = a;
	return 0;
}

/* A refusal of the command line: the message, and EXIT_USAGE. */
static int usage_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_ERROR, fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

/* "check does not take --window (an option of tracing)" */
static int refuse_option(enum spyre_cmd cmd, const struct opt_def *d)
{
	char name[48], whose[64] = "";
	int n = 0;

	for (int c = CMD_TRACE; c <= CMD_REPORT; c++)
		if (d->cmds & (1u << c))
			n += snprintf(whose + n, sizeof(whose) - n, "%s%s",
				      n ? " and " : "", cmd_names[c]);
	return usage_err("%s does not take %s (an option of %s)", cmd_names[cmd],
			 opt_name(d, name, sizeof(name)), whose);
}

/* getopt_long's tables from opt_defs: "+p:o:..." (@permute: no '+') and struct option[] */
static void getopt_tables(bool permute, char *shorts, size_t len, struct option *longs)
{
	size_t n = 0;

	if (!permute)
		shorts[n++] = '+';
	for (size_t i = 0; i < opt_ndefs; i++) {
		const struct opt_def *d = &opt_defs[i];

		longs[i] = (struct option){ d->name, d->arg ? required_argument : no_argument, NULL,
					    d->key };
		if (d->key >= 256 || n + 3 > len)
			continue;
		shorts[n++] = d->key;
		if (d->arg)
			shorts[n++] = ':';
	}
	shorts[n] = 0;
	longs[opt_ndefs] = (struct option){};
}

static enum spyre_cmd parse_cmd(int argc, char **argv)
{
	if (argc > 1)
		for (int c = CMD_LIST; c <= CMD_REPORT; c++)
			if (!strcmp(argv[1], cmd_names[c]))
				return c;
	return CMD_TRACE;
}

/* --driver MODE: "auto", "fentry", "kprobe", "tracepoint", "off" -> enum vfio_mode, or -EINVAL */
static int driver_mode_parse(const char *s)
{
	static const char *const modes[] = {
		[VFIO_MODE_OFF] = "off", [VFIO_MODE_AUTO] = "auto", [VFIO_MODE_FENTRY] = "fentry",
		[VFIO_MODE_KPROBE] = "kprobe", [VFIO_MODE_TRACEPOINT] = "tracepoint",
	};

	for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
		if (!strcmp(s, modes[i]))
			return i;
	return -EINVAL;
}

/*
 * --driver-funcs LIST: up to SPYRE_DRV_MAX_FUNCS kernel function names, comma-separated, into
 * @out. A name is an identifier, '.' allowed for clones (vfio_pci_core_ioctl.isra.0); the
 * kernel is handed nothing else. 0, or -EINVAL (@out then undefined).
 */
static int driver_funcs_parse(const char *list, struct vfio_funcs *out)
{
	const char *p = list;

	out->n = 0;
	for (;;) {
		size_t len = strcspn(p, ",");

		if (!len || len >= VFIO_FUNC_NAME_MAX || out->n == SPYRE_DRV_MAX_FUNCS)
			return -EINVAL;
		for (size_t i = 0; i < len; i++) {
			char ch = p[i];

			if (!(ch == '_' || ch == '.' || (ch >= 'a' && ch <= 'z') ||
			      (ch >= 'A' && ch <= 'Z') || (i && ch >= '0' && ch <= '9')))
				return -EINVAL;
		}
		memcpy(out->name[out->n], p, len);
		out->name[out->n++][len] = 0;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

/* --kill SIGNAL: "none" (0), a number, or a name with or without "SIG" in any case; or -1 */
static int kill_signal_parse(const char *s)
{
	unsigned long long v;

	if (!strcmp(s, "none"))
		return 0;
	if (!parse_uint(s, SIGRTMIN - 1, &v))
		return v ? (int)v : -1;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (int sig = 1; sig < SIGRTMIN; sig++) {
		const char *name = sigabbrev_np(sig);

		if (name && !strcasecmp(s, name))
			return sig;
	}
	return -1;
}

/* --max-overhead's value: a percentage, or none (0). -EINVAL. */
static int parse_budget(const char *s, double *out)
{
	if (!strcmp(s, "none")) {
		*out = 0;
		return 0;
	}
	return parse_percent(s, 10000, out);
}

/* One option's argument into @env: 0, or the exit code of a bad value. */
static int take_option(struct env *env, int key, const char *arg, int *verbosity)
{
	unsigned long long v;
	double d;

	switch (key) {
	case 'p':
		if (parse_pid(arg, &env->pid))
			return usage_err("invalid PID '%s'", arg);
		break;
	case 'o':
		if (!*arg)
			return usage_err("empty output file name");
		env->output = arg;
		break;
	case 'd':
	case OPT_WINDOW:
	case OPT_PERIOD:
		if (parse_duration(arg, &d))
			return usage_err("invalid duration '%s' (e.g. 10 seconds, 10s, 500ms, 1m)",
					 arg);
		if (key == 'd')
			env->duration = d;
		else if (key == OPT_WINDOW)
			env->window = d;
		else
			env->period = d;
		break;
	case OPT_PROBE:
		if (push(&env->probe_args, &env->n_probe_args, arg))
			return EXIT_ERROR;
		break;
	case OPT_PROBES:
		if (push(&env->probe_files, &env->n_probe_files, arg))
			return EXIT_ERROR;
		break;
	case OPT_NO_DEFAULT:
		env->no_default = true;
		break;
	case OPT_ALLOW_MISSING:
		env->allow_missing = true;
		break;
	case OPT_MAX_OVERHEAD:
		if (parse_budget(arg, &env->max_overhead))
			return usage_err("--max-overhead wants a percentage > 0, e.g. 10, or none");
		break;
	case OPT_KILL:
		env->kill_sig = kill_signal_parse(arg);
		if (env->kill_sig < 0)
			return usage_err("--kill wants a signal (TERM, INT, KILL, a number) or "
					 "none, not '%s'", arg);
		break;
	case OPT_BY_THREAD:
		env->by_thread = true;
		break;
	case OPT_SUMMARY_JSON:
		env->summary_json = arg;
		break;
	case OPT_READY:
		env->ready_file = arg;
		break;
	case OPT_RINGBUF:
		if (parse_uint(arg, 4096, &v) || !v || (v & (v - 1)))
			return usage_err("--ringbuf-mb wants a power of two 1..4096");
		env->ringbuf_mb = v;
		break;
	case OPT_STATUS:
		env->status = 1;
		break;
	case OPT_NO_STATUS:
		env->status = 0;
		break;
	case OPT_DRIVER:
		env->driver = driver_mode_parse(arg);
		if (env->driver < 0)
			return usage_err("--driver wants auto, fentry, kprobe, tracepoint or off");
		break;
	case OPT_DRIVER_FUNCS:
		if (!env->driver_funcs)
			env->driver_funcs = malloc(sizeof(*env->driver_funcs));
		if (!env->driver_funcs)
			return EXIT_ERROR;
		if (driver_funcs_parse(arg, env->driver_funcs))
			return usage_err("--driver-funcs wants up to %d kernel function names, "
					 "comma-separated", SPYRE_DRV_MAX_FUNCS);
		break;
	case OPT_URETPROBES:
		env->uretprobes = true;
		break;
	case OPT_PYTHON:
		env->python = true;
		break;
	case OPT_USTACK:
		env->ustack = true;
		break;
	case OPT_MAX_PROBES:
		/* a uprobe_multi link takes at most 2^20 offsets (the kernel's limit) */
		if (parse_uint(arg, 1u << 20, &v) || !v)
			return usage_err("--max-probes wants 1..1048576, not '%s'", arg);
		env->max_probes = v;
		break;
	case OPT_FORCE:
		env->force = true;
		break;
	case OPT_JSON:
		env->json = true;
		break;
	case OPT_PROFILER_START:
		if (parse_uint(arg, ~0ull, &env->profiler_start_ns) || !env->profiler_start_ns)
			return usage_err("--profiler-start wants CLOCK_REALTIME in ns "
					 "(time.time_ns()), got '%s'", arg);
		break;
	case OPT_NEST_TOL:
		if (parse_real(arg, NULL, 0, 1e6, &d))
			return usage_err("--nest-tolerance wants µs in 0..1000000, got '%s'", arg);
		env->nest_tol_ns = (long long)(d * 1000 + 0.5);
		break;
	case 'f':
		env->follow = true;
		break;
	case 'a':
		env->system_wide = true;
		break;
	case OPT_SAMPLE:
	case OPT_RATE_CAP:
	case OPT_MAX_FILES:
		if (parse_uint(arg, 1000000000ull, &v) || !v)
			return usage_err("%s wants a positive integer, not '%s'",
					 key == OPT_SAMPLE ? "--sample-every" :
					 key == OPT_RATE_CAP ? "--rate-cap" : "--max-files", arg);
		if (key == OPT_SAMPLE)
			env->sample_every = v;
		else if (key == OPT_RATE_CAP)
			env->rate_cap = v;
		else
			env->max_files = v;
		break;
	case OPT_OUTPUT_DIR:
		env->output_dir = arg;
		break;
	case OPT_MAX_DISK:
		if (parse_size(arg, &env->max_disk) || !env->max_disk)
			return usage_err("invalid size '%s' (e.g. 1G, 512M)", arg);
		break;
	case OPT_MAX_SIZE:
		if (parse_size(arg, &env->max_size) || env->max_size < TRACE_MIN_SIZE)
			return usage_err("--max-size wants a size of at least 1M, e.g. 64M, 1G");
		break;
	case OPT_SWITCH_OUTPUT:
		env->switch_output = true;
		break;
	case OPT_FLIGHT_RECORDER:
		if (parse_duration(arg, &env->flight_recorder) || env->flight_recorder < 0.1)
			return usage_err("--flight-recorder wants a duration of at least 100ms, "
					 "e.g. 10s, 1m");
		break;
	case OPT_TRIGGER:
		if (env->ntriggers == ENV_MAX_TRIGGERS)
			return usage_err("at most %d --trigger", ENV_MAX_TRIGGERS);
		if (trigger_parse(arg, &env->triggers[env->ntriggers]))
			return usage_err("--trigger wants NAME>DUR (e.g. "
					 "'spyreStreamSynchronize>50ms'), exception or memory>SIZE "
					 "(e.g. memory>1G), not '%s'", arg);
		env->ntriggers++;
		break;
	case OPT_PROM:
		env->prom_file = arg;
		break;
	case 'q':
		env->quiet = true;
		break;
	case 'v':
		env->verbose = true;
		(*verbosity)++;
		break;
	case 'h':
		env_usage_cmd(stdout, env->cmd);
		return -1;
	case 'V':
		printf("spyre-bpftrace %s\n", SPYRE_VERSION);
		return -1;
	}
	return 0;
}

/* What the options say together, for tracing (@seen: by opt_defs' index): 0 or EXIT_USAGE. */
static int check_trace(struct env *env, const bool *seen)
{
	char name[48];

	if (!!env->pid + !!env->argv_cmd + env->system_wide != 1) {
		usage_err("give exactly one of -p PID, -a or -- CMD");
		env_usage(stderr);
		return EXIT_USAGE;
	}
	if (!env->window != !env->period || env->window > env->period)
		return usage_err("--window and --period go together, window <= period");
	if (seen[opt_find(OPT_KILL) - opt_defs] && !env->argv_cmd)
		return usage_err("--kill is for a job launched with -- CMD (one it did not start, "
				 "the tracer leaves alone)");
	if (env->output && env->output_dir)
		return usage_err("-o and --output-dir exclude each other");
	if (env->window && !env->output_dir)
		return usage_err("--window writes one file per window: give --output-dir");
	/* fleet mode finds its processes (-a) or has one (-p): it launches none */
	if (env->window && env->argv_cmd)
		return usage_err("--window traces -p PID or -a, not -- CMD");
	/* the default budget: trace mode's, from the environment or ours */
	if (env->max_overhead < 0 && !env->system_wide && !env->window) {
		const char *v = getenv("SPYRE_BPFTRACE_MAX_OVERHEAD");

		env->max_overhead = TRACE_DEFAULT_OVERHEAD;
		env->overhead_default = true;
		if (v && *v && parse_budget(v, &env->max_overhead))
			return usage_err("SPYRE_BPFTRACE_MAX_OVERHEAD wants a percentage > 0, e.g. "
					 "10, or none");
	}
	if (env->max_overhead < 0)
		env->max_overhead = 0;
	if (env->ntriggers && !env->flight_recorder)
		return usage_err("--trigger needs --flight-recorder DUR (what to write when it "
				 "fires)");
	if (env->flight_recorder && env->switch_output)
		return usage_err("--flight-recorder and --switch-output exclude each other");
	if (env->max_disk && !env->output_dir)
		return usage_err("--max-disk needs --output-dir");
	if (env->max_files && !env->output_dir && !env->switch_output)
		return usage_err("--max-files needs --output-dir or --switch-output");
	if (env->system_wide || env->window) {
		for (size_t i = 0; i < opt_ndefs; i++) {
			if (!seen[i] || !(opt_defs[i].cmds & NOT_FLEET))
				continue;
			return usage_err("%s is not for fleet mode (-a, --window): it has no driver "
					 "tier yet (docs/fleet.md)",
					 opt_name(&opt_defs[i], name, sizeof(name)));
		}
		return 0;
	}
	for (size_t i = 0; i < opt_ndefs; i++) {
		if (!seen[i] || !(opt_defs[i].cmds & FLEET_ONLY))
			continue;
		return usage_err("%s is for fleet mode: give -a or --window DUR --period DUR too "
				 "(docs/fleet.md)", opt_name(&opt_defs[i], name, sizeof(name)));
	}
	return 0;
}

int env_parse(struct env *env, int argc, char **argv)
{
	struct option longs[OPT_MAX_DEFS + 1];
	bool seen[OPT_MAX_DEFS] = {};
	int opt, rc = 0, first, nargs, verbosity = 0;
	char shorts[2 * OPT_MAX_DEFS + 2];
	char **args;

	memset(env, 0, sizeof(*env));
	env->nest_tol_ns = -1;
	env->status = -1;
	/*
	 * 8 MiB: ~85k records, 40 ms at 2 M events/s, for a drain every 10 ms that a busy CPU
	 * can delay; RSS counts the ring twice, which keeps the tracer near 24 MB.
	 */
	env->ringbuf_mb = 16;
	env->max_size = TRACE_DEFAULT_SIZE;
	env->max_overhead = -1;	/* not given: the default (check_trace) */
	env->driver = VFIO_MODE_AUTO;
	env->kill_sig = SIGTERM;
	env->cmd = parse_cmd(argc, argv);
	/*
	 * The build's man page generator (tools/gen-man.sh), not a user's option: outside the
	 * table, so that neither --help nor the page itself lists it.
	 */
	if (argc == 3 && !strcmp(argv[1], "--man")) {
		if (env_man(stdout, argv[2]))
			return usage_err("--man wants synopsis, options, exit-codes or version");
		return -1;
	}
	first = env->cmd == CMD_TRACE ? 1 : 2;

	/*
	 * getopt sees the program's name and what follows the subcommand, in a copy it may
	 * reorder: optind = 0 starts it afresh each time (its ordering mode included)
	 */
	nargs = argc - first + 1;
	args = calloc(nargs + 1, sizeof(*args));
	if (!args)
		return EXIT_ERROR;
	args[0] = argv[0];
	memcpy(args + 1, argv + first, (argc - first) * sizeof(*args));
	/*
	 * '+': stop at the first non-option so "-- CMD -x" keeps CMD's own options; merge takes
	 * its options after the file names too (merge A B -o OUT), so getopt may permute there
	 */
	getopt_tables(env->cmd >= CMD_CHECK, shorts, sizeof(shorts), longs);
	optind = 0;
	while ((opt = getopt_long(nargs, args, shorts, longs, NULL)) != -1) {
		const struct opt_def *d = opt_find(opt);

		if (!d) {	/* getopt said what was wrong */
			env_usage(stderr);
			rc = EXIT_USAGE;
			goto out;
		}
		if (!(d->cmds & (1u << env->cmd))) {
			rc = refuse_option(env->cmd, d);
			goto out;
		}
		seen[d - opt_defs] = true;
		rc = take_option(env, opt, optarg, &verbosity);
		if (rc)
			goto out;
	}
	log_set_level(verbosity > 1 ? LOG_TRACE : verbosity ? LOG_DEBUG : LOG_INFO);

	switch (env->cmd) {
	case CMD_TRACE:
		if (optind < nargs) {
			/* getopt stopped at "--" (consumed) or at a non-option ('+': in place) */
			if (strcmp(args[optind - 1], "--")) {
				rc = usage_err("unexpected argument '%s' (use -- before a command "
					       "to launch)", args[optind]);
				goto out;
			}
			env->argv_cmd = &argv[optind + first - 1];
		}
		rc = check_trace(env, seen);
		break;
	case CMD_LIST:
		if (optind + 1 < nargs)
			rc = usage_err("usage: spyre-bpftrace list [-p PID] [GLOB]");
		else if (optind < nargs)
			env->list_glob = args[optind];
		break;
	case CMD_CHECK:
	case CMD_REPORT:
		if (optind >= nargs) {
			rc = usage_err("usage: spyre-bpftrace %s [--json] FILE|DIR...",
				       cmd_names[env->cmd]);
			break;
		}
		env->nfile_args = nargs - optind;
		env->file_args = malloc(env->nfile_args * sizeof(*env->file_args));
		if (!env->file_args) {
			rc = EXIT_ERROR;
			break;
		}
		memcpy(env->file_args, args + optind, env->nfile_args * sizeof(*env->file_args));
		break;
	case CMD_RECOVER:
		if (optind + 1 != nargs)
			rc = usage_err("usage: spyre-bpftrace %s FILE", cmd_names[env->cmd]);
		else
			env->file_arg = args[optind];
		break;
	case CMD_MERGE:
		if (optind + 2 != nargs || !env->output) {
			rc = usage_err("usage: spyre-bpftrace merge OURS.json KINETO.json "
				       "-o OUT.json [--force]");
		} else {
			env->file_arg = args[optind];
			env->file_arg2 = args[optind + 1];
		}
		break;
	}
out:
	free(args);
	return rc;
}

void env_free(struct env *env)
{
	free(env->probe_args);
	free(env->probe_files);
	free(env->driver_funcs);
	free(env->file_args);
}
