/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Turns ringbuf records into trace events and statistics. No syscalls on the per-event path
 * except a one-time /proc read for each thread seen for the first time. */
#ifndef SPYRE_CONSUMER_H
#define SPYRE_CONSUMER_H

#include <stdint.h>
#include "stream/spyre_event_user.h"
#include "stream/device.h"
#include "resolve/resolve.h"
#include "stream/stats.h"
#include "output/trace_writer.h"

struct vfio_decoder;
struct memledger;

struct thread_info {
	uint32_t tid;		/* 0 = empty slot */
	uint32_t pid;
	char name[16];
	char named[16];		/* the name the trace has for it ("": none yet) */
	uint64_t submit;	/* end of its last dev=submit call, for the launch around it */
	char kname[SPYRE_STR_LEN];	/* the kernel name (dev=kname) for its next compute
					 * launch ("": none) */
	struct lanes *lanes;	/* its spans' lanes (lanes.h), NULL before its first span */
	uint32_t lanes_named;	/* bit k: lane k's track is named in this file */
};

/* A process's place in a distributed job (the trace's distributedInfo). */
struct dist_info {
	int rank;		/* -1: unknown */
	int world_size;		/* -1: unknown */
	/* each read from its environment: a dist= probe does not override it */
	bool rank_from_env, size_from_env;
	char pci_bus_id[32];	/* AIU_WORLD_RANK_<rank>: its card's PCI address ("": none) */
};

struct process_info {
	uint32_t pid;
	struct dist_info dist;
	uint32_t ns_pid;	/* pid inside its own PID namespace (container), 0 unknown */
	uint64_t cgroup_id;
	char name[16];
	char named[16];		/* the name the trace has for it ("": none yet) */
	bool labeled;		/* its process_labels are written */
	char container[72];	/* container id from /proc/PID/cgroup, "" on the host */
	char cmdline[160];
};

/* Per (process, probe) statistics, kept only in system-wide mode (Prometheus per job). */
struct pid_probe_stats {
	uint64_t key;		/* pid << 32 | (probe + 1); 0 = empty slot */
	uint64_t delivered;
	struct fn_stats *st;
};

/* How a probe's events are written (trace_fmt), prepared on its first event. */
struct probe_out {
	struct trace_fmt fmt;
	int state;		/* 0: not yet, 1: fmt ready, -1: failed (generic path) */
	bool file;		/* fmt has the "file" key (rprobe.other_file) */
};

struct py_names;

struct consumer {
	struct trace_writer *tw;	/* NULL: statistics only */
	struct py_names *pyn;		/* a call's Python frames' names (consumer.c), or NULL */
	const struct target *t;
	const char *procfs;		/* "/proc" (thread names), NULL to skip */
	struct fn_stats *stats;		/* per resolved probe */
	uint64_t *delivered;		/* per resolved probe */
	struct probe_out *out;		/* per resolved probe */
	int nprobes;
	uint64_t events;
	uint64_t bad;			/* records with an unknown probe index or kind */
	uint64_t lane_spans;		/* spans put on a thread's other-stack track (lanes.h) */
	struct thread_info *threads;	/* open addressing on tid */
	uint32_t tcap, tcnt;
	struct process_info *procs;
	int nprocs;
	struct device_tl dev;
	struct vfio_decoder *vfio;	/* driver tier (consumer_driver); NULL: records ignored */
	struct memledger *mem;		/* device memory (memledger.h; the caller's) */
	bool per_pid;			/* keep pid_stats too */
	struct pid_probe_stats *pid_stats;
	uint32_t pcap, pcnt;
	uint64_t rename_ts;		/* ts of the last rename written: they never go back */
	struct proc_exit *exits;	/* traced processes that ended (SPYRE_EV_EXIT) */
	int nexits;
	size_t capexits;
	/* Python stacks named (--python, py=1); NULL: their records are ignored */
	struct pystack *py;
	uint64_t py_stacks;		/* calls that carried a Python stack */
	uint64_t py_lost;		/* ... whose frames all failed to be named */
	/* python_function spans from the calls' stacks (--python: every call brings one) */
	struct pyspans *pyspans;
	uint64_t py_spans;		/* ... written */
	/* the SPYRE_EV_PYSTACK records of the call record that follows them */
	struct {
		uint32_t tid, probe;
		uint64_t ts;
		uint32_t n;
		uint8_t flags;
		uint64_t frame[SPYRE_PY_FRAMES];
	} pyrec;
	/* native stacks named (--ustack, stack=1); NULL: their records are ignored */
	struct ustack *ustack;
	uint64_t us_stacks;		/* calls that carried a native stack */
	uint64_t us_unread;		/* ... whose stack could not be read from the map */
	uint64_t us_callers;		/* ... whose caller came from the return address */
	/* the last SPYRE_EV_USTACK record: the stack id of the call record that follows it */
	struct {
		uint32_t tid, probe;
		uint64_t ts;
		int64_t id;
		uint64_t caller;
		bool set;
	} usrec;
	/*
	 * The flight recorder's triggers (--trigger): a span of probe i longer than trig_ns[i]
	 * (0: none), a C++ exception leaving a traced call, a device's memory (one process's on
	 * one device) above trig_mem (0: none; again once it fell under); what fired first since
	 * the session last took it ("": nothing) and how many fired in all
	 */
	uint64_t *trig_ns;
	bool trig_exception;
	uint64_t trig_mem;
	bool mem_over;
	char fired[192];
	uint64_t triggers;
	/* the last SPYRE_EV_STR record: the string of the call record that follows it */
	struct {
		uint32_t tid, probe;
		uint64_t ts;
		bool set;
		char s[SPYRE_STR_LEN];
	} str;
};

