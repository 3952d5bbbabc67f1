// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common/array.h"
#include "resolve/tailcall.h"

_Static_assert(TAILCALL_MAX_DEPTH == 4, "the message in walk() names it");

static bool inside(const struct tc_func *f, int file, uint64_t addr)
{
	return f->file == file && addr >= f->vaddr && addr < f->vaddr + f->size;
}

static bool reached(const struct tc_follow *out, const struct tc_func *from, int file,
		    uint64_t addr)
{
	if (inside(from, file, addr))
		return true;
	for (int i = 0; i < out->nfn; i++)
		if (inside(&out->fn[i], file, addr))
			return true;
	return false;
}

static int walk(const struct tc_ops *ops, const struct tc_func *from, int file,
		const struct ret_site *jump, int depth, struct tc_follow *out)
{
	struct ret_sites s;
	struct tc_func g;
	int err;

	/* a direct jump back into a function of the chain (its cold part jumping home) */
	if (!jump->slot && reached(out, from, file, jump->target))
		return 0;
	err = ops->lookup(ops->ctx, file, jump->target, jump->slot, &g, &out->why);
	if (err)
		return err;
	if (reached(out, from, g.file, g.vaddr))
		return 0;
	if (depth >= TAILCALL_MAX_DEPTH) {
		out->why = "a chain of tail jumps through more functions than followed (4)";
		return -ENOENT;
	}
	if (array_reserve(&out->fn, &out->capfn, (size_t)out->nfn + 1, sizeof(*out->fn), 4))
		return -ENOMEM;
	out->fn[out->nfn++] = g;
	err = ops->sites(ops->ctx, &g, &s);
	if (err == -ENODATA)
		return 0;	/* never returns (abort, a throw): nothing to close there */
	if (err == -ENOMEM)
		return err;
	if (err || s.indirect) {
		/* a jump through a register may leave for anywhere: the return is not seen */
		out->why = s.indirect || (s.why && strstr(s.why, "indirect")) ?
			   "a function it jumps to has jumps through a register" :
			   "a function it jumps to cannot be disassembled";
		retsite_free(&s);
		return -ENOENT;
	}
	for (int i = 0; i < s.n && !err; i++) {
		if (s.v[i].jump) {
			err = walk(ops, from, g.file, &s.v[i], depth + 1, out);
			continue;
		}
		if (array_reserve(&out->ret, &out->capret, (size_t)out->nret + 1, sizeof(*out->ret),
				  4)) {
			err = -ENOMEM;
			break;
		}
		out->ret[out->nret++] = (struct tc_ret){ g.file, g.file_off + s.v[i].off,
							 s.v[i].pop };
	}
	retsite_free(&s);
	return err;
}

int tailcall_follow(const struct tc_ops *ops, const struct tc_func *from,
		    const struct ret_site *jump, struct tc_follow *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	err = walk(ops, from, from->file, jump, 0, out);
	if (err) {
		const char *why = out->why;

		tailcall_free(out);
		out->why = why;
	}
	return err;
}

void tailcall_free(struct tc_follow *f)
{
	free(f->fn);
	free(f->ret);
	memset(f, 0, sizeof(*f));
}
