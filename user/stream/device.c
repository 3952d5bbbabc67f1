// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/array.h"
#include "common/ohash.h"
#include "stream/device.h"

int device_init(struct device_tl *d, struct trace_writer *tw)
{
	memset(d, 0, sizeof(*d));
	d->tw = tw;
	d->ops = OHASH_INIT(struct pending_op, key, pid);
	return ohash_resize(&d->ops, 4096, NULL, NULL);
}

void device_free(struct device_tl *d)
{
	for (int i = 0; i < DEV_NOPS; i++)
		trace_fmt_free(&d->fmt[i]);
	ohash_free(&d->ops);
	free(d->streams);
	free(d->free_slots);
	free(d->shash);
	d->streams = NULL;
	d->free_slots = d->shash = NULL;
	for (uint32_t i = 0; i < d->sqcap; i++)
		free(d->sq[i].q);
	free(d->sq);
	d->sq = NULL;
	d->sqcap = d->sqcnt = 0;
}

static uint32_t hash_key(uint64_t key, uint32_t cap)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

/*
 * A completion whose launch is never traced (host callbacks have no launch probe; launches
 * made before we attached) would wait here for good and, over a long trace, fill the table
 * until real launches overflow. A traced launch returns moments after its completion, so
 * completions older than this are given up when the table fills up.
 */
#define DEVICE_ORPHAN_NS	(5ull * 1000000000ull)

struct sweep {
	struct device_tl *d;
	uint64_t cutoff;
};

/* An entry stays unless it is a completion, or an ended launch, from before the cut-off */
static bool not_orphan(void *entry, void *ctx)
{
	const struct pending_op *p = entry;
	struct sweep *sw = ctx;

	if ((p->completed || p->ended) && p->ts < sw->cutoff) {
		/* an ended launch's callback that never came is nobody's loss */
		if (p->completed)
			sw->d->st.completions_unmatched++;
		return false;
	}
	return true;
}

/* Move everything into a table of @ncap slots, dropping completions older than @cutoff. */
static int rehash(struct device_tl *d, size_t ncap, uint64_t cutoff)
{
	struct sweep sw = { .d = d, .cutoff = cutoff };

	return ohash_resize(&d->ops, ncap, not_orphan, &sw);
}

/* @now: the time of the event that needs the slot, for the orphan cut-off. */
static struct pending_op *insert(struct device_tl *d, uint32_t pid, uint64_t key, uint64_t now)
{
	struct ohash *h = &d->ops;

	if ((h->cnt + 1) * 2 > h->cap || h->cnt >= DEVICE_MAX_PENDING) {
		size_t before = h->cnt;
		bool full = h->cnt >= DEVICE_MAX_PENDING;

		/* when full, sweep once per 4096 refusals: a sweep walks the whole table */
		if (now > DEVICE_ORPHAN_NS && (!full || !(d->st.overflow & 4095)))
			rehash(d, h->cap, now - DEVICE_ORPHAN_NS);
		if (h->cnt >= DEVICE_MAX_PENDING) {
			d->st.overflow++;
			return NULL;
		}
		/* grow unless the sweep made real room, so sweeps stay rare */
		if (before - h->cnt < h->cap / 8 && h->cap < 2 * DEVICE_MAX_PENDING &&
		    rehash(d, h->cap * 2, 0) && (h->cnt + 1) * 2 > h->cap) {
			d->st.overflow++;
			return NULL;
		}
	}
	return ohash_add(h, pid, key);
}

/*
 * A stream is its id within its process: a forked child's streams can sit at its parent's
 * addresses, and two processes' streams are two queues, never one track. The pid is folded
 * into the id the stream tables key on (args.stream shows the slot, the launch the raw id).
 */
static uint64_t stream_of(uint32_t pid, uint64_t stream)
{
	return stream ^ (uint64_t)pid * 0x9e3779b97f4a7c15ull;
}

/*
 * The device process's tracks (pid DEVICE_PID), by tid: stream slot s's is s, copy lane l of
 * kind k's (1 HtoD, 2 DtoH) is COPY_TID_STEP * k + l, and from stream slot COPY_TID_STEP on the
 * streams skip past the copy lanes: s + STREAM_TID_SKIP.
 */
