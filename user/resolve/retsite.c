// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <capstone/capstone.h>
#include "common/array.h"
#include "resolve/retsite.h"

/* Larger symbols are not functions a runtime's entry point would be (and a misread size). */
#define RETSITE_MAX_LEN	(1u << 20)

enum retsite_arch retsite_host_arch(void)
{
#if defined(__x86_64__)
	return RS_ARCH_X86_64;
#elif defined(__s390x__)
	return RS_ARCH_S390X;
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return RS_ARCH_PPC64LE;
#else
	return RS_ARCH_NONE;
#endif
}

static int add_site(struct ret_sites *s, size_t *cap, uint64_t off, bool jump, uint8_t cond)
{
	if (array_reserve(&s->v, cap, (size_t)s->n + 1, sizeof(*s->v), 4))
		return -ENOMEM;
	s->v[s->n++] = (struct ret_site){ .off = off, .jump = jump, .cond = cond };
	return 0;
}

/* A jump site going to @target (a GOT slot when @slot). */
static int add_jump(struct ret_sites *s, size_t *cap, uint64_t off, uint8_t cond, uint64_t target,
		    bool slot)
{
	int err = add_site(s, cap, off, true, cond);

	if (!err) {
		s->v[s->n - 1].target = target;
		s->v[s->n - 1].slot = slot;
	}
	return err;
}

/* The address a rip-relative memory operand of @in points at. */
static uint64_t rip_target(const cs_insn *in, const cs_x86_op *op)
{
	return in->address + in->size + (uint64_t)op->mem.disp;
}

static bool outside(uint64_t target, uint64_t vaddr, size_t len)
{
	return target < vaddr || target >= vaddr + len;
}

/*
 * One x86-64 instruction. Returns: ret. Exits: a direct jmp or jcc whose target is outside
 * the function (a tail call; also a jump to the function's own cold part, which the BPF tells
 * apart at run time: sp is not back at the entry's there), and jmp *GOT(%rip) (a tail call
 * through the GOT, -fno-plt). A jcc is hit whether or not it is taken: its condition code
 * travels with the site, the BPF evaluates it on the flags. Other indirect jumps (switch
 * tables, virtual tail calls) cannot be told apart here and are left alone: a tail call
 * through one is seen as an unwound call.
 */
static int sites_x86(csh h, const cs_insn *in, uint64_t vaddr, size_t len, struct ret_sites *s,
		    size_t *cap)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *op = &x->operands[0];
	uint64_t off = in->address - vaddr;
	uint8_t cc;

	if (in->id == X86_INS_RET) {
		int err = add_site(s, cap, off, false, RS_COND_NONE);

		if (!err && x->op_count == 1 && op->type == X86_OP_IMM)
			s->v[s->n - 1].pop = (uint16_t)op->imm;
		return err;
	}
	if (!cs_insn_group(h, in, CS_GRP_JUMP) || x->op_count != 1)
		return 0;
	if (in->id == X86_INS_JMP) {
		if (op->type == X86_OP_IMM)
			return outside(op->imm, vaddr, len) ?
			       add_jump(s, cap, off, RS_COND_NONE, op->imm, false) : 0;
		if (op->type == X86_OP_MEM && op->mem.base == X86_REG_RIP &&
		    op->mem.index == X86_REG_INVALID)
			return add_jump(s, cap, off, RS_COND_NONE, rip_target(in, op), true);
		s->indirect++;
		return 0;
	}
	/* jcc rel8 (70-7f) or rel32 (0f 80-8f); loop/jrcxz have no flags condition: left */
	if (op->type != X86_OP_IMM || !outside(op->imm, vaddr, len))
		return 0;
	if ((x->opcode[0] & 0xf0) == 0x70)
		cc = x->opcode[0] & 0xf;
	else if (x->opcode[0] == 0x0f && (x->opcode[1] & 0xf0) == 0x80)
		cc = x->opcode[1] & 0xf;
	else
		return 0;
	return add_jump(s, cap, off, cc + 1, op->imm, false);
}

/*
 * s390x: br %r14 returns; j/jg out of the function is a tail call. A conditional return
 * (bcr with a mask, e.g. ber %r14) would be hit taken or not, and the condition code is not
 * evaluated here: such a function is refused. The kernel single-steps a probed br %r14 out of
 * line, which QEMU before 9.1 got wrong (the job went on after the br): the start-up
 * self-test (retcheck.h) turns every site off where that happens.
 */
