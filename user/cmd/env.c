// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The command line. One table says, for each option, its names, its argument, which
 * subcommands take it and its help: getopt_long's tables and the help text are made from it,
 * and an option given to a subcommand that does not take it is refused (exit 2) instead of
 * being silently ignored.
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
#include "common/log.h"
#include "common/parse.h"
#include "resolve/probes.h"
#include "attach/vfio.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define STR_(x)		#x
#define STR(x)		STR_(x)

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

static const char *const cmd_names[] = {
	[CMD_TRACE] = "tracing",
	[CMD_LIST] = "list",
	[CMD_CHECK] = "check",
	[CMD_RECOVER] = "recover",
	[CMD_MERGE] = "merge",
	[CMD_REPORT] = "report",
};

enum opt_section { SEC_TRACE, SEC_FLEET, SEC_CHECK, SEC_MERGE, SEC_REPORT, SEC_GENERAL };

static const char *const section_titles[] = {
	[SEC_TRACE] = NULL,	/* right after the usage lines */
	[SEC_FLEET] = "fleet mode (docs/fleet.md):",
	[SEC_CHECK] = "check (docs/check-recover.md):",
	[SEC_MERGE] = "merge (docs/user-guide.md, Merging):",
	[SEC_REPORT] = "report (docs/user-guide.md, Tables without a browser):",
	[SEC_GENERAL] = "all subcommands:",
};

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

