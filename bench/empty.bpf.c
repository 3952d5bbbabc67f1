// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The physical limits of the per-call benchmark: programs that do nothing, as a uprobe +
 * uretprobe pair (--uretprobes), or with empty_exit as plain uprobes on the function's return
 * instructions (emptyprobe --ret-site, spyre-bpftrace's default). What a call costs with these
 * attached is the kernel's traps, dispatch and return trampoline or single step; anything a
 * real tracer adds on top is its own work. empty_ret_emu (x86-64, emptyprobe --ret-emu) is
 * the limit of the default where a uprobe program may write its registers (Linux 6.18+, not
 * this host's build): it does the return itself, ip = [sp], sp += 8, so the kernel skips the
 * single step, as spyre-bpftrace's emulated returns do (no shadow stack check: the bench does
 * not run with one).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("uprobe")
int empty_entry(void *ctx)
{
	return 0;
}

SEC("uretprobe")
int empty_exit(void *ctx)
{
	return 0;
}

SEC("uprobe")
int empty_ret_emu(struct pt_regs *ctx)
{
#if defined(__TARGET_ARCH_x86)
	__u64 ra;

	if (!bpf_probe_read_user(&ra, sizeof(ra), (void *)ctx->sp)) {
		ctx->ip = ra;
		ctx->sp += 8;
	}
#endif
	return 0;
}
