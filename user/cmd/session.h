/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One tracing session, for every mode: the probes loaded and attached, a consumer draining the
 * ring into a trace file, the stop conditions (signals, -d, the target's end, a full disk), the
 * status line, the rescan, and the closing sequence of a trace (detach, drain, counters,
 * metadata, end). Trace mode (-p PID, -- CMD) is one window until it stops; fleet mode (-a,
 * --window/--period) is a window per period, each into its own file.
 *
 *	session_init -> session_load_begin -> (resolve) -> session_load_end
 *	per window: session_window_open -> session_attach -> session_loop -> session_window_end
 *		    -> session_window_close, then session_wait for the next one
 *	session_free
 */
#ifndef SPYRE_SESSION_H
#define SPYRE_SESSION_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "stream/consumer.h"
#include "attach/budget.h"
#include "attach/cost.h"
#include "cmd/env.h"
#include "common/intset.h"
#include "stream/memledger.h"
#include "resolve/resolve.h"
#include "report/summary.h"
#include "attach/uprobe_tier.h"
#include "attach/vfio.h"

struct bg_load;
struct recorder;
struct calibration;
struct retcheck;
struct warmer;

/* The start's steps, CLOCK_MONOTONIC (the main thread's CPU: CLOCK_THREAD_CPUTIME_ID). */
struct startup_times {
	uint64_t begin, resolved, attached, main_cpu;
};

struct session {
	const struct env *env;
	bool fleet;		/* windows: SIGHUP ends one, per-process statistics */
	/* what is traced */
	struct target t;
	struct tracer tr;
	struct tracer_opts topts;
	bool loaded;		/* tr is open */
	struct vfio_tracer *vfio;	/* the driver tier, or NULL */
	struct retcheck *emucheck;	/* emulated returns' self-test (retcheck.h), or NULL */
	char emu_why[512];		/* why returns are (not) done by BPF */
	struct drain *drain;		/* the ring's reader, once every object is loaded */
	/*
	 * the kernel functions of vfio's records and where its fds are looked up, for each
	 * window's decoder (consumer_driver)
	 */
	const char *vfuncs[SPYRE_DRV_MAX_FUNCS];
	int nvfuncs;
	const char *vroot;
	struct bg_load *upl, *drv;	/* the two BPF objects' loads (session_load_begin) */
	int ring_fd;
	struct warmer *warm;
	struct retcheck *rcheck;	/* the return-site self-test (retcheck.h) */
	bool sites_checked;	/* its verdict applied to the target */
	struct intset seen;	/* -a: processes scanned */
	struct intset jobs;	/* ... of them those with the runtime mapped (alive at an attach) */
	struct intset py_seen;	/* --python: processes whose interpreter was looked for */
	char hostname[64];		/* in each trace's metadata */
	int scans;
	bool scanned;			/* session_scan ran once */
	bool *said;		/* user specs said to resolve nowhere */
	pid_t launch_pid;	/* -- CMD: our child, reaped at the end; 0 = none */
	/* what the probes cost */
	struct hit_costs costs;
	struct calibration *cal;
	struct cost_meter meter;
	int jobs_watched;		/* cons.procs the meter weighs (-a, -f: watch_jobs) */
	/*
	 * --max-overhead: the probes in windows, paused between them (budget.h); in fleet mode
	 * inside each of its windows
	 */
	struct budget *budget;		/* NULL: none */
	struct run_budget rb;		/* ... as the summary and metadata tell it */
	uint64_t next_budget;		/* its next tick */
	uint64_t attach_ns;		/* the first attach began (CLOCK_MONOTONIC) */
	struct startup_times up;	/* -v's start-up line, said at ready */
	uint64_t detach_start, detach_ns;	/* the window's end: its detach began, took */
	bool advised;		/* the high-overhead advice was given (once a run) */
	/* the window */
	struct trace_writer *tw;	/* NULL outside a window */
	const char *path;	/* its file */
	uint64_t mono_base, real_base;	/* its ts 0 (every file of a window has the same) */
	/*
	 * Trace mode's files: each bounded by --max-size (a drain stops at file_bound, the
	 * metadata's room kept), the run going on in the next one with --switch-output
	 */
	uint64_t file_bound;		/* 0: none (fleet mode: --max-disk) */
	struct run_file file;		/* the file being written */
	uint64_t file_events0;		/* cons.events when it began */
	uint64_t launched0;		/* cons.dev.st.launched_prev_file then */
	uint64_t bytes_done;		/* JSON bytes of the run's files closed before it */
	uint64_t unwritten;		/* records left in the ring when it stopped at the bound */
	bool full;			/* stopped at --max-size */
	char cur_path[PATH_MAX], prev_path[PATH_MAX], first_path[PATH_MAX];
	/*
	 * --flight-recorder: the run in slices of a quarter of it, in memory (output/recorder.h),
	 * written out on SIGUSR1, a --trigger and at the end; triggers within DUR of a dump are
	 * counted, not written again
	 */
	struct recorder *rec;
	uint64_t keep_ns, slice_ns, hold_until;
	unsigned int dumps, trigger_dumps;
	uint64_t held;			/* triggers that came while held */
	bool dump_asked;		/* SIGUSR1 */
	char last_dump[PATH_MAX];
	struct consumer cons;
	struct memledger mem;	/* across windows: what a job holds outlives one */
	struct run_end end;
	uint64_t next_status, next_rescan, deadline;
	struct status_prev last;	/* the status line's last counts */
	uint64_t trace_start;		/* CLOCK_MONOTONIC when tracing began (-d counts from it) */
	int drain_ms;		/* the wait before the next drain (TRACER_DRAIN_MS, up to _MAX_MS) */
	/* stop conditions */
	int sfd, pidfd;
	int status;		/* the status line: env->status with auto resolved */
	bool tty, ready;
	bool stop, hup, target_gone;
	bool hup_stops;		/* trace mode: SIGHUP ends the trace, unless ignored at start */
	int write_err;		/* a trace file could not be written (-errno): stop, exit 7 */
	int unresolved;		/* launch mode: user lines the job never resolved: exit 10 */
	/* Python stacks (--python, py=1): wanted; the target's interpreter settled (found, or
	 * why not said once); its code objects named for the consumer */
	bool py_wanted, py_settled;
	struct pystack *py;
	bool ustack_wanted;		/* --ustack or a stack=1 probe */
	struct ustack *ustack;		/* ... its stacks named, once loaded */
};

/*
 * Target @pid (-1: every process), the table, the memory ledger, the stop signals and the
 * deadline (-d). Returns 0 or an exit code, after saying why.
 */
int session_init(struct session *s, const struct env *env, struct probe_table *table, int pid,
		 bool fleet);
void session_free(struct session *s);

/* The ring, then the BPF objects in threads (the driver tier's with @driver), with room for
 * @resolved functions (0: not resolved yet, looked at again in session_load_end). */
int session_load_begin(struct session *s, int resolved, bool driver);
/* The uprobe tier loaded, with room for what resolved. Returns 0 or an exit code. */
int session_load_end(struct session *s);
/* The driver tier asked for by name (--driver) could not be loaded: attach nothing. */
bool session_driver_failed(struct session *s);
/* The driver tier loaded and attached (or found unusable in auto mode), the ring mapped.
 * Returns 0 or an exit code. */
int session_driver_end(struct session *s);

/*
 * Resolve (again): new libraries (-p), new processes (-a; everything again with @all). New
 * probes or -errno; -E2BIG (past --max-probes) is said here: at the first scan as the error
 * it is, later as a warning (once) that what fits is attached.
 */
int session_scan(struct session *s, bool all);

/* Attach everything resolved; the cost meter starts here. Returns 0 or -errno. */
int session_attach(struct session *s);

/*
 * A window into the file @out opened for @path: its trace begun (the writer owns @out's text
 * from here on, closed on failure too) with ts 0 at @mono_ns, CLOCK_REALTIME @real_ns then
 * (taken together), the consumer on it. Returns 0 or -errno.
 */
struct output;
int session_window_open(struct session *s, struct output *out, const char *path,
			uint64_t mono_ns, uint64_t real_ns);
/* The ready file, once. */
void session_ready(struct session *s);
/* Per-hit costs measured now that the job runs, and said (once). */
void session_calibrate(struct session *s);

/* Drain, rescan, weigh and show until a stop, a SIGHUP (fleet) or @until_ns (0: none). */
void session_loop(struct session *s, uint64_t until_ns);
/* Between windows, nothing attached: wait for @until_ns, a signal, the target's end or -d. */
void session_wait(struct session *s, uint64_t until_ns);

/*
 * Close the window: detach, take what is left in the ring, counters, metadata (window
 * @index, 0 = not windowed), end the trace file. The consumer and counters stay for the
 * summary until session_window_close. Returns 0 or -errno of writing the file.
 */
int session_window_end(struct session *s, uint64_t index);
/* The consumer gone, counters and stacks cleared for the next window. */
void session_window_close(struct session *s);

/* The bytes of JSON text the run's files hold so far (the flight recorder: in memory now). */
uint64_t session_bytes(const struct session *s);

/* The exit code of a run that got this far. */
int session_exit_code(const struct session *s);

/* Refuse what cannot be traced, with the reason: gone, zombie, kernel thread. */
int check_pid(pid_t pid);
/*
 * -p TID, a thread of a process (its id is in /proc, unlisted): the process's id, said ("TID
 * is a thread of process PID: @doing process PID"); any other @pid as it is.
 */
pid_t thread_process(pid_t pid, const char *doing);
/* Process @pid's name (/proc/PID/comm) into @buf, "?" when gone; @buf. */
const char *process_comm(pid_t pid, char *buf, size_t len);

/*
 * The session's own steps in its other files (this header declares them so that the files of
 * the session are one module). session_files.c: trace mode's files.
 */
/* A trace file of the run begins (trace mode: --max-size bounds it). */
void file_begin(struct session *s, struct trace_writer *tw, const char *path, uint64_t start_ns);
/* The file's part of the run, for its metadata. */
const struct run_file *file_facts(struct session *s, uint64_t end_ns, bool last,
				  const char *reason);
/* The flight recorder's last DUR into a file named by the time (@why: what asked): 0 or -errno */
int dump(struct session *s, const char *why);
/* The flight recorder: a dump asked for (SIGUSR1, a trigger), a slice that is old enough */
void recorder_check(struct session *s, uint64_t now);
/* --trigger's limits handed to the consumer (its probes known now) */
void apply_triggers(struct session *s);
/* The file reached its bound: true when the run stops there (else it went on in another) */
bool file_full(struct session *s);
/* session_python.c: the interpreters of the processes that may bring calls, looked for */
void python_scan(struct session *s);
/* session_cost.c: the probes' cost weighed (every second, shown or not); the status line */
void session_status(struct session *s);
/* -a, -f: the processes that brought a traced call are the jobs the meter weighs */
void watch_jobs(struct session *s);
/* --max-overhead's tick (budget.h): a pause or a new window, when it is due */
void budget_check(struct session *s, uint64_t now);
/* session.c: everything left in the ring, into the files as bounded (the end of a window) */
void drain_rest(struct session *s);

#endif
