// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Driver tier: the VFIO ioctls of the traced process, as spans on the calling thread. Three
 * interchangeable front ends feed one pair of handlers; userspace loads exactly one of them:
 *
 *   fentry/fexit   on the VFIO ioctl functions (cheapest, needs BTF of vmlinux or the module)
 *   kprobe/kretprobe on the same functions (the attach cookie is the function's index)
 *   syscalls:sys_enter_ioctl/sys_exit_ioctl (always there, filtered by tgid and ioctl type)
 *
 * Records go to the uprobe programs' ring buffer (userspace shares the map), so a driver span
 * and the runtime call that issued it arrive in one stream and nest on the same thread.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "spyre_common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* 0 = every process (system-wide mode) */
const volatile __u32 targ_tgid = 0;
/*
 * Cleared by userspace while --max-overhead has the uprobe tier paused (vfio_record): the job's
 * ioctls are not recorded then either, as the summary says of a pause. A call open at the
 * pause still ends (its exit finds its pending record).
 */
volatile __u32 drv_on = 1;
/*
 * Tests only (SPYRE_TEST_SKIP_SYS_EXIT=N): the sys_exit program ignores every N-th exit of a
 * traced thread, as the kernel does when it skips a program: on a CPU where another one, or a
 * bpf() map syscall, holds bpf_prog_active, and (6.18 here) in ways recursion_misses does not
 * count (8 of 14,726 returns during 3 s of bpftool map lookups). 0: off, pruned.
 */
const volatile __u32 test_skip_exit = 0;
/*
 * Tests only (SPYRE_TEST_SKIP_SYS_PAIR=1, with the above): the thread's next entry is skipped
 * too, as a burst of skips does (a bpf() syscall preempted on the CPU, a 1-CPU guest).
 */
const volatile bool test_skip_pair = false;
/* bit i: the first argument of function i is the struct file of the ioctl */
const volatile __u32 file_funcs = 0;

/*
 * _IO(';', 100 + n). powerpc encodes "no data" as direction 1 (bit 29) where the others use 0:
 * its MAP_DMA is 0x20003b71.
 */
#if defined(__TARGET_ARCH_powerpc)
#define VFIO_IO_NONE		0x20000000
#else
#define VFIO_IO_NONE		0
#endif
#define VFIO_TYPE		0x3B	/* ';' */
#define VFIO_IOMMU_MAP_DMA	(VFIO_IO_NONE | 0x3B71)
#define VFIO_IOMMU_UNMAP_DMA	(VFIO_IO_NONE | 0x3B72)

/* Replaced by the spyre object's ring buffer before load (bpf_map__reuse_fd). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

struct pending {
	__u64 ts;
	__u64 cmd;
	__u64 arg;
	__s64 fd;
	__u64 iova;
	__u64 size;
	__u64 vaddr;
	__u64 ino;
	char name[SPYRE_IOCTL_NAME_LEN];
	__u32 rdev;
	__u8 path;
	__u8 func;
	__u8 flags;
	__u8 nest;
	__u8 test_skip_entry;	/* test_skip_pair: the thread's next entry is skipped */
};

/* One open ioctl per thread (syscalls do not nest); LRU so dead threads cannot fill it. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct pending);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spyre_drv_counters);
} drv_counters SEC(".maps");

/* The user structs of MAP_DMA (argsz, flags, vaddr, iova, size) and UNMAP_DMA (no vaddr). */
struct dma_map_arg {
	__u32 argsz;
	__u32 flags;
	__u64 vaddr;
	__u64 iova;
	__u64 size;
};

struct dma_unmap_arg {
	__u32 argsz;
	__u32 flags;
	__u64 iova;
	__u64 size;
};

/* Threads already named to userspace (SPYRE_EV_THREAD), so each is announced once. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} announced SEC(".maps");

/*
 * A thread whose only traced calls are ioctls (the main thread resetting the device at exit)
 * still needs its name, and /proc may be gone by the time userspace looks: same record as the
 * uprobe programs' first-call announcement.
 */
static __always_inline void announce_thread(__u64 id)
{
	__u32 tid = (__u32)id;
	struct spyre_event *e;
	__u8 one = 1;

	if (bpf_map_lookup_elem(&announced, &tid) ||
	    bpf_map_update_elem(&announced, &tid, &one, BPF_NOEXIST))
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return;	/* userspace falls back to /proc for the name */
	fill_thread_event(e);
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

static __always_inline struct spyre_drv_counters *counters(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&drv_counters, &zero);
}

