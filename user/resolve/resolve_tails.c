// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A target's tail calls followed (target_follow_tails, resolve.h; the jumps decoded by
 * tailcall.h): each traced function's tail jumps, through PLT stubs and GOT slots into the
 * libraries the process mapped, to the functions whose returns then end the traced call.
 * What one pass reads of the files is read once.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/array.h"
#include "common/log.h"
#include "common/util.h"
#include "resolve/elfsym.h"
#include "resolve/procmaps.h"
#include "resolve/resolve.h"
#include "resolve/tailcall.h"

/* A GOT slot and the symbol bound to it; an exported function. */
struct tail_import {
	uint64_t slot;
	char *name;
};

struct tail_export {
	char *name;
	struct tc_func f;
	bool ifunc;
};

/*
 * What one target_follow_tails reads of the files, each once: a library's functions by
 * address and its GOT slots by address, a mapped file's exports by name. 5,000 PyTorch probes
 * ask for the same few libraries thousands of times.
 */
struct tail_lib {
	struct tc_func *funcs;
	int nfuncs;		/* -1: not read yet */
	struct tail_import *imports;
	int nimports;		/* -1: not read yet */
	struct elf_seg *segs;
	int nsegs;		/* -1: not read yet */
	int fd;			/* -1: not open yet (or cannot be) */
};

struct tail_ctx {
	struct target *t;
	struct tail_lib *libs;	/* by library index */
	int nlibs;
	struct tail_export **exports;	/* by file index */
	int *nexports;			/* -1: not read yet */
};

static int tail_ctx_init(struct tail_ctx *c, struct target *t)
{
	memset(c, 0, sizeof(*c));
	c->t = t;
	c->exports = calloc(t->nfiles ? t->nfiles : 1, sizeof(*c->exports));
	c->nexports = malloc((t->nfiles ? t->nfiles : 1) * sizeof(*c->nexports));
	if (!c->exports || !c->nexports)
		return -ENOMEM;
	for (int i = 0; i < t->nfiles; i++)
		c->nexports[i] = -1;
	return 0;
}

static void tail_ctx_free(struct tail_ctx *c)
{
	for (int l = 0; l < c->nlibs; l++) {
		free(c->libs[l].funcs);
		for (int k = 0; k < c->libs[l].nimports; k++)
			free(c->libs[l].imports[k].name);
		free(c->libs[l].imports);
		free(c->libs[l].segs);
		if (c->libs[l].fd >= 0)
			close(c->libs[l].fd);
	}
	free(c->libs);
	for (int i = 0; c->nexports && i < c->t->nfiles; i++) {
		for (int k = 0; k < c->nexports[i]; k++)
			free(c->exports[i][k].name);
		free(c->exports[i]);
	}
	free(c->exports);
	free(c->nexports);
}

/* Library @lib's cache entry (libraries are added while following: tail_only). */
static struct tail_lib *tail_lib(struct tail_ctx *c, int lib)
{
	struct tail_lib *v;

	if (lib >= c->nlibs) {
		v = realloc(c->libs, (lib + 1) * sizeof(*v));
		if (!v)
			return NULL;
		for (int i = c->nlibs; i <= lib; i++)
			v[i] = (struct tail_lib){ .nfuncs = -1, .nimports = -1, .nsegs = -1,
						  .fd = -1 };
		c->libs = v;
		c->nlibs = lib + 1;
	}
	return &c->libs[lib];
}

struct tail_acc {
	void *v;
	int n;
	size_t cap;
	int lib;
};

static int on_func(const struct elf_func *f, void *ctx)
{
	struct tail_acc *a = ctx;
	struct tc_func *v;

	if (!f->size)
		return 0;
	v = a->v;
	if (a->n && v[a->n - 1].vaddr == f->vaddr)
		return 0;	/* an alias */
	if (array_reserve(&a->v, &a->cap, (size_t)a->n + 1, sizeof(*v), 256))
		return -ENOMEM;
	v = a->v;
	v[a->n++] = (struct tc_func){ a->lib, f->vaddr, f->size, f->file_off, f->clone,
				      f->local_entry };
	return 0;
}

/* Library @lib open (once), or -errno. */
static int lib_fd(struct tail_ctx *c, int lib)
{
	struct tail_lib *tl = tail_lib(c, lib);

	if (!tl)
		return -ENOMEM;
	if (tl->fd < 0)
		tl->fd = open(c->t->libs[lib].open_path, O_RDONLY | O_CLOEXEC);
	return tl->fd < 0 ? -errno : tl->fd;
}

