// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A call's records (calls.h): on_call takes a call through its steps (count_call, call_stacks,
 * write_call, call_device), on_unwound writes a call that did not return.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stream/calls.h"
#include "stream/lanes.h"
#include "stream/memledger.h"
#include "stream/procs.h"
#include "stream/record.h"
#include "stream/stacks.h"

static struct pid_probe_stats *pid_stats_slot(struct consumer *c, uint64_t key)
{
	uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 40) & (c->pcap - 1);

	while (c->pid_stats[h].key && c->pid_stats[h].key != key)
		h = (h + 1) & (c->pcap - 1);
	return &c->pid_stats[h];
}

/* System-wide mode: the same statistics per (process, probe), for per-job metrics. */
static void pid_stats_add(struct consumer *c, uint32_t pid, uint32_t probe, uint64_t dur,
			  bool span)
{
	uint64_t key = (uint64_t)pid << 32 | (probe + 1);
	struct pid_probe_stats *ps;

	if ((c->pcnt + 1) * 2 > c->pcap) {
		uint32_t ocap = c->pcap, ncap = ocap ? ocap * 2 : 64;
		struct pid_probe_stats *old = c->pid_stats;

		c->pid_stats = calloc(ncap, sizeof(*old));
		if (!c->pid_stats) {
			c->pid_stats = old;
			return;
		}
		c->pcap = ncap;
		for (uint32_t i = 0; i < ocap; i++)
			if (old[i].key)
				*pid_stats_slot(c, old[i].key) = old[i];
		free(old);
	}
	ps = pid_stats_slot(c, key);
	if (!ps->key) {
		ps->st = calloc(1, sizeof(*ps->st));
		if (!ps->st)
			return;
		ps->key = key;
		c->pcnt++;
	}
	ps->delivered++;
	if (span)
		fn_stats_add(ps->st, dur);
}

/*
 * A probe's event's arguments at most: its labels, the correlation, the string, the file, the
 * Python line and stack, the native stack
 */
#define EVENT_MAX_ARGS (PROBE_MAX_LABELS + 6)

/* Read when the call's record is made, at its return: an unwound call has none of these. */
static bool returned_value(int src)
{
	return src == PROBE_VAL_RET ||
	       (src >= PROBE_VAL_DEREF && src < PROBE_VAL_DEREF + SPYRE_MAX_DEREFS);
}

/*
 * The trace arguments of probe @p's event, keys included; returns how many. @str: the call's
 * string (str=, args.name), @corr: the launch's id from device_new_corr (2^52 + n: every launch
 * has one, launches return none to key on; 0: not a launch). A function
 * traced in two files of its library has one name: its events say which file ("file"). An
 * unwound call (or one with no return) returned nothing: the values read at the return are
 * left out.
 */
static int build_args(const struct consumer *c, const struct rprobe *p,
		      const struct probe_spec *s, const struct spyre_event *e,
		      struct trace_arg *args, const char *str, uint64_t corr)
{
	bool unwound = e->type == SPYRE_EV_UNWOUND || e->type == SPYRE_EV_NORETURN;
	int n = 0;

	for (int i = 0; i < s->nargs; i++) {
		const struct probe_arg *a = &s->args[i];
		uint64_t v = record_value(e, a->src);

		if (unwound && returned_value(a->src))
			continue;

		args[n].key = a->label;
		switch (a->fmt) {
		case ARG_SIGNED:
			args[n].type = TA_I64;
			args[n].i = (int64_t)v;
			break;
		case ARG_INT32:
			args[n].type = TA_I64;
			args[n].i = (int32_t)v;
			break;
		case ARG_BOOL:
			args[n].type = TA_BOOL;
			args[n].u = (uint8_t)v != 0;
			break;
		case ARG_UNSIGNED:
			args[n].type = TA_U64;
			args[n].u = v;
			break;
		default:
			args[n].type = TA_HEX;
			args[n].u = v;
			break;
		}
		n++;
	}
	if (s->dev == DEV_LAUNCH && !(unwound && (!s->key || returned_value(s->key)))) {
		/*
		 * Kineto's key for host-to-device links, which aiu-trace-analyzer reads too: the
		 * tracer's own id of the launch (its device span carries the same), not the
		 * runtime's key; the key's value only where a record came without an id
		 */
		args[n].key = "correlation";
		args[n].type = TA_U64;
		args[n].u = corr ? corr : record_value(e, s->key);
		n++;
	}
	if (s->str) {
		args[n].key = "name";
		args[n].type = TA_STR;
		args[n].s = str ? str : "";
		n++;
	}
	if (p->other_file) {
		args[n].key = "file";
		args[n].type = TA_STR;
		args[n].s = c->t->libs[p->lib].path;
		n++;
	}
	return n;
}

