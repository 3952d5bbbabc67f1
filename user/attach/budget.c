// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include "attach/budget.h"

#define MS	1000000ull

void budget_init(struct budget *b, double max_pct, uint64_t now_ns)
{
	memset(b, 0, sizeof(*b));
	b->max_pct = max_pct;
	b->on = true;
	b->since_ns = now_ns;
	b->windows = 1;
	b->w[0].start_ns = now_ns;
}

enum budget_act budget_tick(struct budget *b, uint64_t now_ns, double extra_ns, double cpu_ns)
{
	double max = b->max_pct / 100, untraced = cpu_ns - extra_ns;
	double t = b->last_s > BUDGET_MIN_ON_MS / 1e3 ? b->last_s : BUDGET_MIN_ON_MS / 1e3;

	if (cpu_ns < 0)
		return BUDGET_KEEP;
	if (b->on)
		return now_ns - b->since_ns >= BUDGET_MIN_ON_MS * MS && extra_ns > max * untraced ?
		       BUDGET_PAUSE : BUDGET_KEEP;
	/* one more window like the last one, and the run is still within */
	extra_ns += BUDGET_SWITCH_MS * 1e6 + b->rate_e * t;
	return extra_ns <= max * (untraced + b->rate_u * t) ? BUDGET_RESUME : BUDGET_KEEP;
}

void budget_switched(struct budget *b, bool on, uint64_t now_ns, double extra_ns, double cpu_ns)
{
	double dt = (now_ns - b->since_ns) / 1e9, untraced = cpu_ns - extra_ns;
	uint32_t k = b->windows - 1;

	if (on == b->on)
		return;
	if (!on) {
		if (dt > 0) {
			b->last_s = dt;
			b->rate_e = (extra_ns - b->e0) / dt;
			b->rate_u = (untraced - b->u0) / dt;
			/* (a charge counted less than at the start: the clock did not grow) */
			if (b->rate_e < 0)
				b->rate_e = 0;
			if (b->rate_u < 0)
				b->rate_u = 0;
		}
		b->traced_ns += now_ns - b->since_ns;
		if (k < BUDGET_MAX_WINDOWS)
			b->w[k].end_ns = now_ns;
	} else {
		k = b->windows++;
		if (k < BUDGET_MAX_WINDOWS)
			b->w[k].start_ns = now_ns;
		b->e0 = extra_ns;
		b->u0 = untraced;
	}
	b->on = on;
	b->since_ns = now_ns;
}

void budget_took(struct budget *b, bool attach, uint64_t ns)
{
	uint32_t k = b->windows - 1;

	if (k >= BUDGET_MAX_WINDOWS)
		return;
	if (attach)
		b->w[k].attach_ns = ns;
	else
		b->w[k].detach_ns = ns;
}

uint64_t budget_traced_ns(const struct budget *b, uint64_t now_ns)
{
	return b->traced_ns + (b->on ? now_ns - b->since_ns : 0);
}

uint64_t budget_paused_ns(const struct budget *b, uint64_t now_ns)
{
	uint64_t all = now_ns > b->w[0].start_ns ? now_ns - b->w[0].start_ns : 0;
	uint64_t traced = budget_traced_ns(b, now_ns);

	return all > traced ? all - traced : 0;
}
