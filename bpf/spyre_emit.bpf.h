/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A finished call handed over: the thread's staged records flushed, its Python and native stacks'
 * records, its span.
 * A part of bpf/spyre.bpf.c, which includes the parts in order: each uses what the ones
 * before it define.
 */
#ifndef SPYRE_SPYRE_EMIT_BPF_H
#define SPYRE_SPYRE_EMIT_BPF_H

/*
 * Hand the thread's staged spans to the ring buffer as one record. A global function: the
 * verifier checks it once with nstaged unknown; inlined, the compiler folded its bound into
 * the callers' arithmetic on the stage index in ways the verifier could not follow.
 */
__noinline int flush_stage(struct tstack *st)
{
	__u32 n;

	if (!st)
		return 0;
	n = st->nstaged;
	if (!n)
		return 0;
	if (n > SPYRE_STAGE)
		n = SPYRE_STAGE;
	if (bpf_ringbuf_output(&events, st->stage, n * sizeof(struct spyre_event),
			       BPF_RB_NO_WAKEUP)) {
		for (__u32 i = 0; i < SPYRE_STAGE && i < n; i++) {
			struct spyre_counters *c;

			/* a string or a Python stack is its call's: the call's own record
			 * counts the loss */
			if (st->stage[i].type == SPYRE_EV_STR ||
			    st->stage[i].type == SPYRE_EV_PYSTACK)
				continue;
			c = counters_of(st->stage[i].probe);
			if (c)
				COUNT(c, drops_ring);
		}
	}
	st->nstaged = 0;
	return 0;
}

static __always_inline void count_unmatched(struct pt_regs *ctx)
{
	__u32 probe = spyre_cookie_probe(bpf_get_attach_cookie(ctx));
	struct spyre_counters *c;

	/* while tracing_on is off, unmatched returns are the calls we chose not to see */
	if (tracing_on && probe < SPYRE_MAX_PROBES &&
	    (c = counters_of(probe)))
		COUNT(c, unmatched);
}

/* How a return-side probe ends calls (finish_call). */
enum fin_how {
	FIN_RET,	/* a return: uretprobe, or the function's own return instruction */
	FIN_JUMP,	/* a tail jump not followed: the call ends at the jump, ret unknown */
	FIN_MARK,	/* a followed tail jump: the call stays open, marked (TAIL_*) */
	FIN_FOLLOW,	/* a tail-called function returns: ends the calls that jumped to it */
};

/*
 * Index @i of the thread's stage, masked where the verifier sees it: the compiler knows the
 * callers' indexes are below SPYRE_STAGE and drops a plain mask.
 */
static __always_inline __u32 stage_slot(__u32 i)
{
	asm volatile("" : "+r"(i));
	return i & (SPYRE_STAGE - 1);
}

/*
 * The Python stack of recorded call @d as @npy SPYRE_EV_PYSTACK records in the thread's stage
 * from index @first, right before the call's own record (at @first + @npy, already made: its
 * ts, tid and probe are theirs). A global function: the verifier checks it once, not in each
 * return program, for each call a tail-jump chain closes, for each count of records.
 */
__noinline int emit_pystack(struct tstack *st, __u32 d, __u32 first, __u32 npy)
{
	const struct spyre_event *e;
	__u32 slot = d & RECORD_MASK, total;

	if (!st || npy > SPYRE_PY_RECS)
		return 0;
	e = &st->stage[stage_slot(first + npy)];
	total = st->pyn[slot];
	for (__u32 part = 0; part < SPYRE_PY_RECS && part < npy; part++) {
		struct spyre_event *out = &st->stage[stage_slot(first + part)];
		__u32 base = part * SPYRE_PY_PER_REC;

		for (__u32 j = 0; j < SPYRE_PY_PER_REC; j++)
			out->py.frame[j] = base + j < total ?
					   ((__u64 *)st->py)[py_index(slot, base + j)] : 0;
		out->py.n = total <= base ? 0 : total - base > SPYRE_PY_PER_REC ?
			    SPYRE_PY_PER_REC : total - base;
		out->py.part = part;
		out->py.nparts = npy;
		out->py.flags = st->pyflags[slot];
		out->py.total = total;
		before_call(out, e, SPYRE_EV_PYSTACK);
	}
	return 0;
}

/* The native stack of call record @e as the SPYRE_EV_USTACK record @out before it. */
static __always_inline void emit_ustack(struct spyre_event *out, const struct spyre_event *e,
					const struct frame *f)
{
	out->ustack.id = f->ustack;
	out->ustack.caller = f->ucaller;
	before_call(out, e, SPYRE_EV_USTACK);
}

/* emit_span's @d: the call ended at an unfollowed tail jump (its return value unknown) */
#define SPAN_JUMP	0x80000000u

