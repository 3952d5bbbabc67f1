// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Return sites found by disassembly (user/resolve/retsite.c), on hand-assembled x86-64 bodies. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <unistd.h>
#include "resolve/elfsym.h"
#include "resolve/retsite.h"
#include "unit.h"

#define VADDR 0x401000ull

static int find(const uint8_t *code, size_t len, struct ret_sites *s)
{
	return retsite_find(RS_ARCH_X86_64, code, len, VADDR, s);
}

TEST(retsite_x86_plain_function_has_its_ret)
{
	/* endbr64; push %rbp; mov %rsp,%rbp; pop %rbp; ret */
	static const uint8_t f[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 };
	struct ret_sites s;

	CHECK_EQ_INT(find(f, sizeof(f), &s), 0);
	CHECK_EQ_INT(s.n, 1);
	CHECK_EQ_INT(s.v[0].off, 9);
	CHECK(!s.v[0].jump);
	retsite_free(&s);
}

/* ret imm16 pops bytes besides the return address: a return done by BPF must pop them too */
TEST(retsite_x86_ret_imm16_says_what_it_pops)
{
	/* ret $0x10; ret */
	static const uint8_t f[] = { 0xc2, 0x10, 0x00, 0xc3 };
	struct ret_sites s;

	CHECK_EQ_INT(find(f, sizeof(f), &s), 0);
	CHECK_EQ_INT(s.n, 2);
	CHECK_EQ_INT(s.v[0].off, 0);
	CHECK_EQ_INT(s.v[0].pop, 16);
	CHECK_EQ_INT(s.v[1].off, 3);
	CHECK_EQ_INT(s.v[1].pop, 0);
	retsite_free(&s);
}

TEST(retsite_x86_exits_tail_jumps_and_conditions)
{
	static const uint8_t f[] = {
		0x74, 0x02,				/* 0: je +2 (inside): not a site */
		0x0f, 0x84, 0x00, 0x10, 0x00, 0x00,	/* 2: je far (outside): cond 4 + 1 */
		0xc3,					/* 8: ret */
		0x7f, 0x7f,				/* 9: jg +0x7f (outside) */
		0xff, 0xe0,				/* b: jmp *%rax: indirect, left */
		0xff, 0x25, 0x00, 0x00, 0x00, 0x00,	/* d: jmp *0(%rip): tail call via GOT */
		0xe9, 0x00, 0x01, 0x00, 0x00,		/* 13: jmp +0x100 (outside) */
		0xeb, 0xe9,				/* 18: jmp back to 3 (inside) */
	};
	struct ret_sites s;

	CHECK_EQ_INT(find(f, sizeof(f), &s), 0);
	CHECK_EQ_INT(s.n, 5);
	CHECK_EQ_INT(s.indirect, 1);
	if (s.n == 5) {
		CHECK_EQ_INT(s.v[0].off, 2);
		CHECK(s.v[0].jump);
		CHECK_EQ_INT(s.v[0].cond, 0x4 + 1);
		CHECK_EQ_INT(s.v[1].off, 8);
		CHECK(!s.v[1].jump);
		CHECK_EQ_INT(s.v[2].off, 9);
		CHECK_EQ_INT(s.v[2].cond, 0xf + 1);
		CHECK_EQ_INT(s.v[3].off, 0xd);
		CHECK_EQ_INT(s.v[3].cond, RS_COND_NONE);
		CHECK_EQ_INT(s.v[4].off, 0x13);
		CHECK(s.v[4].jump);
		/* where each jump goes, for following it (tailcall.h) */
		CHECK_EQ_INT(s.v[0].target, VADDR + 8 + 0x1000);
		CHECK(!s.v[0].slot);
		CHECK_EQ_INT(s.v[2].target, VADDR + 0xb + 0x7f);
		CHECK(s.v[3].slot);
		CHECK_EQ_INT(s.v[3].target, VADDR + 0x13);	/* the GOT slot: rip after it + 0 */
		CHECK_EQ_INT(s.v[4].target, VADDR + 0x18 + 0x100);
		CHECK(!s.v[4].slot);
	}
	retsite_free(&s);
}