#define COPY_TID_STEP	100
#define STREAM_TID_SKIP	(2 * COPY_TID_STEP)
_Static_assert(DEVICE_COPY_LANES <= COPY_TID_STEP, "copy lanes of one kind fit under the next");

/* The tid of stream slot @s: past the copy lanes' 100-107 and 200-207 from 100 streams on. */
static uint32_t stream_tid(int s)
{
	return s < COPY_TID_STEP ? s : s + STREAM_TID_SKIP;
}

/* The tid of copy lane @l of kind @k (1 HtoD, 2 DtoH). */
static uint32_t copy_tid(int k, int l)
{
	return COPY_TID_STEP * k + l;
}

/* Rebuild the stream hash from the slots, dropping entries of slots handed to another stream. */
static int shash_rebuild(struct device_tl *d)
{
	uint32_t ncap = 64, *nh;

	while (ncap < 4 * d->nstreams)
		ncap *= 2;
	nh = calloc(ncap, sizeof(*nh));
	if (!nh)
		return -ENOMEM;
	for (uint32_t i = 0; i < d->nstreams; i++) {
		uint32_t h = hash_key(d->streams[i].id, ncap);

		while (nh[h])
			h = (h + 1) & (ncap - 1);
		nh[h] = i + 1;
	}
	free(d->shash);
	d->shash = nh;
	d->shcap = ncap;
	d->shcnt = d->nstreams;
	return 0;
}

/* The slot that holds @stream (live, or destroyed and not handed on), or -1. */
static int stream_find(const struct device_tl *d, uint64_t stream)
{
	uint32_t h;

	if (!d->shcap)
		return -1;
	for (h = hash_key(stream, d->shcap); d->shash[h]; h = (h + 1) & (d->shcap - 1))
		if (d->streams[d->shash[h] - 1].id == stream)
			return d->shash[h] - 1;
	return -1;
}

/* A slot for a stream not seen before: a destroyed stream's, else a new one (a new track). */
static int stream_new(struct device_tl *d)
{
	char name[24];

	while (d->nfree) {
		uint32_t s = d->free_slots[--d->nfree];

		d->streams[s].listed = 0;
		if (d->streams[s].dead_ts)	/* not revived since (see stream_index) */
			return s;
	}
	if (d->nstreams == DEVICE_MAX_STREAMS)
		return -1;
	if (d->nstreams == d->scap) {
		size_t cap = d->scap, cap2 = cap;

		/* parallel arrays: both grow to the same capacity */
		if (array_reserve(&d->streams, &cap, (size_t)d->nstreams + 1, sizeof(*d->streams),
				  64) ||
		    array_reserve(&d->free_slots, &cap2, (size_t)d->nstreams + 1,
				  sizeof(*d->free_slots), 64))
			return -1;
		d->scap = (uint32_t)cap;	/* <= DEVICE_MAX_STREAMS */
	}
	memset(&d->streams[d->nstreams], 0, sizeof(d->streams[0]));
	/* named now: a trace cut short (recover) keeps the names of the tracks it has */
	snprintf(name, sizeof(name), "Stream %u", d->nstreams);
	trace_thread_name(d->tw, DEVICE_PID, stream_tid(d->nstreams), name,
			  stream_tid(d->nstreams));
	return d->nstreams++;
}

/*
 * The slot of @stream for work launched at @ts. A destroyed stream keeps its slot for launches
 * from before its end (another thread's launch can reach us after the destroy); a launch after
 * it on the same address is a new stream that got the old one's memory: same track.
 */
static int stream_index(struct device_tl *d, uint64_t stream, uint64_t ts)
{
	int s = stream_find(d, stream);
	uint32_t h;

	if (s >= 0) {
		if (d->streams[s].dead_ts && ts >= d->streams[s].dead_ts)
			d->streams[s].dead_ts = 0;
		return s;
	}
	s = stream_new(d);
	if (s < 0) {
		d->st.streams_overflow++;
		return -1;
	}
	d->streams[s].id = stream;
	d->streams[s].dead_ts = 0;
	/* keep the load under 1/2, stale entries included: a rebuild drops them, adds this one */
	if ((d->shcnt + 1) * 2 > d->shcap)
		return shash_rebuild(d) ? -1 : s;
	h = hash_key(stream, d->shcap);
	while (d->shash[h])
		h = (h + 1) & (d->shcap - 1);
	d->shash[h] = s + 1;
	d->shcnt++;
	return s;
}