/*
 * Close open call @d (st->depth is already @d; | SPAN_JUMP) at @now with return value @ret of
 * thread @ids (tgid << 32 | tid): one span, into the thread's stage or the ring. A global
 * function: the verifier checks it once per program, not inlined once for each call a return
 * may close (SPYRE_TAIL_CHAIN): spyre_ret_site went from 70,025 instructions processed to
 * 17,344, spyre_tail_ret from 62,769 to 10,465, the object's programs from 185,202 to 80,945
 * (2026-12-07, kernel 6.18: 77 ms of verifier time at every start, about half of the attach).
 */
__noinline int emit_span(struct tstack *st, __u32 d, __u64 now, __u64 ret, __u64 ids)
{
	struct spyre_read_cfg *r = NULL;
	struct spyre_counters *c;
	struct spyre_event *e, *rb = NULL;
	__u32 tgid = ids >> 32, tid = (__u32)ids;
	bool jump = d & SPAN_JUMP;
	struct frame *f;
	__u32 n = 0, probe, npy = 0, extra;
	bool str, ust;

	d &= ~SPAN_JUMP;
	if (!st || d >= SPYRE_MAX_DEPTH)
		return 0;	/* tracked, not recorded: counted at entry */
	f = &st->f[d & RECORD_MASK];
	probe = st->probe[d & TRACK_MASK];
	if (!f->record)
		return 0;
	if (f->mem & SPYRE_CK_READ)
		r = bpf_map_lookup_elem(&probe_reads, &probe);
	/*
	 * What goes before the call's record, in the same ring record: its string
	 * (SPYRE_EV_STR), then its Python stack (SPYRE_EV_PYSTACK, 1..SPYRE_PY_RECS records),
	 * then its native stack's id (SPYRE_EV_USTACK)
	 */
	str = r && r->str_kind;
	ust = f->mem & SPYRE_CK_USTACK;
	if (f->mem & SPYRE_CK_PY)
		npy = (st->pyn[d & RECORD_MASK] + SPYRE_PY_PER_REC - 1) / SPYRE_PY_PER_REC;
	if (npy > SPYRE_PY_RECS)
		npy = SPYRE_PY_RECS;
	extra = (str ? 1 : 0) + npy + (ust ? 1 : 0);

	if (stage_events || extra) {
		/*
		 * Without staging, the records are made in the (then unused) stage and copied
		 * to the ring in one piece: a reservation's size must be constant on each path
		 */
		if (stage_events)
			call_record(st, now, probe, &n, extra);
		e = &st->stage[stage_slot(n + extra)];
	} else {
		/*
		 * The reservation itself, submitted below: told apart by its own pointer, not by
		 * @extra, whose test the verifier does not carry from here to there (it refused
		 * the submit of a stage slot once extra had three terms)
		 */
		rb = call_record(st, now, probe, &n, 0);
		if (!rb)
			return 0;
		e = rb;
	}
	record_call(e, SPYRE_EV_SPAN, f->ts, now - f->ts, tgid, tid, probe,
		    d | (jump ? SPYRE_DEPTH_TAIL : 0) |
		    (st->jumped[d & TRACK_MASK] ? SPYRE_DEPTH_FOLLOWED : 0), f->args, ret);
	if (r)
		read_derefs(e, r, jump);
	if (r && str)
		read_str(&st->stage[stage_slot(n)], e, r);
	if (npy)
		emit_pystack(st, d, n + (str ? 1 : 0), npy);
	if (ust)
		emit_ustack(&st->stage[stage_slot(n + extra - 1)], e, f);
	if (rb) {
		/* the consumer drains on a timer: a wakeup per event would cost more than the
		 * probe */
		bpf_ringbuf_submit(rb, BPF_RB_NO_WAKEUP);
		return 0;
	}
	if (stage_events) {
		st->nstaged = n + extra + 1;
		/*
		 * A Python stack goes at once too: its code objects are named from the live
		 * process, and a thread that goes idle would keep it staged until its exit. A
		 * native stack waits with the rest: its frames are build ids and offsets, named
		 * from the files the process mapped, which are read when it is first seen
		 * (make bench 1c, PyTorch, --uretprobes: --ustack added 1.16 us a call staged,
		 * 1.55 us handed over at once)
		 */
		if (n + extra + 1 >= SPYRE_STAGE || now - st->staged_since > SPYRE_STAGE_MAX_NS ||
		    (f->mem & (SPYRE_CK_MEM | SPYRE_CK_NOW | SPYRE_CK_PY))) {
			flush_stage(st);
			check_rename(st, tgid);
		}
		return 0;
	}
	if (extra > CALL_MAX_EXTRA)
		extra = CALL_MAX_EXTRA;
	if (bpf_ringbuf_output(&events, st->stage, (extra + 1) * sizeof(*e), BPF_RB_NO_WAKEUP) &&
	    (c = counters_of(probe)))
		COUNT(c, drops_ring);
	return 0;
}

#endif
