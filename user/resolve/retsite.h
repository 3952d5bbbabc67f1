/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Return sites: where a traced function returns, found by disassembling its body (Capstone).
 *
 * A uretprobe replaces the return address on the traced thread's stack with the kernel's
 * trampoline, and a C++ exception (or pthread_cancel) thrown through the call then finds no
 * unwind information for it and terminates the process. A uprobe on the function's own return
 * instructions sees the same return without touching the stack, on every kernel and every
 * architecture. The cost: the kernel single-steps a return instruction (it emulates only
 * some branches), see docs/performance.md.
 *
 * A site is put only where the whole body decoded as instructions from the symbol's start to
 * its end: a breakpoint inside an instruction would corrupt the traced code.
 */
#ifndef SPYRE_RETSITE_H
#define SPYRE_RETSITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum retsite_arch { RS_ARCH_X86_64 = 0, RS_ARCH_S390X, RS_ARCH_PPC64LE, RS_ARCH_NONE };

/* Condition of a conditional jump site (x86 jcc): the low nibble of its opcode, plus one. */
#define RS_COND_NONE	0

struct ret_site {
	uint64_t off;		/* from the function's first byte */
	bool jump;		/* a jump out of the function (tail call), not a return */
	uint16_t pop;		/* x86 ret imm16: bytes it pops besides the return address */
	uint8_t cond;		/* RS_COND_NONE, or x86 condition code + 1 (jcc) */
	/*
	 * jump: where it goes (a vaddr of the file), or with @slot the GOT slot it jumps through
	 * (x86 jmp *GOT(%rip)); tailcall.h follows it
	 */
	bool slot;
	uint64_t target;
	/* jump: the functions it reaches have their returns probed (set by tailcall.h) */
	bool followed;
	bool nests;		/* ... and one of them is traced (SPYRE_CK_TAIL_NEST) */
};

struct ret_sites {
	struct ret_site *v;
	int n;
	int indirect;		/* indirect jumps left unprobed (target unknown statically) */
	const char *why;	/* when none can be used: the reason, a static string */
};

/* The architecture this tool was built for (and traces). */
enum retsite_arch retsite_host_arch(void);

/*
 * Disassemble @len bytes of a function that starts at @vaddr and collect its return sites.
 * 0 with at least one site in @out (free with retsite_free), or -EINVAL with out->why set
 * (undecodable bytes, an exit that cannot be told apart), -ENODATA with out->why set (it
 * decodes, but has no return instruction nor jump out: it never returns), -ENOMEM, -ENOTSUP
 * (no disassembler for @arch).
 */
int retsite_find(enum retsite_arch arch, const uint8_t *code, size_t len, uint64_t vaddr,
		 struct ret_sites *out);
/* The same, reading the function from file offset @file_off of the open file @fd. */
int retsite_find_fd(enum retsite_arch arch, int fd, uint64_t file_off, size_t len,
		    uint64_t vaddr, struct ret_sites *out);
void retsite_free(struct ret_sites *s);

/*
 * The GOT slot a PLT stub at @vaddr jumps through (x86-64: an optional endbr64, then
 * jmp *slot(%rip), as in .plt, .plt.sec and .plt.got; s390x: larl %r1,slot; lg %r1,0(%r1);
 * br %r1): 0 and *@slot, or -EINVAL when @code is no such stub, -ENOTSUP on other
 * architectures (ppc64le: GCC does not tail-call through the PLT, the caller must restore its
 * TOC pointer after the call).
 */
int retsite_plt_slot(enum retsite_arch arch, const uint8_t *code, size_t len, uint64_t vaddr,
		     uint64_t *slot);

#endif
