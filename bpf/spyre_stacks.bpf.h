/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Open calls kept per stack: how returns are seen, a call's record reserved (staged or in the
 * ring), calls left unwound, stack switches told by their mapping, the pops of calls found over,
 * tail calls followed.
 * A part of bpf/spyre.bpf.c, which includes the parts in order: each uses what the ones
 * before it define.
 */
#ifndef SPYRE_SPYRE_STACKS_BPF_H
#define SPYRE_SPYRE_STACKS_BPF_H

/*
 * Returns are seen at the functions' own return instructions and tail jumps (userspace found
 * them in the code), not through uretprobes: the traced thread's stack is never modified, so
 * a C++ exception, a forced unwind or a backtrace walks it as if no tracer were there. Set by
 * userspace before load; off with --uretprobes.
 */
const volatile bool ret_sites = true;

/*
 * Tests only (SPYRE_TEST_NO_STACK_EVERY=N): every Nth entry per CPU finds no thread stack, as
 * when task storage is busy on that CPU; 0, the default, compiles the check away.
 */
const volatile __u32 test_nostack_every = 0;

/*
 * Is the return address at @sp the kernel's uretprobe trampoline? Then the open call whose
 * frame has this same sp tail-called (jmp) into the one being entered, and is still running.
 * The trampoline starts the page of the process's uprobe area: a page-aligned return address
 * is taken for it. Reading the area's address from the mm instead (CO-RE through mm_struct and
 * xol_area) made loading ~5 ms slower; a real return address that is page-aligned (about one
 * call site in 4096) only keeps a dead frame until a call from further up the stack. With
 * return sites there is no trampoline: a tail jump ended the earlier call at the jump.
 */
static __always_inline bool chained_call(__u64 sp)
{
	__u64 ra;

	if (ret_sites)
		return false;
	if (SPYRE_RET_SP_ADJ == 0 || bpf_probe_read_user(&ra, sizeof(ra), (void *)sp))
		return true;	/* cannot tell: keep the frame, as before */
	return (ra & 4095) == 0;
}

/* The sp of the innermost tracked open call; @d > 0. */
static __always_inline __u64 top_sp(const struct tstack *st, __u32 d)
{
	if (d > SPYRE_TRACK_DEPTH)
		d = SPYRE_TRACK_DEPTH;
	return st->sp[(d - 1) & TRACK_MASK];
}

__noinline int flush_stage(struct tstack *st);

/*
 * Where the record of a call of @probe that ended at @now goes: the next one of the thread's
 * stage (stage_events; with @extra records before it, its string, its Python stack and its
 * native stack's id: 0..CALL_MAX_EXTRA; *@n is the first one's index, the caller counts them
 * in) or a reservation in the ring (@extra 0: emit_span makes a call with extra records in the unused
 * stage and copies them to the ring); NULL when the ring is full, counted on the probe.
 */
