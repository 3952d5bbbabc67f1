/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The uprobe object's state: the ABI's registers, a thread's open calls (struct tstack), the
 * maps, the settings userspace writes before load, the per-probe counters, sampling and the rate
 * cap, and the thread's stack found or made.
 * A part of bpf/spyre.bpf.c, which includes the parts in order: each uses what the ones
 * before it define.
 */
#ifndef SPYRE_SPYRE_STATE_BPF_H
#define SPYRE_SPYRE_STATE_BPF_H


/* libbpf 1.1's bpf_tracing.h stops at PARM5; the sixth integer argument register per ABI. */
#if defined(__TARGET_ARCH_x86)
#define SPYRE_PARM6(ctx) ((ctx)->r9)
#elif defined(__TARGET_ARCH_powerpc)
#define SPYRE_PARM6(ctx) ((ctx)->gpr[8])
#endif

/*
 * Calls are paired with their returns by the stack pointer, as the kernel pairs its return
 * instances: at a probed entry sp points at the return address; when the uretprobe runs, the
 * return has popped it on x86 (the other ABIs return through a link register). At a return
 * site (the function's own return instruction, or its tail jump) sp is back where it was at
 * entry on every ABI.
 */
#if defined(__TARGET_ARCH_x86)
#define SPYRE_RET_SP_ADJ 8
#else
#define SPYRE_RET_SP_ADJ 0
#endif

#define TRACK_MASK	(SPYRE_TRACK_DEPTH - 1)
#define RECORD_MASK	(SPYRE_MAX_DEPTH - 1)

/* What a recorded call (depth < SPYRE_MAX_DEPTH) keeps until its return. */
struct frame {
	__u64 ts;
	__u64 args[SPYRE_MAX_ARGS];	/* as struct spyre_rec_call has them */
	__u32 record;	/* 0: sampled out or over the rate cap; popped without an event */
	__u32 mem;	/* SPYRE_CK_*: from the entry's cookie */
	__s64 ustack;	/* SPYRE_CK_USTACK: the stack's id in ustacks, or -errno */
	__u64 ucaller;	/* ... and the return address at entry (spyre_rec_ustack.caller) */
};

struct tstack {
	__u32 depth;	/* may exceed SPYRE_TRACK_DEPTH: calls past it are counted, not tracked */
	__u32 known;	/* the thread was announced (task storage starts zeroed) */
	__u32 nstaged;	/* finished spans waiting in stage[] */
	__u32 pad;
	__u64 staged_since;	/* when stage[0] was filled */
	__u64 comm[2];		/* the thread's name as last announced */
	__u64 sp[SPYRE_TRACK_DEPTH];	/* open call i: sp at its entry (identifies the call) */
	__u32 probe[SPYRE_TRACK_DEPTH];	/* ... and its probe */
	__u8 jumped[SPYRE_TRACK_DEPTH];	/* ... left by a followed tail jump: TAIL_* */
	struct frame f[SPYRE_MAX_DEPTH];
	struct spyre_event stage[SPYRE_STAGE];
	/*
	 * Python (SPYRE_CK_PY): the thread's PyThreadState as last found (0: none), checked
	 * against its tid at each use; when none was found, when it was last looked for
	 */
	__u64 py_ts;
	__u64 py_miss_at;
	__u32 py_tid;		/* the thread's tid in its PID namespace (0: not read yet) */
	__u64 py_fr;		/* the walk's cursor: a thread state, then a frame */
	__u8 pyn[SPYRE_MAX_DEPTH];	/* recorded call i: frames in py[i] */
	__u8 pyflags[SPYRE_MAX_DEPTH];	/* ... SPYRE_PY_* */
	__u64 py[SPYRE_MAX_DEPTH][SPYRE_PY_FRAMES];	/* ... its Python stack at entry */
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);	/* resized by userspace before load */
} events SEC(".maps");

/*
 * The per-thread stacks live in task storage where the kernel lets uprobe programs use it:
 * a lookup there is a pointer chase from current, where a hash map hashes the tid on entry
 * and again on return (~30 ns of a ~130 ns pair), and the kernel frees a stack with its task.
 * Userspace probes for the helper and sets this before load.
 */
const volatile bool task_storage = false;

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tstack);
} task_stacks SEC(".maps");

/*
 * A ring buffer reservation costs a lock and two atomics (~35 ns here, a quarter of what our
 * programs add to a call): with task storage, a thread's finished spans are collected in its
 * own storage and handed over SPYRE_STAGE at a time. Only the thread itself touches its stage,
 * so no lock is needed; what is left in it is flushed when the thread exits (spyre_task_exit)
 * and, after the probes are detached, by userspace through spyre_flush_iter. Set with
 * task_storage by userspace (SPYRE_NO_STAGE=1 turns it off).
 */
