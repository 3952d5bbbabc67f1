/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A thread's host spans on tracks that never cross. On one stack calls nest, so a thread's
 * spans nest on its track; a thread that switches stacks inside traced calls (coroutines with
 * swapcontext, fibers, signal handlers on sigaltstack) can return a call on one stack while
 * calls it entered on another stay open: the spans cross in time (A starts, B starts, A ends,
 * B ends), which `check` reports and which Perfetto draws on tracks of its own making. Each
 * thread's spans go to the first of its lanes where they cross none: lane 0 is the thread's own
 * track; a span that crosses one there goes to lane 1, the thread's first "other stack", and so
 * on. The record carries no stack pointer, so a lane is the stack as far as crossing tells:
 * calls that nest in the thread's others stay on its track, whichever stack they ran on.
 *
 * Spans come in the order they end (each is made at its return, in the thread's order), which
 * keeps what a lane must remember short: a span that another nests in is all the later ones
 * need to be checked against (crossing the inner one means crossing the outer one too).
 */
#ifndef SPYRE_LANES_H
#define SPYRE_LANES_H

#include <stdint.h>

/* other stacks of one thread at most: a span that crosses one on each goes on the last */
#define LANES_MAX	16
/*
 * Spans a lane remembers at most (the outermost ones, in the order they ended): a span that
 * began inside one older than these and crosses it is not seen to cross (a coroutine call open
 * across 256 top-level calls of its thread's other stacks).
 */
#define LANE_KEEP	256
/*
 * A lane's track id: the thread's tid + lane * LANE_TID_STRIDE, above every tid a kernel gives
 * (PID_MAX_LIMIT is 2^22), so no other thread's track is taken; LANES_MAX lanes stay in an int.
 */
#define LANE_TID_STRIDE	(1u << 22)

struct lanes;

/*
 * The lane (0: the thread's own track) of a span from @start to @end (ns) of the thread whose
 * lanes *@l are (NULL at first: made here); 0 when there is no memory for them.
 */
int lanes_place(struct lanes **l, uint64_t start, uint64_t end);
/* Lanes in use beyond the thread's own track (0 while every span nested). */
int lanes_extra(const struct lanes *l);
/* Spans placed on a lane past the last one (every lane had a span they cross). */
uint64_t lanes_crossed(const struct lanes *l);
void lanes_free(struct lanes *l);

static inline uint32_t lane_tid(uint32_t tid, int lane)
{
	return tid + (uint32_t)lane * LANE_TID_STRIDE;
}

#endif
