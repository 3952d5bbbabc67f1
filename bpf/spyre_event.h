/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Shared between the BPF programs and the userspace loader: fixed-size types only, so the
 * layout is identical in both compilations.
 */
#ifndef SPYRE_EVENT_H
#define SPYRE_EVENT_H

#define SPYRE_MAX_ARGS		6
/*
 * Probe index travels as the attach cookie; it also indexes the per-probe counters, a per-CPU
 * array the loader sizes before load (tracer_room in user/attach/uprobe_tier.c): at least
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
 * probe, not their arguments): a call left by an exception or a longjmp is then found even
 * past SPYRE_MAX_DEPTH, and the thread's depth comes back down. Deeper than this, calls are
 * only counted; they are all dropped together once the thread is seen above the deepest
 * tracked one. Either way a call too deep to record is counted once, as too deep, whether it
 * returns or not. A power of two (the BPF masks indexes with it).
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
	SPYRE_EV_SPAN = 1,	/* entry + return of one call (struct spyre_rec_call) */
	SPYRE_EV_INSTANT = 2,	/* entry only, e.g. a completion callback (spyre_rec_call) */
	SPYRE_EV_THREAD = 3,	/* first traced call of a thread: its names (spyre_rec_thread) */
	SPYRE_EV_IOCTL = 4,	/* one driver ioctl, bpf/vfio.bpf.c (spyre_rec_ioctl) */
	SPYRE_EV_EXIT = 5,	/* a traced process ended (spyre_rec_exit) */
	SPYRE_EV_MEM_ENTRY = 6,	/* a mem=free span's entry: its args, at once (spyre_rec_call) */
	SPYRE_EV_UNWOUND = 7,	/* a call left by an exception, longjmp or cancel: its entry
				 * args, from its entry to where the unwind was seen; ret 0
				 * (spyre_rec_call) */
	SPYRE_EV_STR = 8,	/* a str= probe's string, right before its call's record in the
				 * same ring record (spyre_rec_str) */
	SPYRE_EV_NORETURN = 9,	/* a call still open when its process exited or the
				 * probes were detached, not known to be left: its entry
				 * args, at its entry, no bound (spyre_rec_call) */
	SPYRE_EV_PYSTACK = 10,	/* a py= probe's Python stack at its call's entry, in 1..
				 * SPYRE_PY_RECS records right before its call's record (after
				 * its string's, if any) in the same ring record
				 * (spyre_rec_pystack) */
	SPYRE_EV_USTACK = 11,	/* a stack=1 probe's native stack id at its call's entry, right
				 * before its call's record (after its Python stack's, if any)
				 * in the same ring record (spyre_rec_ustack) */
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
 * The probe reads user memory (dereferences, a string: its struct spyre_read_cfg in the
 * probe_reads map, looked up only for these). Every call is recorded: a string names device
 * work and a dereference is usually a device key, neither can be sampled.
 */
#define SPYRE_CK_READ		0x4
/*
 * Device evidence and launches (dev=launch, sync, query): delivered at their return, not staged
 * with the thread's other spans, so the device timeline gets them in time order across threads
 * (staged, a training thread's synchronize reached it after the main thread's later
 * synchronizeDevice had already ended its ops: 4 of 100 spans ended after the wait that waited
 * for them). Sampled like any probe.
 */
#define SPYRE_CK_NOW		0x8
/*
 * --python or py=1: the entry walks the calling thread's CPython frames (struct spyre_py_proc
 * of its process) and the call's record carries them (SPYRE_EV_PYSTACK). Sampled like any
 * probe: the walk is made only for the calls recorded.
 */
#define SPYRE_CK_PY		0x20
/*
 * --ustack or stack=1: the entry takes the calling thread's native stack (frame pointers, the
 * kernel's walk) into the ustacks map, as build ids and file offsets, and the call's record
 * carries its id (SPYRE_EV_USTACK). Sampled like any probe.
 */
#define SPYRE_CK_USTACK		0x40
/*
 * Native frames a stack keeps at most, innermost first: the traced function itself, then its
 * callers (struct bpf_stack_build_id each, 32 bytes), and the stacks the ustacks map holds
 * (the same stack is stored once; a stack whose slot holds another is counted, not recorded).
 */