const volatile bool stage_events = false;

/*
 * The fallback: an LRU hash by tid, so threads that die with open frames cannot fill it for
 * good (shrunk to one entry by userspace when task storage is used).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct tstack);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SPYRE_PROBE_ROOM);	/* sized by userspace before load */
	__type(key, __u32);
	__type(value, struct spyre_counters);
} counters SEC(".maps");

/* What SPYRE_CK_READ probes read (dereferences, strings); sized like counters. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPYRE_PROBE_ROOM);
	__type(key, __u32);
	__type(value, struct spyre_read_cfg);
} probe_reads SEC(".maps");

/* Token bucket per process (--rate-cap): nanoseconds of credit, refilled with time. */
struct rate_bucket {
	__u64 credit;
	__u64 last;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct rate_bucket);
} buckets SEC(".maps");

/* Record 1 in sample_every calls (<= 1: all), chosen at random so that the periodic call
 * patterns of a training loop cannot alias with the sampling period. */
const volatile __u32 sample_every = 1;
/* Rate cap: an event costs rate_cost_ns of credit, the bucket holds rate_burst_ns; 0 = off. */
const volatile __u64 rate_cost_ns = 0;
const volatile __u64 rate_burst_ns = 0;

/*
 * --follow: probes are attached to every process and these are the ones traced: the target,
 * and the processes it forks (added by the fork tracepoint below, before the child runs).
 */
const volatile bool filter_tgids = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} tgids SEC(".maps");

/* Processes with traced threads: their end is reported (SPYRE_EV_EXIT). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} traced_procs SEC(".maps");

static __always_inline bool traced_tgid(__u32 tgid)
{
	return !filter_tgids || bpf_map_lookup_elem(&tgids, &tgid);
}

/*
 * Cleared by userspace before it removes the probes: removing them takes an RCU grace period
 * (~0.3 s), during which entries would still fire and, their return probes already gone, pile
 * up frames that never close. Calls already open still complete and are recorded.
 */
volatile __u32 tracing_on = 1;

/* Python processes: where their interpreter is and its version's offsets (SPYRE_CK_PY). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct spyre_py_proc);
} py_procs SEC(".maps");

/*
 * Native stacks of stack= calls (SPYRE_CK_USTACK), as build ids and file offsets: named in
 * userspace, after the process may be gone (stream/ustack.c). Sized 1 by the loader when no
 * probe asks (its kernel memory is allocated at creation: 8192 stacks of 1 KiB).
 */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, SPYRE_USTACK_MAX);
	__uint(map_flags, BPF_F_STACK_BUILD_ID);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, SPYRE_USTACK_FRAMES * sizeof(struct bpf_stack_build_id));
} ustacks SEC(".maps");

/* All-zero template for a new thread's stack: too large for the 512-byte BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tstack);
} zero_stack SEC(".maps");

static __always_inline struct spyre_counters *counters_of(__u32 probe)
{
	return bpf_map_lookup_elem(&counters, &probe);
}

/*
 * One more in a per-CPU counter. Atomic although the slot is this CPU's: a uprobe program runs
 * with only migration off, so on a preemptible kernel (Debian's 7.3.4 boots preempt=full)
 * another thread of the job can run between the read and the write of a plain ++ on the same
 * CPU, and one of the two counts is lost. A locked add to a line this CPU owns costs a few ns of
 * a call's microseconds.
 */
#define COUNT(c, field) __sync_fetch_and_add(&(c)->field, 1)

/*
 * Off the JIT's private stack. Since 6.14 the x86-64 JIT gives a kprobe-type program a per-CPU
 * stack of its own when one of its frames is 64 bytes or more (ours are up to 168). A uprobe
 * program runs preemptible (above): on Debian's 7.3.4, whose x86 build offers only preempt=full
 * and lazy, a thread preempted inside one of our programs and a second thread of the job
 * entering the same program on that CPU share that stack and overwrite each other's locals.
 * Measured there (QEMU guest, one CPU, the mock job with 2 threads): with the BPF doing returns,
 * the job jumped to an address on its own stack and died; with single-stepped returns, returns
 * were missed; the same objects with the JIT off, on 6.12 (voluntary) and on this host (6.18,
 * preempt none) passed. The verifier gives no private stack to a program that has a tail call,
 * so each program holds one that is never taken: @no_tail_calls stays 0 (in .bss, not rodata,
 * so the verifier cannot prune the call). Each program has its own empty program array: the
 * kernel binds an array to the kind of program that used it first. The interpreter refuses tail
 * calls in programs with bpf-to-bpf calls; with the JIT off (no private stack either) the loader
 * turns each of these calls into r0 = 0 (bpf_strip_tail_calls). The JITs of s390x and
 * ppc64le have no private stacks.
 */
