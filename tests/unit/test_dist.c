// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * distributedInfo: from a process's environment block (torchrun's and the Spyre stack's
 * variables), in the metadata.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stream/consumer.h"
#include "offline/jsonparse.h"
#include "jv_at.h"
#include "report/summary.h"
#include "unit.h"

#define ENV(s) s, sizeof(s) - 1

TEST(dist_rank_world_size_and_card_from_the_environment)
{
	struct dist_info d = { .rank = -1, .world_size = -1 };

	dist_from_environ(ENV("PATH=/bin\0LOCAL_RANK=7\0RANK=1\0WORLD_SIZE=2\0"
			      "AIU_WORLD_RANK_0=0000:1a:00.0\0AIU_WORLD_RANK_1=0000:1b:00.0\0"), &d);
	CHECK_EQ_INT(d.rank, 1);
	CHECK_EQ_INT(d.world_size, 2);
	CHECK(d.rank_from_env && d.size_from_env);
	CHECK_STR(d.pci_bus_id, "0000:1b:00.0");
}

/*
 * The Spyre stack's AIU_WORLD_SIZE stands in for torchrun's WORLD_SIZE (which wins when both
 * are there); each field says whether the environment gave it, so that getRank/getSize fill
 * only the other one.
 */
TEST(dist_world_size_from_aiu_world_size_each_field_on_its_own)
{
	struct dist_info d = { .rank = -1, .world_size = -1 };

	dist_from_environ(ENV("AIU_WORLD_SIZE=4\0AIU_WORLD_RANK_0=0000:1a:00.0\0"), &d);
	CHECK_EQ_INT(d.world_size, 4);
	CHECK_EQ_INT(d.rank, -1);
	CHECK(d.size_from_env && !d.rank_from_env);
	CHECK_STR(d.pci_bus_id, "");	/* no rank: no card */

	d = (struct dist_info){ .rank = -1, .world_size = -1 };
	dist_from_environ(ENV("AIU_WORLD_SIZE=4\0WORLD_SIZE=2\0RANK=0\0"), &d);
	CHECK_EQ_INT(d.world_size, 2);
	CHECK_EQ_INT(d.rank, 0);

	d = (struct dist_info){ .rank = -1, .world_size = -1 };
	dist_from_environ(ENV("RANK=3\0"), &d);
	CHECK_EQ_INT(d.rank, 3);
	CHECK(d.rank_from_env && !d.size_from_env);
}

/*
 * A rank that getRank() gave (the environment had none) still names its card: the Spyre
 * stack's AIU_WORLD_RANK_<rank> of the same environment, read again for that rank.
 */
TEST(dist_pci_bus_id_for_a_rank_from_get_rank)
{
	struct dist_info d = { .rank = -1, .world_size = -1 };
	const char env[] = "AIU_WORLD_SIZE=2\0AIU_WORLD_RANK_0=0000:1a:00.0\0"
			   "AIU_WORLD_RANK_1=0000:1b:00.0\0";

	dist_from_environ(env, sizeof(env) - 1, &d);
	CHECK_STR(d.pci_bus_id, "");
	d.rank = 1;	/* getRank()'s return */
	dist_pci_from_environ(env, sizeof(env) - 1, &d);
	CHECK_STR(d.pci_bus_id, "0000:1b:00.0");
	CHECK(!d.rank_from_env);
	/* a rank the environment has no card for: none, not the previous one */
	d.rank = 5;
	dist_pci_from_environ(env, sizeof(env) - 1, &d);
	CHECK_STR(d.pci_bus_id, "");
	d.rank = -1;
	dist_pci_from_environ(env, sizeof(env) - 1, &d);
	CHECK_STR(d.pci_bus_id, "");
}