static int sites_s390x(csh h __attribute__((unused)), const cs_insn *in, uint64_t vaddr, size_t len, struct ret_sites *s,
		      size_t *cap)
{
	const cs_sysz *z = &in->detail->sysz;
	uint64_t off = in->address - vaddr;

	if (!z->op_count)
		return 0;
	/* Capstone 4 puts only some branches in CS_GRP_JUMP: go by mnemonic and operand */
	if (in->mnemonic[0] == 'b' && z->operands[z->op_count - 1].type == SYSZ_OP_REG &&
	    z->operands[z->op_count - 1].reg == SYSZ_REG_14) {
		if (in->id != SYSZ_INS_BR) {
			s->why = "a conditional return (s390x: not supported)";
			return -EINVAL;
		}
		return add_site(s, cap, off, false, RS_COND_NONE);
	}
	if ((in->id == SYSZ_INS_J || in->id == SYSZ_INS_JG) && z->operands[0].type == SYSZ_OP_IMM)
		return outside(z->operands[0].imm, vaddr, len) ?
		       add_jump(s, cap, off, RS_COND_NONE, z->operands[0].imm, false) : 0;
	if (in->id == SYSZ_INS_BR)
		s->indirect++;
	return 0;
}

/* ppc64le: blr returns, b out of the function is a tail call; conditional returns refused. */
static int sites_ppc64le(csh h __attribute__((unused)), const cs_insn *in, uint64_t vaddr, size_t len,
			struct ret_sites *s, size_t *cap)
{
	const cs_ppc *p = &in->detail->ppc;
	uint64_t off = in->address - vaddr;

	if (in->id == PPC_INS_BLR && p->bc == PPC_BC_INVALID && !p->bh)
		return add_site(s, cap, off, false, RS_COND_NONE);
	if (in->id == PPC_INS_BLR || in->id == PPC_INS_BCLR) {
		s->why = "a conditional return (ppc64le: not supported)";
		return -EINVAL;
	}
	if (in->id == PPC_INS_B && p->op_count == 1 && p->operands[0].type == PPC_OP_IMM)
		return outside(p->operands[0].imm, vaddr, len) ?
		       add_jump(s, cap, off, RS_COND_NONE, p->operands[0].imm, false) : 0;
	if (in->id == PPC_INS_BCTR)
		s->indirect++;
	return 0;
}

int retsite_find(enum retsite_arch arch, const uint8_t *code, size_t len, uint64_t vaddr,
		 struct ret_sites *out)
{
	static const struct {
		cs_arch arch;
		cs_mode mode;
	} cs[] = {
		[RS_ARCH_X86_64] = { CS_ARCH_X86, CS_MODE_64 },
		[RS_ARCH_S390X] = { CS_ARCH_SYSZ, CS_MODE_BIG_ENDIAN },
		[RS_ARCH_PPC64LE] = { CS_ARCH_PPC, CS_MODE_64 | CS_MODE_LITTLE_ENDIAN },
	};
	const uint8_t *p = code;
	uint64_t addr = vaddr;
	size_t left = len;
	cs_insn *in = NULL;
	size_t cap = 0;
	int err = 0;
	csh h;

	memset(out, 0, sizeof(*out));
	if (arch >= RS_ARCH_NONE) {
		out->why = "no disassembler for this architecture";
		return -ENOTSUP;
	}
	if (!len || len > RETSITE_MAX_LEN) {
		out->why = len ? "the symbol's size is implausible" : "the symbol has no size";
		return -EINVAL;
	}
	if (cs_open(cs[arch].arch, cs[arch].mode, &h) != CS_ERR_OK) {
		out->why = "the disassembler cannot be opened";
		return -ENOTSUP;
	}
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	in = cs_malloc(h);
	if (!in) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (!cs_disasm_iter(h, &p, &left, &addr, in)) {
			size_t skip = 0;

			/*
			 * ppc64le instructions are 4 bytes, 4-aligned: no breakpoint can land
			 * inside one, and the words that are no instruction are data (the
			 * traceback table after the last blr, inside the symbol's size)
			 */
			if (arch == RS_ARCH_PPC64LE && left >= 4)
				skip = 4;
			/*
			 * s390x: an instruction Capstone 4 does not know, stepped over by the length
			 * its first byte's top two bits give (2, 4 or 6 bytes): exrl, which gcc -O2
			 * emits for an inlined memset or memcpy of a variable length (the whole
			 * function fell back to entries only before), and newer facilities' ones.
			 * No return or tail jump is missed: every branch form is an old one
			 * Capstone decodes (and exrl runs gcc's mvc/xc/clc, never a branch)
			 */
			if (arch == RS_ARCH_S390X && left >= 2)
				skip = (*p >> 6) == 0 ? 2 : (*p >> 6) == 3 ? 6 : 4;
			if (!skip || skip > left)
				break;
			p += skip;
			left -= skip;
			addr += skip;
			continue;
		}
		switch (arch) {
		case RS_ARCH_X86_64:
			err = sites_x86(h, in, vaddr, len, out, &cap);
			break;
		case RS_ARCH_S390X:
			err = sites_s390x(h, in, vaddr, len, out, &cap);
			break;
		default:
			err = sites_ppc64le(h, in, vaddr, len, out, &cap);
			break;
		}
		if (err)
			break;
	}
	if (!err && left) {
		/* data in the text, or a size that does not end on an instruction */
		out->why = "its body does not decode as instructions to the symbol's end";
		err = -EINVAL;
	} else if (!err && !out->n) {
		out->why = out->indirect ? "it leaves only through indirect jumps" :
					   "no return instruction (a function that never returns?)";
		err = out->indirect ? -EINVAL : -ENODATA;
	}
