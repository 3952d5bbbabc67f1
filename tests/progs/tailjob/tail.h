// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// A runtime whose launch functions end in tail calls (tailcall.bats): see tailrt.cpp.
#pragma once
#include <cstdint>

// the ids of tail_launch_cond's even branch (rt_enqueue_hi) have this bit set
#define TAIL_HI_ID (1ull << 40)

extern "C" {
// libtailrt.so: each returns the op id its untraced callee made (a tail call at -O2)
uint64_t tail_launch(uint64_t bytes);		// jmp rt_enqueue (same library, untraced)
uint64_t tail_launch_traced(uint64_t bytes);	// jmp tail_submit (traced), which jmp rt_enqueue
uint64_t tail_launch_plt(uint64_t bytes);	// jmp tailb_enqueue@plt (libtailb.so, untraced)
uint64_t tail_launch_chain(uint64_t bytes);	// jmp rt_stage, which jmp rt_enqueue
uint64_t tail_launch_indirect(uint64_t bytes);	// jmp rt_dispatch, which jmp *(%rax): not followed
uint64_t tail_launch_cond(uint64_t bytes);	// odd: jne rt_enqueue; even: jmp rt_enqueue_hi
uint64_t tail_launch_checked(uint64_t bytes);	// jcc into its .cold part twice, jmp rt_enqueue
uint64_t tail_wait(uint64_t id);		// jmp rt_query: waits ~300 us, returns id
void tail_complete(uint64_t id);		// the device finished op id
void tail_release(void *p);		// jmp free@plt: into the C runtime, not followed
void *tail_alloc(uint64_t bytes);	// jmp rt_alloc (mem=alloc ptr=ret): malloc's pointer
void tail_free(void *p);		// jmp rt_free, its free
// how long the last callee worked on this thread (ns, CLOCK_MONOTONIC): the job's own view
uint64_t tail_last_work_ns(void);
// libtailb.so
uint64_t tailb_enqueue(uint64_t bytes);
void tailb_note_work(uint64_t ns);
}
