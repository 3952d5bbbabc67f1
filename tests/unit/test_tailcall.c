// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Following tail calls: the walk of user/resolve/tailcall.c over hand-assembled x86-64
 * functions in two made-up files, and (x86-64) the whole resolution on the built libtailrt.so /
 * libtailb.so of tests/progs/tailjob: a direct jump, a chain, a traced target, a PLT stub into
 * the other library, jumps into a cold part.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "resolve/probes.h"
#include "report/listing.h"
#include "resolve/resolve.h"
#include "resolve/tailcall.h"
#include "unit.h"

/* e9 rel32 from @at to @to */
#define JMP(at, to) 0xe9, (uint8_t)((to) - (at) - 5), (uint8_t)(((to) - (at) - 5) >> 8), \
		    (uint8_t)(((to) - (at) - 5) >> 16), (uint8_t)(((to) - (at) - 5) >> 24)

struct fake_fn {
	int file;
	uint64_t vaddr;
	const uint8_t *code;
	size_t len;
};

/* file 0: the traced function F and what it jumps to; file 1: what the GOT slot binds to */
static const uint8_t f_code[] = { 0x48, 0x85, 0xff, JMP(0x1003, 0x2000), 0xc3 };
static const uint8_t a_code[] = { 0x48, 0x83, 0xc7, 0x01, JMP(0x2004, 0x3000) };	/* add; jmp B */
static const uint8_t b_code[] = { 0x74, 0x01, 0xc3, 0xc3 };	/* je +1; ret; ret */
static const uint8_t c_code[] = { 0xff, 0xe0, 0xc3 };	/* jmp *%rax; ret */
static const uint8_t n_code[] = { 0x0f, 0x0b };	/* ud2: never returns */
/* G: test; jne F + 3 (back into F: a cold part going home); ret */
static const uint8_t g_code[] = { 0x48, 0x85, 0xff, 0x0f, 0x85, 0xfa, 0xbe, 0xff, 0xff, 0xc3 };
static const uint8_t e_code[] = { 0xc3 };
/* a chain D0 -> D1 -> ... -> D5, each a jmp to the next */
static const uint8_t d0[] = { JMP(0x6000, 0x6100) }, d1[] = { JMP(0x6100, 0x6200) },
		     d2[] = { JMP(0x6200, 0x6300) }, d3[] = { JMP(0x6300, 0x6400) },
		     d4[] = { JMP(0x6400, 0x6500) }, d5[] = { 0xc3 };
/* a cycle: Y0 -> Y1 -> Y0, Y1 returns */
static const uint8_t y0[] = { 0x74, 0x01, JMP(0x7002, 0x7100) }, y1[] = { 0x75, 0x05, JMP(0x7102, 0x7000), 0xc3 };

static const struct fake_fn fns[] = {
	{ 0, 0x1000, f_code, sizeof(f_code) }, { 0, 0x2000, a_code, sizeof(a_code) },
	{ 0, 0x3000, b_code, sizeof(b_code) }, { 0, 0x4000, c_code, sizeof(c_code) },
	{ 0, 0x5000, n_code, sizeof(n_code) }, { 0, 0x5100, g_code, sizeof(g_code) },
	{ 0, 0x6000, d0, sizeof(d0) }, { 0, 0x6100, d1, sizeof(d1) }, { 0, 0x6200, d2, sizeof(d2) },
	{ 0, 0x6300, d3, sizeof(d3) }, { 0, 0x6400, d4, sizeof(d4) }, { 0, 0x6500, d5, sizeof(d5) },
	{ 0, 0x7000, y0, sizeof(y0) }, { 0, 0x7100, y1, sizeof(y1) },
	{ 1, 0x100, e_code, sizeof(e_code) },
};

static int lookups;

static int fake_lookup(void *ctx, int file, uint64_t addr, bool slot, struct tc_func *out,
		       const char **why)
{
	lookups++;
	if (slot) {
		if (file == 0 && addr == 0x9000) {
			*out = (struct tc_func){ 1, 0x100, 1, 0x100 };
			return 0;
		}
		*why = "unbound slot";
		return -ENOENT;
	}
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		if (fns[i].file == file && fns[i].vaddr == addr) {
			/* file offsets: vaddr + 0x10000, so the test tells them apart */
			*out = (struct tc_func){ file, addr, fns[i].len, addr + 0x10000 };
			return 0;
		}
	}
	*why = "nowhere";
	return -ENOENT;
}

