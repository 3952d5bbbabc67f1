// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <capstone/capstone.h>
#include "resolve/entryinsn.h"

#if defined(__x86_64__)
/* Capstone's register -> x86 register number, with the operand's width (64 or 32); -1: other */
static int reg_num(x86_reg r, int *bits)
{
	static const x86_reg r64[16] = {
		X86_REG_RAX, X86_REG_RCX, X86_REG_RDX, X86_REG_RBX, X86_REG_RSP, X86_REG_RBP,
		X86_REG_RSI, X86_REG_RDI, X86_REG_R8, X86_REG_R9, X86_REG_R10, X86_REG_R11,
		X86_REG_R12, X86_REG_R13, X86_REG_R14, X86_REG_R15,
	};
	static const x86_reg r32[16] = {
		X86_REG_EAX, X86_REG_ECX, X86_REG_EDX, X86_REG_EBX, X86_REG_ESP, X86_REG_EBP,
		X86_REG_ESI, X86_REG_EDI, X86_REG_R8D, X86_REG_R9D, X86_REG_R10D, X86_REG_R11D,
		X86_REG_R12D, X86_REG_R13D, X86_REG_R14D, X86_REG_R15D,
	};

	for (int i = 0; i < 16; i++) {
		if (r == r64[i] || r == r32[i]) {
			*bits = r == r64[i] ? 64 : 32;
			return i;
		}
	}
	return -1;
}

/*
 * Registers another tool's probe on the same instruction may read as the function's inputs: the
 * arguments (rdi, rsi, rdx, rcx, r8, r9), the stack and frame pointers. The kernel runs every
 * consumer of a uprobe on the same registers, in an order it does not promise: a program that
 * ran before theirs and wrote one of these would show them a value the function never had at
 * its entry. So an instruction whose result goes there is left to the kernel's single step.
 */
static bool observed(int reg)
{
	return reg == 1 || reg == 2 || reg == 4 || reg == 5 || reg == 6 || reg == 7 || reg == 8 ||
	       reg == 9;
}

/* @in (mov or lea, two operands) as @out; -ENOENT when BPF cannot do it exactly */
static int from_insn(const cs_insn *in, struct entry_insn *out)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *d = &x->operands[0], *s = &x->operands[1];
	int dbits, sbits, dst;

	if (x->op_count != 2 || d->type != X86_OP_REG || (dst = reg_num(d->reg, &dbits)) < 0 ||
	    observed(dst))
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->dst = dst;
	out->w32 = dbits == 32;	/* a 32-bit result clears the register's upper half */
	out->base = out->index = ENTRY_INSN_NONE;
	out->scale = 1;
	switch (in->id) {
	case X86_INS_MOV:
	case X86_INS_MOVABS:
		if (s->type == X86_OP_IMM) {
			/* Capstone sign-extends imm32 of a 64-bit mov, as the CPU does */
			out->disp = dbits == 32 ? (int64_t)(uint32_t)s->imm : s->imm;
		} else if (s->type == X86_OP_REG) {
			int b = reg_num(s->reg, &sbits);

			if (b < 0 || sbits != dbits)
				return -ENOENT;
			out->base = b;
		} else {
			return -ENOENT;	/* a load or store */
		}
		break;
	case X86_INS_LEA:
		/* 64-bit addresses only: no address-size prefix, no segment */
		if (s->type != X86_OP_MEM || s->mem.segment != X86_REG_INVALID)
			return -ENOENT;
		if (s->mem.base == X86_REG_RIP) {
			out->base = ENTRY_INSN_RIP;
		} else if (s->mem.base != X86_REG_INVALID) {
			int b = reg_num(s->mem.base, &sbits);

			if (b < 0 || sbits != 64)
				return -ENOENT;
			out->base = b;
		}
		if (s->mem.index != X86_REG_INVALID) {
			int ix = reg_num(s->mem.index, &sbits);

			if (ix < 0 || sbits != 64 || out->base == ENTRY_INSN_RIP)
				return -ENOENT;
			out->index = ix;
			out->scale = s->mem.scale;
		}
		out->disp = s->mem.disp;
		break;
	default:
		return -ENOENT;
	}
	out->len = in->size;
	return 0;
}
#endif

int entry_insn_decode(const uint8_t *code, size_t len, struct entry_insn *out)
{
	memset(out, 0, sizeof(*out));
#if defined(__x86_64__)
	cs_insn *in = NULL;
	csh h;
	int err;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return -ENOTSUP;
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	if (cs_disasm(h, code, len, 0, 1, &in) != 1)
		err = -EINVAL;
	else
		err = from_insn(in, out);
	if (err)
		memset(out, 0, sizeof(*out));
	if (in)
		cs_free(in, 1);
	cs_close(&h);
	return err;
#else
	(void)code;
	(void)len;
	return -ENOTSUP;
#endif
}

const char *entry_insn_str(const struct entry_insn *e, char *buf, size_t size)
{
	static const char *const n64[16] = { "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi",
					     "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14",
					     "r15" };
	static const char *const n32[16] = { "eax", "ecx", "edx", "ebx", "esp", "ebp", "esi",
					     "edi", "r8d", "r9d", "r10d", "r11d", "r12d", "r13d",
					     "r14d", "r15d" };
	const char *const *n = e->w32 ? n32 : n64;
	const char *dst = e->dst < 16 ? n[e->dst] : "?";

	if (!e->len)
		snprintf(buf, size, "none");
	else if (e->base == ENTRY_INSN_NONE && e->index == ENTRY_INSN_NONE)
		snprintf(buf, size, "mov $%#llx,%%%s", (unsigned long long)e->disp, dst);
	else if (e->index == ENTRY_INSN_NONE && !e->disp && e->base < 16)
		snprintf(buf, size, "mov %%%s,%%%s", n[e->base], dst);
	else {
		char base[8] = "", ix[16] = "";
		uint64_t d = e->disp < 0 ? -(uint64_t)e->disp : (uint64_t)e->disp;

		if (e->base == ENTRY_INSN_RIP || e->base < 16)
			snprintf(base, sizeof(base), "%%%s",
				 e->base == ENTRY_INSN_RIP ? "rip" : n64[e->base]);
		if (e->index < 16)
			snprintf(ix, sizeof(ix), ",%%%s,%d", n64[e->index], e->scale);
		snprintf(buf, size, "lea %s%#llx(%s%s),%%%s", e->disp < 0 ? "-" : "",
			 (unsigned long long)d, base, ix, dst);
	}
	return buf;
}