/*
 * A probe's events share their opening and keys: render them once, on its first event (probes
 * are added while tracing). NULL when that failed: the event is then written the generic way.
 */
static const struct trace_fmt *probe_fmt(struct consumer *c, uint32_t probe,
					 const struct rprobe *p, const struct probe_spec *s,
					 const struct spyre_event *e)
{
	struct probe_out *o = &c->out[probe];
	struct trace_arg args[EVENT_MAX_ARGS];
	const char *keys[EVENT_MAX_ARGS];
	int n;

	/* the same function came in another file since: its events say which file from now */
	if (o->state == 1 && o->file != p->other_file) {
		trace_fmt_free(&o->fmt);
		o->state = 0;
	}
	if (o->state == 1)
		return &o->fmt;
	if (o->state < 0)
		return NULL;
	o->file = p->other_file;
	n = build_args(c, p, s, e, args, NULL, 0);
	for (int i = 0; i < n; i++)
		keys[i] = args[i].key;
	o->state = trace_fmt_init(&o->fmt, e->type == SPYRE_EV_INSTANT, s->cat, p->name, keys, n)
		   ? -1 : 1;
	return o->state == 1 ? &o->fmt : NULL;
}

/*
 * When the device can have a launch's work: the return of the last dev=submit call made inside
 * it (the doorbell write), else the launch's own return (its entry when it tail-called). A
 * submission from before the launch (another launch's, or one with its launch unseen) does not
 * count.
 */
static uint64_t launch_submit(struct consumer *c, const struct spyre_event *e)
{
	struct thread_info *ti = thread_slot(c, e->tid);
	uint64_t end = e->ts + e->dur, sub = ti->tid ? ti->submit : 0;

	if (ti->tid)
		ti->submit = 0;
	if (sub >= e->ts && sub <= end)
		return sub;
	/*
	 * A launch that tail-called its enqueue (`jmp launch_dma`) handed the work over somewhere
	 * in the chain, before its return, which the followed return's trap delays further (the
	 * mock's 130 us copies came out 10-20 us short from there): only its entry bounds it.
	 */
	return e->depth & SPYRE_DEPTH_FOLLOWED ? e->ts : end;
}

