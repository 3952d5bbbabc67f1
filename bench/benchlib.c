// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The traced function of the per-call benchmark. It is built twice, with and without
 * -fcf-protection, and must look like a real runtime entry point: endbr64 (cf variant), then
 * a push of a callee-saved register. The first instruction at the attach point decides the
 * uprobe's cost (single-stepped vs emulated), so the bench prints it next to the results.
 */
#include <stdint.h>

/* noipa: the caller may not assume which registers it keeps (as with any real callee) */
__attribute__((noipa, visibility("hidden"))) uint64_t bench_leaf(uint64_t x)
{
	/* keeps the compiler from folding the two calls into one expression */
	__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}

/*
 * @b lives across the call to bench_leaf: that needs a callee-saved register, hence a push.
 * bench_ref is the same function under another name: the bench puts the empty probe pair on
 * it and spyre-bpftrace on bench_call at the same time, and callbench --interleave alternates
 * between the two, so that both are measured under the same load (the Makefile builds this
 * file with -fno-ipa-icf, or GCC would make one of them a jump to the other).
 */
#define BENCH_FUNC(name)								\
	__attribute__((noinline, visibility("default"))) uint64_t name(uint64_t a, uint64_t b) \
	{										\
		uint64_t r = bench_leaf(a);						\
											\
		return r ^ bench_leaf(b + r);						\
	}

BENCH_FUNC(bench_call)
BENCH_FUNC(bench_ref)