/* anon_inodefs' s_magic (include/uapi/linux/magic.h) */
#define ANON_INODE_FS_MAGIC	0x09041934

/*
 * What the file is, read now: userspace decodes the record milliseconds later, when a short job
 * may have closed the fd or exited (/proc/PID/fd gone or reused). The device number names a
 * device node for good (/sys/dev/char), the dentry's name an anonymous inode's file
 * ("[vfio-device]") and another file's base name.
 */
static __always_inline void file_info(struct file *f, struct pending *p)
{
	struct inode *inode;
	const unsigned char *nm;

	if (!f)
		return;
	inode = BPF_CORE_READ(f, f_inode);
	if (!inode)
		return;
	p->rdev = BPF_CORE_READ(inode, i_rdev);
	p->ino = BPF_CORE_READ(inode, i_ino);
	p->flags |= SPYRE_IOCTL_F_FILE;
	if (BPF_CORE_READ(inode, i_sb, s_magic) == ANON_INODE_FS_MAGIC)
		p->flags |= SPYRE_IOCTL_F_ANON;
	nm = BPF_CORE_READ(f, f_path.dentry, d_name.name);
	if (nm && bpf_probe_read_kernel_str(p->name, sizeof(p->name), nm) < 0)
		p->name[0] = 0;
}

/* The struct file behind @fd in the current task's table (tracepoint path). */
static __always_inline struct file *fd_file(__s64 fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **arr;
	struct file *f = NULL;

	if (!fdt || fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	arr = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &arr[fd]))
		return NULL;
	return f;
}

static __always_inline void read_dma(struct pending *p)
{
	if (p->cmd == VFIO_IOMMU_MAP_DMA) {
		struct dma_map_arg m;

		if (bpf_probe_read_user(&m, sizeof(m), (void *)p->arg))
			return;
		p->vaddr = m.vaddr;
		p->iova = m.iova;
		p->size = m.size;
		p->flags |= SPYRE_IOCTL_F_DMA;
	} else if (p->cmd == VFIO_IOMMU_UNMAP_DMA) {
		struct dma_unmap_arg u;

		if (bpf_probe_read_user(&u, sizeof(u), (void *)p->arg))
			return;
		p->iova = u.iova;
		p->size = u.size;
		p->flags |= SPYRE_IOCTL_F_DMA;
	}
}

/*
 * Common entry. @file may be NULL (the function's first argument is not a file); @fd, @cmd and
 * @arg are the ioctl syscall's. With several functions of one call chain probed
 * (vfio_fops_unl_ioctl -> vfio_iommu_type1_ioctl) the outermost makes the span: an entry while
 * the thread has an open record of the same syscall (same fd, cmd, arg) is nested in it.
 */
static __always_inline int on_entry(__u8 path, __u8 func, struct file *file, __s64 fd,
				    __u32 cmd, __u64 arg, __u8 flags)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct spyre_drv_counters *c;
	struct pending *old, p = {};

	if ((targ_tgid && (id >> 32) != targ_tgid) || !drv_on)
		return 0;
	c = counters();
	old = bpf_map_lookup_elem(&pending, &tid);
	/*
	 * syscalls do not nest: on the tracepoint path an open record is always a stale one, and
	 * an entry of the function that opened it is the next syscall's (its return was missed:
	 * taken as nested, the next call's return closed it, one span over both)
	 */
	if (old && path != SPYRE_DRV_TRACEPOINT && old->func != func && old->cmd == cmd &&
	    old->arg == arg && old->fd == fd && old->nest < 255) {
		old->nest++;
		if (c)
			c->nested++;
		return 0;
	}
	/* anything else open on this thread is stale (a missed return): replaced, counted */
	if (c) {
		c->hits++;
		if (old)
			c->unpaired++;
	}
	p.cmd = cmd;
	p.arg = arg;
	p.fd = fd;
	p.path = path;
	p.func = func;
	p.flags = flags;
	file_info(file, &p);
	read_dma(&p);
	/* last, so the span does not include our own bookkeeping */
	p.ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&pending, &tid, &p, BPF_ANY);
	return 0;
}

