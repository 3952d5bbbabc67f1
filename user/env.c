// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "env.h"
#include "vfio.h"

void env_usage(FILE *f)
{
	fprintf(f,
"usage: spyre-bpftrace [OPTIONS] -p PID            trace a running Spyre job\n"
"       spyre-bpftrace [OPTIONS] -- CMD [ARGS...]  launch CMD and trace it from the start\n"
"       spyre-bpftrace list -p PID [PROBE OPTIONS] show which probes resolve in PID\n"
"       spyre-bpftrace check FILE                  validate a trace (overlaps, durations, flows)\n"
"       spyre-bpftrace recover FILE                close a trace cut short (tracer killed)\n"
"       spyre-bpftrace merge OURS KINETO -o OUT    add a PyTorch profiler trace, clocks aligned\n"
"             [--profiler-start NS] [--nest-tolerance US]  (docs/user-guide.md, Merging)\n"
"\n"
"  -p, --pid PID            process to trace (its runtime libraries must be mapped)\n"
"  -o, --output FILE        trace file (default spyre-trace-PID.json); *.gz writes gzip\n"
"  -d, --duration SECONDS   stop after SECONDS (default: SIGINT/SIGTERM or target exit)\n"
"      --probe LIB:SYMBOL_GLOB[:NAME]  add a probe (repeatable); '::' belongs to C++ names;\n"
"                           NAME may hold {1}, {2}...: what the glob's '*' matched\n"
"      --probes FILE|NAME   add the probes of a spec file, or of the built-in table NAME\n"
"                           (torch: PyTorch's ops, autograd, CPU allocator; spyre: the\n"
"                           default one); a NAME wins over a file of that name: ./NAME for\n"
"                           the file (repeatable)\n"
"      --no-default         do not load the built-in Spyre probe table\n"
"      --max-probes N       trace at most N functions, room reserved at start (default:\n"
"                           twice what resolves at start, up to %d; before Linux 6.6\n"
"                           at most %d uprobes: entries and return sites)\n"
"      --allow-missing      a --probe/--probes line that resolves nowhere is a warning, not\n"
"                           an error (exit 10): for libraries the job loads later\n"
"      --max-overhead PCT   when the probes' estimated overhead (their time over the job's\n"
"                           own CPU time) exceeds PCT %%, detach the hottest probes (said on\n"
"                           stderr, in the summary and the trace metadata); the estimate is\n"
"                           on the status line\n"
"      --ready-file FILE    create FILE once all probes are attached\n"
"      --ringbuf-mb N       ring buffer size in MiB, power of two (default 16)\n"
"      --status, --no-status  status line on stderr (default: when stderr is a terminal)\n"
"      --driver MODE        VFIO ioctl tracing: auto (default), fentry, kprobe, tracepoint, off\n"
"      --driver-funcs LIST  kernel functions for fentry/kprobe (comma-separated)\n"
"  -f, --follow             also trace the processes the target forks (like strace -f)\n"
"      --force              replace an existing output file\n"
"      --uretprobes         see returns with the kernel's return probes (cheaper per call)\n"
"                           RISK: they rewrite the traced thread's stack; a C++ exception\n"
"                           thrown through a traced call then terminates the job unless the\n"
"                           unwind guard can run (x86-64, no lockdown). Default: uprobes on\n"
"                           each function's return instructions, the stack untouched\n"
"\n"
"fleet mode (docs/fleet.md):\n"
"  -a, --system-wide        every process that maps the runtime, including later ones\n"
"      --sample-every N     record 1 in N calls (decided in BPF)\n"
"      --rate-cap N         record at most N events/s per process\n"
"      --window DUR --period DUR  attach probes for DUR every period (e.g. 2s and 60s)\n"
"      --output-dir DIR     one trace file per window in DIR (rotated)\n"
"      --max-disk SIZE      keep at most SIZE of traces in DIR (e.g. 1G), oldest deleted\n"
"      --max-files N        keep at most N trace files in DIR\n"
"      --prom-file FILE     Prometheus textfile summary after each window\n"
"  -q, --quiet              no summary at exit\n"
"  -v, --verbose            libbpf debug messages\n"
"  -h, --help               this text\n"
"  -V, --version            print the version\n"
"\n"
"exit codes: 0 ok, 1 error, 2 usage, 3 no such process, 4 not permitted (root needed),\n"
"            5 no Spyre runtime in target, 6 kernel without BTF, 7 output not writable,\n"
"            8 check found problems, 9 the traced process was killed by a signal,\n"
"            10 a --probe/--probes line resolves nowhere in the target (a typo?)\n",
		SPYRE_MAX_PROBES, SPYRE_PERF_MAX_UPROBES);
}

