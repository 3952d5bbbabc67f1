// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A thread's spans on lanes where none crosses another (stream/lanes.h). */
#include <stdlib.h>

#include "stream/lanes.h"
#include "unit.h"

/* Calls on one stack nest or follow each other: all on the thread's own track, no lane made. */
TEST(lanes_nested_and_apart_stay_on_the_thread_track)
{
	struct lanes *l = NULL;

	/* in the order they end: inner ones first */
	CHECK_EQ_INT(lanes_place(&l, 20, 30), 0);
	CHECK_EQ_INT(lanes_place(&l, 40, 50), 0);
	CHECK_EQ_INT(lanes_place(&l, 10, 60), 0);	/* encloses both */
	CHECK_EQ_INT(lanes_place(&l, 60, 70), 0);	/* starts where the last ended */
	CHECK_EQ_INT(lanes_place(&l, 70, 70), 0);	/* empty */
	CHECK_EQ_INT(lanes_place(&l, 0, 100), 0);
	CHECK_EQ_INT(lanes_extra(l), 0);
	CHECK_EQ_INT((int)lanes_crossed(l), 0);
	lanes_free(l);
}

/*
 * tests/progs/coroutine.c's interleaved round: co_resume (main stack, 0-30) switches to a
 * coroutine whose co_step (10-70) calls co_leaf (12-14) and co_yield (20-60), which switches
 * back: co_resume returns, main_leaf (40-50) runs, then co_yield and co_step return. co_yield
 * and co_step cross co_resume: the thread's first other stack; main_leaf and co_leaf nest.
 */
TEST(lanes_crossing_spans_go_to_the_threads_other_stacks)
{
	struct lanes *l = NULL;

	CHECK_EQ_INT(lanes_place(&l, 12, 14), 0);	/* co_leaf */
	CHECK_EQ_INT(lanes_place(&l, 0, 30), 0);	/* co_resume */
	CHECK_EQ_INT(lanes_place(&l, 40, 50), 0);	/* main_leaf */
	CHECK_EQ_INT(lanes_place(&l, 20, 60), 1);	/* co_yield */
	CHECK_EQ_INT(lanes_place(&l, 10, 70), 1);	/* co_step: co_yield nests in it */
	CHECK_EQ_INT(lanes_extra(l), 1);
	/* the next round: the same lanes */
	CHECK_EQ_INT(lanes_place(&l, 100, 130), 0);
	CHECK_EQ_INT(lanes_place(&l, 120, 160), 1);
	/* a span crossing one on each lane (100-130, 120-160): a lane of its own */
	CHECK_EQ_INT(lanes_place(&l, 125, 170), 2);
	CHECK_EQ_INT(lanes_extra(l), 2);
	lanes_free(l);
}

/* A span that crosses one on every lane goes on the last, counted; it never fails. */
TEST(lanes_past_the_last_lane_counted)
{
	struct lanes *l = NULL;

	for (int i = 0; i <= LANES_MAX; i++)	/* each starts inside all the others: a staircase */
		CHECK_EQ_INT(lanes_place(&l, 10 + i, 100 + i), i);
	CHECK_EQ_INT(lanes_extra(l), LANES_MAX);
	CHECK_EQ_INT(lanes_place(&l, 50, 200), LANES_MAX);
	CHECK_EQ_INT((int)lanes_crossed(l), 1);
	CHECK(lane_tid(1234, LANES_MAX) > 1234 + 4194304u);
	lanes_free(l);
}

/* A lane remembers LANE_KEEP spans at most, however many follow each other. */
TEST(lanes_memory_stays_bounded)
{
	struct lanes *l = NULL;

	for (uint64_t i = 0; i < 100000; i++)
		CHECK_EQ_INT(lanes_place(&l, 10 * i, 10 * i + 5), 0);
	/* the last ones are still known: a span starting inside the last crosses it */
	CHECK_EQ_INT(lanes_place(&l, 10 * 99999 + 3, 10 * 100000 + 1), 1);
	lanes_free(l);
}
