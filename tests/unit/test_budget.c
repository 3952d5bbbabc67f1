// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* --max-overhead's windows: when they end, when the next one begins, what they add up to. */
#include "attach/budget.h"
#include "unit.h"

#define MS	1000000ull

TEST(budget_a_window_lasts_its_shortest_length_then_ends_once_over)
{
	struct budget b;

	budget_init(&b, 10, 0);
	CHECK(b.on);
	CHECK_EQ_INT(b.windows, 1);
	/* far over from the start (probes 75 % of the job's CPU), but not yet 200 ms long */
	CHECK_EQ_INT(budget_tick(&b, 100 * MS, 75e6, 100e6), BUDGET_KEEP);
	CHECK_EQ_INT(budget_tick(&b, 150 * MS, 110e6, 150e6), BUDGET_KEEP);
	CHECK_EQ_INT(budget_tick(&b, 200 * MS, 150e6, 200e6), BUDGET_PAUSE);
	/* no CPU reading: nothing decided */
	CHECK_EQ_INT(budget_tick(&b, 250 * MS, 150e6, -1), BUDGET_KEEP);
	/* a cheap job stays traced past the shortest window: 5 % */
	budget_init(&b, 10, 0);
	CHECK_EQ_INT(budget_tick(&b, 5000 * MS, 500e6 * 0.05 / 1.05, 500e6), BUDGET_KEEP);
}

TEST(budget_a_pause_ends_when_one_more_window_like_the_last_stays_within)
{
	struct budget b;

	budget_init(&b, 10, 0);
	/* the first window: 200 ms, 150 ms of probes in 200 ms of job CPU (50 ms untraced) */
	CHECK_EQ_INT(budget_tick(&b, 200 * MS, 150e6, 200e6), BUDGET_PAUSE);
	budget_switched(&b, false, 200 * MS, 150e6, 200e6);
	CHECK(!b.on);
	CHECK_EQ_INT(b.traced_ns / MS, 200);
	/*
	 * rates: 0.75 s of probes and 0.25 s untraced per second of window; one more 200 ms
	 * window adds 150 ms of probes, its switch BUDGET_SWITCH_MS and 50 ms untraced: it fits
	 * once 500 ms <= 10 % of (untraced + 50 ms), i.e. untraced >= 4950 ms
	 */
	CHECK_EQ_INT(BUDGET_SWITCH_MS, 200);
	CHECK_EQ_INT(budget_tick(&b, 2000 * MS, 150e6, 150e6 + 4900e6), BUDGET_KEEP);
	CHECK_EQ_INT(budget_tick(&b, 2100 * MS, 150e6, 150e6 + 4960e6), BUDGET_RESUME);
	budget_switched(&b, true, 2100 * MS, 150e6, 150e6 + 4960e6);
	CHECK(b.on);
	CHECK_EQ_INT(b.windows, 2);
	CHECK_EQ_INT(b.w[1].start_ns / MS, 2100);
	CHECK_EQ_INT(b.w[0].end_ns / MS, 200);
	/* traced so far: the closed window and the open one */
	CHECK_EQ_INT(budget_traced_ns(&b, 2200 * MS) / MS, 300);
	/* the pause between them (a fleet window's traced time leaves it out) */
	CHECK_EQ_INT(budget_paused_ns(&b, 2200 * MS) / MS, 1900);
	budget_switched(&b, false, 2500 * MS, 150e6, 150e6 + 5000e6);
	CHECK_EQ_INT(budget_paused_ns(&b, 3000 * MS) / MS, 2400);
}

TEST(budget_the_next_window_is_priced_at_the_last_ones_length)
{
	struct budget b;

	budget_init(&b, 10, 0);
	/* a 500 ms first window (cheap at first, then not): 300 ms of probes, 200 ms untraced */
	CHECK_EQ_INT(budget_tick(&b, 500 * MS, 300e6, 500e6), BUDGET_PAUSE);
	budget_switched(&b, false, 500 * MS, 300e6, 500e6);
	/*
	 * the next one priced at 500 ms, not the shortest 200: 800 ms of probes and switch then,
	 * so the untraced time must reach 8000 ms with its 200 ms (at 200 ms: 6880 ms)
	 */
	CHECK_EQ_INT(budget_tick(&b, 9000 * MS, 300e6, 300e6 + 7700e6), BUDGET_KEEP);
	CHECK_EQ_INT(budget_tick(&b, 9100 * MS, 300e6, 300e6 + 7810e6), BUDGET_RESUME);
}

TEST(budget_windows_past_the_kept_ones_are_counted)
{
	struct budget b;
	uint64_t t = 0;

	budget_init(&b, 50, 0);
	for (int k = 0; k < BUDGET_MAX_WINDOWS + 10; k++) {
		budget_switched(&b, false, t + 300 * MS, 0, 0);
		budget_switched(&b, true, t + 400 * MS, 0, 0);
		t += 400 * MS;
	}
	CHECK_EQ_INT(b.windows, BUDGET_MAX_WINDOWS + 11);
	CHECK_EQ_INT(budget_traced_ns(&b, t + 300 * MS) / MS,
		     (uint64_t)(BUDGET_MAX_WINDOWS + 11) * 300);
	/* a switch to what it already is changes nothing */
	budget_switched(&b, true, t + 500 * MS, 0, 0);
	CHECK_EQ_INT(b.windows, BUDGET_MAX_WINDOWS + 11);
}

/*
 * A window whose run's extra reads less at its end than at its start (the switch's charge
 * counted less once the job's clock showed it did not grow: cost_meter_extra) cost nothing:
 * its rate is 0, never a negative one that would let the next pause end at once.
 */
TEST(budget_a_window_never_has_a_negative_rate)
{
	struct budget b;

	budget_init(&b, 10, 0);
	budget_switched(&b, false, 300 * MS, 10e6, 400e6);
	budget_switched(&b, true, 1000 * MS, 210e6, 500e6);	/* charged 200 ms at the start */
	budget_switched(&b, false, 1500 * MS, 20e6, 510e6);	/* counted 10 ms of it */
	CHECK(b.rate_e == 0);
	CHECK(b.rate_u >= 0);
}