static const struct opt_def opt_defs[] = {
	{ "pid", 'p', "PID", FOR_TRACE | FOR_LIST, SEC_TRACE,
	  "process to trace (its runtime libraries must be mapped); a\n"
	  "thread's id stands for its process" },
	{ "output", 'o', "FILE", FOR_TRACE | FOR_RECOVER | FOR_MERGE, SEC_TRACE,
	  "the file written; *.gz writes gzip. Tracing: the trace (default\n"
	  "spyre-trace-PID.json); recover: the closed copy (default\n"
	  "FILE.recovered.json); merge: the merged trace (required)" },
	{ "duration", 'd', "DUR", FOR_TRACE, SEC_TRACE,
	  "stop after DUR, e.g. 10 (seconds), 10s, 500ms, 5m (default:\n"
	  "SIGINT/SIGTERM or target exit)" },
	{ "probe", OPT_PROBE, "LIB:SYMBOL_GLOB[:NAME]", FOR_TRACE | FOR_LIST, SEC_TRACE,
	  "add a probe (repeatable); '::' belongs to C++ names;\n"
	  "NAME may hold {1}, {2}...: what the glob's '*' matched; LIB may\n"
	  "be the file's path, uprobe:LIB:SYMBOL as bpftrace has it" },
	{ "probes", OPT_PROBES, "FILE|NAME", FOR_TRACE | FOR_LIST, SEC_TRACE,
	  "add the probes of a spec file, or of the built-in table NAME\n"
	  "(torch: PyTorch's ops, autograd, CPU allocator; spyre: the\n"
	  "default one); a NAME wins over a file of that name: ./NAME for\n"
	  "the file (repeatable)" },
	{ "no-default", OPT_NO_DEFAULT, NULL, FOR_TRACE | FOR_LIST, SEC_TRACE,
	  "do not load the built-in Spyre probe table" },
	{ "max-probes", OPT_MAX_PROBES, "N", FOR_TRACE | FOR_LIST, SEC_TRACE,
	  "trace at most N functions, room reserved at start (default:\n"
	  "twice what resolves at start, up to " STR(SPYRE_MAX_PROBES) "; before Linux 6.6\n"
	  "at most " STR(SPYRE_PERF_MAX_UPROBES) " uprobes: entries and return sites)" },
	{ "allow-missing", OPT_ALLOW_MISSING, NULL, FOR_TRACE | FOR_LIST, SEC_TRACE,
	  "a --probe/--probes line that resolves nowhere is a warning, not\n"
	  "an error (exit 10): for libraries the job loads later" },
	{ "max-overhead", OPT_MAX_OVERHEAD, "PCT|none", FOR_TRACE, SEC_TRACE,
	  "hold the overhead of tracing (the job's extra CPU time over what\n"
	  "it would use untraced) over the run to PCT %: the probes are\n"
	  "detached for a while whenever it is over (the status line, summary\n"
	  "and metadata say how much was traced); default " STR(TRACE_DEFAULT_OVERHEAD)
	  " with -p and\n-- CMD ($SPYRE_BPFTRACE_MAX_OVERHEAD); none traces all the time.\n"
	  "With -a or --window: inside each window, its jobs' CPU time summed\n"
	  "(no default there)" },
	{ "max-size", OPT_MAX_SIZE, "SIZE", FOR_TRACE | NOT_FLEET, SEC_TRACE,
	  "bound each trace file to SIZE of JSON text, e.g. 64M, 1G (default\n"
	  "256M: what Perfetto's UI and chrome://tracing open); at the bound\n"
	  "the trace stops (exit 0, said) or, with --switch-output, goes on\n"
	  "in the next file" },
	{ "switch-output", OPT_SWITCH_OUTPUT, NULL, FOR_TRACE | NOT_FLEET, SEC_TRACE,
	  "at --max-size, go on in the next numbered file (t.json: t.000.json,\n"
	  "t.001.json, ...), each a whole trace; --max-files N keeps the last N" },
	{ "flight-recorder", OPT_FLIGHT_RECORDER, "DUR", FOR_TRACE | NOT_FLEET, SEC_TRACE,
	  "keep only the last DUR of the trace, in memory (at most --max-size);\n"
	  "write it to a file named by the time (t.20261207T101500.250Z.json)\n"
	  "on SIGUSR1, on a --trigger and at the end" },
	{ "trigger", OPT_TRIGGER, "SPEC", FOR_TRACE | NOT_FLEET, SEC_TRACE,
	  "with --flight-recorder, write the last DUR when: NAME>DUR (a call\n"
	  "of probe NAME took longer, e.g. 'spyreStreamSynchronize>50ms'),\n"
	  "exception (a C++ exception left a traced call), memory>SIZE (a\n"
	  "process's memory on a device went over SIZE); repeatable" },
	{ "ready-file", OPT_READY, "FILE", FOR_TRACE, SEC_TRACE,
	  "create FILE once all probes are attached" },
	{ "summary-json", OPT_SUMMARY_JSON, "FILE", FOR_TRACE | NOT_FLEET, SEC_TRACE,
	  "at the end, write the summary's facts to FILE as one JSON object\n"
	  "(the members spyreProbes, spyreStats, spyreMemory of the trace)" },
	{ "ringbuf-mb", OPT_RINGBUF, "N", FOR_TRACE, SEC_TRACE,
	  "ring buffer size in MiB, power of two (default 16)" },
	{ "status", OPT_STATUS, NULL, FOR_TRACE, SEC_TRACE,
	  "status line on stderr (default: when stderr is a terminal)",
	  "--status, --no-status" },
	{ "no-status", OPT_NO_STATUS, NULL, FOR_TRACE, SEC_TRACE, NULL },
	{ "driver", OPT_DRIVER, "MODE", FOR_TRACE | NOT_FLEET, SEC_TRACE,
	  "VFIO ioctl tracing: auto (default), fentry, kprobe, tracepoint, off" },
	{ "driver-funcs", OPT_DRIVER_FUNCS, "LIST", FOR_TRACE | NOT_FLEET, SEC_TRACE,
	  "kernel functions for fentry/kprobe (comma-separated)" },
	{ "follow", 'f', NULL, FOR_TRACE, SEC_TRACE,
	  "also trace the processes the target forks (like strace -f)" },
	{ "force", OPT_FORCE, NULL, FOR_TRACE | FOR_RECOVER | FOR_MERGE, SEC_TRACE,
	  "replace an existing output file" },
	{ "uretprobes", OPT_URETPROBES, NULL, FOR_TRACE | FOR_LIST, SEC_TRACE,
	  "see returns with the kernel's return probes (cheaper per call)\n"
	  "RISK: they rewrite the traced thread's stack; a C++ exception\n"
	  "thrown through a traced call then terminates the job unless the\n"
	  "unwind guard can run (x86-64, no lockdown). Default: uprobes on\n"
	  "each function's return instructions, the stack untouched" },
	{ "python", OPT_PYTHON, NULL, FOR_TRACE, SEC_TRACE,
	  "record the calling thread's Python stack (CPython 3.11-3.13) at each\n"
	  "traced call: args.python (the innermost frame's file:line and\n"
	  "function) and args.pystack; a table asks per probe with py=1" },
	{ "ustack", OPT_USTACK, NULL, FOR_TRACE, SEC_TRACE,
	  "record the calling thread's native stack (like bpftrace's ustack)\n"
	  "at each traced call: args.ustack, up to 32 frames, named from the\n"
	  "libraries' build ids; device memory's live blocks name theirs. The\n"
	  "kernel walks frame pointers: code built without them gives short\n"
	  "stacks. A table asks per probe with stack=1" },
	{ "kill", OPT_KILL, "SIGNAL|none", FOR_TRACE | NOT_FLEET, SEC_TRACE,
	  "-- CMD: a job still running when tracing stops (-d, a signal to\n"
	  "the tracer) gets SIGNAL (default TERM; KILL " STR(LAUNCH_GRACE_S) " s later if it has\n"
	  "not ended); none leaves it running (said on stderr)" },
	{ "quiet", 'q', NULL, FOR_TRACE, SEC_TRACE,
	  "no summary at exit" },

	{ "system-wide", 'a', NULL, FOR_TRACE, SEC_FLEET,
	  "every process that maps the runtime, including later ones" },
	{ "sample-every", OPT_SAMPLE, "N", FOR_TRACE, SEC_FLEET,
	  "record 1 in N calls (decided in BPF)" },
	{ "rate-cap", OPT_RATE_CAP, "N", FOR_TRACE, SEC_FLEET,
	  "record at most N events/s per process" },
	{ "window", OPT_WINDOW, "DUR", FOR_TRACE | FLEET_ONLY, SEC_FLEET,
	  "attach probes for DUR every period (e.g. 2s and 60s)",
	  "--window DUR --period DUR" },
	{ "period", OPT_PERIOD, "DUR", FOR_TRACE | FLEET_ONLY, SEC_FLEET, NULL },
	{ "output-dir", OPT_OUTPUT_DIR, "DIR", FOR_TRACE | FLEET_ONLY, SEC_FLEET,
	  "one trace file per window in DIR (rotated)" },
	{ "max-disk", OPT_MAX_DISK, "SIZE", FOR_TRACE | FLEET_ONLY, SEC_FLEET,
	  "keep at most SIZE of traces in DIR (e.g. 1G), oldest deleted" },
	{ "max-files", OPT_MAX_FILES, "N", FOR_TRACE, SEC_FLEET,
	  "keep at most N trace files in DIR (or of --switch-output's)" },
	{ "prom-file", OPT_PROM, "FILE", FOR_TRACE | FLEET_ONLY, SEC_FLEET,
	  "Prometheus textfile summary after each window" },

	{ "json", OPT_JSON, NULL, FOR_CHECK | FOR_REPORT, SEC_CHECK,
	  "print one JSON document: check, per file its events, problems\n"
	  "by kind and problem lines, or why it was unreadable; report,\n"
	  "per file its tables (for scripts)" },
	{ "profiler-start", OPT_PROFILER_START, "NS", FOR_MERGE, SEC_MERGE,
	  "a legacy PyTorch profiler export's start: CLOCK_REALTIME in ns\n"
	  "(time.time_ns())" },
	{ "nest-tolerance", OPT_NEST_TOL, "US", FOR_MERGE, SEC_MERGE,
	  "how far (µs) our spans may move to nest with the profiler's\n"
	  "(default 2)" },

	{ "by-thread", OPT_BY_THREAD, NULL, FOR_REPORT, SEC_REPORT,
	  "host calls by thread: a row for each function on each thread" },

	{ "verbose", 'v', NULL, FOR_ALL, SEC_GENERAL,
	  "more messages: the tracer's choices, where the start-up time went\n"
	  "(table resolved, BPF loaded, probes attached, ready, in ms) and\n"
	  "libbpf's info; -vv also libbpf's debug output" },
	{ "help", 'h', NULL, FOR_ALL, SEC_GENERAL,
	  "print the usage and the options, then exit (after a subcommand:\n"
	  "that subcommand's options only)" },
	{ "version", 'V', NULL, FOR_ALL, SEC_GENERAL,
	  "print the version" },
};

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

