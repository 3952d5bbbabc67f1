// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "unit.h"
#include "util.h"

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
