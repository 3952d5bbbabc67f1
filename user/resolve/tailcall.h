/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Following tail calls. With -O2, `return enqueue(...)` is `jmp enqueue`: the traced call is
 * not over at the jump, its caller gets control back (and its return value) when enqueue
 * returns. So a tail jump's target is found (a function of the same file, or through a PLT
 * stub or a GOT slot the symbol the dynamic linker binds there, in whichever file defines it),
 * disassembled for its own return sites and tail jumps, and so on, up to TAILCALL_MAX_DEPTH
 * functions deep: the return sites of every function reached close the traced call
 * (SPYRE_CK_TAIL_FOLLOW in bpf/spyre_event.h). A chain that cannot be followed completely
 * (an indirect jump, a target inside another function or in no mapped file, too deep) is not
 * followed at all: the traced call then ends at its jump, as before, counted as a tail exit.
 *
 * The file access goes through callbacks, so the walk is tested on hand-made code.
 */
#ifndef SPYRE_TAILCALL_H
#define SPYRE_TAILCALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "resolve/retsite.h"

/* Functions a chain of tail jumps may go through past the traced one (bounds attach cost). */
#define TAILCALL_MAX_DEPTH	4

struct tc_func {
	int file;		/* the caller's index of a file */
	uint64_t vaddr, size;
	uint64_t file_off;	/* of its first byte */
	/* a compiler-made part of a function (".cold", ".part"): may be entered anywhere, so a
	 * jump into it is followed into the whole part */
	bool part;
	/* ppc64le: the local entry's distance from the global one (elf_func.local_entry), where
	 * jumps within the module land */
	uint32_t local_entry;
};

struct tc_ops {
	/*
	 * The function a jump in @file to @addr lands in: the function of @file that contains
	 * @addr, or with @slot (a GOT slot of @file) the function bound to it; a PLT stub at @addr
	 * is followed to its slot by the callback too. 0, or -ENOENT with *@why (a static string).
	 */
	int (*lookup)(void *ctx, int file, uint64_t addr, bool slot, struct tc_func *out,
		      const char **why);
	/* Its return sites and jumps: retsite_find on its code. */
	int (*sites)(void *ctx, const struct tc_func *f, struct ret_sites *out);
	void *ctx;
};

struct tc_ret {
	int file;
	uint64_t file_off;
	uint16_t pop;		/* ret_site.pop */
};

/* What one followed jump reaches. */
struct tc_follow {
	struct tc_func *fn;	/* the functions reached, each once (fn[0]: the jump's target) */
	int nfn;
	size_t capfn;
	struct tc_ret *ret;	/* their return instructions */
	int nret;
	size_t capret;
	const char *why;	/* -ENOENT: why it cannot be followed */
};

/*
 * Follow tail jump @jump of function @from. 0 with out->ret the return sites that end the call
 * (none: the chain never returns), -ENOENT with out->why, -ENOMEM. Free with tailcall_free.
 * Jumps back into @from or into a function already reached are jumps inside the chain.
 */
int tailcall_follow(const struct tc_ops *ops, const struct tc_func *from,
		    const struct ret_site *jump, struct tc_follow *out);
void tailcall_free(struct tc_follow *f);

#endif
