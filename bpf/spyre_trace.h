/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Shared between the BPF programs and the userspace loader: fixed-size types only, so the
 * layout is identical in both compilations.
 */
#ifndef SPYRE_TRACE_H
#define SPYRE_TRACE_H

#define SPYRE_MAX_ARGS		6
/*
 * Probe index travels as the attach cookie; it also indexes the per-probe counters, a per-CPU
 * array the loader sizes before load (tracer_room in user/tracer.c): at least
 * SPYRE_PROBE_ROOM entries; the functions of one run, at most SPYRE_MAX_PROBES unless
 * --max-probes says otherwise.
 */
#define SPYRE_PROBE_ROOM	1024
#define SPYRE_MAX_PROBES	65536
/*
 * Where the kernel has no uprobe_multi (before 6.6), one perf event per uprobe: each holds a
 * file descriptor, and the kernel removes them one at a time, a grace period each (~47 ms
 * here: 1024 take ~50 s to detach, see tracer_detach). Entries and return sites of one run,
 * at most.
 */
#define SPYRE_PERF_MAX_UPROBES	1024
/* Nesting depth of traced calls recorded per thread; deeper calls are counted as drops. */
#define SPYRE_MAX_DEPTH		16
/*
 * Nesting depth up to which a thread's open calls are still tracked (their stack pointer and
 * probe, not their arguments): a call left by an exception or a longjmp is then found and
 * counted as unwound even past SPYRE_MAX_DEPTH, and the thread's depth comes back down.
 * Deeper than this, calls are only counted; they are all dropped together once the thread is
 * seen above the deepest tracked one. A power of two (the BPF masks indexes with it).
 */
#define SPYRE_TRACK_DEPTH	64
/*
 * Finished spans a thread collects before it hands them to the ring buffer in one record (see
 * stage_events in bpf/spyre.bpf.c): a ring record holds 1..SPYRE_STAGE spyre_events.
 */
#define SPYRE_STAGE		16
/* ... or once the oldest of them is this old, at the thread's next return */
#define SPYRE_STAGE_MAX_NS	(20 * 1000 * 1000ull)

enum spyre_event_type {
	SPYRE_EV_SPAN = 1,	/* entry + return of one call */
	SPYRE_EV_INSTANT = 2,	/* entry only (e.g. a completion callback) */
	SPYRE_EV_THREAD = 3,	/* first traced call of a thread: args hold names, see below */
	SPYRE_EV_IOCTL = 4,	/* one driver ioctl (bpf/vfio.bpf.c), see below */
	SPYRE_EV_EXIT = 5,	/* a traced process ended: args[0] is its exit code, see below */
	SPYRE_EV_MEM_ENTRY = 6,	/* a mem=free span's entry: its args, at once (see below) */
};

/*
 * Entry and instant probes of mem= functions (probes.h) carry these above the probe index in
 * their attach cookie. A device memory ledger needs every call (no --sample-every, no
 * --rate-cap) and needs an allocation in the ring before any free of its pointer: the span is
 * handed over at its return instead of waiting in the thread's stage, and a free also sends
 * its arguments at entry (SPYRE_EV_MEM_ENTRY), before the allocator can give the pointer to
 * another thread.
 */
#define SPYRE_CK_MEM		0x1	/* every call recorded, delivered at once */
#define SPYRE_CK_MEM_ENTRY	0x2	/* a record at entry too (mem=free spans) */

/*
 * SPYRE_EV_EXIT: sent when the last thread of a process that had traced calls exits. args[0]
 * holds the kernel's exit code as wait(2) would report it: a fatal signal in bits 0-6, 0x80
 * when it dumped core, an exit status in bits 8-15.
 */
#define SPYRE_EXIT_CODE		0

/*
 * SPYRE_EV_THREAD: sent once per thread, when its first traced call creates its stack, so
 * threads that exit before userspace looks at /proc still get their real names.
 */
