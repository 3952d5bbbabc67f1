// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libswapa.so and libswapb.so (-DWORK=swap_a / swap_b): one function, the same code at the same
 * offsets in both, each calling getpid; dlswap.c loads one, unloads it, loads the other at its
 * address. Only the name tells them apart.
 */
#include <unistd.h>

__attribute__((noinline)) int WORK(void)
{
	int r = (int)getpid();

	__asm__ volatile("" ::: "memory");	/* a return address after the call */
	return r;
}