#if defined(__TARGET_ARCH_x86)
volatile __u32 no_tail_calls;

#define PRIV_STACK_OFF_MAP(prog)						\
	struct {								\
		__uint(type, BPF_MAP_TYPE_PROG_ARRAY);				\
		__uint(max_entries, 1);						\
		__type(key, __u32);						\
		__type(value, __u32);						\
	} prog##_tails SEC(".maps")
#define priv_stack_off(ctx, prog)						\
	do {									\
		if (no_tail_calls)						\
			bpf_tail_call(ctx, &prog##_tails, 0);			\
	} while (0)
#else
#define PRIV_STACK_OFF_MAP(prog) struct prog##_tails_unused
#define priv_stack_off(ctx, prog) do { } while (0)
#endif

/* Should this call be recorded? Sampling first (free), then the per-process rate cap. */
/* rodata: the verifier prunes the sampling code away when it is off */
static __always_inline bool sampling_off(void)
{
	return sample_every <= 1 && !rate_cost_ns;
}

static __always_inline bool want_event(__u64 now, __u32 tgid, struct spyre_counters *c)
{
	struct rate_bucket *b, nb = {};
	__u64 credit;

	if (sample_every > 1 && bpf_get_prandom_u32() % sample_every) {
		if (c)
			COUNT(c, sampled_out);
		return false;
	}
	if (!rate_cost_ns)
		return true;
	b = bpf_map_lookup_elem(&buckets, &tgid);
	if (!b) {
		nb.credit = rate_burst_ns;
		nb.last = now;
		bpf_map_update_elem(&buckets, &tgid, &nb, BPF_NOEXIST);
		b = bpf_map_lookup_elem(&buckets, &tgid);
		if (!b)
			return true;
	}
	/* CPUs race on the bucket; an approximate cap is fine, a lock per call is not */
	credit = b->credit + (now - b->last);
	if (credit > rate_burst_ns)
		credit = rate_burst_ns;
	b->last = now;
	if (credit < rate_cost_ns) {
		b->credit = credit;
		if (c)
			COUNT(c, drops_rate);
		return false;
	}
	b->credit = credit - rate_cost_ns;
	return true;
}

/*
 * Tell userspace a thread's names when it is first seen (see SPYRE_EV_THREAD), and again when
 * it renamed itself since (check_rename); @st keeps the name sent.
 */
static __always_inline void announce_thread(__u32 tgid, struct tstack *st)
{
	struct spyre_event *e;
	__u8 one = 1;

	bpf_get_current_comm(st->comm, sizeof(st->comm));
	bpf_map_update_elem(&traced_procs, &tgid, &one, BPF_ANY);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return;	/* userspace falls back to /proc for the name */
	fill_thread_event(e);
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/*
 * A thread named after its first traced call (pthread_setname_np, prctl PR_SET_NAME) is
 * announced again. Looked at only where the thread hands over its staged spans (every
 * SPYRE_STAGE of them, or SPYRE_STAGE_MAX_NS) and at its exit, not on each call: the comm
 * read is a helper call. Userspace reads /proc at the end for the threads still alive.
 */
static __always_inline void check_rename(struct tstack *st, __u32 tgid)
{
	__u64 comm[2];

	if (bpf_get_current_comm(comm, sizeof(comm)) ||
	    (comm[0] == st->comm[0] && comm[1] == st->comm[1]))
		return;
	announce_thread(tgid, st);
}

/* The thread's stack of open calls, or NULL if it has none yet. */
static __always_inline struct tstack *find_stack(struct task_struct *task, __u32 tid)
{
	if (task_storage)
		return bpf_task_storage_get(&task_stacks, task, 0, 0);
	return bpf_map_lookup_elem(&stacks, &tid);
}

/* The thread's stack of open calls, created (and the thread announced) on first use. */
static __always_inline struct tstack *thread_stack(struct task_struct *task, __u32 tid)
{
	struct tstack *st, *z;
	__u32 zero = 0;

	if (task_storage) {
		st = bpf_task_storage_get(&task_stacks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (st && !st->known) {
			st->known = 1;
			announce_thread(task->tgid, st);
		}
		return st;
	}
	st = bpf_map_lookup_elem(&stacks, &tid);
	if (st)
		return st;
	z = bpf_map_lookup_elem(&zero_stack, &zero);
	if (!z)
		return NULL;
	if (bpf_map_update_elem(&stacks, &tid, z, BPF_NOEXIST))
		return bpf_map_lookup_elem(&stacks, &tid);	/* lost a race with ourselves? */
	st = bpf_map_lookup_elem(&stacks, &tid);
	if (st)
		announce_thread(task->tgid, st);
	return st;
}

#endif
