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

// the second target of tail_launch_cond: ids apart from rt_enqueue's, so a span's ret= says
// which branch the call took. Used only from the asm below: kept, and its ABI left alone.
extern "C" __attribute__((noipa, used, visibility("hidden")))
uint64_t rt_enqueue_hi(uint64_t bytes)
{
	uint64_t t0 = now_ns();

	spin(100000 + bytes % 7);
	uint64_t id = next_id.fetch_add(1) | TAIL_HI_ID;
	last_work = now_ns() - t0;
	return id;
}

/*
 * A conditional tail call into another function: odd sizes leave by the jne into rt_enqueue,
 * even ones fall through to the jmp into rt_enqueue_hi. Of `return odd ? f(x) : g(x)`, GCC 12
 * and clang 14 make a jcc over two jmps at -O2; clang -Os makes `je g; jmp f`, this shape.
 * Written in asm, so that a taken jcc, whose flags the BPF evaluates at the jump, is what runs
 * whatever the compiler; elsewhere than x86-64 the C below.
 */
#if defined(__x86_64__)
__asm__(".pushsection .text\n"
	".p2align 4\n"
	".globl tail_launch_cond\n"
	".type tail_launch_cond, @function\n"
	"tail_launch_cond:\n"
#ifdef __CET__
	"	endbr64\n"
#endif
	"	testb $1, %dil\n"
	"	jne rt_enqueue\n"
	"	jmp rt_enqueue_hi\n"
	".size tail_launch_cond, .-tail_launch_cond\n"
	".popsection\n");
#else
extern "C" __attribute__((noinline)) uint64_t tail_launch_cond(uint64_t bytes)
{
	return bytes & 1 ? rt_enqueue(bytes) : rt_enqueue_hi(bytes);
}
#endif

// an allocator whose pointer its caller gets through a tail jump (mem=alloc ptr=ret): the
// count after malloc keeps rt_alloc's own ret (a jmp malloc@plt would end the chain in the C
// runtime, not followed)
static std::atomic<long> live_blocks;

extern "C" HIDDEN void *rt_alloc(uint64_t bytes)
{
	void *p = malloc(bytes);

	if (p)
		live_blocks.fetch_add(1);
	return p;
}

extern "C" HIDDEN void rt_free(void *p)
{
	free(p);
	live_blocks.fetch_sub(1);
}

extern "C" __attribute__((noinline)) void *tail_alloc(uint64_t bytes)
{
	return rt_alloc(bytes);
}

extern "C" __attribute__((noinline)) void tail_free(void *p)
{
	rt_free(p);
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