#define SPYRE_USTACK_FRAMES	32
#define SPYRE_USTACK_MAX	8192

/* Dereferences a call record carries (probes.h PROBE_MAX_DEREFS) */
#define SPYRE_MAX_DEREFS	2
#define SPYRE_DEREF_RET		7	/* spyre_read_cfg.src: the return value is the base */
#define SPYRE_DEREF_SRET	8	/* ... the hidden result pointer (argument 1) */
/*
 * Bytes of a str= string with its NUL (probes.h PROBE_STR_MAX + 1). A longer std::string keeps
 * its end, after "...": torch-spyre's kernel names are paths ending in "#<step>", the join key
 * to Inductor's kernels (SPYRE_STR_HEAD_CUT).
 */
#define SPYRE_STR_LEN		64
#define SPYRE_STR_HEAD_CUT	"..."
enum spyre_str_kind { SPYRE_STR_NONE = 0, SPYRE_STR_CXX = 1, SPYRE_STR_C = 2 };

/* What a SPYRE_CK_READ probe reads, by probe index (filled by the loader before attaching). */
struct spyre_read_cfg {
	__u8 src[SPYRE_MAX_DEREFS];	/* 0: none, 1..6: argument, SPYRE_DEREF_RET or _SRET */
	__u8 str_arg;			/* 1..6: the argument str= reads; 0: none */
	__u8 str_kind;			/* enum spyre_str_kind */
	__u16 off[SPYRE_MAX_DEREFS];	/* added to the base before the u64 read */
};

/*
 * A jump site's cookie: its x86 condition code + 1 in the low byte, and above it whether the
 * functions it jumps into have their returns probed (user/resolve/tailcall.h): then the call
 * is left open at the jump ("jumped") and closed where the target returns to its caller.
 * SPYRE_CK_TAIL_NEST: a traced function may be entered at the same stack pointer through the
 * chain; its entry then nests inside the jumped call instead of ending it.
 */
#define SPYRE_CK_COND_MASK	0xff
#define SPYRE_CK_TAIL_FOLLOW	0x100
#define SPYRE_CK_TAIL_NEST	0x200
/*
 * Which return-side uprobe a link of spyre_return is: a jump site (above), a return site of a
 * tail-called function; neither: a traced function's own return site.
 */
#define SPYRE_CK_SITE_JUMP	0x400
#define SPYRE_CK_SITE_TAIL	0x800
/*
 * A return site's (and a tail-called function's return site's) aux: the bytes an x86
 * `ret imm16` pops besides the return address, where the program performs the return itself
 * (emulated returns, bpf/spyre.bpf.c return_now).
 */
#define SPYRE_CK_POP_SHIFT	16
/*
 * An entry link's aux: the program does the probed entry instruction itself (x86-64 mov and
 * lea, struct spyre_entry_insn of the probe), so the kernel does not single-step it.
 */
#define SPYRE_CK_ENTRY_INSN	0x10

/*
 * An entry instruction a uprobe program can do exactly (user/resolve/entryinsn.h): the result
 * dst = base + index * scale + disp (zero-extended from 32 bits when w32), then ip += len; no
 * flags change. mov %src,%dst is base = src; mov $imm,%dst is base = index = NONE, disp = imm;
 * lea is itself, with base RIP for ip + len. Registers by their x86 encoding number (0 ax ...
 * 4 sp, 5 bp ... 15 r15). By probe index, written by the loader before attaching.
 */
#define SPYRE_EI_RIP	16
#define SPYRE_EI_NONE	17
struct spyre_entry_insn {
	__u8 len;	/* 0: none (the kernel single-steps or emulates it) */
	__u8 dst;
	__u8 base;	/* a register, SPYRE_EI_RIP or SPYRE_EI_NONE */
	__u8 index;	/* a register or SPYRE_EI_NONE */
	__u8 scale;	/* 1, 2, 4, 8 */
	__u8 w32;
	__u8 pad[2];
	__s64 disp;
};

/* Open calls a tail-called function's return can close at once (a chain of tail jumps). */
#define SPYRE_TAIL_CHAIN	8