enum {
	OPT_PROBE = 256,
	OPT_PROBES,
	OPT_NO_DEFAULT,
	OPT_READY,
	OPT_RINGBUF,
	OPT_STATUS,
	OPT_NO_STATUS,
	OPT_SAMPLE,
	OPT_RATE_CAP,
	OPT_WINDOW,
	OPT_PERIOD,
	OPT_OUTPUT_DIR,
	OPT_MAX_DISK,
	OPT_MAX_FILES,
	OPT_PROM,
	OPT_FORCE,
	OPT_URETPROBES,
	OPT_DRIVER,
	OPT_DRIVER_FUNCS,
	OPT_PROFILER_START,
	OPT_NEST_TOL,
	OPT_MAX_PROBES,
	OPT_ALLOW_MISSING,
	OPT_MAX_OVERHEAD,
};

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "output", required_argument, NULL, 'o' },
	{ "duration", required_argument, NULL, 'd' },
	{ "probe", required_argument, NULL, OPT_PROBE },
	{ "probes", required_argument, NULL, OPT_PROBES },
	{ "no-default", no_argument, NULL, OPT_NO_DEFAULT },
	{ "allow-missing", no_argument, NULL, OPT_ALLOW_MISSING },
	{ "max-overhead", required_argument, NULL, OPT_MAX_OVERHEAD },
	{ "ready-file", required_argument, NULL, OPT_READY },
	{ "ringbuf-mb", required_argument, NULL, OPT_RINGBUF },
	{ "status", no_argument, NULL, OPT_STATUS },
	{ "no-status", no_argument, NULL, OPT_NO_STATUS },
	{ "driver", required_argument, NULL, OPT_DRIVER },
	{ "driver-funcs", required_argument, NULL, OPT_DRIVER_FUNCS },
	{ "profiler-start", required_argument, NULL, OPT_PROFILER_START },
	{ "nest-tolerance", required_argument, NULL, OPT_NEST_TOL },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "uretprobes", no_argument, NULL, OPT_URETPROBES },
	{ "max-probes", required_argument, NULL, OPT_MAX_PROBES },
	{ "follow", no_argument, NULL, 'f' },
	{ "system-wide", no_argument, NULL, 'a' },
	{ "sample-every", required_argument, NULL, OPT_SAMPLE },
	{ "rate-cap", required_argument, NULL, OPT_RATE_CAP },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "period", required_argument, NULL, OPT_PERIOD },
	{ "output-dir", required_argument, NULL, OPT_OUTPUT_DIR },
	{ "max-disk", required_argument, NULL, OPT_MAX_DISK },
	{ "max-files", required_argument, NULL, OPT_MAX_FILES },
	{ "prom-file", required_argument, NULL, OPT_PROM },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static int push(const char ***arr, int *n, const char *v)
{
	const char **a = realloc(*arr, (*n + 1) * sizeof(*a));

	if (!a)
		return -ENOMEM;
	a[(*n)++] = v;
	*arr = a;
	return 0;
}

/* "2s", "500ms", "1.5m", "1h", or plain seconds */
static int parse_duration(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v > 0))
		return -EINVAL;
	if (!strcmp(end, "ms"))
		v /= 1000;
	else if (!strcmp(end, "m"))
		v *= 60;
	else if (!strcmp(end, "h"))
		v *= 3600;
	else if (*end && strcmp(end, "s"))
		return -EINVAL;
	if (v > 1e7)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "1G", "512M", "64k", or plain bytes (binary multiples) */
