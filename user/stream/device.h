/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Device timeline: pairs each launch (host span) with its completion (reported by the runtime
 * on its worker thread) and writes the device-side span, Kineto style: pid = device,
 * tid = stream for compute, separate copy lanes, an ac2g flow from launch to device span.
 *
 * The device start is not observable from the host: it is taken as the later of the launch's
 * submission (the return of the last dev=submit call inside it, e.g. the doorbell write, else
 * the launch's own return: the device cannot have the work before the host gave it) and the
 * previous completion on the same stream (a stream executes in order), so spans on a stream
 * never overlap.
 */
#ifndef SPYRE_DEVICE_H
#define SPYRE_DEVICE_H

#include <stdint.h>
#include "probes.h"
#include "trace_writer.h"

#define DEVICE_PID		0	/* Kineto puts device work under pid = device index */
/*
 * Streams with a track at once at most (52 bytes each with its hash and free-list entries: 3.4
 * MB at most): a job has a handful per device; past this, their spans are counted as lost
 * (streams_overflow), never grown without bound. A destroyed stream's slot (dev=destroy) goes
 * to the next new stream.
 */
#define DEVICE_MAX_STREAMS	65536
#define DEVICE_COPY_LANES	8
/* in-flight operations tracked at most; more are counted as overflow, never grow unbounded */
#define DEVICE_MAX_PENDING	(1u << 18)
/*
 * ac2g arrow ids: 10^15 + n for the n-th arrow of the timeline (one timeline a file), unique in
 * the file however many processes it holds, while args.correlation stays the runtime's op id,
 * which processes share (a forked child inherits its parent's counter). Never a correlation
 * value (op ids count from 1; addresses stay below 2^47), because aiu-trace-analyzer joins a
 * kernel's args.correlation to the 's' whose id equals it; below 2^53, where JavaScript
 * viewers still read integers exactly.
 */
#define DEVICE_FLOW_ID_BASE	1000000000000000ull

struct pending_op {
	uint64_t key;		/* 0 = empty slot; an op is (pid, key) */
	uint64_t ts;		/* launch entry, or completion time for a completion-first entry */
	uint64_t submit;	/* when the device can have it: the launch's submission (below) */
	uint64_t stream;	/* the raw stream value (RuntimeStream pointer) mixed with pid */
	uint64_t bytes;
	uint32_t pid, tid;	/* launching thread */
	uint8_t op;		/* enum dev_op; OP_NONE for a completion-first entry */
	uint8_t completed;	/* entry holds a completion waiting for its launch */
};

struct device_stats {
	uint64_t matched;
	uint64_t launches_unmatched;	/* still in flight when tracing stopped */
	uint64_t completions_unmatched;	/* launched before we attached */
	uint64_t overflow;		/* more than DEVICE_MAX_PENDING in flight */
	uint64_t streams_overflow;	/* more than DEVICE_MAX_STREAMS live streams */
	uint64_t streams_destroyed;	/* slots freed by dev=destroy */
};

/* A device track of one stream (slot index = track). */
struct dev_stream {
	uint64_t id;		/* raw stream value mixed with its pid (device.c: stream_of) */
	uint64_t end;		/* last device end on this track, kept across owners */
	uint64_t dead_ts;	/* destroyed at (0: live); spans launched before still go here */
	uint32_t listed;	/* in free_slots (a revived slot stays listed, skipped there) */
};

#define DEV_NOPS	(OP_D2H + 1)

struct device_tl {
	struct trace_writer *tw;
	struct pending_op *slots;
	uint32_t cap, cnt;
	struct dev_stream *streams;	/* slots, grown on demand */
	uint32_t nstreams, scap;	/* slots used (tracks named), allocated */
	uint32_t *free_slots;		/* slots of destroyed streams, reused first */
	uint32_t nfree;
	uint32_t *shash;		/* stream id -> slot + 1; stale entries until rebuilt */
	uint32_t shcap, shcnt;
	uint64_t lane_end[3][DEVICE_COPY_LANES];	/* [op][lane] for OP_H2D/OP_D2H */
	uint8_t lane_used[3][DEVICE_COPY_LANES];	/* and named in the trace */
	bool named;				/* the device's process_name is written */
	uint64_t flows;				/* ac2g arrows written */
	struct device_stats st;
	struct trace_fmt fmt[DEV_NOPS];		/* per op, see op_fmt() */
	int fmt_state[DEV_NOPS];		/* 0: not made yet, 1: made, -1: failed */
};

int device_init(struct device_tl *d, struct trace_writer *tw);
/* @ts: the launch's entry (the arrow leaves from there); @submit: its submission (above) */
void device_launch(struct device_tl *d, uint32_t pid, uint32_t tid, uint64_t key,
		   uint64_t stream, enum dev_op op, uint64_t bytes, uint64_t ts, uint64_t submit);
void device_complete(struct device_tl *d, uint32_t pid, uint64_t key, uint64_t stream,
		     uint64_t ts);
/*
 * @stream was destroyed at @ts: its track goes to the next new stream (spans launched before
 * @ts that arrive later still land on it, unless it was handed on already).
 */
void device_stream_destroy(struct device_tl *d, uint32_t pid, uint64_t stream, uint64_t ts);
/* Device spans lost: more in flight than DEVICE_MAX_PENDING, or no track for their stream. */
uint64_t device_lost(const struct device_tl *d);
/*
 * Count what is left unmatched. (The device's tracks are named as they appear, so a trace cut
 * short keeps their names.)
 */
void device_finish(struct device_tl *d);
void device_free(struct device_tl *d);

#endif
