// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The physical limits of the per-call benchmark: programs that do nothing, as a uprobe +
 * uretprobe pair (--uretprobes), or with empty_exit as plain uprobes on the function's return
 * instructions (emptyprobe --ret-site, spyre-bpftrace's default). What a call costs with these
 * attached is the kernel's traps, dispatch and return trampoline or single step; anything a
 * real tracer adds on top is its own work.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

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