#define CALL_MAX_EXTRA	(2 + SPYRE_PY_RECS)
static __always_inline struct spyre_event *call_record(struct tstack *st, __u64 now, __u32 probe,
						       __u32 *n, __u32 extra)
{
	struct spyre_counters *c;
	struct spyre_event *e;

	if (stage_events) {
		__u32 i = st->nstaged;

		if (i + extra >= SPYRE_STAGE) {
			flush_stage(st);
			i = 0;
		}
		if (i >= SPYRE_STAGE)
			i = 0;	/* cannot happen: a full stage is flushed at once */
		if (i == 0)
			st->staged_since = now;
		*n = i;
		/* the compiler knows i < SPYRE_STAGE and would drop the mask the verifier needs
		 * (it lost the bound in emit_unwound: "R9 unbounded memory access") */
		asm volatile("" : "+r"(i));
		return &st->stage[i & (SPYRE_STAGE - 1)];
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	/* counters only on the rare paths: a lookup per return is measurable */
	if (!e && (c = counters_of(probe)))
		COUNT(c, drops_ring);
	return e;
}

/*
 * Open call @i of the thread was left without returning (a C++ exception, a longjmp, a thread
 * cancel or exit), seen at @now: a recorded call becomes a SPYRE_EV_UNWOUND record, a span from
 * its entry to @now with its entry arguments, and is counted as unwound. A call that was not
 * recorded (too deep, sampled out, over the rate cap) was counted at its entry, and only there:
 * each lost call is counted once.
 *
 * A global function: the verifier checks it once, not once per iteration of the pop loops.
 */
__noinline int emit_unwound(struct tstack *st, __u32 i, __u64 now)
{
	struct spyre_counters *c;
	struct spyre_event *e;
	struct frame *f;
	__u64 id;
	__u32 n, probe;

	if (!st || i >= SPYRE_MAX_DEPTH)
		return 0;
	f = &st->f[i & RECORD_MASK];
	if (!f->record)
		return 0;
	probe = st->probe[i & TRACK_MASK];
	c = counters_of(probe);
	if (c)
		COUNT(c, unwound);
	e = call_record(st, now, probe, &n, 0);
	if (!e)
		return 0;
	id = bpf_get_current_pid_tgid();
	/* (its dereferenced words were the stage slot's last record's before record_call) */
	record_call(e, SPYRE_EV_UNWOUND, f->ts, now > f->ts ? now - f->ts : 0, id >> 32,
		    (__u32)id, probe, i, f->args, 0);
	if (stage_events) {
		st->nstaged = n + 1;
		if (n + 1 >= SPYRE_STAGE)
			flush_stage(st);
		return 0;
	}
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

/*
 * Stack switches (makecontext/swapcontext coroutines, fibers, sigaltstack handlers): a thread
 * may run on several stacks, and an open call on one of them is not over because the thread
 * runs calls further up another one. Set by userspace when the kernel offers bpf_find_vma
 * (5.17+): the stack a pointer is on is then told by its mapping. Without it every open call
 * is taken to be on one stack.
 */
const volatile bool stack_regions = false;

/*
 * An entry this far below the innermost open call is taken to be on another stack (a
 * coroutine's, a signal handler's) and looks for its own stack's dead calls too: a coroutine
 * abandoned inside traced calls and started again on the same stack, or a handler left by
 * siglongjmp, would otherwise leave calls that pile up under the other stack's (traced calls
 * 64 KiB apart on one stack only cost a lookup).
 */
#define STACK_SWITCH_BYTES	(64 * 1024)

struct stack_region {
	__u64 lo, hi;
};

static long region_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct stack_region *r = data;

	r->lo = vma->vm_start;
	r->hi = vma->vm_end;
	return 0;
}

/*
 * Open call @i moves to index @w; one not recorded moves as not recorded. A global function,
 * like every step of the pop loops: the verifier checks it once, and sees the same state at
 * each iteration of a loop that calls it (inline, its branches on the indexes made the loops
 * walk every path: 14,582 instructions of raise_to_top's 76,163 per program).
 */
__noinline int move_frame(struct tstack *st, __u32 w, __u32 i)
{
	__u32 wr = w & RECORD_MASK, ir = i & RECORD_MASK;

	if (!st)
		return 0;
	st->sp[w & TRACK_MASK] = st->sp[i & TRACK_MASK];
	st->probe[w & TRACK_MASK] = st->probe[i & TRACK_MASK];
	st->jumped[w & TRACK_MASK] = st->jumped[i & TRACK_MASK];
	/* the masks must stay: the compiler drops them after the bounds checks below */
	barrier_var(wr);
	barrier_var(ir);
	if (w >= SPYRE_MAX_DEPTH)
		return 0;
	if (i < SPYRE_MAX_DEPTH)
		st->f[wr] = st->f[ir];
	else
		st->f[wr].record = 0;
	/* a moved call loses its Python stack (a rare path: not worth 128 bytes a move) */
	st->pyn[wr] = 0;
	return 0;
}

#define POP_ENTRY	1	/* a call is entered at sp: an open call at sp itself is over */
#define POP_RETURN	0	/* the call entered at sp returns (or tail-jumps) */
#define POP_NEST	2	/* entered at sp by a tail jump of the open call there: it stays */
#define FOUND_RETURNING	0x100	/* live_below: the open call at sp is the returning one */

static __always_inline bool other_stack(const struct stack_region *r, __u64 s)
{
	return s < r->lo || s >= r->hi;
}

/*
 * Open call @i as seen from @sp: 0 if on another stack than @r's or over (below @sp, or at @sp
 * with @over_at_sp), 1 if still open, 2 if it is the call at @sp itself.
 */
__noinline int still_open(struct tstack *st, __u32 i, __u64 sp, int over_at_sp,
			  struct stack_region *r)
{
	__u64 s;

	if (!st || !r)
		return 0;
	s = st->sp[i & TRACK_MASK];
	if (other_stack(r, s) || s < sp || (s == sp && over_at_sp))
		return 0;
	return s == sp ? 2 : 1;
}

/*
 * From the top of the thread's @d open calls down to the innermost one of @r's stack that is
 * still open as seen from @sp: the index above it, | FOUND_RETURNING if it is the call at sp
 * itself. @over_at_sp: a call at @sp is over. (still_open is the loop's body: inline, its
 * branches made the verifier walk 47,501 instructions here per program.)
 */
__noinline int live_below(struct tstack *st, __u32 d, __u64 sp, int over_at_sp,
			  struct stack_region *r)
{
	int v;

	for (int j = 0; j < SPYRE_TRACK_DEPTH; j++) {
		if (j >= d)
			break;
		v = still_open(st, d - 1 - j, sp, over_at_sp, r);
		if (v)
			return (d - j) | (v == 2 ? FOUND_RETURNING : 0);
	}
	return 0;
}

/* Is one of the thread's @d open calls the one entered at @sp? */
__noinline int open_at(struct tstack *st, __u32 d, __u64 sp)
{
	if (!st)
		return 0;
	for (int j = 0; j < SPYRE_TRACK_DEPTH; j++) {
		if (j >= d)
			break;
		if (st->sp[(d - 1 - j) & TRACK_MASK] == sp)
			return 1;
	}
	return 0;
}

/*
 * Open call @i, with @w calls kept below it: over if on @r's stack (an unwound event), else
 * kept, moved down to @w. Returns how many are kept now.
 */
__noinline int drop_one(struct tstack *st, __u32 i, __u32 w, struct stack_region *r, __u64 now)
{
	if (!st || !r)
		return w;
	if (!other_stack(r, st->sp[i & TRACK_MASK])) {
		emit_unwound(st, i, now);
		return w;
	}
	if (w != i)
		move_frame(st, w, i);
	return w + 1;
}

/*
 * Open calls @k..@d-1: @r's stack's are over (unwound events), the other stacks' stay, moved
 * down over them. Returns the new depth. The body is a global function of its own: the
 * verifier then sees the same state at every iteration, not one per count of calls kept so
 * far (measured here: each program that pops took 0.45-0.54 s to load with the body inline).
 */
__noinline int drop_above(struct tstack *st, __u32 k, __u32 d, struct stack_region *r,
			  __u64 now)
{
	__u32 w = k;

	if (!st || !r)
		return d;
	for (int j = 0; j < SPYRE_TRACK_DEPTH; j++) {
		if (k + j >= d)
			break;
		w = drop_one(st, k + j, w, r, now);
	}
	return w;
}

/*
 * The returning open call @i goes to the top (@w - 1), over the other stacks' open calls above
 * it: the return takes the innermost call.
 */
__noinline int raise_to_top(struct tstack *st, __u32 i, __u32 w)
{
	struct spyre_counters *c;
	struct frame top = {};
	__u32 from = i, probe, slot;
	__u8 jumped;
	__u64 sp;

	if (!st || i >= SPYRE_TRACK_DEPTH)
		return 0;
	sp = st->sp[i & TRACK_MASK];
	probe = st->probe[i & TRACK_MASK];
	jumped = st->jumped[i & TRACK_MASK];
	if (i < SPYRE_MAX_DEPTH)
		top = st->f[i & RECORD_MASK];	/* i < 16: the mask is kept for the verifier */
	for (int j = 0; j < SPYRE_TRACK_DEPTH; j++) {
		if (i + 1 >= w)
			break;
		move_frame(st, i, i + 1);
		i++;
	}
	st->sp[i & TRACK_MASK] = sp;
	st->probe[i & TRACK_MASK] = probe;
	st->jumped[i & TRACK_MASK] = jumped;
	slot = i & RECORD_MASK;
	barrier_var(slot);	/* the mask must stay (see move_frame) */
	if (i < SPYRE_MAX_DEPTH && from < SPYRE_MAX_DEPTH)
		st->f[slot] = top;
	else if (i < SPYRE_MAX_DEPTH)
		st->f[slot].record = 0;
	if (i < SPYRE_MAX_DEPTH)
		st->pyn[slot] = 0;	/* (see move_frame) */
	else if (from < SPYRE_MAX_DEPTH && top.record && (c = counters_of(probe)))
		COUNT(c, drops_depth);	/* recorded, now past the recorded depths: no event */
	return 0;
}

/*
 * Drop the open calls that can no longer return, as seen from @sp at @now (a call being
 * entered, or returning): a C++ exception, a longjmp or a thread cancel left through them, and
 * neither their return instruction nor (with uretprobes) their return record will ever run. A
 * call on the same stack whose sp is below @sp was popped off the machine stack; with @mode
 * POP_ENTRY a call at @sp itself is over too, unless it was chained to the new one through a
 * uretprobe trampoline (a tail call). The kernel applies the same rule to its own return
 * records. Each dropped call becomes an unwound event (emit_unwound).
 *
 * Calls open on another stack (stack_regions) stay, moved down over the dropped ones; with
 * POP_RETURN, the returning call (sp == @sp) is moved above them, to the top, where the caller
 * takes it. Returns the new depth. Calls past SPYRE_TRACK_DEPTH are untracked: all deeper
 * than the deepest tracked one, dropped with it (counted as too deep at their entry).
 *
 * Each loop is a global function of its own: the verifier checks it once, on its own, with
 * the depth unknown, not once per state of its caller or per iteration at which the loop
 * before it ended (64 x 64); the probe read and the VMA lookup stay out of the loops.
 */
__noinline int pop_dead_frames(struct tstack *st, __u32 d, __u64 sp, int mode, __u64 now)
{
	struct stack_region r = { 0, ~0ull };
	__u32 k, w;
	int at;

	if (!st)	/* the verifier asks: a global function's pointer may be NULL */
		return d;
	if (d > SPYRE_TRACK_DEPTH) {
		if (sp < st->sp[TRACK_MASK])
			return d;
		d = SPYRE_TRACK_DEPTH;
	}
	/*
	 * a return below the innermost open call: its call can only be open under another
	 * stack's calls; nothing is over otherwise (a call entered before the probes were)
	 */
	if (mode == POP_RETURN && d && st->sp[(d - 1) & TRACK_MASK] > sp && !open_at(st, d, sp))
		return d;
	/* one lookup (the mmap lock, tried, not waited for): without it, one stack */
	if (stack_regions && sp != ~0ull &&
	    bpf_find_vma(bpf_get_current_task_btf(), sp, region_cb, &r, 0)) {
		r.lo = 0;
		r.hi = ~0ull;
	}
	at = live_below(st, d, sp, mode == POP_ENTRY && !chained_call(sp), &r);
	k = at & (FOUND_RETURNING - 1);
	w = drop_above(st, k, d, &r, now);
	if (mode == POP_RETURN && (at & FOUND_RETURNING) && w > k && k > 0)
		raise_to_top(st, k - 1, w);
	return w;
}

/*
 * Tail calls. A traced call that leaves by a tail jump whose targets' returns are probed too
 * (SPYRE_CK_TAIL_FOLLOW) is not over at the jump: its frame is marked and stays open, and the
 * return of whatever the chain of jumps ends in (a ret at the same sp) closes it, with the
 * return value its caller receives. TAIL_NEST: the chain can reach a traced function, whose
 * entry at that same sp is then a call inside the jumped one, not a new call after it.
 */
#define TAIL_JUMPED	1
#define TAIL_NEST	2

/* Is the innermost open call at @sp one a tail jump left into a traced function? @d > 0. */
static __always_inline bool tail_nests(const struct tstack *st, __u32 d, __u64 sp)
{
	return d <= SPYRE_TRACK_DEPTH && st->sp[(d - 1) & TRACK_MASK] == sp &&
	       st->jumped[(d - 1) & TRACK_MASK] == TAIL_NEST;
}

#endif