TEST(retsite_x86_plt_stubs_give_their_got_slot)
{
	/* .plt.sec (IBT): endbr64; bnd jmp *0x2fe2(%rip); nopl */
	static const uint8_t sec[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0xe2, 0x2f, 0x00,
				       0x00, 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	/* lazy .plt: jmp *0x10(%rip); push $1; jmp .plt0 */
	static const uint8_t lazy[] = { 0xff, 0x25, 0x10, 0x00, 0x00, 0x00, 0x68, 0x01, 0x00,
					0x00, 0x00, 0xe9, 0xe0, 0xff, 0xff, 0xff };
	/* a function, not a stub: endbr64; ret */
	static const uint8_t fn[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0xc3 };
	/* jmp *(%rax): a register, no slot */
	static const uint8_t reg[] = { 0xff, 0x20 };
	uint64_t slot = 0;

	CHECK_EQ_INT(retsite_plt_slot(RS_ARCH_X86_64, sec, sizeof(sec), VADDR, &slot), 0);
	CHECK_EQ_INT(slot, VADDR + 11 + 0x2fe2);
	CHECK_EQ_INT(retsite_plt_slot(RS_ARCH_X86_64, lazy, sizeof(lazy), VADDR, &slot), 0);
	CHECK_EQ_INT(slot, VADDR + 6 + 0x10);
	CHECK_EQ_INT(retsite_plt_slot(RS_ARCH_X86_64, fn, sizeof(fn), VADDR, &slot), -EINVAL);
	CHECK_EQ_INT(retsite_plt_slot(RS_ARCH_X86_64, reg, sizeof(reg), VADDR, &slot), -EINVAL);
	/* x86 bytes are no s390x stub */
	CHECK_EQ_INT(retsite_plt_slot(RS_ARCH_S390X, sec, sizeof(sec), VADDR, &slot), -EINVAL);
}

TEST(retsite_s390x_plt_stubs_give_their_got_slot)
{
	/* libflex.so's (s390x build) countCall@plt at 0x4628: larl %r1,0xd000; lg %r1,0(%r1);
	 * br %r1; then the lazy part: basr %r1,%r0; lgf ...; jg .plt */
	static const uint8_t plt[] = { 0xc0, 0x10, 0x00, 0x00, 0x44, 0xec, 0xe3, 0x10, 0x10, 0x00,
				       0x00, 0x04, 0x07, 0xf1, 0x0d, 0x10 };
	/* a negative displacement: larl %r1,.-0x20 */
	static const uint8_t back[] = { 0xc0, 0x10, 0xff, 0xff, 0xff, 0xf0, 0xe3, 0x10, 0x10, 0x00,
					0x00, 0x04, 0x07, 0xf1 };
	/* the PLT's header: stg %r1,56(%r15); larl ...: no stub */
	static const uint8_t head[] = { 0xe3, 0x10, 0xf0, 0x38, 0x00, 0x24, 0xc0, 0x10, 0x00, 0x00,
					0x44, 0xad, 0xd2, 0x07 };
	/* larl into %r1, then a load through another register: no stub */
	static const uint8_t other[] = { 0xc0, 0x10, 0x00, 0x00, 0x44, 0xec, 0xe3, 0x20, 0x10, 0x00,
					 0x00, 0x04, 0x07, 0xf2 };
	uint64_t slot = 0;

	CHECK_EQ_INT(retsite_plt_slot(RS_ARCH_S390X, plt, sizeof(plt), 0x4628, &slot), 0);
	CHECK_EQ_INT(slot, 0xd000);
	CHECK_EQ_INT(retsite_plt_slot(RS_ARCH_S390X, back, sizeof(back), 0x1000, &slot), 0);
	CHECK_EQ_INT(slot, 0x1000 - 0x20);
	CHECK_EQ_INT(retsite_plt_slot(RS_ARCH_S390X, head, sizeof(head), 0x4608, &slot), -EINVAL);
	CHECK_EQ_INT(retsite_plt_slot(RS_ARCH_S390X, other, sizeof(other), 0x4628, &slot), -EINVAL);
	CHECK_EQ_INT(retsite_plt_slot(RS_ARCH_S390X, plt, 8, 0x4628, &slot), -EINVAL);
	/* ppc64le: no tail call goes through a PLT stub there */
	CHECK_EQ_INT(retsite_plt_slot(RS_ARCH_PPC64LE, plt, sizeof(plt), 0x4628, &slot), -ENOTSUP);
}

TEST(retsite_x86_refuses_what_it_cannot_read_safely)
{
	/* 0x06 (push %es) does not exist in 64-bit mode: data, or a misread size */
	static const uint8_t bad[] = { 0x55, 0x06, 0xc3 };
	/* ends inside an instruction (mov $imm32 cut short): a breakpoint could land in it */
	static const uint8_t cut[] = { 0xc3, 0xb8, 0x01, 0x00 };
	/* never returns: call rel32; ud2 */
	static const uint8_t noret[] = { 0xe8, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x0b };
	/* leaves only through an indirect jump */
	static const uint8_t ind[] = { 0xff, 0xe0 };
	struct ret_sites s;

	CHECK_EQ_INT(find(bad, sizeof(bad), &s), -EINVAL);
	CHECK(s.why && strstr(s.why, "decode"));
	CHECK_EQ_INT(s.n, 0);
	CHECK_EQ_INT(find(cut, sizeof(cut), &s), -EINVAL);
	CHECK(s.why && strstr(s.why, "decode"));
	CHECK_EQ_INT(find(noret, sizeof(noret), &s), -ENODATA);
	CHECK(s.why && strstr(s.why, "no return"));
	CHECK_EQ_INT(find(ind, sizeof(ind), &s), -EINVAL);
	CHECK(s.why && strstr(s.why, "indirect"));
	CHECK_EQ_INT(find(ind, 0, &s), -EINVAL);
	CHECK(s.why && strstr(s.why, "no size"));
	CHECK_EQ_INT(retsite_find(RS_ARCH_NONE, ind, sizeof(ind), VADDR, &s), -ENOTSUP);
}

/*
 * s390x and ppc64le bodies: gcc 12 (Debian's s390x-linux-gnu / powerpc64le-linux-gnu cross
 * compilers) -O2 -fPIC on
 *   int framed(int x) { int r = g(x) + g(x + 1); return r * 2; }
 *   int cond_ret(int x) { if (x > 3) return 7; h(); return 5; }
 * taken from the object file (calls unrelocated), so that the cross-built unit tests and this
 * host's agree on what the analysis sees.
 */
static const uint8_t s390x_framed[] = {
	0xeb, 0xaf, 0xf0, 0x50, 0x00, 0x24, 0xe3, 0xf0, 0xff, 0x60, 0xff, 0x71, 0xb9, 0x04, 0x00,
	0xb2, 0xc0, 0xe5, 0x00, 0x00, 0x00, 0x00, 0xa7, 0xba, 0x00, 0x01, 0xb9, 0x04, 0x00, 0xa2,
	0xb9, 0x14, 0x00, 0x2b, 0xc0, 0xe5, 0x00, 0x00, 0x00, 0x00, 0x1a, 0x2a, 0x89, 0x20, 0x00,
	0x01, 0xb9, 0x14, 0x00, 0x22, 0xeb, 0xaf, 0xf0, 0xf0, 0x00, 0x04, 0x07, 0xfe,
};
static const uint8_t s390x_cond_ret[] = {
	0xa7, 0x2e, 0x00, 0x03, 0xa7, 0xc4, 0x00, 0x07, 0xa7, 0x28, 0x00, 0x07, 0xb9, 0x14, 0x00,
	0x22, 0x07, 0xfe, 0xeb, 0xef, 0xf0, 0x70, 0x00, 0x24, 0xe3, 0xf0, 0xff, 0x60, 0xff, 0x71,
	0xc0, 0xe5, 0x00, 0x00, 0x00, 0x00, 0xa7, 0x28, 0x00, 0x05, 0xb9, 0x14, 0x00, 0x22, 0xeb,
	0xef, 0xf1, 0x10, 0x00, 0x04, 0x07, 0xfe,
};
/* int tail(int x) { return g(x + 1); }: ahi; lgfr; jg g (here: 0x200 bytes on) */
static const uint8_t s390x_tail[] = {
	0xa7, 0x2a, 0x00, 0x01, 0xb9, 0x14, 0x00, 0x22, 0xc0, 0xf4, 0x00, 0x00, 0x01, 0x00,
};
/* ber %r14: a conditional return */
static const uint8_t s390x_ber[] = { 0x07, 0x8e, 0x07, 0xfe };

/*
 * tests/progs/stackjob/stackrt.c's dev_alloc (gcc 12, -O2, Debian's s390x cross compiler): its
 * inlined memset ends in exrl (c6 10 ...), which Capstone 4 does not decode; its only return is
 * the br %r14 after it
 */
static const uint8_t s390x_exrl[] = {
	0xeb, 0xaf, 0xf0, 0x50, 0x00, 0x24, 0xe3, 0xf0, 0xff, 0x60, 0xff, 0x71, 0xb9, 0x04, 0x00,
	0xa2, 0xb9, 0x04, 0x00, 0xbf, 0xc0, 0xe5, 0xff, 0xff, 0xff, 0x8e, 0xb9, 0x02, 0x00, 0x22,
	0xa7, 0x84, 0x00, 0x2d, 0xc2, 0xae, 0x00, 0x00, 0x00, 0x10, 0xa7, 0x19, 0x00, 0x10, 0xb9,
	0xe2, 0xc0, 0x1a, 0x12, 0x11, 0xa7, 0x84, 0x00, 0x23, 0xb9, 0x04, 0x00, 0x32, 0xa7, 0x1e,
	0x00, 0x01, 0xa7, 0x84, 0x00, 0x21, 0xa7, 0x1a, 0xff, 0xfe, 0xeb, 0x41, 0x00, 0x08, 0x00,
	0xde, 0x12, 0x44, 0xa7, 0x84, 0x00, 0x0e, 0xe3, 0x20, 0x34, 0x00, 0x00, 0x36, 0x92, 0xa5,
	0x30, 0x00, 0xd2, 0xfe, 0x30, 0x01, 0x30, 0x00, 0x41, 0x30, 0x31, 0x00, 0xa7, 0x46, 0xff,
	0xf6, 0x92, 0xa5, 0x30, 0x00, 0xb9, 0x16, 0x00, 0x11, 0xc6, 0x10, 0x00, 0x00, 0x00, 0x0b,
	0xeb, 0xaf, 0xb0, 0xf0, 0x00, 0x04, 0x07, 0xfe, 0x92, 0xa5, 0x20, 0x00, 0xa7, 0xf4, 0xff,
	0xfa, 0xd2, 0x00, 0x30, 0x01, 0x30, 0x00, 0x07, 0x07,
};

TEST(retsite_s390x_steps_over_what_capstone_cannot_decode)
{
	struct ret_sites s;

	CHECK_EQ_INT(retsite_find(RS_ARCH_S390X, s390x_exrl, sizeof(s390x_exrl), VADDR, &s), 0);
	CHECK_EQ_INT(s.n, 1);
	CHECK_EQ_INT(s.v[0].off, 0x7e);
	CHECK(!s.v[0].jump);
	retsite_free(&s);
}

TEST(retsite_s390x_returns_and_tail_jumps)
{
	struct ret_sites s;

	CHECK_EQ_INT(retsite_find(RS_ARCH_S390X, s390x_framed, sizeof(s390x_framed), VADDR, &s), 0);
	CHECK_EQ_INT(s.n, 1);
	if (s.n == 1)
		CHECK_EQ_INT(s.v[0].off, 0x38);
	retsite_free(&s);
	CHECK_EQ_INT(retsite_find(RS_ARCH_S390X, s390x_cond_ret, sizeof(s390x_cond_ret), VADDR,
				  &s), 0);
	CHECK_EQ_INT(s.n, 2);
	if (s.n == 2) {
		CHECK_EQ_INT(s.v[0].off, 0x10);
		CHECK_EQ_INT(s.v[1].off, 0x32);
		CHECK(!s.v[0].jump && !s.v[1].jump);
	}
	retsite_free(&s);
	CHECK_EQ_INT(retsite_find(RS_ARCH_S390X, s390x_tail, sizeof(s390x_tail), VADDR, &s), 0);
	CHECK_EQ_INT(s.n, 1);
	if (s.n == 1) {
		CHECK_EQ_INT(s.v[0].off, 8);
		CHECK(s.v[0].jump);
	}
	retsite_free(&s);
	CHECK_EQ_INT(retsite_find(RS_ARCH_S390X, s390x_ber, sizeof(s390x_ber), VADDR, &s), -EINVAL);
	CHECK(s.why && strstr(s.why, "conditional"));
}

/* ppc64le: global entry (addis/addi r2), code, blr, then the traceback table (data) */
static const uint8_t ppc64le_framed[] = {
	0x00, 0x00, 0x4c, 0x3c, 0x00, 0x00, 0x42, 0x38, 0xa6, 0x02, 0x08, 0x7c, 0xf8, 0xff, 0xe1,
	0xfb, 0x78, 0x1b, 0x7f, 0x7c, 0x10, 0x00, 0x01, 0xf8, 0xd1, 0xff, 0x21, 0xf8, 0x01, 0x00,
	0x00, 0x48, 0x00, 0x00, 0x00, 0x60, 0x78, 0x1b, 0x69, 0x7c, 0x01, 0x00, 0x7f, 0x38, 0xb4,
	0x07, 0x63, 0x7c, 0x78, 0x4b, 0x3f, 0x7d, 0x01, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00, 0x60,
	0x30, 0x00, 0x21, 0x38, 0x10, 0x00, 0x01, 0xe8, 0x14, 0xfa, 0x63, 0x7c, 0xf8, 0xff, 0xe1,
	0xeb, 0x3c, 0x08, 0x63, 0x54, 0xb4, 0x07, 0x63, 0x7c, 0xa6, 0x03, 0x08, 0x7c, 0x20, 0x00,
	0x80, 0x4e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x80, 0x01, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x60, 0x00, 0x00, 0x42, 0x60,
};
static const uint8_t ppc64le_cond_ret[] = {
	0x00, 0x00, 0x4c, 0x3c, 0x00, 0x00, 0x42, 0x38, 0x03, 0x00, 0x03, 0x2c, 0x14, 0x00, 0x81,
	0x40, 0x07, 0x00, 0x60, 0x38, 0xb4, 0x07, 0x63, 0x7c, 0x20, 0x00, 0x80, 0x4e, 0x00, 0x00,
	0x42, 0x60, 0xa6, 0x02, 0x08, 0x7c, 0x10, 0x00, 0x01, 0xf8, 0xe1, 0xff, 0x21, 0xf8, 0x01,
	0x00, 0x00, 0x48, 0x00, 0x00, 0x00, 0x60, 0x20, 0x00, 0x21, 0x38, 0x05, 0x00, 0x60, 0x38,
	0xb4, 0x07, 0x63, 0x7c, 0x10, 0x00, 0x01, 0xe8, 0xa6, 0x03, 0x08, 0x7c, 0x20, 0x00, 0x80,
	0x4e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x80, 0x00, 0x00, 0x00,
};
/* addi r3,r3,1; b +0x100 (a tail call) */
static const uint8_t ppc64le_tail[] = { 0x01, 0x00, 0x63, 0x38, 0x00, 0x01, 0x00, 0x48 };
/* beqlr: a conditional return */
static const uint8_t ppc64le_beqlr[] = { 0x20, 0x00, 0x82, 0x4d, 0x20, 0x00, 0x80, 0x4e };

TEST(retsite_ppc64le_returns_tail_jumps_and_traceback_tables)
{
	struct ret_sites s;

	CHECK_EQ_INT(retsite_find(RS_ARCH_PPC64LE, ppc64le_framed, sizeof(ppc64le_framed), VADDR,
				  &s), 0);
	CHECK_EQ_INT(s.n, 1);
	if (s.n == 1)
		CHECK_EQ_INT(s.v[0].off, 0x58);
	retsite_free(&s);
	CHECK_EQ_INT(retsite_find(RS_ARCH_PPC64LE, ppc64le_cond_ret, sizeof(ppc64le_cond_ret),
				  VADDR, &s), 0);
	CHECK_EQ_INT(s.n, 2);
	if (s.n == 2) {
		CHECK_EQ_INT(s.v[0].off, 0x18);
		CHECK_EQ_INT(s.v[1].off, 0x48);
	}
	retsite_free(&s);
	CHECK_EQ_INT(retsite_find(RS_ARCH_PPC64LE, ppc64le_tail, sizeof(ppc64le_tail), VADDR, &s),
		     0);
	CHECK_EQ_INT(s.n, 1);
	if (s.n == 1) {
		CHECK_EQ_INT(s.v[0].off, 4);
		CHECK(s.v[0].jump);
	}
	retsite_free(&s);
	CHECK_EQ_INT(retsite_find(RS_ARCH_PPC64LE, ppc64le_beqlr, sizeof(ppc64le_beqlr), VADDR,
				  &s), -EINVAL);
	CHECK(s.why && strstr(s.why, "conditional"));
}

struct ppc_fn {
	const char *name;
	unsigned long local_entry, file_off, vaddr, size;
	bool seen;
};

static int ppc_cb(const struct elf_func *f, void *ctx)
{
	struct ppc_fn *want = ctx;

	for (; want->name; want++) {
		if (strcmp(f->name, want->name))
			continue;
		want->local_entry = f->local_entry;
		want->file_off = f->file_off;
		want->vaddr = f->vaddr;
		want->size = f->size;
		want->seen = true;
	}
	return 0;
}

/*
 * tests/fixtures/libppc64le-fixture.so (tests/progs/ppc64le-fixture.c, `make ppc64le-fixture`):
 * bump() uses the TOC, so it has a global entry setting r2 and a local entry 8 bytes on, where
 * calls inside the module land: the entry probe goes there. leaf() has one entry.
 */
TEST(retsite_ppc64le_local_entry_and_sites_from_a_real_library)
{
	struct ppc_fn fns[] = { { .name = "bump" }, { .name = "leaf" }, {} };
	char path[PATH_MAX];
	struct ret_sites s;
	int fd;

	snprintf(path, sizeof(path), "%s/../libppc64le-fixture.so", unit_traces_dir());
	CHECK_EQ_INT(elfsym_foreach(path, ppc_cb, fns), 0);
	CHECK(fns[0].seen && fns[1].seen);
	CHECK_EQ_INT(fns[0].local_entry, 8);
	CHECK_EQ_INT(fns[1].local_entry, 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK_EQ_INT(retsite_find_fd(RS_ARCH_PPC64LE, fd, fns[0].file_off, fns[0].size,
				     fns[0].vaddr, &s), 0);
	CHECK_EQ_INT(s.n, 1);
	if (s.n == 1) {
		CHECK_EQ_INT(s.v[0].off, 0x20);
		CHECK(!s.v[0].jump);
	}
	retsite_free(&s);
	close(fd);
}
