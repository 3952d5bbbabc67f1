// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The physical limit of the per-call benchmark: a uprobe + uretprobe pair whose programs do
 * nothing. What a call costs with these attached is the kernel's trap, dispatch and return
 * trampoline; anything a real tracer adds on top is its own work.
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