/* The help's second column; the width of the list of each subcommand's options */
#define HELP_COL	27
#define SUB_COL		11
#define SUB_WIDTH	95

static const struct opt_def *opt_find(int key)
{
	for (size_t i = 0; i < ARRAY_SIZE(opt_defs); i++)
		if (opt_defs[i].key == key)
			return &opt_defs[i];
	return NULL;
}

/* "-p/--pid" or "--probe": how a message names an option */
static const char *opt_name(const struct opt_def *d, char *buf, size_t len)
{
	if (d->key < 256)
		snprintf(buf, len, "-%c/--%s", d->key, d->name);
	else
		snprintf(buf, len, "--%s", d->name);
	return buf;
}

/* "-p, --pid PID": the help's left column */
static void opt_label(const struct opt_def *d, char *buf, size_t len)
{
	if (d->label)
		snprintf(buf, len, "%s%s", d->key < 256 ? "" : "    ", d->label);
	else if (d->key < 256)
		snprintf(buf, len, "-%c, --%s%s%s", d->key, d->name, d->arg ? " " : "",
			 d->arg ? d->arg : "");
	else
		snprintf(buf, len, "    --%s%s%s", d->name, d->arg ? " " : "",
			 d->arg ? d->arg : "");
}

static void print_option(FILE *f, const struct opt_def *d)
{
	const char *h = d->help, *nl;
	char label[96];
	int n;

	opt_label(d, label, sizeof(label));
	n = fprintf(f, "  %s", label);
	/* a long label keeps two spaces before its help */
	fprintf(f, "%*s", n + 2 > HELP_COL ? 2 : HELP_COL - n, "");
	for (;;) {
		nl = strchr(h, '\n');
		if (!nl) {
			fprintf(f, "%s\n", h);
			return;
		}
		fprintf(f, "%.*s\n%*s", (int)(nl - h), h, HELP_COL, "");
		h = nl + 1;
	}
}

