// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "stream/spyre_event_user.h"
#include "attach/uprobe_tier.h"
#include "unit.h"

TEST(tracer_room_from_the_table)
{
	/* nothing resolved yet, or a small table: the least room */
	CHECK_EQ_INT(tracer_room(0, 0), SPYRE_PROBE_ROOM);
	CHECK_EQ_INT(tracer_room(SPYRE_PROBE_ROOM / 2, 0), SPYRE_PROBE_ROOM);
	/* past it: twice the table, for the libraries loaded later */
	CHECK_EQ_INT(tracer_room(5498, 0), 10996);
	CHECK(tracer_room(SPYRE_PROBE_ROOM + 1, 0) > SPYRE_PROBE_ROOM + 1);
	/* never past the default limit, which the resolution enforces */
	CHECK_EQ_INT(tracer_room(SPYRE_MAX_PROBES / 2 + 1, 0), SPYRE_MAX_PROBES);
	CHECK_EQ_INT(tracer_room(SPYRE_MAX_PROBES, 0), SPYRE_MAX_PROBES);
	/* --max-probes N: N, reserved whatever resolved */
	CHECK_EQ_INT(tracer_room(0, 100000), 100000);
	CHECK_EQ_INT(tracer_room(50, 100), 100);
}

TEST(tracer_cookie_halves)
{
	/* the kernel hands the programs one word: probe index below, the link's word above */
	__u64 c = spyre_cookie(70000, SPYRE_CK_MEM | SPYRE_CK_MEM_ENTRY);

	CHECK(c == (3ull << 32 | 70000));
	CHECK_EQ_INT(spyre_cookie_probe(c), 70000);
	CHECK_EQ_INT(spyre_cookie_aux(c), SPYRE_CK_MEM | SPYRE_CK_MEM_ENTRY);
	/* a jump site's condition + 1 (x86 jcc: at most 16) leaves the index alone */
	c = spyre_cookie(SPYRE_MAX_PROBES - 1, 16);
	CHECK_EQ_INT(spyre_cookie_probe(c), SPYRE_MAX_PROBES - 1);
	CHECK_EQ_INT(spyre_cookie_aux(c), 16);
	CHECK_EQ_INT(spyre_cookie_aux(spyre_cookie(5, 0)), 0);
}
