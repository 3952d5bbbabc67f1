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
 *
 * The end is the earliest evidence that the work completed. A stream runs its operations in
 * launch order, so each of these ends every operation launched on the stream before it:
 * a completion callback (dev=complete) of the operation's own key or of a later operation on
 * the stream, a query() that returned true and a synchronize() that returned (dev=query,
 * dev=sync: operations launched before their entry). When one piece of evidence ends several
 * pending operations, each ends where the next one could start (its submission) and the last
 * at the evidence. The device span's args.end says which evidence it was.
 */
#ifndef SPYRE_DEVICE_H
#define SPYRE_DEVICE_H

#include <stdint.h>
#include "common/ohash.h"
#include "resolve/probes.h"
#include "output/trace_writer.h"

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
 * the file however many processes it holds. args.correlation is not the runtime's key either:
 * every launch gets the tracer's own id, 2^52 + n (device_new_corr, one count a timeline, so
 * also unique in the file), because keys are pointers the runtime hands out again (a callback's
 * functor) and op ids that processes share (a forked child inherits its parent's counter);
 * completions are still matched on the (pid, key). An arrow id is never a correlation value
 * (10^15 + any arrow count stays below 2^52; device_launch()'s launches, which show their key,
 * have op ids counting from 1 or addresses below 2^47), because aiu-trace-analyzer joins a
 * kernel's args.correlation to the 's' whose id equals it; both below 2^53, where JavaScript
 * viewers still read integers exactly.
 */
#define DEVICE_FLOW_ID_BASE	1000000000000000ull

/* A key's entry: a launch waiting in its stream's queue, or a completion waiting for it. */
struct pending_op {
	uint64_t key;		/* never 0: 0 is an empty slot of device_tl.ops */
	uint64_t ts;		/* launch entry, completion time for a completion-first entry, end
				 * of an ended one */
	uint64_t stream;	/* the raw stream value (RuntimeStream pointer) mixed with pid */
	uint32_t pid;		/* an op is (pid, key) */
	uint8_t completed;	/* entry holds a completion waiting for its launch */
	uint8_t ended;		/* its launch was ended by other evidence (sync, query, a later
				 * callback): its own callback, when it comes, is no orphan */
};

/* How a device span's end was known (args.end) */
enum dev_end { END_CALLBACK = 0, END_QUERY, END_SYNC };

#define DEVICE_NAME_LEN	64	/* kernel names (str=, SPYRE_STR_LEN) */

/* A launched operation waiting, in its stream's queue, for evidence of its completion. */
struct queued_op {
	uint64_t corr;		/* args.correlation: the tracer's id of the launch
				 * (dev_launch.corr), or without one (device_launch) its key;
				 * the arrow's id is DEVICE_FLOW_ID_BASE + n (emit) */
	uint64_t key;		/* what its completion is matched on; 0: none */
	uint64_t ts;		/* launch entry */
	uint64_t submit;	/* when the device can have it: the launch's submission (above) */
	uint64_t stream;
	uint64_t bytes;
	uint32_t pid, tid;	/* launching thread */
	uint8_t op;		/* enum dev_op */
	uint8_t keyed;		/* has a pending_op entry under key */
	uint8_t prev_file;	/* launched while an earlier file of the run was written (its host
				 * span is there): no arrow in this file (device_switch) */
	char name[DEVICE_NAME_LEN];	/* kernel name ("": the op's generic name) */
};

/* The operations of one stream not known complete yet, in launch order. */
struct stream_queue {
	uint64_t stream;	/* raw stream value; the queue is in use when q != NULL */
	struct queued_op *q;
	uint32_t n, cap;
	uint64_t ev_entry;	/* the latest sync/query evidence: its entry, */
	uint64_t ev_ts;		/* when it proved completion, */
	uint8_t ev_kind;	/* enum dev_end */
};

struct device_stats {
	uint64_t matched;
	uint64_t launches_unmatched;	/* still in flight when tracing stopped */
	uint64_t completions_unmatched;	/* launched before we attached */
	uint64_t overflow;		/* more than DEVICE_MAX_PENDING in flight */
	uint64_t streams_overflow;	/* more than DEVICE_MAX_STREAMS live streams */
	uint64_t streams_destroyed;	/* slots freed by dev=destroy */
	uint64_t launched_prev_file;	/* device spans whose launch is in the file before */
	uint64_t cut_at_pause;		/* in flight when the probes were detached a while */
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
	/*
	 * pending_op by (pid, key): processes number their ops alike (a forked child goes on from
	 * its parent's counter, jobs started alike count alike), so one key can be in flight in
	 * several processes of one trace at once
	 */
	struct ohash ops;
	struct dev_stream *streams;	/* slots, grown on demand */
	uint32_t nstreams, scap;	/* slots used (tracks named), allocated */
	uint32_t *free_slots;		/* slots of destroyed streams, reused first */
	uint32_t nfree;
	uint32_t *shash;		/* stream id -> slot + 1; stale entries until rebuilt */
	uint32_t shcap, shcnt;
	struct stream_queue *sq;	/* open addressing on the stream id */
	uint32_t sqcap, sqcnt;
	uint32_t queued;		/* operations in all queues */
	uint64_t next_corr;		/* ids of launches (device_new_corr) */
	uint64_t flows;				/* ac2g arrows written */
	uint64_t lane_end[3][DEVICE_COPY_LANES];	/* [op][lane] for OP_H2D/OP_D2H */
	uint8_t lane_used[3][DEVICE_COPY_LANES];	/* and named in the trace */
	bool named;				/* the device's process_name is written */
	struct device_stats st;
	struct trace_fmt fmt[DEV_NOPS];		/* per op, see op_fmt() */
	int fmt_state[DEV_NOPS];		/* 0: not made yet, 1: made, -1: failed */
};

/* What a launch tells the device timeline. */
struct dev_launch {
	uint32_t pid, tid;
	uint64_t key;		/* 0: none */
	uint64_t corr;		/* the id from device_new_corr; 0: args.correlation is the key */
	uint64_t stream;
	enum dev_op op;
	uint64_t bytes;
	uint64_t ts;		/* the launch's entry (the arrow leaves from there) */
	uint64_t submit;	/* its submission (above) */
	const char *name;	/* kernel name (dev=kname) or NULL */
};

int device_init(struct device_tl *d, struct trace_writer *tw);
/*
 * The probes go for a while (--max-overhead): what is in flight now would be ended by
 * evidence nobody sees (a completion, a synchronize), or by a later one that would stretch it
 * over the pause. Forgotten, counted in st.cut_at_pause; returns how many.
 */
uint64_t device_pause(struct device_tl *d);
void device_launch_op(struct device_tl *d, const struct dev_launch *l);
/* A keyed launch: @ts its entry, @submit its submission (above) */
void device_launch(struct device_tl *d, uint32_t pid, uint32_t tid, uint64_t key,
		   uint64_t stream, enum dev_op op, uint64_t bytes, uint64_t ts, uint64_t submit);
/* The correlation id of a launch (never a pointer value a key could have). */
uint64_t device_new_corr(struct device_tl *d);
void device_complete(struct device_tl *d, uint32_t pid, uint64_t key, uint64_t stream,
		     uint64_t ts);
/*
 * Every operation launched on @stream before @entry has completed by @ts: a synchronize()
 * that returned at @ts (END_SYNC), a query() that returned true (END_QUERY).
 */
void device_stream_done(struct device_tl *d, uint32_t pid, uint64_t stream, uint64_t entry,
			uint64_t ts, enum dev_end how);
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
/*
 * The run goes on in the next file @tw (--switch-output): what is in flight stays queued and
 * ends there, its device span without the arrow (its launch's host span is in the file before,
 * counted in launched_prev_file); the tracks are named again there.
 */
void device_switch(struct device_tl *d, struct trace_writer *tw);
void device_free(struct device_tl *d);

#endif