/* "list: -p --probe ...": what each subcommand takes, from the table */
static void print_subcommand_options(FILE *f)
{
	for (int c = CMD_LIST; c <= CMD_REPORT; c++) {
		int n = fprintf(f, "  %-*s", SUB_COL - 2, cmd_names[c]);

		for (size_t i = 0; i < ARRAY_SIZE(opt_defs); i++) {
			const struct opt_def *d = &opt_defs[i];
			char name[48];

			if (!(d->cmds & (1u << c)) || d->section == SEC_GENERAL)
				continue;
			if (d->key < 256)
				snprintf(name, sizeof(name), "-%c", d->key);
			else
				snprintf(name, sizeof(name), "--%s", d->name);
			/* a new line, its column counted without the newline */
			if (n + 1 + (int)strlen(name) > SUB_WIDTH)
				n = fprintf(f, "\n%*s", SUB_COL, "") - 1;
			n += fprintf(f, " %s", name);
		}
		fprintf(f, "%s\n", n > SUB_COL ? "" : " (none)");
	}
}

/*
 * The ways to run the tool, for the help's usage lines and the man page's SYNOPSIS. @fixed is
 * what the form needs besides its options; the man page brackets every option @cmd takes
 * after the subcommand, minus those @fixed names (@given) and those the form refuses (@refuses:
 * FLEET_ONLY outside fleet mode, NOT_FLEET in it).
 */
struct usage_def {
	enum spyre_cmd cmd;
	const char *fixed;	/* after "spyre-bpftrace [SUBCOMMAND]" and its options */
	const char *help;	/* the help's usage line, after "spyre-bpftrace " */
	const char *what;
	unsigned int refuses;
	int given[2];
};

static const struct usage_def usage_defs[] = {
	{ CMD_TRACE, "-p PID", "[OPTIONS] -p PID", "trace a running Spyre job", FLEET_ONLY,
	  { 'p', 'a' } },
	{ CMD_TRACE, "-- CMD [ARGS...]", "[OPTIONS] -- CMD [ARGS...]",
	  "launch CMD and trace it from the start", FLEET_ONLY, { 'p', 'a' } },
	{ CMD_TRACE, "-a", "-a [OPTIONS]", "fleet mode: every job on the node (docs/fleet.md)",
	  NOT_FLEET, { 'a', 'p' } },
	{ CMD_LIST, "[GLOB]", "list [-p PID] [GLOB]", "the probes: those that resolve in PID, or "
	  "the tables and the Spyre processes", 0 },
	{ CMD_CHECK, "FILE|DIR...", "check [--json] FILE|DIR...",
	  "validate traces (overlaps, durations, flows)", 0 },
	{ CMD_RECOVER, "FILE", "recover FILE [-o OUT]", "close a trace cut short (tracer killed)",
	  0 },
	{ CMD_MERGE, "OURS KINETO -o OUT", "merge OURS KINETO -o OUT",
	  "add a PyTorch profiler trace, clocks aligned", 0, { 'o' } },
	{ CMD_REPORT, "FILE|DIR...", "report [--json] [--by-thread] FILE|DIR...",
	  "the trace's tables: host calls, kernels, device busy time, copies, health", 0 },
};

