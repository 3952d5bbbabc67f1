// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// libtailb.so: the second library libtailrt.so's tail_launch_plt jumps into through the PLT.
#include <atomic>
#include <time.h>
#include "tail.h"

static std::atomic<uint64_t> next_id{1000000};	// apart from libtailrt's ids

static uint64_t now_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

extern "C" __attribute__((noinline)) uint64_t tailb_enqueue(uint64_t bytes)
{
	uint64_t t0 = now_ns();

	while (now_ns() - t0 < 100000 + bytes % 7)
		;
	uint64_t id = next_id.fetch_add(1);
	tailb_note_work(now_ns() - t0);
	return id;
}
