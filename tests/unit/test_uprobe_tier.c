// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
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

/*
 * Each uprobe program keeps one never-taken tail call on x86-64, so that the JIT (6.14+) gives
 * it no private stack, which two preempted threads would share (bpf/spyre.bpf.c,
 * priv_stack_off); with the JIT off they become r0 = 0, in place.
 */
TEST(tracer_programs_keep_off_the_private_stack)
{
	const char *fx = getenv("UNIT_FIXTURES");
	char path[4096];
	struct bpf_object *obj;
	struct bpf_program *p;
	int uprobes = 0;

	snprintf(path, sizeof(path), "%s/../bpf/spyre.bpf.o", fx ? fx : "build/tests");
	obj = bpf_object__open_file(path, NULL);
	CHECK(obj != NULL);
	if (!obj)
		return;
	bpf_object__for_each_program(p, obj) {
		const struct bpf_insn *in = bpf_program__insns(p);
		size_t cnt = bpf_program__insn_cnt(p);
		int calls = 0;

		for (size_t i = 0; i < cnt; i++)
			calls += in[i].code == (BPF_JMP | BPF_CALL) && !in[i].src_reg &&
				 in[i].imm == BPF_FUNC_tail_call;
		if (!strcmp(bpf_program__section_name(p), "uprobe") ||
		    !strcmp(bpf_program__section_name(p), "uretprobe")) {
			uprobes++;
#if defined(__x86_64__)
			CHECK_EQ_INT(calls, 1);
#else
			CHECK_EQ_INT(calls, 0);
#endif
		} else {
			CHECK_EQ_INT(calls, 0);
		}
	}
	CHECK_EQ_INT(uprobes, 9);
#if defined(__x86_64__)
	CHECK_EQ_INT(bpf_strip_tail_calls(obj), 9);
#endif
	CHECK_EQ_INT(bpf_strip_tail_calls(obj), 0);
	bpf_object__close(obj);
}

/* The programs that do probed instructions, by name: the list names the object's programs. */
TEST(tracer_emulating_programs_are_the_objects)
{
	CHECK_EQ_INT(tracer_emu_progs_known(), 0);
}
