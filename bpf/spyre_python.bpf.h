/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The CPython walker: a thread's Python frames read into its open call (--python, py=1).
 * A part of bpf/spyre.bpf.c, which includes the parts in order: each uses what the ones
 * before it define.
 */
#ifndef SPYRE_SPYRE_PYTHON_BPF_H
#define SPYRE_SPYRE_PYTHON_BPF_H

/*
 * CPython stacks (SPYRE_CK_PY). A thread's frames hang off its PyThreadState: cframe ->
 * current_frame, then each frame's previous. The thread state is the one in the interpreter's
 * list whose native_thread_id is the thread's tid (as the process sees it: its own PID
 * namespace); a thread with none runs no Python and records no stack (not another thread's,
 * which reading the GIL holder would give). Every pointer is read with bpf_probe_read_user: a
 * frame being torn down reads as garbage or faults, which ends the stack; userspace checks that
 * each code object is one before it names a line (stream/pystack.c).
 */
#define SPYRE_PY_MAX_THREADS	256
/* A thread found running no Python is looked for again after this long, not at every call. */
#define SPYRE_PY_MISS_NS	(50 * 1000 * 1000ull)
/* The frame fields the walk reads lie in its first bytes (f_code, previous, prev_instr, owner). */
#define SPYRE_PY_FRAME_WINDOW	72
/* the window's array: a power of two of words, so a mask bounds the index for the verifier */
#define PY_WORDS		16

/* The word at byte offset @off (< SPYRE_PY_FRAME_WINDOW) of a frame's window @w. */
static __always_inline __u64 py_word(const __u64 *w, __u32 off)
{
	return w[(off / 8) & (PY_WORDS - 1)];
}

