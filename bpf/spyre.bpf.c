// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Uprobe/uretprobe programs for the Spyre runtime. One program of each kind serves every probe:
 * the attach cookie carries the probe's index, so adding probes needs no new BPF code.
 *
 * Every probe hit costs a trap into the kernel already (~0.5-15 µs); what runs here must stay
 * small next to that: read registers, keep a per-thread stack of open calls, and hand one
 * fixed-size record per finished call to the ringbuf without waking the consumer.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "spyre_common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* the object by concern, each part using the ones before it */
#include "spyre_state.bpf.h"
#include "spyre_stacks.bpf.h"
#include "spyre_record.bpf.h"
#include "spyre_python.bpf.h"

/* The return address of a call at its entry (0: unread). */
static __always_inline __u64 caller_ip(struct pt_regs *ctx)
{
	__u64 ra = 0;

#if defined(__TARGET_ARCH_x86)
	bpf_probe_read_user(&ra, sizeof(ra), (void *)PT_REGS_SP(ctx));
#elif defined(__TARGET_ARCH_powerpc)
	ra = ctx->link;
#elif defined(__TARGET_ARCH_s390)
	ra = ctx->gprs[14];
#endif
	return ra;
}

/* The entry of a traced call: push its frame on the thread's stack, with its arguments. */
static __always_inline int enter_call(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 probe = spyre_cookie_probe(cookie);
	/* what the call's record needs (SPYRE_CK_ENTRY_INSN is do_entry_insn's) */
	__u32 mem = spyre_cookie_aux(cookie) & ~SPYRE_CK_ENTRY_INSN;
	/* the task's own fields: one helper call serves the ids and the task storage */
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid, tid = task->pid;
	struct spyre_counters *c = counters_of(probe);
	__u64 sp = PT_REGS_SP(ctx);
	struct tstack *st;
	struct frame *f;
	__u32 d;

	if (!tracing_on || !traced_tgid(tgid))
		return 0;
	if (c)
		COUNT(c, hits);
	st = thread_stack(task, tid);
	if (test_nostack_every && c && c->hits % test_nostack_every == 0)
		st = NULL;
	if (mem & SPYRE_CK_MEM_ENTRY)
		mem_entry(ctx, tgid, tid, probe);
	if (!st) {
		if (c)
			COUNT(c, drops_nostack);
		return 0;
	}
	d = st->depth;
	/* off the fast path: the innermost open call of a live caller is above sp */
	if (d && (top_sp(st, d) <= sp ||
		  (stack_regions && top_sp(st, d) - sp > STACK_SWITCH_BYTES)))
		d = pop_dead_frames(st, d, sp, tail_nests(st, d, sp) ? POP_NEST : POP_ENTRY,
				    bpf_ktime_get_ns());
	st->depth = d + 1;
	if (d < SPYRE_TRACK_DEPTH) {
		__u32 i = d & TRACK_MASK;

		/* keeps the mask: clang drops it after the test, and the verifier then loses the
		 * bound of the three stores */
		barrier_var(i);
		i &= TRACK_MASK;
		st->sp[i] = sp;
		st->probe[i] = probe;
		st->jumped[i] = 0;
	}
	if (d >= SPYRE_MAX_DEPTH) {
		if (c)
			COUNT(c, drops_depth);
		return 0;
	}
	f = &st->f[d & RECORD_MASK];
	/* the call is tracked either way, so returns stay paired with their entries */
	/* without sampling or a cap (the usual case) skip the clock read want_event needs */
	f->record = (mem & ~(SPYRE_CK_NOW | SPYRE_CK_PY | SPYRE_CK_USTACK)) || sampling_off() ||
		    want_event(bpf_ktime_get_ns(), tgid, c);
	f->mem = mem;
	if (!f->record)
		return 0;
	read_args(ctx, f->args);
	if (mem & SPYRE_CK_PY)
		py_walk(st, d, tgid, probe);
	if (mem & SPYRE_CK_USTACK) {
		/* the kernel's walk of the user stack: frame pointers (on 6.13+ with the caller
		 * at a function's entry, where the frame is not set up yet) */
		f->ustack = bpf_get_stackid(ctx, &ustacks, BPF_F_USER_STACK);
		if (f->ustack < 0 && c)
			COUNT(c, ustack_lost);
		f->ucaller = caller_ip(ctx);
	}
	/* last, so the span does not include our own bookkeeping */
	f->ts = bpf_ktime_get_ns();
	return 0;
}