void device_stream_destroy(struct device_tl *d, uint32_t pid, uint64_t stream, uint64_t ts)
{
	int s = stream_find(d, stream_of(pid, stream));

	if (s < 0 || d->streams[s].dead_ts)
		return;
	d->streams[s].dead_ts = ts ? ts : 1;
	d->st.streams_destroyed++;
	/* a slot revived since it was listed is listed still: in the list at most once */
	if (!d->streams[s].listed) {
		d->streams[s].listed = 1;
		d->free_slots[d->nfree++] = s;
	}
}

uint64_t device_lost(const struct device_tl *d)
{
	return d->st.overflow + d->st.streams_overflow;
}

static const char *op_name(enum dev_op op)
{
	switch (op) {
	case OP_H2D:
		return "Memcpy (HtoD)";
	case OP_D2H:
		return "Memcpy (DtoH)";
	default:
		return "Spyre compute";
	}
}

/*
 * Copy state is indexed by the copy kind, 1 = HtoD, 2 = DtoH (the runtime's numbering, and
 * the first index of lane_end/lane_used), not by enum dev_op, whose values run one higher.
 */
static int copy_kind(enum dev_op op)
{
	return op == OP_D2H ? 2 : 1;
}

/* A copy lane free at @start; copies that overlap in time get separate lanes (tids). */
static int copy_lane(struct device_tl *d, int k, uint64_t start)
{
	int best = 0;

	for (int l = 0; l < DEVICE_COPY_LANES; l++) {
		if (d->lane_end[k][l] <= start)
			return l;
		if (d->lane_end[k][l] < d->lane_end[k][best])
			best = l;
	}
	return best;	/* all busy: the caller delays the start to this lane's end */
}

/* The prepared format of an op's device spans (made on first use), NULL if it failed. */
static const struct trace_fmt *op_fmt(struct device_tl *d, enum dev_op op,
				      const struct trace_arg *args, int n)
{
	const char *keys[TRACE_FMT_MAX_ARGS];
	struct trace_fmt *f = &d->fmt[op];

	if (d->fmt_state[op] == 0) {
		for (int i = 0; i < n; i++)
			keys[i] = args[i].key;
		d->fmt_state[op] = trace_fmt_init(f, false, op == OP_COMPUTE ? "kernel" : "gpu_memcpy",
						  op_name(op), keys, n) ? -1 : 1;
	}
	return d->fmt_state[op] == 1 ? f : NULL;
}

static const char *const end_names[] = { "callback", "query", "synchronize" };

static void emit(struct device_tl *d, const struct queued_op *launch, uint64_t done,
		 enum dev_end how)
{
	bool copy = launch->op == OP_H2D || launch->op == OP_D2H;
	const struct trace_fmt *f = NULL;
	struct trace_arg args[7];
	uint64_t start, dur, sub = launch->submit, key = launch->corr;
	uint32_t tid;
	int s, n = 0;

	if (!d->named) {
		/* device tracks sort after the host process, like Kineto's */
		trace_process_name(d->tw, DEVICE_PID, "Spyre 0", 1000);
		d->named = true;
	}
	s = stream_index(d, launch->stream, launch->ts);
	if (s < 0)
		return;
	/*
	 * Done before the host saw it submitted: it ran inside the launch call (the mock's 64 KiB
	 * copies do without a doorbell probe: 8 us of work, 25-50 us of launch under uprobes). All
	 * the host knows then is that it started after the launch's entry.
	 */
	if (sub > done)
		sub = launch->ts;
	start = sub > d->streams[s].end ? sub : d->streams[s].end;
	if (copy) {
		int k = copy_kind(launch->op), l = copy_lane(d, k, start);

		if (d->lane_end[k][l] > start)
			start = d->lane_end[k][l];
		tid = copy_tid(k, l);
		if (!d->lane_used[k][l]) {
			static const char *const copy_names[] = { "", "Memcpy HtoD", "Memcpy DtoH" };
			char name[48];

			snprintf(name, sizeof(name), "%s lane %d", copy_names[k], l);
			trace_thread_name(d->tw, DEVICE_PID, tid, name, tid);
		}
		d->lane_used[k][l] = 1;
		if (done > start)
			d->lane_end[k][l] = done;
		else
			d->lane_end[k][l] = start;
	} else {
		tid = stream_tid(s);
	}
	dur = done > start ? done - start : 0;
	d->streams[s].end = start + dur;