/*
 * A uprobe's attach cookie is one 64-bit word: the probe index in its low half, and in its high
 * half a word that depends on the link (SPYRE_CK_MEM* of an entry or instant link, the x86 jcc
 * condition + 1 of a jump site, see user/resolve/retsite.h). Packed by the loader (user/attach/uprobe_tier.c),
 * unpacked by the programs.
 */
static inline __attribute__((always_inline)) __u64 spyre_cookie(__u32 probe, __u32 aux)
{
	return (__u64)aux << 32 | probe;
}

static inline __attribute__((always_inline)) __u32 spyre_cookie_probe(__u64 cookie)
{
	return (__u32)cookie;
}

static inline __attribute__((always_inline)) __u32 spyre_cookie_aux(__u64 cookie)
{
	return (__u32)(cookie >> 32);
}

/*
 * What a record carries between its common fields, one struct per record kind (by type), all
 * SPYRE_REC_BYTES long: struct spyre_event holds them in a union, so every record has the same
 * size, which the thread stages and the consumer's walk through a staged batch rely on.
 */
#define SPYRE_REC_BYTES		72

/* SPYRE_EV_SPAN, SPYRE_EV_INSTANT and SPYRE_EV_MEM_ENTRY: one call of probe `probe`. */
struct spyre_rec_call {
	__u64 args[SPYRE_MAX_ARGS];	/* raw argument registers at entry */
	__u64 ret;			/* raw return register; 0 for instants, entries and calls
					 * that ended at a tail jump */
	__u64 deref[SPYRE_MAX_DEREFS];	/* the u64s the probe's dereferences read (0: none or
					 * the read faulted) when the record was made */
};

/*
 * SPYRE_EV_STR: the string of a str= probe's call, read when its record was made; ts, tid and
 * probe are the call's. Sent right before the call's own record, in the same ring record.
 */
struct spyre_rec_str {
	/*
	 * NUL-terminated; a longer std::string is "..." and its last SPYRE_STR_LEN - 4 chars, a
	 * longer C string its first SPYRE_STR_LEN - 1
	 */
	char s[SPYRE_STR_LEN];
	__u32 len;			/* the string's length (a std::string's own), >= strlen(s) */
	__u32 fault;			/* 1: the string could not be read (s is "") */
};

/*
 * Python frames a call records at most (innermost first), and how many a SPYRE_EV_PYSTACK record
 * holds. A frame is one word: the code object's address in the low 48 bits (user addresses on
 * x86-64 4-level paging, s390x and ppc64le fit), and above it the index of the frame's current
 * instruction (in code units from the start of the bytecode) + 1: 0 when it is before the
 * first instruction, SPYRE_PY_IDX_UNKNOWN when it does not fit.
 */
#define SPYRE_PY_FRAMES		16
#define SPYRE_PY_PER_REC	8
#define SPYRE_PY_RECS		(SPYRE_PY_FRAMES / SPYRE_PY_PER_REC)
#define SPYRE_PY_ADDR_MASK	((1ull << 48) - 1)
#define SPYRE_PY_IDX_SHIFT	48
#define SPYRE_PY_IDX_UNKNOWN	0xffff
/* spyre_rec_pystack.flags */
#define SPYRE_PY_TRUNCATED	0x1	/* the thread had more frames than SPYRE_PY_FRAMES */
#define SPYRE_PY_FAULT		0x2	/* a read faulted: the stack ends early (frame torn down) */

/*
 * SPYRE_EV_PYSTACK: part @part of a call's Python stack; ts, tid and probe are the call's. A
 * thread running no Python (no thread state with its tid) sends none.
 */
struct spyre_rec_pystack {
	__u64 frame[SPYRE_PY_PER_REC];	/* see SPYRE_PY_FRAMES */
	__u8 n;				/* frames in this record */
	__u8 part;			/* 0 .. SPYRE_PY_RECS - 1 */
	__u8 nparts;			/* records of this stack */
	__u8 flags;			/* SPYRE_PY_* */
	__u32 total;			/* frames in the whole stack */
};

/*
 * SPYRE_EV_USTACK: the native stack of the call whose record follows; ts, tid and probe are the
 * call's. The frames are in the ustacks map (bpf_get_stackid, BPF_F_STACK_BUILD_ID) under id.
 */