static int parse_size(const char *s, unsigned long long *out)
{
	unsigned long long v, mul = 1;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	switch (*end) {
	case 0:
		break;
	case 'k': case 'K':
		mul = 1ull << 10;
		break;
	case 'm': case 'M':
		mul = 1ull << 20;
		break;
	case 'g': case 'G':
		mul = 1ull << 30;
		break;
	case 't': case 'T':
		mul = 1ull << 40;
		break;
	default:
		return -EINVAL;
	}
	if (*end && end[1] && strcmp(end + 1, "B") && strcmp(end + 1, "iB"))
		return -EINVAL;
	if (v > ~0ull / mul)
		return -ERANGE;
	*out = v * mul;
	return 0;
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_pid(const char *s, pid_t *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT_MAX)
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

int env_parse(struct env *env, int argc, char **argv)
{
	int opt, first = 1;
	char *end;

	memset(env, 0, sizeof(*env));
	env->nest_tol_ns = -1;
	env->status = -1;
	/*
	 * 8 MiB: ~85k records, 40 ms at 2 M events/s, for a drain every 10 ms that a busy CPU
	 * can delay; RSS counts the ring twice, which keeps the tracer near 24 MB.
	 */
	env->ringbuf_mb = 16;
	env->driver = VFIO_MODE_AUTO;

	if (argc > 1) {
		if (!strcmp(argv[1], "list"))
			env->cmd = CMD_LIST;
		else if (!strcmp(argv[1], "check"))
			env->cmd = CMD_CHECK;
		else if (!strcmp(argv[1], "recover"))
			env->cmd = CMD_RECOVER;
		else if (!strcmp(argv[1], "merge"))
			env->cmd = CMD_MERGE;
		if (env->cmd != CMD_TRACE)
			first = 2;
	}
	optind = first;
	/*
	 * '+': stop at the first non-option so "-- CMD -x" keeps CMD's own options; merge takes
	 * its options after the file names too (merge A B -o OUT), so getopt may permute there
	 */
	while ((opt = getopt_long(argc, argv, env->cmd == CMD_MERGE ? "p:o:d:afqvhV" :
				  "+p:o:d:afqvhV", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (parse_pid(optarg, &env->pid)) {
				fprintf(stderr, "spyre-bpftrace: invalid PID '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'o':
			if (!*optarg) {
				fprintf(stderr, "spyre-bpftrace: empty output file name\n");
				return EXIT_USAGE;
			}
			env->output = optarg;
			break;
		case 'd':
			errno = 0;
			env->duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(env->duration > 0) ||
			    env->duration > 1e7) {
				fprintf(stderr, "spyre-bpftrace: invalid duration '%s' (seconds > 0)\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_PROBE:
			if (push(&env->probe_args, &env->n_probe_args, optarg))
				return EXIT_ERROR;
			break;
		case OPT_PROBES:
			if (push(&env->probe_files, &env->n_probe_files, optarg))
				return EXIT_ERROR;
			break;
		case OPT_NO_DEFAULT:
			env->no_default = true;
			break;
		case OPT_ALLOW_MISSING:
			env->allow_missing = true;
			break;
		case OPT_MAX_OVERHEAD:
			errno = 0;
			env->max_overhead = strtod(optarg, &end);
			if (errno || end == optarg || (*end && strcmp(end, "%")) ||
			    !(env->max_overhead > 0) || env->max_overhead > 10000) {
				fprintf(stderr, "spyre-bpftrace: --max-overhead wants a percentage "
					"> 0, e.g. 10\n");
				return EXIT_USAGE;
			}
			break;
		case OPT_READY:
			env->ready_file = optarg;
			break;
		case OPT_RINGBUF: {
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || v == 0 || v > 4096 || (v & (v - 1))) {
				fprintf(stderr,
					"spyre-bpftrace: --ringbuf-mb wants a power of two 1..4096\n");
				return EXIT_USAGE;
			}
			env->ringbuf_mb = v;
			break;
		}
		case OPT_STATUS:
			env->status = 1;
			break;
		case OPT_NO_STATUS:
			env->status = 0;
			break;
		case OPT_DRIVER:
			env->driver = vfio_mode_parse(optarg);
			if (env->driver < 0) {
				fprintf(stderr, "spyre-bpftrace: --driver wants auto, fentry, kprobe, "
					"tracepoint or off\n");
				return EXIT_USAGE;
			}
			break;
		case OPT_DRIVER_FUNCS: {
			char names[SPYRE_DRV_MAX_FUNCS][VFIO_FUNC_NAME_MAX];

			if (vfio_funcs_parse(optarg, names, SPYRE_DRV_MAX_FUNCS) < 0) {
				fprintf(stderr, "spyre-bpftrace: --driver-funcs wants up to %d kernel "
					"function names, comma-separated\n", SPYRE_DRV_MAX_FUNCS);
				return EXIT_USAGE;
			}
			env->driver_funcs = optarg;
			break;
		}
		case OPT_URETPROBES:
			env->uretprobes = true;
			break;
		case OPT_MAX_PROBES: {
			unsigned long long v;

			/* a uprobe_multi link takes at most 2^20 offsets (the kernel's limit) */
			if (parse_uint(optarg, 1u << 20, &v) || !v) {
				fprintf(stderr, "spyre-bpftrace: --max-probes wants 1..1048576, "
					"not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			env->max_probes = v;
			break;
		}
		case OPT_FORCE:
			env->force = true;
			break;
		case OPT_PROFILER_START:
			if (parse_uint(optarg, ~0ull, &env->profiler_start_ns) ||
			    !env->profiler_start_ns) {
				fprintf(stderr, "spyre-bpftrace: --profiler-start wants CLOCK_REALTIME "
					"in ns (time.time_ns()), got '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_NEST_TOL: {
			char *end;
			double us;

			errno = 0;
			us = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(us >= 0 && us <= 1e6)) {
				fprintf(stderr, "spyre-bpftrace: --nest-tolerance wants µs in "
					"0..1000000, got '%s'\n", optarg);
				return EXIT_USAGE;
			}
			env->nest_tol_ns = (long long)(us * 1000 + 0.5);
			break;
		}
		case 'f':
			env->follow = true;
			break;
		case 'a':
			env->system_wide = true;
			break;
		case OPT_SAMPLE:
		case OPT_RATE_CAP:
		case OPT_MAX_FILES: {
			unsigned long long v;

			if (parse_uint(optarg, opt == OPT_RATE_CAP ? 1000000000ull : 1000000000ull,
				       &v) || !v) {
				fprintf(stderr, "spyre-bpftrace: %s wants a positive integer, not '%s'\n",
					opt == OPT_SAMPLE ? "--sample-every" :
					opt == OPT_RATE_CAP ? "--rate-cap" : "--max-files", optarg);
				return EXIT_USAGE;
			}
			if (opt == OPT_SAMPLE)
				env->sample_every = v;
			else if (opt == OPT_RATE_CAP)
				env->rate_cap = v;
			else
				env->max_files = v;
			break;
		}
		case OPT_WINDOW:
		case OPT_PERIOD:
			if (parse_duration(optarg, opt == OPT_WINDOW ? &env->window : &env->period)) {
				fprintf(stderr, "spyre-bpftrace: invalid duration '%s' (e.g. 2s, 500ms, "
					"1m)\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_OUTPUT_DIR:
			env->output_dir = optarg;
			break;
		case OPT_MAX_DISK:
			if (parse_size(optarg, &env->max_disk) || !env->max_disk) {
				fprintf(stderr, "spyre-bpftrace: invalid size '%s' (e.g. 1G, 512M)\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_PROM:
			env->prom_file = optarg;
			break;
		case 'q':
			env->quiet = true;
			break;
		case 'v':
			env->verbose = true;
			break;
		case 'h':
			env_usage(stdout);
			return -1;
		case 'V':
			printf("spyre-bpftrace %s\n", SPYRE_VERSION);
			return -1;
		default:
			env_usage(stderr);
			return EXIT_USAGE;
		}
	}

	switch (env->cmd) {
	case CMD_TRACE:
		if (optind < argc) {
			/* getopt stopped at "--" (consumed) or at a non-option */
			if (strcmp(argv[optind - 1], "--")) {
				fprintf(stderr, "spyre-bpftrace: unexpected argument '%s' "
					"(use -- before a command to launch)\n", argv[optind]);
				return EXIT_USAGE;
			}
			env->argv_cmd = &argv[optind];
		}
		if (!!env->pid + !!env->argv_cmd + env->system_wide != 1) {
			fprintf(stderr, "spyre-bpftrace: give exactly one of -p PID, -a or -- CMD\n");
			env_usage(stderr);
			return EXIT_USAGE;
		}
		if (!env->window != !env->period || env->window > env->period) {
			fprintf(stderr, "spyre-bpftrace: --window and --period go together, "
				"window <= period\n");
			return EXIT_USAGE;
		}
		if (env->output && env->output_dir) {
			fprintf(stderr, "spyre-bpftrace: -o and --output-dir exclude each other\n");
			return EXIT_USAGE;
		}
		if (env->window && !env->output_dir) {
			fprintf(stderr, "spyre-bpftrace: --window writes one file per window: "
				"give --output-dir\n");
			return EXIT_USAGE;
		}
		if (env->max_overhead && (env->system_wide || env->window)) {
			fprintf(stderr, "spyre-bpftrace: --max-overhead needs -p PID or -- CMD (one "
				"job's CPU time to weigh the probes against)\n");
			return EXIT_USAGE;
		}
		if ((env->max_disk || env->max_files) && !env->output_dir) {
			fprintf(stderr, "spyre-bpftrace: --max-disk/--max-files need --output-dir\n");
			return EXIT_USAGE;
		}
		break;
	case CMD_LIST:
		if (!env->pid || optind < argc) {
			fprintf(stderr, "spyre-bpftrace: usage: spyre-bpftrace list -p PID\n");
			return EXIT_USAGE;
		}
		break;
	case CMD_CHECK:
	case CMD_RECOVER:
		if (optind + 1 != argc) {
			fprintf(stderr, "spyre-bpftrace: usage: spyre-bpftrace %s FILE\n", argv[1]);
			return EXIT_USAGE;
		}
		env->file_arg = argv[optind];
		break;
	case CMD_MERGE:
		if (optind + 2 != argc || !env->output) {
			fprintf(stderr, "spyre-bpftrace: usage: spyre-bpftrace merge OURS.json "
				"KINETO.json -o OUT.json [--force]\n");
			return EXIT_USAGE;
		}
		env->file_arg = argv[optind];
		env->file_arg2 = argv[optind + 1];
		break;
	}
	return 0;
}

void env_free(struct env *env)
{
	free(env->probe_args);
	free(env->probe_files);
}