static __always_inline __u64 py_read(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* py_ts_step's and py_step's verdicts */
#define PY_NEXT		0	/* go on with st->py_fr */
#define PY_END		1	/* nothing left: no such thread state, no frame left */
#define PY_STOP		2	/* a read faulted or a frame was not one: SPYRE_PY_FAULT */
#define PY_FOUND	3	/* st->py_fr is the thread's state */

/*
 * One thread state of the interpreter's list, at st->py_fr: PY_FOUND if its native_thread_id is
 * @tid, else st->py_fr moves to the next one. A global function: inline, the loop over up to
 * SPYRE_PY_MAX_THREADS of them cost each load ~100 ms of verification.
 */
__noinline int py_ts_step(struct tstack *st, const struct spyre_py_proc *pp, __u32 tid)
{
	__u64 ts;

	if (!st || !pp)
		return PY_END;
	ts = st->py_fr;
	if (!ts)
		return PY_END;
	if ((__u32)py_read(ts + pp->ts_native_tid) == tid)
		return PY_FOUND;
	st->py_fr = py_read(ts + pp->ts_next);
	return PY_NEXT;
}

/* The PyThreadState of the thread whose namespace tid is @tid in @pp's process, or 0. */
static __always_inline __u64 py_find_ts(struct tstack *st, const struct spyre_py_proc *pp,
					__u32 tid)
{
	__u64 interp = py_read(pp->interp_head);

	if (!interp)
		return 0;
	st->py_fr = py_read(interp + pp->interp_threads);
	for (int i = 0; i < SPYRE_PY_MAX_THREADS; i++) {
		int v = py_ts_step(st, pp, tid);

		if (v == PY_FOUND)
			return st->py_fr;
		if (v != PY_NEXT)
			return 0;
	}
	return 0;
}

static __always_inline void count_py(__u32 probe, bool none)
{
	struct spyre_counters *c = counters_of(probe);

	if (c && none)
		COUNT(c, py_none);
	else if (c)
		COUNT(c, py_trunc);
}

/*
 * One frame of the walk: the frame at st->py_fr appended to recorded call @slot's stack
 * (unless it is an entry frame of the C stack), st->py_fr moved to the one before it. A global
 * function: the verifier checks it once, not once per frame and count of frames kept.
 */
/*
 * Frame @n of recorded call @slot as one index into st->py seen flat, masked as a whole: with a
 * mask on each of the two indexes, Debian 6.1's verifier summed their bounds twice over and
 * refused the store ("R6 max value is outside of the allowed memory range", off=7584 of 5672),
 * which 6.12 and 7.3 accept. The barrier keeps the compiler from splitting it again.
 */
static __always_inline __u32 py_index(__u32 slot, __u32 n)
{
	__u32 i = (slot & RECORD_MASK) * SPYRE_PY_FRAMES + (n & (SPYRE_PY_FRAMES - 1));

	barrier_var(i);
	return i & (SPYRE_MAX_DEPTH * SPYRE_PY_FRAMES - 1);
}

__noinline int py_step(struct tstack *st, __u32 slot, const struct spyre_py_proc *pp)
{
	__u64 w[PY_WORDS] = {}, code, instr, first, idx, fr;
	__u32 n;

	if (!st || !pp)
		return PY_STOP;
	fr = st->py_fr;
	n = st->pyn[slot & RECORD_MASK];
	if (!fr || n >= SPYRE_PY_FRAMES)
		return PY_END;
	if (bpf_probe_read_user(w, SPYRE_PY_FRAME_WINDOW, (void *)fr))
		return PY_STOP;
	code = py_word(w, pp->f_code);
	instr = py_word(w, pp->f_prev_instr);
	st->py_fr = py_word(w, pp->f_previous);
	/* 3.12+: the interpreter's entry frames run no Python code of their own */
	if (pp->f_owner && ((py_word(w, pp->f_owner) >> (pp->f_owner % 8 * 8)) & 0xff) ==
			   SPYRE_PY_OWNED_BY_CSTACK)
		return PY_NEXT;
	if (!code || code > SPYRE_PY_ADDR_MASK)
		return PY_STOP;
	first = code + pp->code_bytecode;
	idx = instr < first ? 0 : (instr - first) / 2 + 1;
	if (idx > SPYRE_PY_IDX_UNKNOWN)
		idx = SPYRE_PY_IDX_UNKNOWN;
	((__u64 *)st->py)[py_index(slot, n)] = code | idx << SPYRE_PY_IDX_SHIFT;
	st->pyn[slot & RECORD_MASK] = n + 1;
	return PY_NEXT;
}

/*
 * The Python stack of the current thread into @st's recorded call @d (pyn, pyflags, py). A
 * global function: the verifier checks its loops once.
 */
__noinline int py_walk(struct tstack *st, __u32 d, __u32 tgid, __u32 probe)
{
	struct spyre_py_proc *pp;
	__u32 slot = d & RECORD_MASK, n;
	__u64 ts, fr;
	__u8 flags = 0;
	int v = PY_END;

	if (!st || d >= SPYRE_MAX_DEPTH)
		return 0;
	st->pyn[slot] = 0;
	st->pyflags[slot] = 0;
	pp = bpf_map_lookup_elem(&py_procs, &tgid);
	if (!pp || pp->f_code >= SPYRE_PY_FRAME_WINDOW || pp->f_previous >= SPYRE_PY_FRAME_WINDOW ||
	    pp->f_prev_instr >= SPYRE_PY_FRAME_WINDOW || pp->f_owner >= SPYRE_PY_FRAME_WINDOW)
		return 0;
	if (!st->py_tid) {
		struct task_struct *task = bpf_get_current_task_btf();

		st->py_tid = ns_nr(BPF_CORE_READ(task, thread_pid));
	}
	ts = st->py_ts;
	/* the thread state found before, if it is still this thread's (states are freed) */
	if (ts && (__u32)py_read(ts + pp->ts_native_tid) != st->py_tid)
		ts = 0;
	if (!ts) {
		__u64 now = bpf_ktime_get_ns();

		if (st->py_miss_at && now - st->py_miss_at < SPYRE_PY_MISS_NS) {
			count_py(probe, true);
			return 0;
		}
		ts = py_find_ts(st, pp, st->py_tid);
		st->py_ts = ts;
		st->py_miss_at = ts ? 0 : now;
		if (!ts) {
			count_py(probe, true);
			return 0;
		}
	}
	fr = py_read(ts + pp->ts_cframe);
	if (pp->cframe_frame != SPYRE_PY_NO_CFRAME)
		fr = fr ? py_read(fr + pp->cframe_frame) : 0;
	st->py_fr = fr;
	/* entry frames skipped take a turn each: twice the frames kept, at most */
	for (int k = 0; k < 2 * SPYRE_PY_FRAMES; k++) {
		v = py_step(st, slot, pp);
		if (v != PY_NEXT)
			break;
	}
	n = st->pyn[slot];
	if (v == PY_STOP)
		flags |= SPYRE_PY_FAULT;
	else if (st->py_fr)	/* frames left unread: more than the bound */
		flags |= SPYRE_PY_TRUNCATED;
	if (!n) {
		count_py(probe, true);	/* a thread state with no frame: not running Python */
		return 0;
	}
	if (flags)
		count_py(probe, false);
	st->pyflags[slot] = flags;
	return 0;
}

#endif