	args[n++] = (struct trace_arg){ .key = "device", .type = TA_U64, .u = DEVICE_PID };
	args[n++] = (struct trace_arg){ .key = "stream", .type = TA_U64, .u = (uint64_t)s };
	args[n++] = (struct trace_arg){ .key = "correlation", .type = TA_U64, .u = key };
	if (copy) {
		args[n++] = (struct trace_arg){ .key = "bytes", .type = TA_U64, .u = launch->bytes };
		/* bytes per ns is GB/s */
		args[n++] = (struct trace_arg){ .key = "memory bandwidth (GB/s)", .type = TA_DBL,
						.d = dur ? (double)launch->bytes / dur : 0 };
	}
	args[n++] = (struct trace_arg){ .key = "end", .type = TA_STR, .s = end_names[how] };
	/* a named kernel has a name of its own: the generic path */
	if (!launch->name[0])
		f = op_fmt(d, launch->op, args, n);
	if (f)
		trace_event(d->tw, f, DEVICE_PID, tid, start, dur, args, n);
	else
		trace_complete(d->tw, DEVICE_PID, tid, start, dur,
			       launch->name[0] ? launch->name : op_name(launch->op),
			       copy ? "gpu_memcpy" : "kernel", args, n);
	d->st.matched++;
	/* its launch call is in the file before: an arrow here would bind to no slice */
	if (launch->prev_file) {
		d->st.launched_prev_file++;
		return;
	}
	/* arrow from the launch call to the work it queued; its id: see DEVICE_FLOW_ID_BASE */
	trace_flow(d->tw, 's', DEVICE_FLOW_ID_BASE + ++d->flows, launch->pid, launch->tid,
		   launch->ts);
	trace_flow(d->tw, 'f', DEVICE_FLOW_ID_BASE + d->flows, DEVICE_PID, tid, start);
}

static uint32_t hash_stream(uint64_t stream, uint32_t cap)
{
	return hash_key(stream + 1, cap);
}

/* The queue of @stream, made when @make; NULL when there is none (or no memory). */
static struct stream_queue *queue_of(struct device_tl *d, uint64_t stream, bool make)
{
	uint32_t h;

	if (d->sqcap) {
		for (h = hash_stream(stream, d->sqcap); d->sq[h].q; h = (h + 1) & (d->sqcap - 1))
			if (d->sq[h].stream == stream)
				return &d->sq[h];
	}
	if (!make || d->sqcnt >= DEVICE_MAX_STREAMS)
		return NULL;
	if ((d->sqcnt + 1) * 2 > d->sqcap) {
		uint32_t ncap = d->sqcap ? d->sqcap * 2 : 16;
		struct stream_queue *ns = calloc(ncap, sizeof(*ns));

		if (!ns)
			return NULL;
		for (uint32_t i = 0; i < d->sqcap; i++) {
			if (!d->sq[i].q)
				continue;
			for (h = hash_stream(d->sq[i].stream, ncap); ns[h].q; h = (h + 1) & (ncap - 1))
				;
			ns[h] = d->sq[i];
		}
		free(d->sq);
		d->sq = ns;
		d->sqcap = ncap;
	}
	for (h = hash_stream(stream, d->sqcap); d->sq[h].q; h = (h + 1) & (d->sqcap - 1))
		;
	d->sq[h].q = calloc(4, sizeof(*d->sq[h].q));
	if (!d->sq[h].q)
		return NULL;
	d->sq[h].cap = 4;
	d->sq[h].stream = stream;
	d->sqcnt++;
	return &d->sq[h];
}

