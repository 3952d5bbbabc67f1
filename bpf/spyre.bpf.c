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
