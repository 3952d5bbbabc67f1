// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What the kernel lets our programs do, found by loading small programs (as retsnoop's
 * calib_feat.bpf.c does): each is loaded on its own (user/attach/feat.c), its load's verdict the
 * answer; two of them also serve as they are: an empty program for links of their own (the
 * registration warm-up, the cost calibration) and a hit counter for the return-site self-test.
 * Without CO-RE relocations, so that libbpf does not read the kernel's BTF for them (10-16 ms a
 * read here, docs/performance.md): no field of a kernel type is read but x86-64's uprobe context,
 * whose layout is the user ABI's (struct pt_regs of <asm/ptrace.h>: ip at 128, sp at 152).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The hits of a self-test's probe: one u64 (the self-test's own map, reused) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} feat_hits SEC(".maps");

static long vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	return 0;
}

/*
 * bpf_find_vma with its callback. Asking for the helper is not enough: a program with a callback
 * loads only where the kernel JITs it ("callbacks are not allowed in non-JITed programs"), which
 * Debian's 6.12 s390x kernel did not under QEMU TCG (the whole tracer failed to load there).
 */
SEC("uprobe")
int feat_find_vma(void *ctx)
{
	bpf_find_vma(bpf_get_current_task_btf(), 0, vma_cb, NULL, 0);
	return 0;
}

/*
 * bpf_probe_write_user, which the unwind guard needs and a kernel under lockdown refuses. Never
 * loads (a NULL destination is no pointer the verifier takes): the verifier's words say whether
 * the helper itself was offered.
 */
SEC("uprobe")
int feat_write_user(void *ctx)
{
	bpf_probe_write_user(NULL, NULL, 0);
	return 0;
}

/* Nothing: a link of its own costs the probed code a trap and no work (warm.c, cost.c) */
SEC("uprobe")
int feat_empty(void *ctx)
{
	return 0;
}

static __always_inline void count_hit(void)
{
	__u32 k = 0;
	__u64 *n = bpf_map_lookup_elem(&feat_hits, &k);

	if (n)	/* one thread: no atomics needed */
		*n += 1;
}

/* A hit of the return-site self-test's probe counted (retcheck.c) */
SEC("uprobe")
int feat_count(void *ctx)
{
	count_hit();
	return 0;
}

#if defined(__TARGET_ARCH_x86)
/* x86-64's uprobe context as the user ABI lays it out: ip at 128, sp at 152 */
struct feat_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax;
	__u64 ip, cs, flags, sp, ss;
};

/*
 * The same, the probed `ret` done by the program: ip = the u64 at sp, sp += 8. A kernel that
 * lets a uprobe program write its registers ("bpf: Allow uprobe program to change context
 * registers"; Debian's 7.3 does) skips the single step when the program moved ip ("uprobe: Do
 * not emulate/sstep original instruction when ip is changed"); an older one refuses the load
 * ("invalid bpf_context access"): the answer to whether returns can be done by BPF.
 */
SEC("uprobe")
int feat_count_ret(struct feat_regs *regs)
{
	__u64 ra;

	if (!bpf_probe_read_user(&ra, sizeof(ra), (void *)regs->sp)) {
		regs->ip = ra;
		regs->sp += 8;
	}
	count_hit();
	return 0;
}
#endif