/*
 * Is the syscall returning now the one @p recorded? Its fd, cmd and arg are still in the user
 * registers the kernel saved at its entry. Without this, a record whose exit the kernel did not
 * run us for was closed by the thread's next ioctl's exit: one span over both calls, which
 * overlaps the runtime calls between them (seen in 1 of 4 make demo runs). Two calls with the
 * same fd, cmd and arg (the mock's MAP_DMA: its struct is on the stack) are told apart by the
 * iova in that struct, which the kernel leaves as the caller wrote it: without that, a skipped
 * return followed by a skipped entry made one span over two DMA calls (the 7.3 guest's
 * UNMAP_DMA beyond its spyreFree). Other commands with the same arguments cannot be.
 */
static __always_inline bool same_syscall(const struct pending *p)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	struct pending now = { .cmd = p->cmd, .arg = p->arg };

	if (!regs)
		return true;	/* cannot tell */
	if ((__s64)(int)PT_REGS_PARM1_CORE_SYSCALL(regs) != p->fd ||
	    (__u32)PT_REGS_PARM2_CORE_SYSCALL(regs) != p->cmd ||
	    PT_REGS_PARM3_CORE_SYSCALL(regs) != p->arg)
		return false;
	if (!(p->flags & SPYRE_IOCTL_F_DMA))
		return true;
	read_dma(&now);
	return !(now.flags & SPYRE_IOCTL_F_DMA) || now.iova == p->iova;
}

/*
 * Common return of function @func (SPYRE_DRV_NO_FUNC for the tracepoint). The return of the
 * function that opened the record closes it, whatever the nesting count says: a record left
 * by a missed return thus costs one wrong span, not the thread's later ones. The tracepoint's
 * return closes only the syscall it belongs to.
 */
static __always_inline int on_exit(__u8 func, long ret)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct spyre_drv_counters *c;
	struct spyre_event *e;
	struct pending *p;

	if (targ_tgid && (id >> 32) != targ_tgid)
		return 0;
	p = bpf_map_lookup_elem(&pending, &tid);
	if (!p) {
		/* an ioctl of another type (tracepoint path), or entered before we attached */
		return 0;
	}
	if (p->func != func) {
		if (p->nest)
			p->nest--;
		else if ((c = counters()))
			c->unmatched++;
		return 0;
	}
	if (func == SPYRE_DRV_NO_FUNC && !same_syscall(p)) {
		/* another ioctl of the thread returns: the record's own return was missed */
		if ((c = counters()))
			c->unpaired++;
		bpf_map_delete_elem(&pending, &tid);
		return 0;
	}
	announce_thread(id);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		c = counters();
		if (c)
			c->drops_ring++;
		bpf_map_delete_elem(&pending, &tid);
		return 0;
	}
	record_head(e, SPYRE_EV_IOCTL, p->ts, now - p->ts, id >> 32, tid, p->rdev, 0);
	e->ioctl.cmd = p->cmd;
	e->ioctl.fd = p->fd;
	e->ioctl.iova = p->iova;
	e->ioctl.size = p->size;
	e->ioctl.arg = p->cmd == VFIO_IOMMU_MAP_DMA && (p->flags & SPYRE_IOCTL_F_DMA) ?
		       p->vaddr : p->arg;
	e->ioctl.path = p->path;
	e->ioctl.func = p->func;
	e->ioctl.flags = p->flags;
	e->ioctl.pad = 0;
	e->ioctl.ino = (__u32)p->ino;
	e->ioctl.ret = ret;
	__builtin_memcpy(e->ioctl.name, p->name, sizeof(e->ioctl.name));
	bpf_map_delete_elem(&pending, &tid);
	/* the consumer drains on a timer, like the uprobe records */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

/*
 * fd, cmd and arg of the ioctl syscall, from its saved user registers: the probed functions
 * get the struct file, not the number userspace used (and we resolve in /proc/PID/fd), and a
 * backend may be called with another cmd than the user's (SET_IOMMU checks extensions).
 *
 * @a0 is taken as a number: as a typed pointer (fentry's BTF-typed argument), the compiler's
 * branchless select below becomes pointer arithmetic that the 6.1 verifier refuses ("math
 * between ptr_ pointer and register with unbounded min value"); it is only read with CO-RE
 * reads. fentry programs get it through bpf_get_func_arg() for that reason.
 */