/* The file offset of @vaddr in library @lib: 0, or -ENOENT (in no segment), -ENOMEM. */
static int lib_vaddr_off(struct tail_ctx *c, int lib, uint64_t vaddr, unsigned long *off)
{
	struct tail_lib *tl = tail_lib(c, lib);

	if (!tl)
		return -ENOMEM;
	if (tl->nsegs < 0) {
		tl->nsegs = elfsym_segments(c->t->libs[lib].open_path, &tl->segs);
		if (tl->nsegs == -ENOMEM)
			return -ENOMEM;
	}
	for (int i = 0; i < tl->nsegs; i++) {
		if (vaddr >= tl->segs[i].vaddr && vaddr - tl->segs[i].vaddr < tl->segs[i].filesz) {
			*off = vaddr - tl->segs[i].vaddr + tl->segs[i].off;
			return 0;
		}
	}
	return -ENOENT;
}

/* The functions of library @lib, in address order (elfsym_foreach's); their count or -ENOMEM. */
static int lib_funcs(struct tail_ctx *c, int lib, struct tc_func **v)
{
	struct tail_lib *tl = tail_lib(c, lib);
	struct tail_acc a = { .lib = lib };

	if (!tl)
		return -ENOMEM;
	if (tl->nfuncs < 0) {
		if (elfsym_foreach_raw(c->t->libs[lib].open_path, on_func, &a) == -ENOMEM) {
			free(a.v);
			return -ENOMEM;
		}
		tl->funcs = a.v;
		tl->nfuncs = a.n;
	}
	*v = tl->funcs;
	return tl->nfuncs;
}

static int on_import(unsigned long slot, const char *name, void *ctx)
{
	struct tail_acc *a = ctx;
	struct tail_import *v;

	if (array_reserve(&a->v, &a->cap, (size_t)a->n + 1, sizeof(*v), 256))
		return -ENOMEM;
	v = a->v;
	v[a->n].slot = slot;
	if (!(v[a->n].name = strdup(name)))
		return -ENOMEM;
	a->n++;
	return 0;
}