PRIV_STACK_OFF_MAP(spyre_entry);
SEC("uprobe")
int spyre_entry(struct pt_regs *ctx)
{
	priv_stack_off(ctx, spyre_entry);
	return enter_call(ctx);
}

/*
 * Entries done by the program (x86-64, where a uprobe program may write its registers, as for
 * emulated returns): the probed instruction is a mov or lea (struct spyre_entry_insn, decoded by
 * user/resolve/entryinsn.c), which the kernel would single-step; done here, ip moves past it
 * and the kernel skips the step: the price of an emulated probe instead of a single-stepped
 * one. Only those probes' links carry SPYRE_CK_ENTRY_INSN; the others are left to the kernel.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPYRE_PROBE_ROOM);	/* sized like counters */
	__type(key, __u32);
	__type(value, struct spyre_entry_insn);
} entry_insns SEC(".maps");

#if defined(__TARGET_ARCH_x86)
/* x86 register number @r of @ctx (0 ax, 1 cx, 2 dx, 3 bx, 4 sp, 5 bp, 6 si, 7 di, 8-15 r8-r15) */
static __always_inline __u64 reg_get(struct pt_regs *ctx, __u32 r)
{
	switch (r) {
	case 0: return ctx->ax;
	case 1: return ctx->cx;
	case 2: return ctx->dx;
	case 3: return ctx->bx;
	case 4: return ctx->sp;
	case 5: return ctx->bp;
	case 6: return ctx->si;
	case 7: return ctx->di;
	case 8: return ctx->r8;
	case 9: return ctx->r9;
	case 10: return ctx->r10;
	case 11: return ctx->r11;
	case 12: return ctx->r12;
	case 13: return ctx->r13;
	case 14: return ctx->r14;
	default: return ctx->r15;
	}
}

/* false: no such register (nothing written) */
static __always_inline bool reg_set(struct pt_regs *ctx, __u32 r, __u64 v)
{
	switch (r) {
	case 0: ctx->ax = v; break;
	case 1: ctx->cx = v; break;
	case 2: ctx->dx = v; break;
	case 3: ctx->bx = v; break;
	case 4: ctx->sp = v; break;
	case 5: ctx->bp = v; break;
	case 6: ctx->si = v; break;
	case 7: ctx->di = v; break;
	case 8: ctx->r8 = v; break;
	case 9: ctx->r9 = v; break;
	case 10: ctx->r10 = v; break;
	case 11: ctx->r11 = v; break;
	case 12: ctx->r12 = v; break;
	case 13: ctx->r13 = v; break;
	case 14: ctx->r14 = v; break;
	case 15: ctx->r15 = v; break;
	default: return false;
	}
	return true;
}
#endif

static __always_inline void do_entry_insn(struct pt_regs *ctx)
{
#if defined(__TARGET_ARCH_x86)
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 probe = spyre_cookie_probe(cookie);
	struct spyre_entry_insn *ei;
	__u64 v, ip = ctx->ip;

	if (!(spyre_cookie_aux(cookie) & SPYRE_CK_ENTRY_INSN))
		return;
	ei = bpf_map_lookup_elem(&entry_insns, &probe);
	if (!ei || !ei->len || ei->len > 15)
		return;		/* the kernel steps it, as without */
	v = ei->disp;
	if (ei->base == SPYRE_EI_RIP)
		v += ip + ei->len;
	else if (ei->base < 16)
		v += reg_get(ctx, ei->base);
	if (ei->index < 16)
		v += reg_get(ctx, ei->index) * ei->scale;
	if (ei->w32)
		v = (__u32)v;
	if (reg_set(ctx, ei->dst, v))
		ctx->ip = ip + ei->len;
#endif
}

PRIV_STACK_OFF_MAP(spyre_entry_emu);
SEC("uprobe")
int spyre_entry_emu(struct pt_regs *ctx)
{
	priv_stack_off(ctx, spyre_entry_emu);
	enter_call(ctx);
	do_entry_insn(ctx);
	return 0;
}

#include "spyre_emit.bpf.h"

