/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The instruction an entry probe is on, and whether a uprobe program can do it in the kernel's
 * place. x86's kernel emulates a probed push, nop or jmp (one trap) and single-steps anything
 * else (three traps, as for a ret). Where a uprobe program may write its registers (Linux
 * 6.18+ builds that allow it; attach/retcheck.h finds out), the entry program does a probed
 * mov or lea itself and moves ip past it, and the kernel skips the single step, as the return
 * sites' programs do for ret. Only what BPF does exactly: these set no flags, read no memory,
 * and are decoded completely here (Capstone); everything else stays the kernel's.
 */
#ifndef SPYRE_ENTRYINSN_H
#define SPYRE_ENTRYINSN_H

#include <stddef.h>
#include <stdint.h>

/* entry_insn.base: ip after the instruction (lea x(%rip)); no register at all */
#define ENTRY_INSN_RIP	16
#define ENTRY_INSN_NONE	17

/* dst = base + index * scale + disp, zero-extended from 32 bits when w32; then ip += len */
struct entry_insn {
	uint8_t len;		/* 0: not one a program can do */
	uint8_t dst;		/* x86 register number: 0 ax, 1 cx, 2 dx, 3 bx, 4 sp, 5 bp, 6 si, 7 di,
				 * 8-15 r8-r15 */
	uint8_t base;		/* a register number, ENTRY_INSN_RIP or ENTRY_INSN_NONE */
	uint8_t index;		/* a register number or ENTRY_INSN_NONE */
	uint8_t scale;
	uint8_t w32;
	int64_t disp;		/* the displacement, or a mov's immediate */
};

/*
 * Decode the first instruction of @code (@len bytes, x86-64): 0 and @out filled when it is a
 * mov %reg,%reg, mov $imm,%reg or lea mem,%reg of 32 or 64 bits (out->len its length) whose
 * result goes to a register no other tool's probe reads as an input (not an argument register,
 * rsp or rbp: rax, rbx, r10-r15);
 * -ENOENT when it is another instruction (out->len 0), -ENOTSUP on other architectures or
 * without a disassembler, -EINVAL when it does not decode.
 */
int entry_insn_decode(const uint8_t *code, size_t len, struct entry_insn *out);

/* "mov %rdi,%rbx" and the like, for `list` and -v: @buf of @size bytes */
const char *entry_insn_str(const struct entry_insn *e, char *buf, size_t size);

#endif
