/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Command line: what the user asked for (the exit codes we answer with: common/exitcodes.h). */
#ifndef SPYRE_ENV_H
#define SPYRE_ENV_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/exitcodes.h"
#include "cmd/options.h"

struct vfio_funcs;	/* attach/vfio.h */



/* --trigger (with --flight-recorder) */
enum trigger_kind { TRIGGER_SLOW = 1, TRIGGER_EXCEPTION, TRIGGER_MEMORY };
struct trigger {
	enum trigger_kind kind;
	char name[128];		/* TRIGGER_SLOW: the probe's name in the trace */
	uint64_t ns;		/* ... slower than this */
	unsigned long long bytes;	/* TRIGGER_MEMORY: over this */
};
#define ENV_MAX_TRIGGERS	16
/* "NAME>DUR", "exception", "memory>SIZE"; 0 or -EINVAL */
int trigger_parse(const char *arg, struct trigger *t);

struct env {
	enum spyre_cmd cmd;
	pid_t pid;
	char **argv_cmd;	/* -- CMD ARGS: launch and trace from the start */
	int kill_sig;		/* --kill: a launched job still running at the end gets it; 0 none */
	const char *output;
	double duration;	/* seconds; 0 = until SIGINT/SIGTERM or target exit */
	const char **probe_args;	/* --probe, in order */
	int n_probe_args;
	const char **probe_files;	/* --probes FILE */
	int n_probe_files;
	bool no_default;
	bool allow_missing;	/* --allow-missing: a user probe resolving nowhere only warns */
	double max_overhead;	/* --max-overhead PCT: the budget.h windows; 0: none */
	bool overhead_default;	/* ... not given: TRACE_DEFAULT_OVERHEAD or the environment's */
	int user_specs_from;	/* set by build_table: table specs from here on are the user's */
	bool uretprobes;	/* --uretprobes: kernel return probes instead of return sites */
	bool python;		/* --python: every span probe records its Python stack (py=1) */
	bool ustack;		/* --ustack: every span probe records its native stack (stack=1) */
	int max_probes;		/* --max-probes: functions a run traces; 0 = sized from the table */
	const char *ready_file;
	const char *summary_json;	/* --summary-json: the summary's facts, as the metadata */
	unsigned int ringbuf_mb;
	int status;		/* -1 auto (tty), 0 off, 1 on */
	bool quiet;
	bool force;
	bool follow;		/* -f: trace the processes the target forks, too */
	bool verbose;		/* any -v; how many set the log level (log.h) */
	const char *file_arg;	/* recover FILE; merge: our trace */
	char **file_args;	/* check, report FILE|DIR... */
	int nfile_args;
	bool json;		/* check, report --json */
	bool by_thread;		/* report --by-thread */
	const char *list_glob;	/* list [GLOB]: the probes whose name or function matches */
	const char *file_arg2;	/* merge: the Kineto trace */
	unsigned long long profiler_start_ns;	/* merge: a legacy export's start, 0 = unknown */
	long long nest_tol_ns;	/* merge: how far our spans may move to nest; < 0 = default */
	int driver;		/* --driver: enum vfio_mode (vfio.h), default auto */
	struct vfio_funcs *driver_funcs;	/* --driver-funcs LIST, split; NULL = built-in list */
	/* fleet mode (docs/fleet.md) */
	bool system_wide;	/* -a: every process that maps the runtime, now and later */
	unsigned int sample_every;	/* record 1 in N calls; 0/1 = all */
	unsigned long long rate_cap;	/* events/s per process; 0 = no cap */
	double window;		/* seconds probes stay attached per period; 0 = whole run */
	double period;		/* seconds from one window's start to the next */
	const char *output_dir;	/* one trace file per window, rotated */
	unsigned long long max_disk;	/* bytes of traces kept in output_dir; 0 = no limit */
	int max_files;		/* trace files kept in output_dir; 0 = no limit */
	const char *prom_file;	/* Prometheus textfile written after each window */
	/* trace mode's files (user guide, "Long runs") */
	unsigned long long max_size;	/* --max-size: bytes of JSON text a trace file holds */
	bool switch_output;	/* --switch-output: at max_size, on into the next file */
	double flight_recorder;	/* --flight-recorder: seconds kept in memory; 0 off */
	struct trigger triggers[ENV_MAX_TRIGGERS];
	int ntriggers;
};

/*
 * --max-size's default: 256 MiB of JSON text, ~1.7 M events of the mock job (157 bytes each),
 * ~35 s of its full rate. What viewers open: chrome://tracing reads the file into one string
 * and failed past ~256 MB (trace-viewer issue 627); Perfetto's UI runs in ~2 GB of WebAssembly
 * memory, a trace taking several times its size there, and a 900 MB JSON file crashed it
 * (Perfetto issue 99). Measured here: docs/performance.md, "Long runs".
 */
#define TRACE_DEFAULT_SIZE	(256ull << 20)
#define TRACE_MIN_SIZE		(1ull << 20)


/*
 * Fills @env and sets the log level (-v LOG_DEBUG, -vv LOG_TRACE); refuses an option its
 * subcommand does not take. On error prints a message and returns the exit code (> 0); -1
 * when --help or --version were handled (exit 0).
 */
int env_parse(struct env *env, int argc, char **argv);
void env_free(struct env *env);

#endif