/*
 * A traced call ends: its return (uretprobe, or a return instruction), or its tail jump, or
 * the return of a function it tail-jumped to (@how), with @sp the sp its entry had. A tail
 * jump ends (or marks) the call only where sp is back at its entry's: the same instruction
 * also serves jumps inside the function (to its cold part) made with its frame still set up,
 * which are none of our business. A return also ends the calls that tail-jumped into the one
 * returning (they are open at the same sp, marked), inner first, each with the value returned.
 */
static __always_inline int finish_call(struct pt_regs *ctx, __u64 sp, enum fin_how how,
				       __u32 nest)
{
	__u64 now = bpf_ktime_get_ns();
	struct task_struct *task = bpf_get_current_task_btf();
	/* the frame says which probe it was, so the attach cookie (a helper call, ~1 % of a
	 * call here) is only read on the rare paths */
	__u32 tid = task->pid;
	struct spyre_counters *c;
	struct tstack *st;
	__u32 d, i;
	__u64 ret;

	st = find_stack(task, tid);
	if (!st || st->depth == 0) {
		if (how == FIN_RET)
			count_unmatched(ctx);
		return 0;
	}
	d = st->depth;
	if (how == FIN_FOLLOW) {
		/*
		 * Every caller of the tail-called function passes here: quiet (no unwinding,
		 * nothing unmatched) unless the innermost open call jumped to it at this sp.
		 */
		if (d > SPYRE_TRACK_DEPTH || st->sp[(d - 1) & TRACK_MASK] != sp ||
		    !st->jumped[(d - 1) & TRACK_MASK])
			return 0;
	} else {
		if (d > SPYRE_TRACK_DEPTH && sp < st->sp[TRACK_MASK]) {
			/* an untracked call returns (counted at entry); its jumps tell nothing */
			if (how == FIN_RET)
				st->depth = d - 1;
			return 0;
		}
		/* calls below ours were left by an exception or a longjmp: dropped, counted
		 * (and with untracked calls open, the deepest tracked one returning means they
		 * are all over) */
		/* (a return below the innermost call: the call may be open under another
		 * stack's) */
		if (d > SPYRE_TRACK_DEPTH || top_sp(st, d) < sp ||
		    (how == FIN_RET && top_sp(st, d) > sp))
			d = pop_dead_frames(st, d, sp, POP_RETURN, now);
		if (d == 0 || st->sp[(d - 1) & TRACK_MASK] != sp) {
			/* the entry was never seen (or a jump inside the function) */
			st->depth = d;
			if (how == FIN_RET)
				count_unmatched(ctx);
			return 0;
		}
		if (how == FIN_MARK) {
			st->jumped[(d - 1) & TRACK_MASK] = nest ? TAIL_NEST : TAIL_JUMPED;
			st->depth = d;
			return 0;
		}
	}
	if (how == FIN_JUMP && d <= SPYRE_MAX_DEPTH &&
	    (c = counters_of(st->probe[(d - 1) & TRACK_MASK])))
		COUNT(c, tail_exits);
	/* at an unfollowed tail jump the return value is the callee's, not known */
	ret = how == FIN_JUMP ? 0 : PT_REGS_RC(ctx);
	for (i = 0; i < SPYRE_TAIL_CHAIN; i++) {
		d--;
		st->depth = d;
		emit_span(st, d | (how == FIN_JUMP ? SPAN_JUMP : 0), now, ret,
			  (__u64)task->tgid << 32 | tid);
		if (how == FIN_JUMP || d == 0 || st->sp[(d - 1) & TRACK_MASK] != sp ||
		    !st->jumped[(d - 1) & TRACK_MASK])
			break;
	}
	return 0;
}

/* --uretprobes: the kernel's return probe. */
PRIV_STACK_OFF_MAP(spyre_exit);
SEC("uretprobe")
int spyre_exit(struct pt_regs *ctx)
{
	priv_stack_off(ctx, spyre_exit);
	return finish_call(ctx, PT_REGS_SP(ctx) - SPYRE_RET_SP_ADJ, FIN_RET, 0);
}

