// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <unistd.h>

#include "unit.h"
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
