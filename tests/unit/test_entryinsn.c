// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Entry instructions the entry program does in the kernel's place (user/resolve/entryinsn.c):
 * hand-assembled x86-64, each decoded and then computed as bpf/spyre.bpf.c do_entry_insn does,
 * against what the CPU would leave in the register.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "resolve/entryinsn.h"
#include "unit.h"

#if defined(__x86_64__)
enum { AX, CX, DX, BX, SP, BP, SI, DI, R8, R9, R10, R11, R12, R13, R14, R15 };

/* do_entry_insn's arithmetic on @r (16 registers) at @ip: the value written to e->dst */
static uint64_t eval(const struct entry_insn *e, const uint64_t *r, uint64_t ip)
{
	uint64_t v = (uint64_t)e->disp;

	if (e->base == ENTRY_INSN_RIP)
		v += ip + e->len;
	else if (e->base < 16)
		v += r[e->base];
	if (e->index < 16)
		v += r[e->index] * e->scale;
	return e->w32 ? (uint32_t)v : v;
}

struct case_ {
	const char *what;
	uint8_t code[15];
	int len;	/* the instruction's */
	int dst;
};

static void regs(uint64_t *r)
{
	for (int i = 0; i < 16; i++)
		r[i] = 0x1111111100000000ull * (i + 1) + 0x100 * (i + 1);
	r[SP] = 0x7ffc0000fff0ull;
	r[SI] = 0xffffffff80000003ull;
}

TEST(entry_insn_does_what_the_cpu_does)
{
	static const struct case_ cases[] = {
		{ "mov %rdi,%rbx", { 0x48, 0x89, 0xfb }, 3, BX },
		{ "mov %rsp,%r11", { 0x49, 0x89, 0xe3 }, 3, R11 },
		{ "mov %r12,%r15", { 0x4d, 0x89, 0xe7 }, 3, R15 },
		{ "mov %edi,%eax (upper half cleared)", { 0x89, 0xf8 }, 2, AX },
		{ "mov $0x5,%eax", { 0xb8, 0x05, 0x00, 0x00, 0x00 }, 5, AX },
		{ "mov $0xffffffff,%r10d", { 0x41, 0xba, 0xff, 0xff, 0xff, 0xff }, 6, R10 },
		{ "mov $-1,%rax (sign-extended)", { 0x48, 0xc7, 0xc0, 0xff, 0xff, 0xff, 0xff }, 7, AX },
		{ "movabs $0x123456789abcdef0,%r13",
		  { 0x49, 0xbd, 0xf0, 0xde, 0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12 }, 10, R13 },
		{ "lea 0x10(%rdi),%rax", { 0x48, 0x8d, 0x47, 0x10 }, 4, AX },
		{ "lea -0x8(%rsp),%rbx", { 0x48, 0x8d, 0x5c, 0x24, 0xf8 }, 5, BX },
		{ "lea 0x1234(%rip),%r12", { 0x4c, 0x8d, 0x25, 0x34, 0x12, 0x00, 0x00 }, 7, R12 },
		{ "lea (%rdi,%rsi,4),%rax", { 0x48, 0x8d, 0x04, 0xb7 }, 4, AX },
		{ "lea 0x0(,%rcx,8),%r10", { 0x4c, 0x8d, 0x14, 0xcd, 0x00, 0x00, 0x00, 0x00 }, 8, R10 },
		{ "lea -0x8(%rbp),%eax (32-bit result)", { 0x8d, 0x45, 0xf8 }, 3, AX },
	};
	uint64_t r[16];

	regs(r);
	/* what the CPU leaves in the register, by hand, at ip 0x1000 */
	const uint64_t want[] = {
		r[DI], r[SP], r[R12], (uint32_t)r[DI], 5, 0xffffffffull, ~0ull,
		0x123456789abcdef0ull, r[DI] + 0x10, r[SP] - 8, 0x1000 + 7 + 0x1234,
		r[DI] + r[SI] * 4, r[CX] * 8, (uint32_t)(r[BP] - 8),
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct case_ *c = &cases[i];
		struct entry_insn e;
		uint8_t code[15];
		char buf[64];

		/* what follows the instruction must not matter: a ret, then junk */
		memset(code, 0xcc, sizeof(code));
		memcpy(code, c->code, c->len);
		code[c->len] = 0xc3;
		if (entry_insn_decode(code, sizeof(code), &e)) {
			unit_fail(__FILE__, __LINE__, c->what);
			continue;
		}
		CHECK_EQ_INT(e.len, c->len);
		CHECK_EQ_INT(e.dst, c->dst);
		if (eval(&e, r, 0x1000) != want[i])
			unit_fail(__FILE__, __LINE__, entry_insn_str(&e, buf, sizeof(buf)));
	}
}

TEST(entry_insn_leaves_the_rest_to_the_kernel)
{
	static const struct { const char *what; uint8_t code[15]; } no[] = {
		{ "push %rbp (the kernel emulates it)", { 0x55 } },
		{ "mov (%rdi),%rax: a load", { 0x48, 0x8b, 0x07 } },
		{ "mov %rax,(%rdi): a store", { 0x48, 0x89, 0x07 } },
		{ "sub $0x8,%rsp: flags", { 0x48, 0x83, 0xec, 0x08 } },
		{ "xor %eax,%eax: flags", { 0x31, 0xc0 } },
		{ "mov %di,%ax: 16 bits keep the upper part", { 0x66, 0x89, 0xf8 } },
		{ "mov %dil,%al: 8 bits", { 0x40, 0x88, 0xf8 } },
		{ "lea (%edi),%eax: a 32-bit address", { 0x67, 0x8d, 0x07 } },
		{ "mov %fs:0x28,%rax: a segment load", { 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00,
							 0x00, 0x00 } },
		{ "endbr64", { 0xf3, 0x0f, 0x1e, 0xfa } },
		/* exact, but into a register another tool's probe may read as an input */
		{ "mov $0x1f,%edi: an argument", { 0xbf, 0x1f, 0x00, 0x00, 0x00 } },
		{ "mov %rsp,%rbp: the frame pointer", { 0x48, 0x89, 0xe5 } },
		{ "lea -0x8(%rsp),%rsi: an argument", { 0x48, 0x8d, 0x74, 0x24, 0xf8 } },
		{ "mov %r12,%r9: an argument", { 0x4d, 0x89, 0xe1 } },
		{ "lea 0x8(%rdi),%rsp: the stack pointer", { 0x48, 0x8d, 0x67, 0x08 } },
	};
	struct entry_insn e;

	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		if (entry_insn_decode(no[i].code, sizeof(no[i].code), &e) != -ENOENT || e.len)
			unit_fail(__FILE__, __LINE__, no[i].what);
	}
	CHECK_EQ_INT(entry_insn_decode((const uint8_t *)"\x0f\x0b", 1, &e), -EINVAL);
}
#endif