/*
 * Emulated returns (x86-64): the return done by the program, so that the kernel skips the
 * single step of the probed ret (~2-3 us a call under QEMU TCG on Debian's 7.3 kernel, against
 * ~15-21 us single-stepped; docs/performance.md). Loaded only where the start-up self-test saw
 * a return done this way come back right (attach/retcheck.h, RETCHECK_EMULATED).
 *
 * Not on a thread with a user shadow stack (CET, Linux 6.6+ with glibc 2.39+): a return done
 * here does not pop it, and the thread's next ret would fault; there the kernel single-steps
 * as before. The flag is the thread's (thread.features, ARCH_SHSTK_SHSTK); a kernel without
 * user shadow stacks has no such field.
 */
struct thread_struct___shstk {
	unsigned long features;
} __attribute__((preserve_access_index));

struct task_struct___shstk {
	struct thread_struct___shstk thread;
} __attribute__((preserve_access_index));

#define SPYRE_ARCH_SHSTK_SHSTK	1

static __always_inline bool shadow_stack_on(void)
{
	struct task_struct___shstk *t = (void *)bpf_get_current_task();

	if (!bpf_core_field_exists(t->thread.features))
		return false;
	return BPF_CORE_READ(t, thread.features) & SPYRE_ARCH_SHSTK_SHSTK;
}

static __always_inline void return_now(struct pt_regs *ctx)
{
#if defined(__TARGET_ARCH_x86)
	__u32 pop = spyre_cookie_aux(bpf_get_attach_cookie(ctx)) >> SPYRE_CK_POP_SHIFT;
	__u64 ra;

	if (shadow_stack_on() || bpf_probe_read_user(&ra, sizeof(ra), (void *)ctx->sp))
		return;		/* the kernel steps the ret, as without emulation */
	ctx->ip = ra;
	ctx->sp += 8 + pop;
#endif
}

PRIV_STACK_OFF_MAP(spyre_ret_site_emu);
SEC("uprobe")
int spyre_ret_site_emu(struct pt_regs *ctx)
{
	priv_stack_off(ctx, spyre_ret_site_emu);
	finish_call(ctx, PT_REGS_SP(ctx), FIN_RET, 0);
	return_now(ctx);
	return 0;
}

PRIV_STACK_OFF_MAP(spyre_tail_ret_emu);
SEC("uprobe")
int spyre_tail_ret_emu(struct pt_regs *ctx)
{
	priv_stack_off(ctx, spyre_tail_ret_emu);
	finish_call(ctx, PT_REGS_SP(ctx), FIN_FOLLOW, 0);
	return_now(ctx);
	return 0;
}

#if defined(__TARGET_ARCH_x86)
/*
 * Is x86 condition code @cc (a jcc opcode's low nibble) true for these flags? Without
 * branches: a switch over booleans made the verifier walk every combination (60 ms to load).
 * Bit k of t is condition 2k (o, b, e, be, s, p, l, le); an odd code is its negation.
 */
static __always_inline __u32 x86_cond(__u64 fl, __u32 cc)
{
	__u32 cf = fl & 1, pf = fl >> 2 & 1, zf = fl >> 6 & 1, sf = fl >> 7 & 1, of = fl >> 11 & 1;
	__u32 t = of | cf << 1 | zf << 2 | (cf | zf) << 3 | sf << 4 | pf << 5 | (sf ^ of) << 6 |
		  (zf | (sf ^ of)) << 7;

	return (t >> (cc >> 1 & 7) & 1) ^ (cc & 1);
}
#endif

/*
 * Every return-side uprobe but the emulated ones, one program (its link's cookie says which):
 * - a return instruction of a traced function (x86 ret, s390x br %r14, ppc64le blr);
 * - SPYRE_CK_SITE_TAIL: a return instruction of a function that traced calls reach by tail
 *   jumps (not itself traced, or reached through a chain): ends the calls that jumped to it;
 *   hit by every call of that function, from anywhere: its cost is listed per probe;
 * - SPYRE_CK_SITE_JUMP: a jump out of a traced function, its tail call, where sp is back at
 *   the entry's. A conditional one (x86 jcc: the cookie's upper half holds its condition code
 *   + 1) is hit whether or not it is taken: only a taken one leaves. Where the targets'
 *   returns are probed (SPYRE_CK_TAIL_FOLLOW) the call is marked and goes on; else it ends.
 * One program, not three: the verifier checks emit_span, flush_stage and emit_pystack (~9,500
 * instructions processed) again in each program that calls them. The three took 44,976
 * instructions, this one 18,061 (the object's 80,945 -> 54,030), for one attach cookie read
 * more per return (a helper call, ~20 ns; a return's trap costs 5-20 us here).
 */