struct proc_exit {
	uint32_t pid;
	int code;			/* as wait(2) reports it: signal | 0x80 core | status << 8 */
};

int consumer_init(struct consumer *c, struct trace_writer *tw, const struct target *t,
		  const char *procfs);
/* Resolved probes can grow while tracing (libraries loaded later). */
int consumer_resize(struct consumer *c, int nprobes);
/*
 * One record of the ring, handed to the handler of its kind (SPYRE_EV_*): 0, or -ENOMEM when a
 * process's exit could not be kept. A call of a probe index past the table is counted (bad).
 */
int consumer_event(struct consumer *c, const struct spyre_event *e);
/*
 * Close the device timeline. Names are written as processes and threads are first seen; this
 * writes the names they have now (/proc) where they changed since.
 */
void consumer_write_metadata(struct consumer *c);
/*
 * The run goes on in the file @tw (--switch-output): the Python spans of the calls so far
 * written into the old one, the device timeline's work in flight carried over (device_switch),
 * every process and thread named again in the new one. Statistics go on counting the whole run.
 */
void consumer_switch(struct consumer *c, struct trace_writer *tw);
void consumer_free(struct consumer *c);
/*
 * Decode the driver tier's records too (stream/vfio_decode.h): @funcs[i] (@n of them) names
 * the kernel function of the records whose func is i, @root where fds and devices are looked up
 * (vfio_decoder_new). The decoder is the consumer's, freed with it. 0 or -errno.
 */
int consumer_driver(struct consumer *c, const char *root, const char *const *funcs, int n);
/*
 * Derive python_function spans (stream/pyspans.h) from the calls' Python stacks, written with
 * the metadata: only where every probe brings its caller's stack (--python), so that no traced
 * call without one straddles a frame's span. 0 or -ENOMEM.
 */
int consumer_python_spans(struct consumer *c);
/* The exit code of traced process @pid, if its end was seen (true), into @code. */
bool consumer_exit_code(const struct consumer *c, uint32_t pid, int *code);
/*
 * Threads with spans on other-stack tracks (into *@threads), and spans that crossed one on every
 * lane (LANES_MAX: put on the last, crossing there still): their count.
 */
uint64_t consumer_lanes_crossed(const struct consumer *c, uint64_t *threads);
/* The name of thread @tid as last seen ("" if never seen). */
const char *consumer_thread_name(const struct consumer *c, uint32_t tid);
/*
 * The whole entries of a process's environment read up to a cap (/proc/PID/environ, @len
 * bytes): a read that filled the cap may end inside an entry (RANK=12345 read as RANK=12), so
 * what follows the last NUL is dropped. Returns the length kept.
 */
size_t environ_whole(const char *env, size_t len);
/*
 * The distributed-job variables of an environment block (NUL-separated NAME=VALUE, as
 * /proc/PID/environ): RANK, WORLD_SIZE as torchrun sets them (else AIU_WORLD_SIZE, the Spyre
 * stack's), AIU_WORLD_RANK_<RANK>. Fields not found stay as they were, for getRank/getSize.
 */
void dist_from_environ(const char *env, size_t len, struct dist_info *d);
/* @d's pci_bus_id: AIU_WORLD_RANK_<its rank> of @env ("" without a rank or the variable). */
void dist_pci_from_environ(const char *env, size_t len, struct dist_info *d);
/* Process info by pid (NULL if never seen). */
const struct process_info *consumer_process(const struct consumer *c, uint32_t pid);

#endif