static int fake_sites(void *ctx, const struct tc_func *f, struct ret_sites *out)
{
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (fns[i].file == f->file && fns[i].vaddr == f->vaddr)
			return retsite_find(RS_ARCH_X86_64, fns[i].code, fns[i].len, f->vaddr, out);
	return -EINVAL;
}

static const struct tc_ops ops = { fake_lookup, fake_sites, NULL };
static const struct tc_func from = { 0, 0x1000, sizeof(f_code), 0x11000 };

static int follow(uint64_t target, bool slot, struct tc_follow *out)
{
	struct ret_site j = { .jump = true, .target = target, .slot = slot };

	return tailcall_follow(&ops, &from, &j, out);
}

TEST(tailcall_follows_direct_jumps_through_a_chain)
{
	struct tc_follow fw;

	/* F -> A -> B: B's two returns end F's call */
	CHECK_EQ_INT(follow(0x2000, false, &fw), 0);
	CHECK_EQ_INT(fw.nfn, 2);
	CHECK_EQ_INT(fw.nret, 2);
	if (fw.nret == 2) {
		CHECK_EQ_INT(fw.ret[0].file, 0);
		CHECK_EQ_INT(fw.ret[0].file_off, 0x13000 + 2);
		CHECK_EQ_INT(fw.ret[1].file_off, 0x13000 + 3);
	}
	tailcall_free(&fw);
	/* through a GOT slot into the other file */
	CHECK_EQ_INT(follow(0x9000, true, &fw), 0);
	CHECK_EQ_INT(fw.nfn, 1);
	CHECK_EQ_INT(fw.nret, 1);
	if (fw.nret == 1) {
		CHECK_EQ_INT(fw.ret[0].file, 1);
		CHECK_EQ_INT(fw.ret[0].file_off, 0x100);
	}
	tailcall_free(&fw);
}

TEST(tailcall_jumps_home_cycles_and_noreturn_are_inside_the_chain)
{
	struct tc_follow fw;

	/* G jumps back into F (a cold part going home): nothing more to probe than its ret */
	CHECK_EQ_INT(follow(0x5100, false, &fw), 0);
	CHECK_EQ_INT(fw.nfn, 1);
	CHECK_EQ_INT(fw.nret, 1);
	tailcall_free(&fw);
	/* Y0 <-> Y1: each once */
	lookups = 0;
	CHECK_EQ_INT(follow(0x7000, false, &fw), 0);
	CHECK_EQ_INT(fw.nfn, 2);
	CHECK_EQ_INT(fw.nret, 1);
	tailcall_free(&fw);
	/* a function that never returns: followed, nothing to close there */
	CHECK_EQ_INT(follow(0x5000, false, &fw), 0);
	CHECK_EQ_INT(fw.nfn, 1);
	CHECK_EQ_INT(fw.nret, 0);
	tailcall_free(&fw);
}

TEST(tailcall_refuses_what_it_cannot_follow_and_says_why)
{
	struct tc_follow fw;

	/* a jump through a register in the target */
	CHECK_EQ_INT(follow(0x4000, false, &fw), -ENOENT);
	CHECK(fw.why && strstr(fw.why, "register"));
	CHECK_EQ_INT(fw.nret, 0);
	tailcall_free(&fw);
	/* D0..D3 are 4 functions; D4 would be the fifth */
	CHECK_EQ_INT(follow(0x6000, false, &fw), -ENOENT);
	CHECK(fw.why && strstr(fw.why, "more functions than followed (4)"));
	tailcall_free(&fw);
	CHECK_EQ_INT(follow(0x6200, false, &fw), 0);	/* D2 D3 D4 D5: 4, fine */
	CHECK_EQ_INT(fw.nfn, 4);
	tailcall_free(&fw);
	/* what the lookup cannot find, with its reason */
	CHECK_EQ_INT(follow(0x8000, false, &fw), -ENOENT);
	CHECK(fw.why && !strcmp(fw.why, "nowhere"));
	tailcall_free(&fw);
	CHECK_EQ_INT(follow(0x9008, true, &fw), -ENOENT);
	CHECK(fw.why && !strcmp(fw.why, "unbound slot"));
	tailcall_free(&fw);
}

#if defined(__x86_64__)
static const struct rprobe *probe_named(const struct target *t, const char *name)
{
	for (int i = 0; i < t->cnt; i++)
		if (!strcmp(t->probes[i].name, name))
			return &t->probes[i];
	return NULL;
}