/* A trigger fired (--trigger): the first since the session took the last one is kept. */
static void fire(struct consumer *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fire(struct consumer *c, const char *fmt, ...)
{
	va_list ap;

	c->triggers++;
	if (c->fired[0])
		return;
	va_start(ap, fmt);
	vsnprintf(c->fired, sizeof(c->fired), fmt, ap);
	va_end(ap);
}

/* Device memory over --trigger memory>SIZE, once each time it goes over. */
static void memory_trigger(struct consumer *c)
{
	bool over = false;

	for (int i = 0; i < c->mem->nacct; i++) {
		const struct mem_acct *a = &c->mem->accts[i];

		if (a->kind != MEMK_ALLOC || a->cur <= c->trig_mem)
			continue;
		over = true;
		if (!c->mem_over)
			fire(c, "device memory of pid %u on device %d at %llu bytes (over %llu)",
			     a->pid, a->dev, (unsigned long long)a->cur,
			     (unsigned long long)c->trig_mem);
		break;
	}
	c->mem_over = over;
}

/* The string of call record @e (its SPYRE_EV_STR came right before it), else NULL. */
static const char *call_string(struct consumer *c, const struct spyre_event *e)
{
	if (!c->str.set || c->str.tid != e->tid || c->str.probe != e->probe || c->str.ts != e->ts)
		return NULL;
	c->str.set = false;
	return c->str.s;
}

/*
 * The probe of call record @e into *@p, its line of the table into *@s, and the record counted;
 * false for a probe index this consumer does not know: counted as bad, nothing written.
 */
static bool call_probe(struct consumer *c, const struct spyre_event *e, const struct rprobe **p,
		       const struct probe_spec **s)
{
	if (e->probe >= (uint32_t)c->nprobes) {
		c->bad++;
		return false;
	}
	*p = &c->t->probes[e->probe];
	*s = &c->t->table->specs[(*p)->spec];
	c->events++;
	return true;
}

int on_str(struct consumer *c, const struct spyre_event *e)
{
	c->str.tid = e->tid;
	c->str.probe = e->probe;
	c->str.ts = e->ts;
	c->str.set = true;
	memcpy(c->str.s, e->str.s, sizeof(c->str.s));
	c->str.s[sizeof(c->str.s) - 1] = '\0';
	return 0;
}

/*
 * The track of span [@ts, @ts + @dur) of thread @tid of @pid: the thread's own, or, when it
 * crosses one of the thread's spans there (a call on another stack: lanes.h), one of the
 * thread's other-stack tracks, named for its thread the first time in each file.
 */
static uint32_t span_track(struct consumer *c, uint32_t pid, uint32_t tid, uint64_t ts,
			   uint64_t dur)
{
	struct thread_info *ti = thread_slot(c, tid);
	char name[64];
	int k;

	if (!ti->tid)
		return tid;
	k = lanes_place(&ti->lanes, ts, ts + dur);
	if (!k)
		return tid;
	c->lane_spans++;
	if (!(ti->lanes_named & (1u << k))) {
		/* the thread's name and tid: the track's own tid is above any real one */
		if (!strncmp(ti->name, "thread ", 7))	/* named by its tid already */
			snprintf(name, sizeof(name), "%s: other stack %d", ti->name, k);
		else
			snprintf(name, sizeof(name), "%s %u: other stack %d", ti->name, tid, k);
		trace_thread_name(c->tw, pid, lane_tid(tid, k), name, (int)(tid - pid));
		ti->lanes_named |= 1u << k;
	}
	return lane_tid(tid, k);
}

/*
 * A call left by an exception, a longjmp or a cancel (SPYRE_EV_UNWOUND): a span from its entry
 * to where the unwind was seen, its entry arguments and "unwound": true; an instant at its entry
 * when that was seen only at the end (SPYRE_DEPTH_UNBOUND). A call still open at the end
 * (SPYRE_EV_NORETURN): an instant at its entry, "noReturn": true. Nothing else: its
 * duration is not the call's (not in the latency statistics), and what it would have done
 * (an allocation, a launch, a completion) did not happen, so neither the memory ledger nor
 * the device timeline sees it.
 */
int on_unwound(struct consumer *c, const struct spyre_event *e)
{
	struct trace_arg args[EVENT_MAX_ARGS + 1];	/* + "unwound" */
	const struct probe_spec *s;
	const struct rprobe *p;
	int n;

	if (!call_probe(c, e, &p, &s))
		return 0;
	/* a call with no return is the summary's noReturn (hits less the rest), not delivered */
	if (e->type == SPYRE_EV_UNWOUND)
		c->delivered[e->probe]++;
	if (c->trig_exception && e->type != SPYRE_EV_NORETURN)
		fire(c, "a C++ exception left %s (thread %u)", p->name, e->tid);
	if (c->per_pid)
		pid_stats_add(c, e->tgid, e->probe, e->dur, false);
	see_thread(c, e->tgid, e->tid);
	if (!c->tw)
		return 0;
	n = build_args(c, p, s, e, args, NULL, 0);
	args[n].key = e->type == SPYRE_EV_NORETURN ? "noReturn" : "unwound";
	args[n].type = TA_BOOL;
	args[n].u = 1;
	/* the generic path: its keys differ from the probe's returning spans' */
	if (e->type == SPYRE_EV_NORETURN || (e->depth & SPYRE_DEPTH_UNBOUND))
		trace_instant(c->tw, e->tgid, e->tid, e->ts, p->name, s->cat, args, n + 1);
	else
		trace_complete(c->tw, e->tgid, span_track(c, e->tgid, e->tid, e->ts, e->dur),
			       e->ts, e->dur, p->name, s->cat, args, n + 1);
	return 0;
}

/* One call record on its way through on_call: what its event and the device timeline get. */
struct call_ctx {
	const struct spyre_event *e;
	const struct rprobe *p;
	const struct probe_spec *s;
	struct thread_info *ti;		/* its thread's slot (tid 0: not in the table) */
	const char *str;		/* its string (str=), NULL: none */
	const char *kernel;		/* the kernel name of its compute launch, NULL: none */
	uint64_t corr;			/* its launch's id (device_new_corr), 0: no launch */
	struct trace_arg stk[STACK_ARGS_MAX];	/* its stacks' args: python, pystack, ustack */
	int nstk;
	uint32_t track;			/* its span's track: its thread's, or another stack's */
};

/* A call's statistics: a span's latency and its --trigger on duration; per process. */
static void count_call(struct consumer *c, const struct rprobe *p, const struct spyre_event *e)
{
	if (e->type == SPYRE_EV_SPAN) {
		fn_stats_add(&c->stats[e->probe], e->dur);
		if (c->trig_ns[e->probe] && e->dur > c->trig_ns[e->probe])
			fire(c, "%s took %.3f ms (over %.3f ms; thread %u)", p->name, e->dur / 1e6,
			     c->trig_ns[e->probe] / 1e6, e->tid);
	}
	if (c->per_pid)
		pid_stats_add(c, e->tgid, e->probe, e->dur, e->type == SPYRE_EV_SPAN);
}

/*
 * The call's stacks named once, now, while its process lives: its event's args (into @k->stk),
 * its [memory] event's and, for a block still live at the end, the report's (a mem= probe is no
 * dev= one: the ledger sees every call of its probes)
 */
static void call_stacks(struct consumer *c, struct call_ctx *k)
{
	const struct spyre_event *e = k->e;
	bool mem = c->mem && k->s->mem != MEM_NONE;
	struct mem_origin origin = { 0 };

	if (mem) {
		int64_t us = call_ustack(c, e, &origin.caller);

		origin.py = innermost_py(c, e);
		origin.ustack = us >= 0 ? (uint32_t)us + 1 : 0;
	}
	if (c->tw)
		k->nstk = stack_args(c, e, k->stk);
	if (mem) {
		origin.args = k->stk;
		origin.nargs = k->nstk;
		memledger_event(c->mem, c->tw, k->s, e, &origin);
		if (c->trig_mem)
			memory_trigger(c);
	}
}

/* Call @k's event: a span or an instant, with its probe's args, its kernel's name, its stacks. */
static void write_call(struct consumer *c, const struct call_ctx *k)
{
	struct trace_arg args[EVENT_MAX_ARGS + 1];	/* + kernel */
	const struct spyre_event *e = k->e;
	const struct trace_fmt *f;
	int n = build_args(c, k->p, k->s, e, args, k->str, k->corr);

	if (k->kernel) {
		args[n].key = "kernel";
		args[n].type = TA_STR;
		args[n].s = k->kernel;
		n++;
	}
	for (int i = 0; i < k->nstk; i++)
		args[n + i] = k->stk[i];
	n += k->nstk;
	/* a launch with a kernel name, a call with a stack: more args than the probe's format */
	f = k->kernel || k->nstk ? NULL : probe_fmt(c, e->probe, k->p, k->s, e);
	/* a probe is either a span or an instant: the type of its first event holds */
	if (f && f->instant == (e->type == SPYRE_EV_INSTANT))
		trace_event(c->tw, f, e->tgid, k->track, e->ts, e->dur, args, n);
	else if (e->type == SPYRE_EV_INSTANT)
		trace_instant(c->tw, e->tgid, k->track, e->ts, k->p->name, k->s->cat, args, n);
	else
		trace_complete(c->tw, e->tgid, k->track, e->ts, e->dur, k->p->name, k->s->cat,
			       args, n);
}

/*
 * What call @k tells the device timeline, after the call's own event: the arrow to a launch's
 * device work binds to that span, and a trace cut in between (tracer killed) must not hold an
 * arrow without its slice.
 */
static void call_device(struct consumer *c, const struct call_ctx *k)
{
	const struct probe_spec *s = k->s;
	const struct spyre_event *e = k->e;
	uint64_t stream = record_value(e, s->stream);
	bool span = e->type == SPYRE_EV_SPAN;

	switch (s->dev) {
	case DEV_LAUNCH: {
		struct dev_launch l = {
			.pid = e->tgid, .tid = k->track, .key = record_value(e, s->key),
			.corr = k->corr, .stream = stream, .op = s->op,
			.bytes = record_value(e, s->bytes), .ts = e->ts,
			.submit = launch_submit(c, e), .name = k->kernel,
		};

		device_launch_op(&c->dev, &l);
		if (k->kernel)
			k->ti->kname[0] = '\0';
		break;
	}
	case DEV_DESTROY:	/* no launch on it from its destructor's entry on */
		device_stream_destroy(&c->dev, e->tgid, stream, e->ts);
		break;
	case DEV_SYNC:
		/* (a synchronize that tail-called the real one has not waited yet) */
		if (span && !(e->depth & SPYRE_DEPTH_TAIL))
			device_stream_done(&c->dev, e->tgid, stream, e->ts, e->ts + e->dur,
					   END_SYNC);
		break;
	case DEV_QUERY:
		/* bool query(): true in the low byte of the return register */
		if (span && (e->call.ret & 0xff))
			device_stream_done(&c->dev, e->tgid, stream, e->ts, e->ts + e->dur,
					   END_QUERY);
		break;
	default:
		break;
	}
}

/*
 * A call's record (SPYRE_EV_SPAN, SPYRE_EV_INSTANT): its statistics, its event, and what it
 * tells the memory ledger and the device timeline.
 */
int on_call(struct consumer *c, const struct spyre_event *e)
{
	struct call_ctx k = { .e = e };
	const struct probe_spec *s;

	if (!call_probe(c, e, &k.p, &k.s))
		return 0;
	s = k.s;
	c->delivered[e->probe]++;
	count_call(c, k.p, e);
	see_thread(c, e->tgid, e->tid);
	if (s->dev == DEV_COMPLETE) {
		/* shows up as the device span it ends, not as an event of its own */
		device_complete(&c->dev, e->tgid, record_value(e, s->key),
				record_value(e, s->stream), e->ts);
		return 0;
	}
	call_stacks(c, &k);
	k.ti = thread_slot(c, e->tid);
	/* a call inside a launch returns (and is handed over) before the launch does */
	if (s->dev == DEV_SUBMIT && k.ti->tid)
		k.ti->submit = e->ts + e->dur;
	if (s->str)
		k.str = call_string(c, e);
	if (s->dist && e->type == SPYRE_EV_SPAN)
		call_dist(c, s, e);
	/* the kernel name goes to the thread's next compute launch */
	if (s->dev == DEV_KNAME && k.ti->tid)
		snprintf(k.ti->kname, sizeof(k.ti->kname), "%s", k.str ? k.str : "");
	if (s->dev == DEV_LAUNCH && s->op == OP_COMPUTE && k.ti->tid && k.ti->kname[0])
		k.kernel = k.ti->kname;
	/* every launch gets an id of ours: its key may be a pointer reused later in the trace */
	if (s->dev == DEV_LAUNCH)
		k.corr = device_new_corr(&c->dev);
	k.track = e->tid;
	if (c->tw && e->type == SPYRE_EV_SPAN)
		k.track = span_track(c, e->tgid, e->tid, e->ts, e->dur);
	if (c->tw)
		write_call(c, &k);
	call_device(c, &k);
	return 0;
}