#define SPYRE_COMM_LEN		16
#define SPYRE_THREAD_COMM(e)	((char *)&(e)->args[0])	/* 16 bytes: the thread's comm */
#define SPYRE_PROCESS_COMM(e)	((char *)&(e)->args[2])	/* 16 bytes: its process's comm */
/* args[4]: cgroup id; args[5]: (pid << 32 | tid) as seen in the task's own PID namespace */

struct spyre_event {
	__u64 ts;			/* entry, bpf_ktime_get_ns() == CLOCK_MONOTONIC */
	__u64 dur;			/* ns; 0 for instants */
	__u64 args[SPYRE_MAX_ARGS];	/* raw argument registers at entry */
	__u64 ret;			/* raw return register */
	__u32 tgid;
	__u32 tid;
	__u32 probe;			/* index in the userspace probe list (cookie) */
	__u16 type;			/* enum spyre_event_type */
	__u16 depth;			/* nesting depth on this thread at entry, 0 = outermost */
};

/*
 * SPYRE_EV_IOCTL: a VFIO ioctl of the traced process, from kernel entry to return, on the
 * calling thread (bpf/vfio.bpf.c). ret is the ioctl's return value (negative errno), probe the
 * file's i_rdev (kernel dev_t: major << 20 | minor; 0 for anon inodes), depth 0.
 */
#define SPYRE_IOCTL_CMD		0	/* args[]: the ioctl command */
#define SPYRE_IOCTL_FD		1	/* fd as a signed 64-bit value, -1 when unknown */
#define SPYRE_IOCTL_IOVA	2	/* MAP/UNMAP_DMA: iova from the user's struct */
#define SPYRE_IOCTL_SIZE	3	/* MAP/UNMAP_DMA: size from the user's struct */
#define SPYRE_IOCTL_ARG		4	/* MAP_DMA: vaddr; otherwise the raw ioctl argument */
#define SPYRE_IOCTL_META	5	/* path | func << 8 | flags << 16 | (u32)i_ino << 32 */

enum spyre_drv_path {
	SPYRE_DRV_OFF = 0,
	SPYRE_DRV_FENTRY = 1,
	SPYRE_DRV_KPROBE = 2,
	SPYRE_DRV_TRACEPOINT = 3,
};

#define SPYRE_IOCTL_F_DMA	0x1	/* iova/size (and vaddr) were read from the user struct */
#define SPYRE_IOCTL_F_FILE	0x2	/* rdev and ino come from the struct file */
#define SPYRE_IOCTL_F_FD	0x4	/* the fd is known */
/* Kernel functions the fentry/kprobe paths attach to, at most (func index in META). */
#define SPYRE_DRV_MAX_FUNCS	8
#define SPYRE_DRV_NO_FUNC	0xff	/* tracepoint path */

/* Driver tier counters, per CPU. */
struct spyre_drv_counters {
	__u64 hits;		/* entries of the traced process that passed the filters */
	__u64 drops_ring;	/* ringbuf reservation failed */
	__u64 unmatched;	/* return without a seen entry */
	__u64 nested;		/* entries inside an open ioctl (one probed function calling
				 * another): folded into the outer span */
	__u64 unpaired;		/* records given up, no span: their return was missed (the
				 * thread's next ioctl found them open) or the syscall that
				 * returned was another one (tracepoint path) */
};

/* Per-probe, per-CPU counters; userspace sums the CPUs. */
struct spyre_counters {
	__u64 hits;		/* entries seen */
	__u64 drops_ring;	/* ringbuf reservation failed */
	__u64 drops_depth;	/* nesting deeper than SPYRE_MAX_DEPTH or no stack slot */
	__u64 unmatched;	/* return without a matching entry */
	__u64 sampled_out;	/* not recorded by --sample-every (by design, not a loss) */
	__u64 drops_rate;	/* not recorded: the process was over its --rate-cap */
	__u64 unwound;		/* calls left without returning: exception, longjmp, thread
				 * cancel or exit (found when the stack is seen above them) */
	__u64 tail_exits;	/* calls ended at a tail jump (return sites): the span stops
				 * at the jump and the return value is not known */
};

#endif /* SPYRE_TRACE_H */