PRIV_STACK_OFF_MAP(spyre_return);
SEC("uprobe")
int spyre_return(struct pt_regs *ctx)
{
	__u32 aux = spyre_cookie_aux(bpf_get_attach_cookie(ctx));
#if defined(__TARGET_ARCH_x86)
	__u32 cond = aux & SPYRE_CK_COND_MASK;

	if ((aux & SPYRE_CK_SITE_JUMP) && cond && !x86_cond(ctx->flags, cond - 1))
		return 0;
#endif
	priv_stack_off(ctx, spyre_return);
	if (aux & SPYRE_CK_SITE_TAIL)
		return finish_call(ctx, PT_REGS_SP(ctx), FIN_FOLLOW, 0);
	if (!(aux & SPYRE_CK_SITE_JUMP))
		return finish_call(ctx, PT_REGS_SP(ctx), FIN_RET, 0);
	if (aux & SPYRE_CK_TAIL_FOLLOW)
		return finish_call(ctx, PT_REGS_SP(ctx), FIN_MARK, aux & SPYRE_CK_TAIL_NEST);
	return finish_call(ctx, PT_REGS_SP(ctx), FIN_JUMP, 0);
}

PRIV_STACK_OFF_MAP(spyre_instant);
SEC("uprobe")
int spyre_instant(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 probe = spyre_cookie_probe(cookie);
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid, tid = task->pid;
	struct spyre_counters *c = counters_of(probe);
	struct spyre_read_cfg *r = NULL;
	struct spyre_event *e, *se = NULL;
	struct tstack *st;

	priv_stack_off(ctx, spyre_instant);
	if (!tracing_on || !traced_tgid(tgid))
		return 0;
	if (c)
		COUNT(c, hits);
	if (!spyre_cookie_aux(cookie) && !sampling_off() && !want_event(now, tgid, c))
		return 0;
	if (spyre_cookie_aux(cookie) & SPYRE_CK_READ)
		r = bpf_map_lookup_elem(&probe_reads, &probe);
	/* instants go straight to the ring: they complete device work that staged launches wait
	 * for, and a completion is matched in either order anyway */
	if (r && r->str_kind)
		e = se = bpf_ringbuf_reserve(&events, 2 * sizeof(*e), 0);
	else
		e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		if (c)
			COUNT(c, drops_ring);
		return 0;
	}
	if (se)
		e = se + 1;
	fill_entry(ctx, e, now, tgid, tid, probe, SPYRE_EV_INSTANT);
	/* instants also create the stack: a thread that only completes work still gets a name */
	st = thread_stack(task, tid);
	e->depth = st ? st->depth : 0;
	if (r)
		read_derefs(e, r, false);
	if (r && se)
		read_str(se, e, r);
	bpf_ringbuf_submit(se ? se : e, BPF_RB_NO_WAKEUP);
	return 0;
}

/*
 * C++ exceptions. A uretprobe replaces the return address of the probed call on the user stack
 * with the kernel's trampoline. The unwinder of a C++ exception (or of pthread_cancel) reads
 * return addresses off the stack to find each caller's unwind info; there is none for the
 * trampoline, so an exception thrown through a traced call would terminate the process (with
 * any uretprobe tool). This program runs at the unwinder's entry points (probes of
 * type=unwind: _Unwind_RaiseException, _Unwind_ForcedUnwind) and puts the real return
 * addresses back, from the kernel's own record of them, before the unwinder reads them. The
 * open calls of the thread then return without passing the trampoline: their frames are
 * dropped, and they are left with a hit and no event. Writes user memory, so it is loaded only
 * where the kernel allows bpf_probe_write_user (not under lockdown), and only on x86, where the
 * kernel's record names the stack slot of each return address (the other ABIs pass it in a
 * link register, which the function saves wherever its own code puts it).
 */
#define SPYRE_MAX_URETPROBE_DEPTH 64	/* the kernel's MAX_URETPROBE_DEPTH per task */

