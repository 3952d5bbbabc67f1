// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libtailrt.so: launch functions that end in a tail call to an internal function that makes
 * the op id, as a runtime compiled -O2 does with `return enqueue(...)`. The callees are hidden
 * (a direct jmp, no PLT) and busy for ~100 us, so a span that ends at the jump is visibly
 * shorter than the call. tailcall.bats checks with objdump that the jumps are there.
 */
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <time.h>
#include "tail.h"

#define HIDDEN __attribute__((noinline, visibility("hidden")))

static std::atomic<uint64_t> next_id{1};
static thread_local uint64_t last_work;

static uint64_t now_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void spin(uint64_t ns)
{
	uint64_t t0 = now_ns();

	while (now_ns() - t0 < ns)
		;
}

extern "C" void tailb_note_work(uint64_t ns)
{
	last_work = ns;
}

extern "C" uint64_t tail_last_work_ns(void)
{
	return last_work;
}

// untraced: the op id the caller's caller gets
extern "C" HIDDEN uint64_t rt_enqueue(uint64_t bytes)
{
	uint64_t t0 = now_ns();

	spin(100000 + bytes % 7);
	uint64_t id = next_id.fetch_add(1);
	last_work = now_ns() - t0;
	return id;
}

extern "C" HIDDEN uint64_t rt_stage(uint64_t bytes)
{
	__asm__ volatile("" : "+r"(bytes));
	return rt_enqueue(bytes + 1);
}

extern "C" HIDDEN uint64_t rt_query(uint64_t id)
{
	uint64_t t0 = now_ns();

	spin(300000);
	last_work = now_ns() - t0;
	return id;
}

// traced in the nested variant, reached by a tail jump
extern "C" HIDDEN uint64_t tail_submit(uint64_t bytes)
{
	__asm__ volatile("" : "+r"(bytes));
	return rt_enqueue(bytes + 2);
}

extern "C" __attribute__((noinline)) uint64_t tail_launch(uint64_t bytes)
{
	return rt_enqueue(bytes * 2);
}

extern "C" __attribute__((noinline)) uint64_t tail_launch_traced(uint64_t bytes)
{
	return tail_submit(bytes * 3);
}

extern "C" __attribute__((noinline)) uint64_t tail_launch_plt(uint64_t bytes)
{
	return tailb_enqueue(bytes + 5);
}

extern "C" __attribute__((noinline)) uint64_t tail_launch_chain(uint64_t bytes)
{
	return rt_stage(bytes + 3);
}

[[noreturn]] __attribute__((noinline, cold)) static void bad_size(const char *why, uint64_t n)
{
	fprintf(stderr, "tail_launch_checked: %s: %llu\n", why, (unsigned long long)n);
	abort();
}

// two unlikely paths: GCC moves both into tail_launch_checked.cold, and the second jcc lands
// in its middle (the unit tests follow such a jump into the whole cold part)
extern "C" __attribute__((noinline)) uint64_t tail_launch_checked(uint64_t bytes)
{
	if (__builtin_expect(bytes == 0, 0))
		bad_size("empty", bytes);
	if (__builtin_expect(bytes > (1ull << 40), 0))
		bad_size("too large", bytes);
	return rt_enqueue(bytes);
}

// through a function pointer the program can change: a jump no disassembly can follow
uint64_t (*volatile rt_enqueue_ptr)(uint64_t) = rt_enqueue;

extern "C" HIDDEN uint64_t rt_dispatch(uint64_t bytes)
{
	return rt_enqueue_ptr(bytes + 1);
}

extern "C" __attribute__((noinline)) uint64_t tail_launch_indirect(uint64_t bytes)
{
	return rt_dispatch(bytes);
}

extern "C" __attribute__((noinline)) uint64_t tail_wait(uint64_t id)
{
	return rt_query(id);
}

// a destructor's shape: it ends in `jmp free@plt`, into the C runtime (not followed)
extern "C" __attribute__((noinline)) void tail_release(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
}

extern "C" __attribute__((noinline)) void tail_complete(uint64_t id)
{
	__asm__ volatile("" : : "r"(id) : "memory");
}