/* docs/user-guide.md, Exit codes, says more about each */
static const struct {
	int code;
	const char *what;
} exit_defs[] = {
	{ EXIT_OK, "ok (-- CMD: the job's own status when it failed, 128+N when signal N "
	  "killed it)" },
	{ EXIT_ERROR, "error" },
	{ EXIT_USAGE, "usage" },
	{ EXIT_NO_PID, "no such process" },
	{ EXIT_PERM, "not permitted (root needed)" },
	{ EXIT_NO_RUNTIME, "no Spyre runtime in target" },
	{ EXIT_NO_BTF, "kernel without BTF" },
	{ EXIT_OUTPUT, "output not writable" },
	{ EXIT_CHECK, "check found problems" },
	{ EXIT_TARGET_KILLED, "the traced process was killed by a signal" },
	{ EXIT_NO_MATCH,
	  "a --probe/--probes line resolves nowhere in the target (a typo?; with -- CMD: by the "
	  "job's end)" },
};

#define EXIT_WIDTH	92

static bool usage_given(const struct usage_def *u, int key)
{
	return u->given[0] == key || u->given[1] == key;
}

/* "list --help" shows @cmd's options; the tracer's own --help (CMD_TRACE) shows them all */
static bool help_shows(const struct opt_def *d, enum spyre_cmd cmd)
{
	return cmd == CMD_TRACE || (d->cmds & (1u << cmd));
}

static void env_usage_cmd(FILE *f, enum spyre_cmd cmd)
{
	bool first = true, probes = false, own = false;
	int n, col = 0;

	/* the usage lines' second column: after the longest form shown, two spaces */
	for (size_t i = 0; i < ARRAY_SIZE(usage_defs); i++)
		if ((cmd == CMD_TRACE || usage_defs[i].cmd == cmd) &&
		    (int)strlen(usage_defs[i].help) + 2 > col)
			col = strlen(usage_defs[i].help) + 2;
	for (size_t i = 0; i < ARRAY_SIZE(usage_defs); i++) {
		const struct usage_def *u = &usage_defs[i];

		if (cmd != CMD_TRACE && u->cmd != cmd)
			continue;
		fprintf(f, "%s spyre-bpftrace %-*s%s\n", first ? "usage:" : "      ", col,
			u->help, u->what);
		first = false;
	}
	for (int s = SEC_TRACE; s <= SEC_GENERAL; s++) {
		bool title = false;

		for (size_t i = 0; i < ARRAY_SIZE(opt_defs); i++) {
			const struct opt_def *d = &opt_defs[i];

			if ((int)d->section != s || !d->help || !help_shows(d, cmd))
				continue;
			/* a subcommand's own options are one block, untitled: they are all it has */
			if (!title && (cmd == CMD_TRACE || s == SEC_GENERAL || !own)) {
				fputc('\n', f);
				if (section_titles[s] && (cmd == CMD_TRACE || s == SEC_GENERAL))
					fprintf(f, "%s\n", section_titles[s]);
			}
			title = true;
			own |= s != SEC_GENERAL;
			print_option(f, d);
			probes |= d->key == OPT_PROBES;
		}
	}
	if (probes) {
		fputs("\nbuilt-in probe tables (--probes NAME):", f);
		for (size_t i = 0; probes_builtin_name(i); i++)
			fprintf(f, " %s", probes_builtin_name(i));
		fputc('\n', f);
	}
	if (cmd == CMD_TRACE) {
		fputs("\noptions of the subcommands (besides those for all; others are refused):\n",
		      f);
		print_subcommand_options(f);
	}
	n = fprintf(f, "\nexit codes:") - 1;
	for (size_t i = 0; i < ARRAY_SIZE(exit_defs); i++) {
		char item[256], *word, *save = NULL;
		int len = snprintf(item, sizeof(item), "%d %s%s", exit_defs[i].code,
				   exit_defs[i].what, i + 1 < ARRAY_SIZE(exit_defs) ? "," : "");
		const char *indent = "           ";	/* under the first code */

		/* an item on one line where it fits, else word by word, its rest indented */
		if (n + 1 + len > EXIT_WIDTH)
			n = fprintf(f, "\n%s", indent) - 1;
		for (word = strtok_r(item, " ", &save); word; word = strtok_r(NULL, " ", &save)) {
			if (n + 1 + (int)strlen(word) > EXIT_WIDTH)
				n = fprintf(f, "\n%s   ", indent) - 1;
			n += fprintf(f, " %s", word);
		}
	}
	fputc('\n', f);
}

