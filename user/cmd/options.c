// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The command line's one table (options.h): for each option its names, its argument, which
 * subcommands take it and its help. env.c parses by it, usage.c renders it.
 */
#include <stdio.h>
#include "cmd/options.h"
#include "resolve/probes.h"
#include "attach/vfio.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define STR_(x)		#x
#define STR(x)		STR_(x)

const char *const cmd_names[] = {
	[CMD_TRACE] = "tracing",
	[CMD_LIST] = "list",
	[CMD_CHECK] = "check",
	[CMD_RECOVER] = "recover",
	[CMD_MERGE] = "merge",
	[CMD_REPORT] = "report",
};

const struct opt_def opt_defs[] = {
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
const size_t opt_ndefs = ARRAY_SIZE(opt_defs);
_Static_assert(ARRAY_SIZE(opt_defs) <= OPT_MAX_DEFS, "OPT_MAX_DEFS holds every option");

const struct opt_def *opt_find(int key)
{
	for (size_t i = 0; i < ARRAY_SIZE(opt_defs); i++)
		if (opt_defs[i].key == key)
			return &opt_defs[i];
	return NULL;
}

/* "-p/--pid" or "--probe": how a message names an option */
const char *opt_name(const struct opt_def *d, char *buf, size_t len)
{
	if (d->key < 256)
		snprintf(buf, len, "-%c/--%s", d->key, d->name);
	else
		snprintf(buf, len, "--%s", d->name);
	return buf;
}
