// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <unistd.h>

#include "unit.h"
#include "common/util.h"
#include "common/parallel.h"

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

TEST(close_parallel_closes_every_fd_and_skips_negative_ones)
{
	int fds[9], p[2], keep;

	for (int i = 0; i < 8; i += 2) {
		CHECK(pipe(p) == 0);
		fds[i] = p[0];
		fds[i + 1] = p[1];
	}
	fds[8] = -1;	/* a slot already closed */
	keep = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(keep >= 0);
	close_parallel(fds, 9);
	for (int i = 0; i < 8; i++)
		CHECK(!is_open(fds[i]));
	CHECK(is_open(keep));
	close(keep);
	close_parallel(fds, 0);	/* nothing to do, no allocation to fail on */
}

static void count_call(int i, void *ctx)
{
	__atomic_add_fetch(&((int *)ctx)[i], 1, __ATOMIC_RELAXED);
}

TEST(for_each_parallel_calls_each_index_once_past_the_thread_count)
{
	int calls[100] = {};

	for_each_parallel(100, count_call, calls);	/* more items than threads */
	for (int i = 0; i < 100; i++)
		CHECK_EQ_INT(calls[i], 1);
	for_each_parallel(3, count_call, calls);	/* fewer */
	CHECK_EQ_INT(calls[0], 2);
	CHECK_EQ_INT(calls[2], 2);
	CHECK_EQ_INT(calls[3], 1);
}

TEST(fmt_count_groups_thousands)
{
	char b[32];

	CHECK_STR(fmt_count(0, b, sizeof(b)), "0");
	CHECK_STR(fmt_count(999, b, sizeof(b)), "999");
	CHECK_STR(fmt_count(1000, b, sizeof(b)), "1,000");
	CHECK_STR(fmt_count(242056, b, sizeof(b)), "242,056");
	CHECK_STR(fmt_count(1234567, b, sizeof(b)), "1,234,567");
	CHECK_STR(fmt_count(UINT64_MAX, b, sizeof(b)), "18,446,744,073,709,551,615");
	/* a short buffer is cut, never overrun */
	CHECK_STR(fmt_count(1234567, b, 4), "1,2");
}
