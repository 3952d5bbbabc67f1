/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The consumer's state (stream/consumer.h): its threads and processes, its probes' statistics
 * and formats, the records that wait for the call record they belong to. Apart from the
 * functions so that the consumer's files (consumer.c, procs.c, stacks.c, calls.c) share it
 * without depending on each other both ways.
 */
#ifndef SPYRE_CONSUMER_STATE_H
#define SPYRE_CONSUMER_STATE_H

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
	struct py_names *pyn;		/* a call's Python frames' names (stacks.c), or NULL */
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

#endif