static void env_usage(FILE *f)
{
	env_usage_cmd(f, CMD_TRACE);
}

/* --- the man page's generated parts (tools/gen-man.sh puts them into docs/spyre-bpftrace.8.in) */

/* @s as roff text: '-' and '\' escaped, 'µ' named, a line start that would be a request guarded */
static void roff_text(FILE *f, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", f);
	for (; *s; s++) {
		if (*s == '-')
			fputs("\\-", f);
		else if (*s == '\\')
			fputs("\\e", f);
		else if (!strncmp(s, "\xc2\xb5", 2) && s++)
			fputs("\\(mc", f);
		else if (*s == '\n')
			fputc(' ', f);	/* the help's line breaks: man fills its own lines */
		else
			fputc(*s, f);
	}
}

/*
 * "\fB\-p\fR, \fB\-\-pid\fR \fIPID\fR" (@both), "\fB\-\-probe\fR\ \fILIB:...\fR": @sep between
 * the option and its argument ("\ " in the synopsis: a bracket is not broken across lines)
 */
static void roff_opt(FILE *f, const struct opt_def *d, bool both, const char *sep)
{
	fputs("\\fB", f);
	if (d->key < 256) {
		fprintf(f, "\\-%c", d->key);
		if (both)
			fprintf(f, "\\fR, \\fB\\-\\-%s", d->name);
	} else {
		fputs("\\-\\-", f);
		roff_text(f, d->name);
	}
	fputs("\\fR", f);
	if (d->arg) {
		fprintf(f, "%s\\fI", sep);
		roff_text(f, d->arg);
		fputs("\\fR", f);
	}
}

static void man_synopsis(FILE *f)
{
	for (size_t i = 0; i < ARRAY_SIZE(usage_defs); i++) {
		const struct usage_def *u = &usage_defs[i];

		fputs(".SY spyre\\-bpftrace\n", f);
		if (u->cmd != CMD_TRACE)
			fprintf(f, ".B %s\n", cmd_names[u->cmd]);
		for (size_t j = 0; j < ARRAY_SIZE(opt_defs); j++) {
			const struct opt_def *d = &opt_defs[j];

			if (!(d->cmds & (1u << u->cmd)) || (d->cmds & u->refuses) ||
			    usage_given(u, d->key))
				continue;
			/* quoted: .RB would join its words, the option's and its argument's */
			fputs(".RB [ \"", f);
			roff_opt(f, d, false, "\\ ");
			fputs("\" ]\n", f);
		}
		roff_text(f, u->fixed);
		fputs("\n.YS\n", f);
	}
}

/*
 * Who takes the options of a section is said once, in its opening paragraph; an option says
 * only how it differs (another subcommand takes it too, fleet mode only or never), so that the
 * page does not repeat "tracing" under thirty options.
 */
static const struct {
	const char *title;
	unsigned int cmds;	/* what every option of the section is for */
	const char *intro;	/* roff */
} man_sections[] = {
	[SEC_TRACE] = { "Tracing", FOR_TRACE,
		"Options of tracing (\\fB\\-p\\fR, \\fB\\-\\-\\fR \\fICMD\\fR, \\fB\\-a\\fR); "
		"those another subcommand takes too, or fleet mode refuses, say so." },
	[SEC_FLEET] = { "Fleet mode", FOR_TRACE,
		"Options of tracing for fleet mode (\\fB\\-a\\fR, or \\fB\\-\\-window\\fR with "
		"\\fB\\-p\\fR; docs/fleet.md); those for fleet mode only are refused without "
		"either." },
	[SEC_CHECK] = { "check", FOR_CHECK, "Options of \\fBcheck\\fR." },
	[SEC_MERGE] = { "merge", FOR_MERGE, "Options of \\fBmerge\\fR." },
	[SEC_REPORT] = { "report", FOR_REPORT, "Options of \\fBreport\\fR." },
	[SEC_GENERAL] = { "All subcommands", FOR_ALL, "Options every subcommand takes." },
};