struct spyre_rec_ustack {
	__s64 id;			/* >= 0: the map's key; < 0: -errno, no stack */
	/*
	 * The return address at the call's entry (x86-64: at sp; ppc64le: the link register;
	 * s390x: r14), 0 when unread: the caller's frame, which the kernel's frame-pointer walk
	 * skips where the traced function is entered on another instruction than `push %rbp` or
	 * `endbr64` (a leaf function; any function before Linux 6.13)
	 */
	__u64 caller;
	__u64 unused[7];
};

/*
 * What the entry program needs to find a thread's Python frames in one process: where the
 * interpreter list starts (&_PyRuntime.interpreters.head in the process) and the offsets of the
 * fields it follows, for that process's CPython version (user/resolve/pyrt.c has the table and
 * their sources). By tgid, written by the loader.
 */
struct spyre_py_proc {
	__u64 interp_head;	/* address of _PyRuntime.interpreters.head */
	__u16 interp_threads;	/* PyInterpreterState.threads.head */
	__u16 ts_next;		/* PyThreadState.next */
	__u16 ts_native_tid;	/* PyThreadState.native_thread_id (the tid in the process's
				 * own PID namespace) */
	__u16 ts_cframe;	/* PyThreadState.cframe */
	__u16 cframe_frame;	/* _PyCFrame.current_frame; SPYRE_PY_NO_CFRAME: ts_cframe is
				 * the thread state's own current_frame (3.13) */
	__u16 f_code;		/* _PyInterpreterFrame.f_code (3.13: f_executable) */
	__u16 f_previous;	/* _PyInterpreterFrame.previous */
	__u16 f_prev_instr;	/* _PyInterpreterFrame.prev_instr (3.13: instr_ptr) */
	__u16 code_bytecode;	/* PyCodeObject.co_code_adaptive: the first instruction */
	__u16 f_owner;		/* _PyInterpreterFrame.owner (a char); 0: frames have no
				 * FRAME_OWNED_BY_CSTACK entry frames to skip (3.11) */
	__u16 pad[2];
};
#define SPYRE_PY_NO_CFRAME	0xffff
#define SPYRE_PY_OWNED_BY_CSTACK	3	/* an entry frame of the C stack: no Python code */

/*
 * SPYRE_EV_THREAD: sent once per thread, when its first traced call creates its stack (and again
 * when it renamed itself since), so threads that exit before userspace looks at /proc still get
 * their real names.
 */
#define SPYRE_COMM_LEN		16
struct spyre_rec_thread {
	char comm[SPYRE_COMM_LEN];	/* the thread's comm, NUL-terminated by the kernel */
	char proc_comm[SPYRE_COMM_LEN];	/* its process's (the group leader's) comm */
	__u64 cgroup_id;
	__u32 ns_tid;			/* the thread and its process as seen in the task's own */
	__u32 ns_pid;			/* PID namespace (what a container sees) */
	__u64 unused[3];
};

/*
 * SPYRE_EV_IOCTL: a VFIO ioctl of the traced process, from kernel entry to return, on the
 * calling thread (bpf/vfio.bpf.c). The event's rdev is the file's i_rdev, 0 for anon inodes;
 * depth is 0.
 */
#define SPYRE_IOCTL_NAME_LEN	16
struct spyre_rec_ioctl {
	__u64 cmd;	/* the ioctl command (32 bits) */
	__s64 fd;	/* -1 when unknown (no SPYRE_IOCTL_F_FD) */
	__u64 iova;	/* MAP/UNMAP_DMA: iova from the user's struct (SPYRE_IOCTL_F_DMA) */
	__u64 size;	/* MAP/UNMAP_DMA: size from the user's struct */
	__u64 arg;	/* MAP_DMA: vaddr from the user's struct; else the raw ioctl argument */
	__u8 path;	/* enum spyre_drv_path: which front end saw it */
	__u8 func;	/* index of the probed kernel function; SPYRE_DRV_NO_FUNC: tracepoint */
	__u8 flags;	/* SPYRE_IOCTL_F_* */
	__u8 pad;
	__u32 ino;	/* the file's i_ino, low 32 bits (SPYRE_IOCTL_F_FILE) */
	__s64 ret;	/* the ioctl's return value (negative errno) */
	/* the file's dentry name, NUL-terminated, cut ("" unknown): "[vfio-device]", "vfio" */
	char name[SPYRE_IOCTL_NAME_LEN];
};