out:
	if (in)
		cs_free(in, 1);
	cs_close(&h);
	if (err) {
		const char *why = out->why;

		retsite_free(out);
		out->why = why;
	}
	return err;
}

int retsite_find_fd(enum retsite_arch arch, int fd, uint64_t file_off, size_t len,
		    uint64_t vaddr, struct ret_sites *out)
{
	uint8_t *buf;
	ssize_t n;
	int err;

	memset(out, 0, sizeof(*out));
	if (!len || len > RETSITE_MAX_LEN)
		return retsite_find(arch, NULL, len, vaddr, out);
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	n = pread(fd, buf, len, file_off);
	if (n != (ssize_t)len) {
		free(buf);
		out->why = "its body is not in the file";
		return n < 0 ? -errno : -EINVAL;
	}
	err = retsite_find(arch, buf, len, vaddr, out);
	free(buf);
	return err;
}

void retsite_free(struct ret_sites *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/*
 * s390x's PLT entry (binutils' elf_s390x_plt_entry), the only form the linker writes:
 * larl %r1,slot; lg %r1,0(%r1); br %r1. larl's operand counts halfwords from the insn.
 */
static int s390x_plt_slot(const uint8_t *c, size_t len, uint64_t vaddr, uint64_t *slot)
{
	static const uint8_t lg_br[] = { 0xe3, 0x10, 0x10, 0x00, 0x00, 0x04, 0x07, 0xf1 };
	int32_t half;

	if (len < 6 + sizeof(lg_br) || c[0] != 0xc0 || c[1] != 0x10 ||
	    memcmp(c + 6, lg_br, sizeof(lg_br)))
		return -EINVAL;
	half = (int32_t)((uint32_t)c[2] << 24 | (uint32_t)c[3] << 16 | (uint32_t)c[4] << 8 | c[5]);
	*slot = vaddr + 2 * (int64_t)half;
	return 0;
}

int retsite_plt_slot(enum retsite_arch arch, const uint8_t *code, size_t len, uint64_t vaddr,
		     uint64_t *slot)
{
	const uint8_t *p = code;
	uint64_t addr = vaddr;
	size_t left = len;
	cs_insn *in;
	int err = -EINVAL;
	csh h;

	if (arch == RS_ARCH_S390X)
		return s390x_plt_slot(code, len, vaddr, slot);
	if (arch != RS_ARCH_X86_64)
		return -ENOTSUP;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return -ENOTSUP;
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	in = cs_malloc(h);
	/* two instructions at most: endbr64, then the jump ("bnd jmp" is a jmp with a prefix) */
	for (int i = 0; in && i < 2 && cs_disasm_iter(h, &p, &left, &addr, in); i++) {
		const cs_x86 *x = &in->detail->x86;

		if (in->id == X86_INS_ENDBR64 && i == 0)
			continue;
		if (in->id == X86_INS_JMP && x->op_count == 1 && x->operands[0].type == X86_OP_MEM &&
		    x->operands[0].mem.base == X86_REG_RIP &&
		    x->operands[0].mem.index == X86_REG_INVALID) {
			*slot = rip_target(in, &x->operands[0]);
			err = 0;
		}
		break;
	}
	if (in)
		cs_free(in, 1);
	cs_close(&h);
	return err;
}