PRIV_STACK_OFF_MAP(spyre_unwind);
SEC("uprobe")
int spyre_unwind(struct pt_regs *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct spyre_counters *c = counters_of(spyre_cookie_probe(bpf_get_attach_cookie(ctx)));
	struct return_instance *ri = BPF_CORE_READ(task, utask, return_instances);
	__u64 tramp = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
	__u64 sp = PT_REGS_SP(ctx);

	priv_stack_off(ctx, spyre_unwind);
	if (c)
		COUNT(c, hits);
	if (SPYRE_RET_SP_ADJ == 0)
		return 0;
	for (int i = 0; i < SPYRE_MAX_URETPROBE_DEPTH && ri; i++) {
		__u64 slot = BPF_CORE_READ(ri, stack), orig = BPF_CORE_READ(ri, orig_ret_vaddr), ra;

		/* only a slot that still holds the trampoline: a stale record's slot may have
		 * been reused by now (chained records share one slot: the first write does it) */
		if (slot > sp && !bpf_probe_read_user(&ra, sizeof(ra), (void *)slot) && ra == tramp)
			bpf_probe_write_user((void *)slot, &orig, sizeof(orig));
		ri = BPF_CORE_READ(ri, next);
	}
	/*
	 * None of the thread's open calls returns through the trampoline now: those the
	 * exception leaves are dropped (and counted as unwound) once the thread is seen above
	 * them, like calls left by a longjmp.
	 */
	return 0;
}

/*
 * A C++ exception is caught (type=catch: __cxa_begin_catch, called by the handler's own frame).
 * The calls the exception left are below that frame: over now, each an unwound span that ends
 * here, where the unwind is known to be done. Without this they were found only at the thread's
 * next traced call above them, and the last throw before the stop not at all. Records nothing
 * itself; hit once per caught exception (a trap, several us here), never on a call's path.
 */
PRIV_STACK_OFF_MAP(spyre_catch);
SEC("uprobe")
int spyre_catch(struct pt_regs *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct spyre_counters *c = counters_of(spyre_cookie_probe(bpf_get_attach_cookie(ctx)));
	__u32 tgid = task->tgid, tid = task->pid;
	__u64 sp = PT_REGS_SP(ctx);
	struct tstack *st;
	__u32 d;

	priv_stack_off(ctx, spyre_catch);
	if (!tracing_on || !traced_tgid(tgid))
		return 0;
	if (c)
		COUNT(c, hits);
	st = find_stack(task, tid);
	if (!st || !(d = st->depth))
		return 0;
	/* the handler's frame called us: an open call entered at this sp came from it too */
	if (top_sp(st, d) <= sp || (stack_regions && top_sp(st, d) - sp > STACK_SWITCH_BYTES))
		st->depth = pop_dead_frames(st, d, sp, POP_ENTRY, bpf_ktime_get_ns());
	return 0;
}

/*
 * The calls a thread still has open when its process exits, or when the probes are detached
 * (the stop, a fleet window's end), would leave the trace without a word: each recorded one
 * becomes a record at its entry (an instant, with its entry arguments). With @user_sp, the
 * thread's user stack pointer then (its last kernel entry, which is no older than its last
 * traced entry or return: each of those is a trap), a call whose entry sp is below it on the
 * same stack is known to be left (an exception or a longjmp that no traced call has seen
 * since): SPYRE_EV_UNWOUND | SPYRE_DEPTH_UNBOUND, counted as unwound. Any other one is still
 * running, or left where nothing tells: SPYRE_EV_NORETURN, the summary's noReturn. Either
 * way the frame is no longer recorded: emitted once, its return (if any) ends nothing.
 */
__noinline int emit_left(struct tstack *st, __u32 i, __u64 id, __u64 user_sp,
			 struct stack_region *r)
{
	struct spyre_counters *c;
	struct spyre_event *e;
	__u32 probe, slot = i & RECORD_MASK;
	struct frame *f;
	__u64 s;
	bool left;

	if (!st || !r || i >= SPYRE_MAX_DEPTH)
		return 0;
	barrier_var(slot);	/* the mask must stay (see move_frame) */
	f = &st->f[slot & RECORD_MASK];
	if (!f->record)
		return 0;
	f->record = 0;
	probe = st->probe[slot & TRACK_MASK];
	s = st->sp[slot & TRACK_MASK];
	left = user_sp && s < user_sp && !other_stack(r, s);
	c = counters_of(probe);
	if (left && c)
		COUNT(c, unwound);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		if (c)
			COUNT(c, drops_ring);
		return 0;
	}
	/* @id: tgid << 32 | tid, as bpf_get_current_pid_tgid() */
	record_call(e, left ? SPYRE_EV_UNWOUND : SPYRE_EV_NORETURN, f->ts, 0, id >> 32, (__u32)id,
		    probe, i | (left ? SPYRE_DEPTH_UNBOUND : 0), f->args, 0);
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

