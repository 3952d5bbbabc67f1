/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a call's record carries besides its head: its arguments, its dereferenced words, its
 * string, the records before it.
 * A part of bpf/spyre.bpf.c, which includes the parts in order: each uses what the ones
 * before it define.
 */
#ifndef SPYRE_SPYRE_RECORD_BPF_H
#define SPYRE_SPYRE_RECORD_BPF_H

static __always_inline void read_args(struct pt_regs *ctx, __u64 *a)
{
	a[0] = PT_REGS_PARM1(ctx);
	a[1] = PT_REGS_PARM2(ctx);
	a[2] = PT_REGS_PARM3(ctx);
	a[3] = PT_REGS_PARM4(ctx);
	a[4] = PT_REGS_PARM5(ctx);
#if defined(__TARGET_ARCH_s390)
	/* s390x passes the sixth integer argument on the stack, in the caller's parameter area
	 * past its 160-byte register save area: 160(%r15) at entry */
	a[5] = 0;
	bpf_probe_read_user(&a[5], sizeof(a[5]), (void *)(PT_REGS_SP(ctx) + 160));
#else
	a[5] = SPYRE_PARM6(ctx);
#endif
}

/* A record made at a function's entry: its arguments, no duration, no return value. */
static __always_inline void fill_entry(struct pt_regs *ctx, struct spyre_event *e, __u64 ts,
				       __u32 tgid, __u32 tid, __u32 probe, __u16 type)
{
	read_args(ctx, e->call.args);
	record_call(e, type, ts, 0, tgid, tid, probe, 0, NULL, 0);
}

/*
 * A mem=free span's arguments at its entry (SPYRE_CK_MEM_ENTRY). Not counted as a drop when the
 * ring is full: the span still carries the pointer, and userspace takes the free from it when
 * no entry record came first (memledger.c), so a probe's drops stay one per lost call.
 */
static __always_inline void mem_entry(struct pt_regs *ctx, __u32 tgid, __u32 tid, __u32 probe)
{
	struct spyre_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e)
		return;
	fill_entry(ctx, e, bpf_ktime_get_ns(), tgid, tid, probe, SPYRE_EV_MEM_ENTRY);
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

static __always_inline void count_fault(__u32 probe)
{
	struct spyre_counters *c = counters_of(probe);

	if (c)
		COUNT(c, deref_faults);
}

/*
 * The dereferences of @r into call record @e, whose args and ret are in place: each the u64 at
 * its base (an argument as at entry, the return value, the hidden result pointer) + offset, as
 * user memory is now. A fault gives 0 and is counted. At a tail jump (@jump) the function has
 * not returned: its return value and its result are not there yet, they read as 0.
 */
static __always_inline void read_derefs(struct spyre_event *e, const struct spyre_read_cfg *r,
					bool jump)
{
	for (int i = 0; i < SPYRE_MAX_DEREFS; i++) {
		__u32 src = r->src[i], k = src - 1;
		__u64 base, v = 0;

		if (!src || (jump && src >= SPYRE_DEREF_RET)) {
			e->call.deref[i] = 0;
			continue;
		}
		if (src == SPYRE_DEREF_SRET || k >= SPYRE_MAX_ARGS)
			k = 0;	/* the hidden pointer is argument 1 on every ABI we run on */
		base = src == SPYRE_DEREF_RET ? e->call.ret : e->call.args[k];
		if (bpf_probe_read_user(&v, sizeof(v), (void *)(base + r->off[i]))) {
			v = 0;
			count_fault(e->probe);
		}
		e->call.deref[i] = v;
	}
}

/*
 * Record @out of kind @type goes right before call record @e in the same ring record (its
 * string, Python stack or native stack): the call's ts, dur, ids, probe and depth, which the
 * consumer matches it by.
 */
static __always_inline void before_call(struct spyre_event *out, const struct spyre_event *e,
					__u16 type)
{
	record_head(out, type, e->ts, e->dur, e->tgid, e->tid, e->probe, e->depth);
}

/*
 * The string of @r's call @e into @out (a SPYRE_EV_STR record): argument str_arg is a
 * libstdc++ std::string * (its data pointer at +0, its length at +8; the chars are
 * NUL-terminated there) or a const char *. At most SPYRE_STR_LEN - 1 chars: a longer
 * std::string keeps its end, after SPYRE_STR_HEAD_CUT (a kernel name's "#<step>" is at its end).
 */
static __always_inline void read_str(struct spyre_event *out, const struct spyre_event *e,
				     const struct spyre_read_cfg *r)
{
	const __u32 cut = sizeof(SPYRE_STR_HEAD_CUT) - 1;
	__u32 k = r->str_arg - 1;
	__u64 p, h[2];
	long n = -1, len = -1;

	if (k >= SPYRE_MAX_ARGS)
		k = 0;
	p = e->call.args[k];
	if (r->str_kind != SPYRE_STR_CXX) {
		n = bpf_probe_read_user_str(out->str.s, sizeof(out->str.s), (void *)p);
	} else if (!bpf_probe_read_user(h, sizeof(h), (void *)p)) {
		len = h[1];
		if (h[1] < sizeof(out->str.s)) {
			n = bpf_probe_read_user_str(out->str.s, sizeof(out->str.s), (void *)h[0]);
		} else {
			__builtin_memcpy(out->str.s, SPYRE_STR_HEAD_CUT, cut);
			n = bpf_probe_read_user_str(out->str.s + cut, sizeof(out->str.s) - cut,
						    (void *)(h[0] + h[1] -
							     (sizeof(out->str.s) - cut - 1)));
			n += n > 0 ? cut : 0;
		}
	}
	out->str.fault = n <= 0;
	if (n <= 0) {
		out->str.s[0] = 0;
		n = 1;
		len = -1;
		count_fault(e->probe);
	}
	out->str.len = len >= n ? len : n - 1;
	before_call(out, e, SPYRE_EV_STR);
}

#endif
