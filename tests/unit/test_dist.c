// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* distributedInfo from a process's environment block (torchrun's variables). */
#include <string.h>
#include "consumer.h"
#include "unit.h"

#define ENV(s) s, sizeof(s) - 1

TEST(dist_rank_world_size_and_card_from_the_environment)
{
	struct dist_info d = { .rank = -1, .world_size = -1 };

	dist_from_environ(ENV("PATH=/bin\0LOCAL_RANK=7\0RANK=1\0WORLD_SIZE=2\0"
			      "AIU_WORLD_RANK_0=0000:1a:00.0\0AIU_WORLD_RANK_1=0000:1b:00.0\0"), &d);
	CHECK_EQ_INT(d.rank, 1);
	CHECK_EQ_INT(d.world_size, 2);
	CHECK(d.from_env);
	CHECK_STR(d.pci_bus_id, "0000:1b:00.0");
}

TEST(dist_ignores_lookalikes_and_bad_numbers)
{
	struct dist_info d = { .rank = -1, .world_size = -1 };

	/* LOCAL_RANK and MY_RANK are no RANK; "1x" and "" are no numbers */
	dist_from_environ(ENV("LOCAL_RANK=3\0MY_RANK=4\0RANKS=5\0"), &d);
	CHECK_EQ_INT(d.rank, -1);
	CHECK(!d.from_env);
	dist_from_environ(ENV("RANK=1x\0WORLD_SIZE=\0"), &d);
	CHECK_EQ_INT(d.rank, -1);
	CHECK_EQ_INT(d.world_size, -1);
	/* the last entry without its NUL still counts */
	dist_from_environ("WORLD_SIZE=4", 12, &d);
	CHECK_EQ_INT(d.world_size, 4);
	CHECK_EQ_INT(d.rank, -1);
	CHECK_STR(d.pci_bus_id, "");
}