static int import_cmp(const void *a, const void *b)
{
	const struct tail_import *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* The symbol bound to GOT slot @slot of @lib, or NULL (-ENOMEM in *err). */
static const char *slot_name(struct tail_ctx *c, int lib, uint64_t slot, int *err)
{
	struct tail_lib *tl = tail_lib(c, lib);
	struct tail_acc a = {};
	struct tail_import key = { .slot = slot }, *hit;

	*err = 0;
	if (!tl) {
		*err = -ENOMEM;
		return NULL;
	}
	if (tl->nimports < 0) {
		if (elfsym_imports(c->t->libs[lib].open_path, on_import, &a) == -ENOMEM) {
			tl->imports = a.v;
			tl->nimports = a.n;
			*err = -ENOMEM;
			return NULL;
		}
		tl->imports = a.v;
		tl->nimports = a.n;
		if (a.n)
			qsort(tl->imports, a.n, sizeof(*tl->imports), import_cmp);
	}
	if (!tl->nimports)
		return NULL;
	hit = bsearch(&key, tl->imports, tl->nimports, sizeof(key), import_cmp);
	return hit ? hit->name : NULL;
}

static int on_export(const struct elf_func *f, void *ctx)
{
	struct tail_acc *a = ctx;
	struct tail_export *v;

	if (array_reserve(&a->v, &a->cap, (size_t)a->n + 1, sizeof(*v), 256))
		return -ENOMEM;
	v = a->v;
	v[a->n] = (struct tail_export){ .f = { -1, f->vaddr, f->size, f->file_off },
					.ifunc = f->ifunc };
	if (!(v[a->n].name = strdup(f->name)))
		return -ENOMEM;
	a->n++;
	return 0;
}

static int export_cmp(const void *a, const void *b)
{
	return strcmp(((const struct tail_export *)a)->name, ((const struct tail_export *)b)->name);
}

/* The function mapped file @i exports as @name, or NULL (-ENOMEM in *err). */
static const struct tail_export *file_export(struct tail_ctx *c, int i, const char *name,
					     int *err)
{
	struct tail_acc a = {};
	struct tail_export key = { .name = (char *)name };

	*err = 0;
	if (c->nexports[i] < 0) {
		*err = elfsym_exports(c->t->files[i].open_path, on_export, &a) == -ENOMEM ?
		       -ENOMEM : 0;
		c->exports[i] = a.v;
		c->nexports[i] = a.n;
		if (*err)
			return NULL;
		if (a.n)
			qsort(c->exports[i], a.n, sizeof(*c->exports[i]), export_cmp);
	}
	if (!c->nexports[i])
		return NULL;
	return bsearch(&key, c->exports[i], c->nexports[i], sizeof(key), export_cmp);
}

/* The library of mapped file @m, added (tail_only) if no probe made it one. */
static int file_lib(struct target *t, const struct mapped_file *m)
{
	struct rlib *l;
	int i = target_find_lib(t, m->dev_major, m->dev_minor, m->ino, m->path);

	if (i >= 0)
		return i;
	if (array_reserve(&t->libs, &t->libs_cap, (size_t)t->nlibs + 1, sizeof(*t->libs), 8))
		return -ENOMEM;
	l = &t->libs[t->nlibs];
	memset(l, 0, sizeof(*l));
	l->path = strdup(m->path);
	l->open_path = strdup(m->open_path);
	if (!l->path || !l->open_path) {
		free(l->path);
		free(l->open_path);
		return -ENOMEM;
	}
	l->ino = m->ino;
	l->dev_major = m->dev_major;
	l->dev_minor = m->dev_minor;
	l->tail_only = true;
	return t->nlibs++;
}

/*
 * The C and C++ runtime: a traced destructor that ends in `jmp operator delete` (and delete in
 * `jmp free`) would put return sites on free, which the whole process calls all the time: on
 * the mock job every free trapped (~20 us each here) while attached. What they return (nothing,
 * or a pointer the caller passed in) is worth less than that: such a jump ends the span, named
 * and counted as not followed.
 */
static bool c_runtime(const char *path)
{
	static const char *const libs[] = { "libc.so*", "libstdc++.so*", "libgcc_s.so*",
					     "libm.so*", "libpthread.so*", "ld-linux*.so*", "ld64.so*",
					     "libc++.so*", "libc++abi.so*" };
	const char *base = path_basename(path);

	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (!fnmatch(libs[i], base, 0))
			return true;
	return false;
}

/* The function bound to GOT slot @slot of @lib: its symbol, defined in the first file that has it. */
static int slot_func(struct tail_ctx *c, int lib, uint64_t slot, struct tc_func *out,
		     const char **why)
{
	struct target *t = c->t;
	int err;
	const char *name = slot_name(c, lib, slot, &err);

	if (!name) {
		*why = "a jump through a GOT slot that no symbol is bound to";
		return err ? err : -ENOENT;
	}
	/* the executable comes first in the maps, then the libraries: ld.so's search order,
	 * for a job that does not interpose anything */
	for (int i = 0; i < t->nfiles; i++) {
		const struct tail_export *e = file_export(c, i, name, &err);
		int l;

		if (err)
			return err;
		if (!e)
			continue;
		if (e->ifunc) {
			*why = "it jumps to an IFUNC (its code is chosen at run time)";
			return -ENOENT;
		}
		if (c_runtime(t->files[i].path)) {
			*why = "it jumps into the C/C++ runtime (free, operator delete, ...): every "
			       "call of it in the process would trap";
			return -ENOENT;
		}
		l = file_lib(t, &t->files[i]);
		if (l < 0)
			return l;
		*out = e->f;
		out->file = l;
		return 0;
	}
	*why = "it jumps to a function no mapped file defines";
	return -ENOENT;
}

static int tail_lookup(void *ctx, int lib, uint64_t addr, bool slot, struct tc_func *out,
		       const char **why)
{
	struct tail_ctx *c = ctx;
	struct tc_func *v;
	unsigned long off;
	uint8_t code[16];
	int n, lo, hi, fd;
	ssize_t got;

	if (slot)
		return slot_func(c, lib, addr, out, why);
	n = lib_funcs(c, lib, &v);
	if (n < 0)
		return n;
	/* the last function starting at or before addr */
	for (lo = 0, hi = n; lo < hi;) {
		int mid = lo + (hi - lo) / 2;

		if (v[mid].vaddr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && addr < v[lo - 1].vaddr + v[lo - 1].size) {
		/* a cold part has an entry for each path that leaves the hot code: the whole
		 * part is followed (its returns and jumps include those reachable from addr) */
		if (v[lo - 1].vaddr != addr && !v[lo - 1].part &&
		    v[lo - 1].vaddr + v[lo - 1].local_entry != addr) {
			*why = "it jumps into the middle of another function";
			return -ENOENT;
		}
		*out = v[lo - 1];
		return 0;
	}
	/* in no function: a PLT stub? */
	n = lib_vaddr_off(c, lib, addr, &off);
	if (n) {
		*why = "it jumps outside the file's code";
		return n == -ENOMEM ? n : -ENOENT;
	}
	fd = lib_fd(c, lib);
	got = fd < 0 ? -1 : pread(fd, code, sizeof(code), off);
	if (got <= 0 || retsite_plt_slot(retsite_host_arch(), code, got, addr, &addr)) {
		/* a stripped library's cold parts and local functions have no symbol: where
		 * they end is not known, so neither are their returns */
		*why = "it jumps to code no symbol covers (a stripped library's cold part or "
		       "local function)";
		return -ENOENT;
	}
	return slot_func(c, lib, addr, out, why);
}

static int tail_sites(void *ctx, const struct tc_func *f, struct ret_sites *out)
{
	struct tail_ctx *c = ctx;
	int fd = lib_fd(c, f->file);

	if (fd < 0) {
		memset(out, 0, sizeof(*out));
		return fd;
	}
	return retsite_find_fd(retsite_host_arch(), fd, f->file_off, f->size, f->vaddr, out);
}

/* The span probe at file offset @off of @lib, or NULL. */
static const struct rprobe *probe_at(const struct target *t, int lib, unsigned long off)
{
	for (int i = 0; i < t->cnt; i++)
		if (t->probes[i].lib == lib && t->probes[i].sym_off == off &&
		    t->table->specs[t->probes[i].spec].type == PROBE_SPAN)
			return &t->probes[i];
	return NULL;
}

/* Is @off of @lib one of a traced function's own return sites (spyre_ret_site closes there)? */
static bool own_ret_site(const struct target *t, int lib, unsigned long off)
{
	for (int i = 0; i < t->cnt; i++) {
		const struct rprobe *p = &t->probes[i];

		if (p->lib != lib || p->ret != RET_SITES || off < p->sym_off)
			continue;
		for (int k = 0; k < p->sites.n; k++)
			if (!p->sites.v[k].jump && p->sym_off + p->sites.v[k].off == off)
				return true;
	}
	return false;
}

static int add_tail_site(struct target *t, int lib, unsigned long off, uint16_t pop)
{
	for (int i = 0; i < t->ntails; i++) {
		if (t->tails[i].lib == lib && t->tails[i].off == off) {
			t->tails[i].users++;
			return 0;
		}
	}
	if (array_reserve(&t->tails, &t->tails_cap, (size_t)t->ntails + 1, sizeof(*t->tails), 16))
		return -ENOMEM;
	t->tails[t->ntails++] = (struct tail_site){ .lib = lib, .off = off, .users = 1,
						     .pop = pop };
	return 0;
}

/* Follow jump @j of probe @i; one that cannot be is counted and said in the probe. -ENOMEM. */
static int follow_jump(struct tail_ctx *c, int i, struct ret_site *j)
{
	static const struct tc_ops ops = { tail_lookup, tail_sites, NULL };
	struct target *t = c->t;
	struct rprobe *p = &t->probes[i];
	struct tc_ops o = ops;
	struct tc_follow fw;
	struct tc_func from, *v;
	int err, n;

	o.ctx = c;
	/* the probe's own extent: a jump back into it is one inside the chain */
	n = lib_funcs(c, p->lib, &v);
	if (n < 0)
		return n;
	from = (struct tc_func){ p->lib, 0, 0, p->sym_off };
	for (int k = 0; k < n; k++) {
		if (v[k].file_off == p->sym_off) {
			from = v[k];
			break;
		}
	}
	err = tailcall_follow(&o, &from, j, &fw);
	if (err == -ENOMEM)
		return err;
	if (err) {
		p->tail_lost++;
		p->tail_why = fw.why;
		return 0;
	}
	j->followed = true;
	for (int k = 0; k < fw.nfn; k++)
		j->nests |= probe_at(t, fw.fn[k].file, fw.fn[k].file_off) != NULL;
	p->tail_followed++;
	p->tail_funcs += fw.nfn;
	for (int k = 0; k < fw.nret && !err; k++) {
		if (own_ret_site(t, fw.ret[k].file, fw.ret[k].file_off))
			continue;
		p->tail_rets++;
		err = add_tail_site(t, fw.ret[k].file, fw.ret[k].file_off, fw.ret[k].pop);
	}
	tailcall_free(&fw);
	return err;
}

int target_follow_tails(struct target *t)
{
	struct tail_ctx c;
	int err;

	/* SPYRE_NO_TAIL_FOLLOW=1: spans end at tail jumps, as before tail calls were followed
	 * (when a tail-called function is one the whole process calls often, e.g. free) */
	if (t->uretprobes || env_is_1("SPYRE_NO_TAIL_FOLLOW"))
		return 0;
	err = tail_ctx_init(&c, t);
	for (int i = 0; i < t->cnt && !err; i++) {
		struct rprobe *p = &t->probes[i];

		if (p->tails_done || p->ret != RET_SITES)
			continue;
		p->tails_done = true;
		for (int k = 0; k < p->sites.n && !err; k++)
			if (p->sites.v[k].jump)
				err = follow_jump(&c, i, &p->sites.v[k]);
	}
	tail_ctx_free(&c);
	return err;
}
