/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * BPF code both programs need (spyre.bpf.c for uprobes, vfio.bpf.c for the driver tier): the
 * fields every record has, a call's record, the record that announces a thread. Include after vmlinux.h and the libbpf BPF headers.
 */
#ifndef SPYRE_COMMON_BPF_H
#define SPYRE_COMMON_BPF_H

#include "spyre_event.h"

/*
 * libbpf 1.1's bpf_tracing.h names powerpc's stack pointer "sp", a field struct pt_regs does
 * not have there (later libbpf fixed it): the ABI's stack pointer is r1.
 */
#if defined(__TARGET_ARCH_powerpc)
#undef __PT_SP_REG
#define __PT_SP_REG gpr[1]
#endif

/*
 * The fields every record kind has (before and after its body): set in this one place, so that
 * no kind leaves one of a reused stage or ring slot as an earlier record had it. @key is the
 * probe index of a call's records, the device of an ioctl's (the union probe/rdev), 0 else.
 */
static __always_inline void record_head(struct spyre_event *e, __u16 type, __u64 ts, __u64 dur,
					__u32 tgid, __u32 tid, __u32 key, __u16 depth)
{
	e->ts = ts;
	e->dur = dur;
	e->tgid = tgid;
	e->tid = tid;
	e->probe = key;
	e->type = type;
	e->depth = depth;
}

/*
 * A call's record (a span, an instant, an entry, an unwound or unreturned call): its head, its
 * entry arguments @args (NULL: the caller has put them there), its raw return value @ret (0:
 * none), and no dereferenced words (read_derefs reads them after this).
 */
static __always_inline void record_call(struct spyre_event *e, __u16 type, __u64 ts, __u64 dur,
					__u32 tgid, __u32 tid, __u32 probe, __u16 depth,
					const __u64 *args, __u64 ret)
{
	record_head(e, type, ts, dur, tgid, tid, probe, depth);
	if (args)
		__builtin_memcpy(e->call.args, args, sizeof(e->call.args));
	e->call.ret = ret;
	e->call.deref[0] = 0;
	e->call.deref[1] = 0;
}

/* The number of @p in the innermost PID namespace it lives in (what the container sees). */
static __always_inline __u32 ns_nr(struct pid *p)
{
	unsigned int level = BPF_CORE_READ(p, level);
	int nr = 0;

	/* levels are < MAX_PID_NS_LEVEL (32); the mask keeps the verifier sure of it */
	bpf_core_read(&nr, sizeof(nr), &p->numbers[level & 31].nr);
	return nr;
}

/*
 * Fill a reserved record with SPYRE_EV_THREAD for the current thread: its comm and its
 * process's, cgroup id, and the pids inside its own PID namespace (struct spyre_rec_thread).
 * Sent once per thread so that threads that exit before userspace reads /proc still get their
 * names.
 */
static __always_inline void fill_thread_event(struct spyre_event *e)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();

	__builtin_memset(e, 0, sizeof(*e));
	bpf_get_current_comm(e->thread.comm, sizeof(e->thread.comm));
	BPF_CORE_READ_STR_INTO(&e->thread.proc_comm, task, group_leader, comm);
	e->thread.cgroup_id = bpf_get_current_cgroup_id();
	e->thread.ns_pid = ns_nr(BPF_CORE_READ(task, group_leader, thread_pid));
	e->thread.ns_tid = ns_nr(BPF_CORE_READ(task, thread_pid));
	record_head(e, SPYRE_EV_THREAD, bpf_ktime_get_ns(), 0, id >> 32, (__u32)id, 0, 0);
}

#endif
