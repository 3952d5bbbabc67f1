/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Shared between the BPF programs and the userspace loader: fixed-size types only, so the
 * layout is identical in both compilations.
 */
#ifndef SPYRE_TRACE_H
#define SPYRE_TRACE_H

#define SPYRE_MAX_ARGS		6
/* Probe index travels as the attach cookie; it also indexes the per-probe counters. */
#define SPYRE_MAX_PROBES	512
/* Nesting depth of traced calls kept per thread; deeper calls are counted as drops. */
#define SPYRE_MAX_DEPTH		16

enum spyre_event_type {
	SPYRE_EV_SPAN = 1,	/* entry + return of one call */
	SPYRE_EV_INSTANT = 2,	/* entry only (e.g. a completion callback) */
	SPYRE_EV_THREAD = 3,	/* first traced call of a thread: args hold names, see below */
};

/*
 * SPYRE_EV_THREAD: sent once per thread, when its first traced call creates its stack, so
 * threads that exit before userspace looks at /proc still get their real names.
 */
#define SPYRE_COMM_LEN		16
#define SPYRE_THREAD_COMM(e)	((char *)&(e)->args[0])	/* 16 bytes: the thread's comm */
#define SPYRE_PROCESS_COMM(e)	((char *)&(e)->args[2])	/* 16 bytes: its process's comm */

struct spyre_event {
	__u64 ts;			/* entry, bpf_ktime_get_ns() == CLOCK_MONOTONIC */
	__u64 dur;			/* ns; 0 for instants */
	__u64 args[SPYRE_MAX_ARGS];	/* raw argument registers at entry */
	__u64 ret;			/* raw return register */
	__u32 tgid;
	__u32 tid;
	__u32 probe;			/* index in the userspace probe list (cookie) */
	__u16 type;			/* enum spyre_event_type */
	__u16 depth;			/* nesting depth on this thread at entry, 0 = outermost */
};

/* Per-probe, per-CPU counters; userspace sums the CPUs. */
struct spyre_counters {
	__u64 hits;		/* entries seen */
	__u64 drops_ring;	/* ringbuf reservation failed */
	__u64 drops_depth;	/* nesting deeper than SPYRE_MAX_DEPTH or no stack slot */
	__u64 unmatched;	/* return without a matching entry */
};

#endif /* SPYRE_TRACE_H */
