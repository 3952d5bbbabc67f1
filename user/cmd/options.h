/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The command line's one table of options (options.c), shared by its parser (env.c) and its
 * renderings, the help and the man page's generated parts (usage.c).
 */
#ifndef SPYRE_CMD_OPTIONS_H
#define SPYRE_CMD_OPTIONS_H

#include <stddef.h>

/* Values the help says, defined here for it (env.h has them through this header) */
/* --kill: how long a launched job has after its signal before SIGKILL */
#define LAUNCH_GRACE_S	3

/*
 * --max-overhead's default with -p and -- CMD (docs/performance.md, "The budget"): 10 %. Real
 * PyTorch traced with --probes torch stays under it on its own (so it is traced all the time),
 * while the mock job's every-probe default (+260 % here, returns single-stepped) is held to it;
 * the vendor profiler costs a torch-spyre benchmark +230 %, always on.
 */
#define TRACE_DEFAULT_OVERHEAD	10

/* The subcommands (spyre-bpftrace SUBCOMMAND ...; tracing has none) */
enum spyre_cmd { CMD_TRACE = 0, CMD_LIST, CMD_CHECK, CMD_RECOVER, CMD_MERGE, CMD_REPORT };

/* Which subcommands take an option: bits of enum spyre_cmd. */
#define FOR_TRACE	(1u << CMD_TRACE)
#define FOR_LIST	(1u << CMD_LIST)
#define FOR_CHECK	(1u << CMD_CHECK)
#define FOR_RECOVER	(1u << CMD_RECOVER)
#define FOR_MERGE	(1u << CMD_MERGE)
#define FOR_REPORT	(1u << CMD_REPORT)
#define FOR_ALL		(FOR_TRACE | FOR_LIST | FOR_CHECK | FOR_RECOVER | FOR_MERGE | FOR_REPORT)
/*
 * Tracing in fleet mode only (-a or --window): what it writes per window. Elsewhere such an
 * option would be ignored, and a trace written where the user did not ask for it.
 */
#define FLEET_ONLY	(1u << 16)
/* Tracing outside fleet mode only: fleet mode has no driver tier yet (docs/fleet.md) */
#define NOT_FLEET	(1u << 17)

enum opt_section { SEC_TRACE, SEC_FLEET, SEC_CHECK, SEC_MERGE, SEC_REPORT, SEC_GENERAL };

/* The keys of the options without a short letter: past every character getopt returns. */
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
	OPT_PYTHON,
	OPT_USTACK,
	OPT_DRIVER,
	OPT_DRIVER_FUNCS,
	OPT_PROFILER_START,
	OPT_NEST_TOL,
	OPT_MAX_PROBES,
	OPT_ALLOW_MISSING,
	OPT_MAX_OVERHEAD,
	OPT_MAX_SIZE,
	OPT_SWITCH_OUTPUT,
	OPT_FLIGHT_RECORDER,
	OPT_TRIGGER,
	OPT_JSON,
	OPT_KILL,
	OPT_SUMMARY_JSON,
	OPT_BY_THREAD,
};

struct opt_def {
	const char *name;	/* --name */
	int key;		/* the short letter, or an OPT_* for a long option only */
	const char *arg;	/* the argument, as the help names it; NULL: a flag */
	unsigned int cmds;	/* FOR_* (| FLEET_ONLY or NOT_FLEET) */
	enum opt_section section;
	/* the help's lines ('\n' between); NULL: said with the entry before (see label) */
	const char *help;
	const char *label;	/* the help's left column when not "-x, --name ARG" */
};

/* Options at most (env.c's getopt tables are this long) */
#define OPT_MAX_DEFS	64

/* The options, opt_ndefs of them, and the subcommands' names as messages say them */
extern const struct opt_def opt_defs[];
extern const size_t opt_ndefs;
extern const char *const cmd_names[];

/* The option of key @key (a short letter or an OPT_*), or NULL */
const struct opt_def *opt_find(int key);
/* "-p/--pid" or "--probe": how a message names an option */
const char *opt_name(const struct opt_def *d, char *buf, size_t len);

#endif