static __always_inline int fn_entry(__u8 path, __u32 func, __u64 a0, __u32 cmd, __u64 arg)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	struct file *f = NULL;
	__u8 flags = 0;
	__s64 fd = -1;

	if (regs) {
		fd = (int)PT_REGS_PARM1_CORE_SYSCALL(regs);
		cmd = (__u32)PT_REGS_PARM2_CORE_SYSCALL(regs);
		arg = PT_REGS_PARM3_CORE_SYSCALL(regs);
		flags |= SPYRE_IOCTL_F_FD;
	}
	if (func < SPYRE_DRV_MAX_FUNCS && ((file_funcs >> func) & 1))
		f = (struct file *)a0;
	return on_entry(path, func, f, fd, cmd, arg, flags);
}

/* --- kprobe/kretprobe: one program pair for all functions, the cookie says which ----------- */
SEC("kprobe")
int BPF_KPROBE(vfio_kprobe, void *a0, unsigned int cmd, unsigned long arg)
{
	return fn_entry(SPYRE_DRV_KPROBE, (__u32)bpf_get_attach_cookie(ctx), (__u64)a0, cmd, arg);
}

SEC("kretprobe")
int BPF_KRETPROBE(vfio_kretprobe, long ret)
{
	return on_exit((__u8)bpf_get_attach_cookie(ctx), ret);
}

/*
 * --- fentry/fexit: a program pair per function (tracing programs have no cookie before 5.19).
 * Every supported function is long f(x, unsigned int cmd, unsigned long arg).
 */
#define FENTRY_SLOT(i)								\
SEC("fentry")									\
int BPF_PROG(vfio_fentry##i, void *a0, unsigned int cmd, unsigned long arg)	\
{										\
	__u64 a0v = 0;								\
										\
	/* a scalar copy: the typed ctx load stays a pointer to the verifier */	\
	bpf_get_func_arg(ctx, 0, &a0v);						\
	return fn_entry(SPYRE_DRV_FENTRY, i, a0v, cmd, arg);			\
}										\
SEC("fexit")									\
int BPF_PROG(vfio_fexit##i, void *a0, unsigned int cmd, unsigned long arg, long ret) \
{										\
	return on_exit(i, ret);							\
}

FENTRY_SLOT(0)
FENTRY_SLOT(1)
FENTRY_SLOT(2)
FENTRY_SLOT(3)
FENTRY_SLOT(4)
FENTRY_SLOT(5)
FENTRY_SLOT(6)
FENTRY_SLOT(7)

/* --- syscall tracepoints: every ioctl on the system passes here; filter early -------------- */
SEC("tracepoint/syscalls/sys_enter_ioctl")
int vfio_sys_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__s64 fd = (int)ctx->args[0];
	__u32 cmd = (__u32)ctx->args[1];

	if (targ_tgid && (id >> 32) != targ_tgid)
		return 0;
	if (((cmd >> 8) & 0xff) != VFIO_TYPE)
		return 0;
	if (test_skip_pair) {
		__u32 tid = (__u32)id;
		struct pending *old = bpf_map_lookup_elem(&pending, &tid);

		if (old && old->test_skip_entry) {
			old->test_skip_entry = 0;
			return 0;
		}
	}
	return on_entry(SPYRE_DRV_TRACEPOINT, SPYRE_DRV_NO_FUNC, fd_file(fd), fd, cmd,
			ctx->args[2], SPYRE_IOCTL_F_FD);
}

__u32 test_exits = 0;

SEC("tracepoint/syscalls/sys_exit_ioctl")
int vfio_sys_exit(struct trace_event_raw_sys_exit *ctx)
{
	/* racy between CPUs: about every N-th is enough for a test */
	if (test_skip_exit && (!targ_tgid || bpf_get_current_pid_tgid() >> 32 == targ_tgid) &&
	    ++test_exits % test_skip_exit == 0) {
		__u32 tid = (__u32)bpf_get_current_pid_tgid();
		struct pending *p = test_skip_pair ? bpf_map_lookup_elem(&pending, &tid) : NULL;

		if (p)
			p->test_skip_entry = 1;
		return 0;
	}
	return on_exit(SPYRE_DRV_NO_FUNC, ctx->ret);
}