TEST(dist_ignores_lookalikes_and_bad_numbers)
{
	struct dist_info d = { .rank = -1, .world_size = -1 };

	/* LOCAL_RANK and MY_RANK are no RANK; "1x" and "" are no numbers */
	dist_from_environ(ENV("LOCAL_RANK=3\0MY_RANK=4\0RANKS=5\0"), &d);
	CHECK_EQ_INT(d.rank, -1);
	CHECK(!d.rank_from_env && !d.size_from_env);
	dist_from_environ(ENV("RANK=1x\0WORLD_SIZE=\0"), &d);
	CHECK_EQ_INT(d.rank, -1);
	CHECK_EQ_INT(d.world_size, -1);
	/* the last entry without its NUL still counts */
	dist_from_environ("WORLD_SIZE=4", 12, &d);
	CHECK_EQ_INT(d.world_size, 4);
	CHECK_EQ_INT(d.rank, -1);
	CHECK_STR(d.pci_bus_id, "");
}

/* The trace's metadata: one process that knows its rank -> distributedInfo; several -> by pid. */
static struct jv *metadata(struct consumer *c)
{
	struct target t = {};
	struct run_end end = {};
	char *m = summary_trace_metadata(c, &t, NULL, &end), *doc, err[128];
	struct jv *root = NULL;

	CHECK(m);
	if (m && asprintf(&doc, "{%s}", m) > 0) {
		root = jv_parse(doc, strlen(doc), err, sizeof(err));
		free(doc);
	}
	free(m);
	CHECK(root);
	return root;
}

TEST(dist_in_the_trace_metadata_one_process_or_several)
{
	struct process_info procs[3] = {
		{ .pid = 100, .dist = { .rank = -1, .world_size = -1 } },	/* knows nothing */
		{ .pid = 101, .dist = { .rank = 0, .world_size = 2, .pci_bus_id = "0000:1a:00.0" } },
		{ .pid = 102, .dist = { .rank = 1, .world_size = 2 } },
	};
	struct consumer c = { .procs = procs, .nprocs = 2 };
	struct jv *root, *di, *list;
	double v;

	root = metadata(&c);
	di = root ? jv_get(root, "distributedInfo") : NULL;
	CHECK(di);
	if (di) {
		CHECK_STR(jv_get_str(di, "backend"), "spyre_ccl");
		CHECK(jv_get_num(di, "rank", &v) && v == 0);
		CHECK(jv_get_num(di, "world_size", &v) && v == 2);
		CHECK_STR(jv_get_str(di, "pci_bus_id"), "0000:1a:00.0");
	}
	CHECK(root && !jv_get(root, "spyreDistributedInfo"));
	jv_free(root);

	c.nprocs = 3;
	root = metadata(&c);
	CHECK(root && !jv_get(root, "distributedInfo"));
	list = root ? jv_get(root, "spyreDistributedInfo") : NULL;
	CHECK(list && jv_len(list) == 2);
	if (list && jv_len(list) == 2) {
		CHECK(jv_get_num(jv_at(list, 1), "pid", &v) && v == 102);
		CHECK(jv_get_num(jv_at(list, 1), "rank", &v) && v == 1);
		CHECK(!jv_get(jv_at(list, 1), "pci_bus_id"));
	}
	jv_free(root);

	c.nprocs = 1;	/* nothing known: nothing written */
	root = metadata(&c);
	CHECK(root && !jv_get(root, "distributedInfo") && !jv_get(root, "spyreDistributedInfo"));
	jv_free(root);
}

/* An environment read up to its cap ends inside an entry: that entry is no value (issue 43). */
TEST(dist_an_entry_the_read_cap_cut_is_not_taken)
{
	static const char env[] = "PATH=/usr/bin\0RANK=12345\0WORLD_SIZE=4\0";
	struct dist_info d = { .rank = -1, .world_size = -1 };
	/* the cap fell after "RANK=12" */
	size_t cut = strlen("PATH=/usr/bin") + 1 + strlen("RANK=12");

	CHECK_EQ_INT(environ_whole(env, cut), strlen("PATH=/usr/bin") + 1);
	dist_from_environ(env, environ_whole(env, cut), &d);
	CHECK_EQ_INT(d.rank, -1);
	CHECK_EQ_INT(d.world_size, -1);
	/* whole entries stay whole */
	CHECK_EQ_INT(environ_whole(env, sizeof(env) - 1), sizeof(env) - 1);
	CHECK_EQ_INT(environ_whole("ABC", 3), 0);
}