/*
 * Ops 0..@last of queue @q completed by @done (evidence @how): each ends where the next could
 * start (its submission), the last at @done. They leave the queue.
 */
static void end_through(struct device_tl *d, struct stream_queue *q, uint32_t last,
			uint64_t done, enum dev_end how)
{
	for (uint32_t i = 0; i <= last; i++) {
		struct queued_op *o = &q->q[i];
		uint64_t end = done;

		if (i < last && q->q[i + 1].submit < done)
			end = q->q[i + 1].submit;
		if (o->keyed) {
			struct pending_op *p = ohash_find(&d->ops, o->pid, o->key);

			/* its own callback may still come: not an orphan then */
			if (p && !p->completed && p->stream == o->stream) {
				p->ended = 1;
				p->ts = end;
			}
		}
		emit(d, o, end, how);
	}
	memmove(q->q, q->q + last + 1, (q->n - last - 1) * sizeof(*q->q));
	q->n -= last + 1;
	d->queued -= last + 1;
}

/* The latest op of @q with key @key, or -1. */
static int queue_find(const struct stream_queue *q, uint64_t key)
{
	for (int i = (int)q->n - 1; i >= 0; i--)
		if (q->q[i].key == key)
			return i;
	return -1;
}

/* Add @o to its stream's queue in launch order; its index, or -1 (lost). */
static int enqueue(struct device_tl *d, const struct queued_op *o)
{
	struct stream_queue *q;
	uint32_t i;

	if (d->queued >= DEVICE_MAX_PENDING) {
		d->st.overflow++;
		return -1;
	}
	q = queue_of(d, o->stream, true);
	if (!q) {
		d->st.overflow++;
		return -1;
	}
	if (q->n == q->cap) {
		struct queued_op *nq = realloc(q->q, 2 * q->cap * sizeof(*nq));

		if (!nq) {
			d->st.overflow++;
			return -1;
		}
		q->q = nq;
		q->cap *= 2;
	}
	/* launches of several threads may reach us out of order */
	for (i = q->n; i > 0 && q->q[i - 1].ts > o->ts; i--)
		;
	memmove(q->q + i + 1, q->q + i, (q->n - i) * sizeof(*q->q));
	q->q[i] = *o;
	q->n++;
	d->queued++;
	/* a sync or query from after its launch reached us first */
	if (q->ev_entry > o->ts) {
		end_through(d, q, i, q->ev_ts, q->ev_kind);
		return -1;
	}
	return (int)i;
}

uint64_t device_new_corr(struct device_tl *d)
{
	/*
	 * Above any user-space address (x86-64, s390x and ppc64le user pointers stay below 2^47,
	 * 2^51 on ppc64le with its largest layout: keys are pointers or small op ids), below 2^53:
	 * exact as a JSON number read into a double, as trace viewers do.
	 */
	return (1ull << 52) + ++d->next_corr;
}

void device_launch_op(struct device_tl *d, const struct dev_launch *l)
{
	/*
	 * Keys are often pointers the runtime hands out again (a callback's functor): matched on
	 * the key, shown under an id of ours when the consumer gave one, so that two launches of
	 * one trace never share a correlation.
	 */
	struct queued_op o = { .corr = l->corr ? l->corr : l->key, .key = l->key, .ts = l->ts,
			       .submit = l->submit, .stream = stream_of(l->pid, l->stream),
			       .bytes = l->bytes,
			       .pid = l->pid, .tid = l->tid, .op = l->op, .keyed = !!l->key };
	struct stream_queue *q;
	struct pending_op *p;
	int i;

	if (!d->tw || !o.corr)
		return;
	if (l->name)
		snprintf(o.name, sizeof(o.name), "%s", l->name);
	p = o.keyed ? ohash_find(&d->ops, l->pid, l->key) : NULL;
	if (p && p->completed) {
		/* the work finished before the launch call returned */
		uint64_t done = p->ts;

		ohash_del(&d->ops, p);
		o.keyed = 0;
		i = enqueue(d, &o);
		q = queue_of(d, o.stream, false);
		if (i >= 0 && q)
			end_through(d, q, i, done, END_CALLBACK);
		return;
	}
	if (o.keyed) {
		if (p && !p->ended) {
			/* key reused before completion: the older op stays queued, ended by
			 * what ends the stream's later ops */
		} else if (!p) {
			p = insert(d, l->pid, l->key, l->ts);
			if (!p)
				return;
		}
		p->ts = l->ts;
		p->stream = o.stream;
		p->pid = l->pid;
		p->completed = 0;
		p->ended = 0;
	}
	enqueue(d, &o);
}

