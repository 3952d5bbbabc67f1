// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "env.h"

void env_usage(FILE *f)
{
	fprintf(f,
"usage: spyre-bpftrace [OPTIONS] -p PID            trace a running Spyre job\n"
"       spyre-bpftrace [OPTIONS] -- CMD [ARGS...]  launch CMD and trace it from the start\n"
"       spyre-bpftrace list -p PID [PROBE OPTIONS] show which probes resolve in PID\n"
"       spyre-bpftrace check FILE                  validate a trace (overlaps, durations, flows)\n"
"       spyre-bpftrace recover FILE                close a trace cut short (tracer killed)\n"
"\n"
"  -p, --pid PID            process to trace (its runtime libraries must be mapped)\n"
"  -o, --output FILE        trace file (default spyre-trace-PID.json); *.gz writes gzip\n"
"  -d, --duration SECONDS   stop after SECONDS (default: SIGINT/SIGTERM or target exit)\n"
"      --probe LIB:SYMBOL_GLOB[:NAME]  add a probe (repeatable); '::' belongs to C++ names\n"
"      --probes FILE        add the probes of a spec file (repeatable)\n"
"      --no-default         do not load the built-in Spyre probe table\n"
"      --ready-file FILE    create FILE once all probes are attached\n"
"      --ringbuf-mb N       ring buffer size in MiB, power of two (default 16)\n"
"      --status, --no-status  status line on stderr (default: when stderr is a terminal)\n"
"  -f, --force              replace an existing output file\n"
"  -q, --quiet              no summary at exit\n"
"  -v, --verbose            libbpf debug messages\n"
"  -h, --help               this text\n"
"  -V, --version            print the version\n"
"\n"
"exit codes: 0 ok, 1 error, 2 usage, 3 no such process, 4 not permitted (root needed),\n"
"            5 no Spyre runtime in target, 6 kernel without BTF, 7 output not writable,\n"
"            8 check found problems\n");
}

enum {
	OPT_PROBE = 256,
	OPT_PROBES,
	OPT_NO_DEFAULT,
	OPT_READY,
	OPT_RINGBUF,
	OPT_STATUS,
	OPT_NO_STATUS,
};

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "output", required_argument, NULL, 'o' },
	{ "duration", required_argument, NULL, 'd' },
	{ "probe", required_argument, NULL, OPT_PROBE },
	{ "probes", required_argument, NULL, OPT_PROBES },
	{ "no-default", no_argument, NULL, OPT_NO_DEFAULT },
	{ "ready-file", required_argument, NULL, OPT_READY },
	{ "ringbuf-mb", required_argument, NULL, OPT_RINGBUF },
	{ "status", no_argument, NULL, OPT_STATUS },
	{ "no-status", no_argument, NULL, OPT_NO_STATUS },
	{ "force", no_argument, NULL, 'f' },
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
	env->status = -1;
	env->ringbuf_mb = 16;

	if (argc > 1) {
		if (!strcmp(argv[1], "list"))
			env->cmd = CMD_LIST;
		else if (!strcmp(argv[1], "check"))
			env->cmd = CMD_CHECK;
		else if (!strcmp(argv[1], "recover"))
			env->cmd = CMD_RECOVER;
		if (env->cmd != CMD_TRACE)
			first = 2;
	}
	optind = first;
	/* '+': stop at the first non-option so "-- CMD -x" keeps CMD's own options */
	while ((opt = getopt_long(argc, argv, "+p:o:d:fqvhV", long_opts, NULL)) != -1) {
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
		case 'f':
			env->force = true;
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
		if (!env->pid == !env->argv_cmd) {
			fprintf(stderr, "spyre-bpftrace: give exactly one of -p PID or -- CMD\n");
			env_usage(stderr);
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
	}
	return 0;
}

void env_free(struct env *env)
{
	free(env->probe_args);
	free(env->probe_files);
}