/* The one jump site of @p. */
static const struct ret_site *only_jump(const struct rprobe *p)
{
	const struct ret_site *j = NULL;
	int n = 0;

	for (int k = 0; p && k < p->sites.n; k++)
		if (p->sites.v[k].jump && ++n)
			j = &p->sites.v[k];
	return n == 1 ? j : NULL;
}

TEST(tailcall_resolves_the_tail_jumps_of_the_built_runtime)
{
	char rt[PATH_MAX], b[PATH_MAX + 16], err[256], buf[3 * PATH_MAX], report[16384] = "";
	struct probe_table tab = {};
	const struct ret_site *j;
	const struct rprobe *p;
	struct target t;
	int blib = -1, parsed;
	FILE *maps, *rep;

	CHECK(realpath(unit_fixture_dir(), rt));
	snprintf(b, sizeof(b), "%s/libtailb.so", rt);
	strncat(rt, "/libtailrt.so", sizeof(rt) - strlen(rt) - 1);
	parsed = probes_parse_text(&tab,
		"libtailrt.so tail_launch\n"
		"libtailrt.so tail_launch_traced\n"
		"libtailrt.so tail_launch_plt\n"
		"libtailrt.so tail_launch_chain\n"
		"libtailrt.so tail_submit\n"
		"libtailrt.so tail_launch_checked\n", "t", err, sizeof(err));
	CHECK_EQ_INT(parsed, 0);
	CHECK_EQ_INT(target_init(&t, 1234, &tab, 64), 0);
	/* libtailb.so mapped after the runtime: the PLT jump is resolved once both are known */
	snprintf(buf, sizeof(buf),
		 "7f0000000000-7f0000001000 r-xp 00000000 fd:01 4243 %s\n"
		 "7f0000100000-7f0000101000 r-xp 00000000 fd:01 4244 %s\n", rt, b);
	maps = fmemopen(buf, strlen(buf), "r");
	CHECK(maps);
	CHECK_EQ_INT(target_scan_maps(&t, maps, NULL), 6);
	fclose(maps);

	/* a direct jump to an untraced function: followed, not nesting */
	p = probe_named(&t, "tail_launch");
	j = only_jump(p);
	CHECK(j && j->followed && !j->nests);
	CHECK(p && p->tail_followed == 1 && p->tail_funcs == 1 && p->tail_rets == 1 &&
	      !p->tail_lost);
	/* into the traced tail_submit, and on to rt_enqueue: nests */
	p = probe_named(&t, "tail_launch_traced");
	j = only_jump(p);
	CHECK(j && j->followed && j->nests);
	CHECK(p && p->tail_funcs == 2 && p->tail_rets == 1);
	p = probe_named(&t, "tail_launch_chain");
	j = only_jump(p);
	CHECK(j && j->followed && !j->nests);
	CHECK(p && p->tail_funcs == 2);
	/* two jcc into its .cold part, the second into its middle: the whole part is followed
	 * (it never returns), and so is the jmp to rt_enqueue */
	p = probe_named(&t, "tail_launch_checked");
	CHECK(p && p->tail_followed == 3 && p->tail_funcs == 3 && p->tail_rets == 1 &&
	      !p->tail_lost);
	/* the PLT stub: its GOT slot is bound to tailb_enqueue, which libtailb.so defines */
	p = probe_named(&t, "tail_launch_plt");
	j = only_jump(p);
	CHECK(j && j->followed && !j->nests);
	for (int l = 0; l < t.nlibs; l++)
		if (strstr(t.libs[l].path, "libtailb.so"))
			blib = l;
	CHECK(blib >= 0 && t.libs[blib].tail_only && !t.libs[blib].nprobes);
	/* rt_enqueue's ret ends the chains of five probes (tail_submit's own too): one site,
	 * shared; tailb_enqueue's ret one */
	CHECK_EQ_INT(t.ntails, 2);
	for (int k = 0; k < t.ntails; k++)
		CHECK_EQ_INT(t.tails[k].users, (t.tails[k].lib == blib ? 1 : 5));
	rep = fmemopen(report, sizeof(report) - 1, "w");
	CHECK(rep);
	if (rep) {
		listing_probes(&t, NULL, true, NULL, rep);
		fclose(rep);
	}
	CHECK(strstr(report, "tail calls: 1 jump followed into 2 functions: 1 more return site "
			     "probed, each hit by every call of those functions"));
	CHECK(strstr(report, "libtailb.so: no probe, 1 return site of tail-called functions"));
	target_free(&t);
	probes_free(&tab);
}
#endif