/*
 * SPYRE_EV_EXIT: sent when the last thread of a process that had traced calls exits, with the
 * kernel's exit code as wait(2) would report it: a fatal signal in bits 0-6, 0x80 when it dumped
 * core, an exit status in bits 8-15.
 */
struct spyre_rec_exit {
	__s64 code;
	__u64 unused[8];
};

struct spyre_event {
	__u64 ts;			/* entry, bpf_ktime_get_ns() == CLOCK_MONOTONIC */
	__u64 dur;			/* ns; 0 for instants and the records that are no span */
	union {				/* by type */
		struct spyre_rec_call call;
		struct spyre_rec_thread thread;
		struct spyre_rec_ioctl ioctl;
		struct spyre_rec_exit exit;
		struct spyre_rec_str str;
		struct spyre_rec_pystack py;
		struct spyre_rec_ustack ustack;
	};
	__u32 tgid;
	__u32 tid;
	union {
		__u32 probe;		/* calls: index in the userspace probe list (cookie) */
		__u32 rdev;		/* SPYRE_EV_IOCTL: kernel dev_t, see spyre_rdev_major() */
	};
	__u16 type;			/* enum spyre_event_type */
	__u16 depth;			/* calls: nesting depth on this thread at entry, 0 =
					 * outermost, | SPYRE_DEPTH_TAIL or _FOLLOWED; 0 for the
					 * other records */
};

/* In a span's depth: the call ended at a tail jump (no return value, no result written yet). */
#define SPYRE_DEPTH_TAIL	0x8000
/*
 * ... or it tail-jumped and ended where the chain returned to its caller (a followed tail call):
 * what the call did after its entry happened somewhere in the functions it jumped to.
 */
#define SPYRE_DEPTH_FOLLOWED	0x4000
/*
 * In an unwound record's depth: the call was found left only when the probes were detached or
 * its process exited, with no bound on when: an instant at its entry, not a span.
 */
#define SPYRE_DEPTH_UNBOUND	0x2000

/*
 * The layout every record kind shares (the record size is also the stride of a staged batch),
 * the same on both sides of the ring and the same as before the record kinds had names.
 */
#define SPYRE_EVENT_BYTES	104
#define SPYRE_OFF(t, f)		__builtin_offsetof(struct t, f)
_Static_assert(sizeof(struct spyre_rec_call) == SPYRE_REC_BYTES, "spyre_rec_call size");
_Static_assert(sizeof(struct spyre_rec_thread) == SPYRE_REC_BYTES, "spyre_rec_thread size");
_Static_assert(sizeof(struct spyre_rec_ioctl) == SPYRE_REC_BYTES, "spyre_rec_ioctl size");
_Static_assert(sizeof(struct spyre_rec_exit) == SPYRE_REC_BYTES, "spyre_rec_exit size");
_Static_assert(sizeof(struct spyre_rec_str) == SPYRE_REC_BYTES, "spyre_rec_str size");
_Static_assert(sizeof(struct spyre_rec_pystack) == SPYRE_REC_BYTES, "spyre_rec_pystack size");
_Static_assert(sizeof(struct spyre_rec_ustack) == SPYRE_REC_BYTES, "spyre_rec_ustack size");
_Static_assert(sizeof(struct spyre_py_proc) == 32, "py_proc: fixed layout");
_Static_assert(SPYRE_PY_RECS * SPYRE_PY_PER_REC == SPYRE_PY_FRAMES, "whole records");
_Static_assert(sizeof(struct spyre_event) == SPYRE_EVENT_BYTES, "spyre_event size");
_Static_assert(SPYRE_EVENT_BYTES % 8 == 0, "staged records keep their u64s aligned");
_Static_assert(SPYRE_OFF(spyre_event, call) == 16 &&
	       SPYRE_OFF(spyre_event, tgid) == 16 + SPYRE_REC_BYTES, "record body");
