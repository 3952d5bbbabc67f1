// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The probe table's device memory keys (mem=, ptr=, size=, memdev=): accepted and refused. */
#include <errno.h>

#include "unit.h"
#include "resolve/probes.h"

TEST(memprobes_accepted)
{
	struct probe_table t = {};
	char err[256] = "";
	const char *text =
		"l a mem=alloc ptr=ret size=arg2 memdev=arg3\n"
		"l f mem=free ptr=arg2\n"
		"l g type=instant mem=free ptr=arg1\n"
		"l h type=instant mem=alloc ptr=arg1 size=arg2\n";

	CHECK_EQ_INT(probes_parse_text(&t, text, "m", err, sizeof(err)), 0);
	CHECK_STR(err, "");
	CHECK_EQ_INT(t.cnt, 4);
	if (t.cnt == 4) {
		CHECK_EQ_INT(t.specs[0].mem, MEM_ALLOC);
		CHECK_EQ_INT(t.specs[0].ptr, PROBE_VAL_RET);
		CHECK_EQ_INT(t.specs[0].size, 2);
		CHECK_EQ_INT(t.specs[0].memdev, 3);
		CHECK_EQ_INT(t.specs[1].mem, MEM_FREE);
		CHECK_EQ_INT(t.specs[1].ptr, 2);
		CHECK_EQ_INT(t.specs[1].memdev, PROBE_VAL_NONE);
		CHECK_EQ_INT(t.specs[2].type, PROBE_INSTANT);
		CHECK_EQ_INT(t.specs[3].ptr, 1);
	}
	probes_free(&t);

	/* the default table books torch-spyre's allocator: a DataPtr returned by value */
	CHECK_EQ_INT(probes_load_default(&t, err, sizeof(err)), 0);
	for (int i = 0; i < t.cnt; i++) {
		const struct probe_spec *s = &t.specs[i];

		if (!strcmp(s->sym, "spyre::SpyreAllocator::allocate")) {
			CHECK_EQ_INT(s->mem, MEM_ALLOC);
			CHECK(s->ptr >= PROBE_VAL_DEREF);
			if (s->ptr >= PROBE_VAL_DEREF && s->ptr - PROBE_VAL_DEREF < 2) {
				CHECK_EQ_INT(s->deref[s->ptr - PROBE_VAL_DEREF].src, PROBE_VAL_SRET);
				CHECK_EQ_INT(s->deref[s->ptr - PROBE_VAL_DEREF].off, 0);
			}
			CHECK_EQ_INT(s->size, 3);
		} else if (!strcmp(s->sym, "spyre::SpyreAllocator::ReportAndDelete")) {
			CHECK_EQ_INT(s->mem, MEM_FREE);
			CHECK_EQ_INT(s->ptr, 1);
		} else {
			CHECK_EQ_INT(s->mem, MEM_NONE);
		}
	}
	probes_free(&t);
}

TEST(memprobes_errors)
{
	static const struct {
		const char *line;
		const char *msg;
	} cases[] = {
		{ "l s mem=malloc ptr=ret size=arg1", "mem=malloc: expected alloc or free" },
		{ "l s mem=alloc size=arg1", "mem=alloc needs ptr=" },
		{ "l s mem=alloc ptr=ret", "mem=alloc needs size=" },
		{ "l s mem=free", "mem=free needs ptr=" },
		{ "l s mem=free ptr=arg1 size=arg2", "size= and memdev= need mem=alloc" },
		{ "l s mem=free ptr=arg1 memdev=arg2", "size= and memdev= need mem=alloc" },
		{ "l s mem=free ptr=ret", "mem=free with ptr=ret" },
		{ "l s type=instant mem=alloc ptr=ret size=arg1", "ptr=ret on a type=instant" },
		{ "l s type=unwind mem=free ptr=arg1", "mem= on a type=unwind" },
		{ "l s mem=free ptr=arg1 dev=complete key=arg1", "mem= and dev= on one probe" },
		{ "l s ptr=arg1", "need mem=alloc or mem=free" },
		{ "l s size=arg1", "need mem=alloc or mem=free" },
		{ "l s memdev=arg1", "need mem=alloc or mem=free" },
		{ "l s mem=alloc ptr=ret size=ret", "size=ret: expected argN" },
		{ "l s mem=alloc ptr=ret size=arg1 memdev=ret", "memdev=ret: expected argN" },
		{ "l s mem=alloc ptr=arg9 size=arg1", "argument index must be 1..6" },
		{ "l s mem=alloc ptr=foo size=arg1", "expected argN or ret" },
		{ "l s mem=alloc mem=free ptr=arg1", "duplicate key 'mem'" },
		{ "l s mem= ptr=arg1", "mem=: empty value" },
	};
	struct probe_table t = {};
	char text[256], err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "good.so a\n%s\n", cases[i].line);
		err[0] = 0;
		int ret = probes_parse_text(&t, text, "m.probes", err, sizeof(err));

		if (ret != -EINVAL || !strstr(err, "m.probes:2: ") || !strstr(err, cases[i].msg)) {
			char m[512];

			snprintf(m, sizeof(m), "case %zu '%s': ret %d err '%s', want '%s'", i,
				 cases[i].line, ret, err, cases[i].msg);
			unit_fail(__FILE__, __LINE__, m);
		}
		CHECK_EQ_INT(t.cnt, 0);
	}
	probes_free(&t);
}