/* Every open call of @task's stack @st, as emit_left says; the user sp from its saved regs. */
static __always_inline void emit_all_left(struct task_struct *task, struct tstack *st,
					  __u32 tgid, __u32 tid)
{
	struct stack_region r = { 0, ~0ull };
	__u32 d = st->depth;
	__u64 user_sp = 0;

	user_sp = PT_REGS_SP((struct pt_regs *)bpf_task_pt_regs(task));
	if (stack_regions && bpf_find_vma(task, user_sp, region_cb, &r, 0)) {
		r.lo = 0;
		r.hi = ~0ull;
	}
	for (int j = 0; j < SPYRE_MAX_DEPTH; j++) {
		if (j >= d)
			break;
		emit_left(st, j, (__u64)tgid << 32 | tid, user_sp, &r);
	}
}

#define SPYRE_SIGNAL_GROUP_EXIT	0x4	/* include/linux/sched/signal.h */

/*
 * A thread exits. Its staged spans must not die with its task storage. A thread that exits
 * alone (pthread_exit, pthread_cancel: both unwind it first) left its open calls for good:
 * counted as unwound. And when it is the last thread of a traced process, the process's exit
 * code goes to userspace, which tells a crash (SIGABRT, SIGSEGV, ...) from an exit.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(spyre_task_exit, struct task_struct *task)
{
	struct signal_struct *sig = task->signal;
	__u32 tgid = task->tgid, tid = task->pid;
	bool group_exit = sig->flags & SPYRE_SIGNAL_GROUP_EXIT;
	struct tstack *st = find_stack(task, tid);
	struct spyre_event *e;

	if (st) {
		if (!group_exit && st->depth)
			pop_dead_frames(st, st->depth, ~0ull, POP_RETURN, bpf_ktime_get_ns());
		else if (st->depth)
			emit_all_left(task, st, tgid, tid);	/* current: its own regs */
		st->depth = 0;
		if (stage_events)
			flush_stage(st);
		/* its last name: /proc will not have it when userspace looks at the end */
		check_rename(st, tgid);
		if (!task_storage)
			bpf_map_delete_elem(&stacks, &tid);
	}
	if (sig->live.counter || !bpf_map_lookup_elem(&traced_procs, &tgid))
		return 0;
	bpf_map_delete_elem(&traced_procs, &tgid);
	/* its interpreter's place: a later process with its pid walks nothing of it */
	bpf_map_delete_elem(&py_procs, &tgid);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return 0;	/* userspace still sees the process gone, without its code */
	__builtin_memset(e, 0, sizeof(*e));
	e->exit.code = group_exit ? sig->group_exit_code : task->exit_code;
	record_head(e, SPYRE_EV_EXIT, bpf_ktime_get_ns(), 0, tgid, tid, 0, 0);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* --follow: a traced process's new child process (not a new thread) is traced too. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(spyre_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	if (ptgid == ctgid || !bpf_map_lookup_elem(&tgids, &ptgid))
		return 0;
	bpf_map_update_elem(&tgids, &ctgid, &one, BPF_ANY);
	return 0;
}

/* Set by userspace around a run of spyre_task_iter that should also forget the stacks. */
volatile __u32 forget_stacks = 0;

/*
 * Run by userspace (bpf_iter) once the probes are detached, when no program can be touching a
 * thread's storage: flushes what live threads still hold in their stage, reports their open
 * calls (emit_left) and, with forget_stacks (every detach sets it), drops their open frames and
 * has them announced again to the next window's trace. Loaded only with task storage.
 */
SEC("iter/task")
int spyre_task_iter(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct tstack *st;

	if (!task)
		return 0;
	st = bpf_task_storage_get(&task_stacks, task, 0, 0);
	if (!st)
		return 0;
	if (stage_events)
		flush_stage(st);
	if (st->depth)
		emit_all_left(task, st, task->tgid, task->pid);
	if (forget_stacks) {
		st->depth = 0;
		st->known = 0;
	}
	return 0;
}