_Static_assert(SPYRE_OFF(spyre_event, probe) == 96 && SPYRE_OFF(spyre_event, rdev) == 96 &&
	       SPYRE_OFF(spyre_event, type) == 100 && SPYRE_OFF(spyre_event, depth) == 102,
	       "common fields after the body");
_Static_assert(SPYRE_OFF(spyre_rec_call, ret) == 8 * SPYRE_MAX_ARGS &&
	       SPYRE_OFF(spyre_rec_call, deref) == 8 * SPYRE_MAX_ARGS + 8,
	       "call: ret after args, then the dereferences");
_Static_assert(sizeof(struct spyre_read_cfg) == 8, "read config: one word a probe");
_Static_assert(SPYRE_OFF(spyre_rec_thread, proc_comm) == SPYRE_COMM_LEN &&
	       SPYRE_OFF(spyre_rec_thread, cgroup_id) == 2 * SPYRE_COMM_LEN &&
	       SPYRE_OFF(spyre_rec_thread, ns_tid) == 40, "thread: names, then ids");
_Static_assert(SPYRE_OFF(spyre_rec_ioctl, path) == 40 && SPYRE_OFF(spyre_rec_ioctl, ino) == 44 &&
	       SPYRE_OFF(spyre_rec_ioctl, ret) == SPYRE_OFF(spyre_rec_call, ret),
	       "ioctl: metadata word, then ret where a call's is");
#undef SPYRE_OFF

/* The major and minor of a kernel dev_t (i_rdev: MINORBITS 20, not the userspace dev_t). */
static inline __attribute__((always_inline)) __u32 spyre_rdev_major(__u32 rdev)
{
	return rdev >> 20;
}

static inline __attribute__((always_inline)) __u32 spyre_rdev_minor(__u32 rdev)
{
	return rdev & 0xfffff;
}

enum spyre_drv_path {
	SPYRE_DRV_OFF = 0,
	SPYRE_DRV_FENTRY = 1,
	SPYRE_DRV_KPROBE = 2,
	SPYRE_DRV_TRACEPOINT = 3,
};

#define SPYRE_IOCTL_F_DMA	0x1	/* iova/size (and vaddr) were read from the user struct */
#define SPYRE_IOCTL_F_FILE	0x2	/* rdev and ino come from the struct file */
#define SPYRE_IOCTL_F_FD	0x4	/* the fd is known */
#define SPYRE_IOCTL_F_ANON	0x8	/* the file is an anonymous inode's (anon_inode:NAME) */
/* Kernel functions the fentry/kprobe paths attach to, at most (func of spyre_rec_ioctl). */
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
	__u64 drops_depth;	/* nesting deeper than SPYRE_MAX_DEPTH */
	__u64 unmatched;	/* return without a matching entry */
	__u64 sampled_out;	/* not recorded by --sample-every (by design, not a loss) */
	__u64 drops_rate;	/* not recorded: the process was over its --rate-cap */
	__u64 unwound;		/* recorded calls left without returning: exception, longjmp,
				 * thread cancel or exit (found when the stack is seen above
				 * them); each is a SPYRE_EV_UNWOUND record (or a drops_ring).
				 * Calls not recorded (too deep, sampled out, over the rate cap)
				 * stay counted as such only */
	__u64 tail_exits;	/* calls ended at a tail jump (return sites): the span stops
				 * at the jump and the return value is not known */
	__u64 drops_nostack;	/* no per-thread call stack could be had (task storage busy
				 * on this CPU, or the hash fallback full): not recorded */
	__u64 deref_faults;	/* dereferences and strings whose user memory read faulted
				 * (the value is 0, the string empty) */
	__u64 py_none;		/* py= calls from a thread running no Python (no stack) */
	__u64 py_trunc;		/* py= stacks cut: deeper than SPYRE_PY_FRAMES, or a read
				 * faulted (a frame being torn down) */
	__u64 ustack_lost;	/* stack= calls whose native stack was not kept: its slot in
				 * the ustacks map held another stack, or no frame was read */
};

#endif /* SPYRE_EVENT_H */