void device_launch(struct device_tl *d, uint32_t pid, uint32_t tid, uint64_t key,
		   uint64_t stream, enum dev_op op, uint64_t bytes, uint64_t ts, uint64_t submit)
{
	struct dev_launch l = { .pid = pid, .tid = tid, .key = key, .stream = stream, .op = op,
				.bytes = bytes, .ts = ts, .submit = submit };

	device_launch_op(d, &l);
}

void device_complete(struct device_tl *d, uint32_t pid, uint64_t key, uint64_t stream,
		     uint64_t ts)
{
	struct stream_queue *q;
	struct pending_op *p;
	int i;

	if (!d->tw || !key)
		return;
	p = ohash_find(&d->ops, pid, key);
	if (p && p->ended) {
		/* other evidence ended it first */
		ohash_del(&d->ops, p);
		return;
	}
	if (p && !p->completed) {
		q = queue_of(d, p->stream, false);
		ohash_del(&d->ops, p);
		i = q ? queue_find(q, key) : -1;
		if (i >= 0)
			end_through(d, q, (uint32_t)i, ts, END_CALLBACK);
		return;
	}
	if (p) {
		d->st.completions_unmatched++;
		p->ts = ts;
		return;
	}
	p = insert(d, pid, key, ts);
	if (!p)
		return;
	p->ts = ts;
	p->stream = stream_of(pid, stream);
	p->pid = pid;
	p->completed = 1;
}

void device_stream_done(struct device_tl *d, uint32_t pid, uint64_t stream, uint64_t entry,
			uint64_t ts, enum dev_end how)
{
	struct stream_queue *q;
	int last;

	if (!d->tw)
		return;
	q = queue_of(d, stream_of(pid, stream), true);
	if (!q)
		return;
	/* kept for launches from before @entry that reach us later (another thread's stage) */
	if (entry > q->ev_entry) {
		q->ev_entry = entry;
		q->ev_ts = ts;
		q->ev_kind = how;
	}
	for (last = (int)q->n - 1; last >= 0 && q->q[last].ts >= entry; last--)
		;
	if (last >= 0)
		end_through(d, q, (uint32_t)last, ts, how);
}

uint64_t device_pause(struct device_tl *d)
{
	uint64_t n = d->queued;

	for (uint32_t i = 0; i < d->sqcap; i++)
		d->sq[i].n = 0;
	d->queued = 0;
	/* launches awaiting their callback, and callbacks awaiting their launch */
	ohash_clear(&d->ops);
	d->st.cut_at_pause += n;
	return n;
}

void device_switch(struct device_tl *d, struct trace_writer *tw)
{
	char name[32];

	d->tw = tw;
	for (uint32_t i = 0; i < d->sqcap; i++)
		for (uint32_t k = 0; d->sq[i].q && k < d->sq[i].n; k++)
			d->sq[i].q[k].prev_file = 1;
	/* the tracks this file will show are named in it, as at their first use */
	d->named = false;
	memset(d->lane_used, 0, sizeof(d->lane_used));
	for (uint32_t i = 0; tw && i < d->nstreams; i++) {
		snprintf(name, sizeof(name), "Stream %u", i);
		trace_thread_name(tw, DEVICE_PID, stream_tid(i), name, stream_tid(i));
	}
}

void device_finish(struct device_tl *d)
{
	struct pending_op *p;

	for (size_t i = 0; (p = ohash_next(&d->ops, &i));)
		if (p->completed)
			d->st.completions_unmatched++;
	/* what no evidence ended: still in flight when tracing stopped */
	d->st.launches_unmatched += d->queued;
}