/* "Also for list.", "Fleet mode only.": how @d differs from its section's @cmds, if it does */
static void man_option_scope(FILE *f, const struct opt_def *d, unsigned int cmds)
{
	unsigned int also = d->cmds & FOR_ALL & ~cmds;
	int n = 0;

	for (int c = CMD_TRACE; c <= CMD_REPORT; c++)
		if (also & (1u << c))
			fprintf(f, "%s\\fB%s\\fR", n++ ? ", " : ".br\nAlso for ", cmd_names[c]);
	if (n)
		fputs(".\n", f);
	if (d->cmds & FLEET_ONLY)
		fputs(n++ ? "Fleet mode only.\n" : ".br\nFleet mode only.\n", f);
	if (d->cmds & NOT_FLEET)
		fputs(n++ ? "Not in fleet mode.\n" : ".br\nNot in fleet mode.\n", f);
}

static void man_options(FILE *f)
{
	for (int s = SEC_TRACE; s <= SEC_GENERAL; s++) {
		fprintf(f, ".SS %s\n%s\n", man_sections[s].title, man_sections[s].intro);
		for (size_t i = 0; i < ARRAY_SIZE(opt_defs); i++) {
			const struct opt_def *d = &opt_defs[i];
			size_t j;

			if ((int)d->section != s || !d->help)
				continue;
			fputs(".TP\n", f);
			roff_opt(f, d, true, " ");
			/* the entries said with this one (--no-status, --period) */
			for (j = i + 1; j < ARRAY_SIZE(opt_defs) && !opt_defs[j].help; j++) {
				fputs(", ", f);
				roff_opt(f, &opt_defs[j], true, " ");
			}
			/* a label narrower than the indent (--json) would take the text beside it */
			fputs("\n.br\n", f);
			roff_text(f, d->help);
			fputc('\n', f);
			man_option_scope(f, d, man_sections[s].cmds);
		}
	}
	fputs(".SS Built-in probe tables\n"
	      "Names \\fB\\-\\-probes\\fR takes for a table compiled into the tool "
	      "(copies under \\fI/usr/share/spyre\\-bpftrace\\fR):", f);
	for (size_t i = 0; probes_builtin_name(i); i++)
		fprintf(f, "%s\\fB%s\\fR", i ? ", " : " ", probes_builtin_name(i));
	fputs(".\n", f);
}

static void man_exit_codes(FILE *f)
{
	for (size_t i = 0; i < ARRAY_SIZE(exit_defs); i++) {
		fprintf(f, ".TP\n.B %d\n", exit_defs[i].code);
		roff_text(f, exit_defs[i].what);
		fputc('\n', f);
	}
}

/* --man PART: one generated part of the man page; 0, or EXIT_USAGE for an unknown PART */
static int env_man(FILE *f, const char *part)
{
	if (!strcmp(part, "synopsis"))
		man_synopsis(f);
	else if (!strcmp(part, "options"))
		man_options(f);
	else if (!strcmp(part, "exit-codes"))
		man_exit_codes(f);
	else if (!strcmp(part, "version"))
		fprintf(f, "%s\n", SPYRE_VERSION);
	else
		return usage_err("--man wants synopsis, options, exit-codes or version");
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
	for (size_t i = 0; i < ARRAY_SIZE(opt_defs); i++) {
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
	longs[ARRAY_SIZE(opt_defs)] = (struct option){};
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
		for (size_t i = 0; i < ARRAY_SIZE(opt_defs); i++) {
			if (!seen[i] || !(opt_defs[i].cmds & NOT_FLEET))
				continue;
			return usage_err("%s is not for fleet mode (-a, --window): it has no driver "
					 "tier yet (docs/fleet.md)",
					 opt_name(&opt_defs[i], name, sizeof(name)));
		}
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(opt_defs); i++) {
		if (!seen[i] || !(opt_defs[i].cmds & FLEET_ONLY))
			continue;
		return usage_err("%s is for fleet mode: give -a or --window DUR --period DUR too "
				 "(docs/fleet.md)", opt_name(&opt_defs[i], name, sizeof(name)));
	}
	return 0;
}

int env_parse(struct env *env, int argc, char **argv)
{
	struct option longs[ARRAY_SIZE(opt_defs) + 1];
	bool seen[ARRAY_SIZE(opt_defs)] = {};
	int opt, rc = 0, first, nargs, verbosity = 0;
	char shorts[2 * ARRAY_SIZE(opt_defs) + 2];
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
		rc = env_man(stdout, argv[2]);
		return rc ? rc : -1;
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
