// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A target's probes named (resolve.h, its naming part): one name per function in a trace, the
 * symbol's qualified name where it is free, made distinct where two functions would share one
 * (another library's, an overload's parameters, a number), and a hash of the names taken.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/array.h"
#include "common/util.h"
#include "resolve/demangle.h"
#include "resolve/elfsym.h"
#include "resolve/procmaps.h"
#include "resolve/resolve.h"

static unsigned int name_hash(const char *s)
{
	unsigned int h = 2166136261u;	/* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* Enter probe @i's name; the table grows to keep at most half of it used. */
int target_name_add(struct target *t, int i)
{
	unsigned int cap = t->names_cap, m, h;
	int *v;

	if ((unsigned int)(i + 1) * 2 > cap) {
		cap = cap ? cap * 2 : 64;
		v = calloc(cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		free(t->names);
		t->names = v;
		t->names_cap = cap;
		for (int k = 0; k < i; k++)
			if (target_name_add(t, k))
				return -ENOMEM;	/* unreachable: the table is big enough */
	}
	m = t->names_cap - 1;
	for (h = name_hash(t->probes[i].name) & m; t->names[h]; h = (h + 1) & m)
		;
	t->names[h] = i + 1;
	return 0;
}

/*
 * Is probe @h the function @f of library @lib in another file of that library (same basename,
 * same symbol)? Then it is one function to the user, and has one name.
 */
static bool same_function(const struct target *t, const struct rprobe *h, int lib,
			  const struct elf_func *f)
{
	return h->lib != lib && !strcmp(h->symbol, f->name) &&
	       !strcmp(path_basename(t->libs[h->lib].path), path_basename(t->libs[lib].path));
}

/*
 * The probe that keeps @name from being function @f's (of library @lib), or -1: @name is free
 * when nobody has it, or only the same function in other files of the library does (never
 * another function of @lib: two static functions of one name stay two names in each copy).
 */
static int name_holder(const struct target *t, const char *name, int lib,
		       const struct elf_func *f)
{
	unsigned int m = t->names_cap - 1;

	if (!t->names_cap)
		return -1;
	for (unsigned int h = name_hash(name) & m; t->names[h]; h = (h + 1) & m) {
		const struct rprobe *o = &t->probes[t->names[h] - 1];

		if (!strcmp(o->name, name) && !same_function(t, o, lib, f))
			return t->names[h] - 1;
	}
	return -1;
}

/*
 * A name no other function has, for @base: @base itself when it is free, else @base followed
 * by what sets this function apart from the one that has it, the first of these that gives a
 * free name: its qualified name, its whole signature (overloads), its library's path (another
 * library of that function name); else by " #N". A name held by the same function in another
 * file of its library (the same basename mapped twice, each container's copy) counts as free:
 * the copies share their name, and their events say which file (rprobe.other_file).
 * Functions are resolved in a fixed order (maps, then symbol table order), so the same job
 * gives the same names.
 */
int target_distinct_name(const struct target *t, int lib, const struct elf_func *f,
			 const char *base, char **out)
{
	const struct rprobe *h;
	char *sig = NULL, *cand = NULL, *num = NULL;
	const char *desc[3] = {};
	int holder = name_holder(t, base, lib, f), err = -ENOMEM, k;

	*out = NULL;
	if (holder < 0) {
		*out = strdup(base);
		return *out ? 0 : -ENOMEM;
	}
	h = &t->probes[holder];
	if (strcmp(h->qualname, f->qualname))
		desc[0] = f->qualname;
	/* the path tells libraries apart; files of one library share their names (above) */
	if (strcmp(path_basename(t->libs[h->lib].path), path_basename(t->libs[lib].path)))
		desc[2] = t->libs[lib].path;
	/* the signature tells overloads apart, in one library (any of its files) */
	if ((desc[0] || !desc[2]) && (sig = demangle_full(f->name)) && strcmp(sig, f->qualname))
		desc[1] = sig;
	for (k = 0; k < 3; k++) {
		if (!desc[k])
			continue;
		free(cand);
		if (asprintf(&cand, "%s (%s)", base, desc[k]) < 0) {
			cand = NULL;
			goto out;
		}
		if (name_holder(t, cand, lib, f) < 0) {
			*out = cand;
			cand = NULL;
			err = 0;
			goto out;
		}
	}
	/* nothing told it apart (or every such name is taken): number it after the first */
	for (k = 0; k < 3 && !desc[k]; k++)
		;
	free(cand);
	if (k < 3 ? asprintf(&cand, "%s (%s)", base, desc[k]) < 0 : !(cand = strdup(base))) {
		cand = NULL;
		goto out;
	}
	for (int n = 2;; n++) {
		free(num);
		if (asprintf(&num, "%s #%d", cand, n) < 0) {
			num = NULL;
			goto out;
		}
		if (name_holder(t, num, lib, f) < 0) {
			*out = num;
			num = NULL;
			err = 0;
			goto out;
		}
	}
out:
	free(num);
	free(cand);
	free(sig);
	return err;
}

/*
 * Probe @i shares its name with the same function in other files of its library: all of them
 * say their file in their events from now on.
 */
void target_mark_other_files(struct target *t, int i)
{
	unsigned int m = t->names_cap - 1;
	struct rprobe *p = &t->probes[i];

	for (unsigned int h = name_hash(p->name) & m; t->names[h]; h = (h + 1) & m) {
		struct rprobe *o = &t->probes[t->names[h] - 1];

		if (o != p && !strcmp(o->name, p->name))
			o->other_file = p->other_file = true;
	}
}

/* "(unsigned long) const": what follows its qualified name in @p's whole signature, or NULL */
static char *overload_params(const struct rprobe *p)
{
	char *sig = demangle_full(p->symbol), *params = NULL;
	size_t n = strlen(p->qualname);

	if (sig && !strncmp(sig, p->qualname, n) && sig[n] == '(')
		params = strdup(sig + n);
	free(sig);
	return params;
}

/* Does another function than probe @self's have @name? (Its copy in another file may.) */
static bool name_taken(const struct target *t, const char *name, int self)
{
	const struct rprobe *p = &t->probes[self];

	for (int i = 0; i < t->cnt; i++) {
		const struct rprobe *o = &t->probes[i];

		if (i != self && !strcmp(o->name, name) &&
		    !(o->lib != p->lib && !strcmp(o->symbol, p->symbol) &&
		      !strcmp(path_basename(t->libs[o->lib].path),
			      path_basename(t->libs[p->lib].path))))
			return true;
	}
	return false;
}

/*
 * Overloads of one function one name would fit (spyreAllocate for allocate(size_t) and
 * allocate(size_t, directive)): distinct_name gave the first the name and the others "NAME
 * (WHOLE SIGNATURE)". Each is named NAME(PARAMETERS) instead, the first too, so that none
 * passes for the only one: spyreAllocate(unsigned long), spyreAllocate(unsigned long,
 * AllocationDirective const&). Done once a library's functions are resolved (probes @first
 * on), before any is attached; names that would collide stay as they were.
 */
int target_name_overloads(struct target *t, int first)
{
	bool renamed = false;

	for (int i = first; i < t->cnt; i++) {
		struct rprobe *p = &t->probes[i], *h = NULL;
		char *pn = NULL, *hn = NULL, *pp, *hp;
		bool overload = false;

		if (!p->shared_name || p->attached)
			continue;
		/* another function of that name here, and its overload: the name's holder, or
		 * one named from it already (the holder renamed by an earlier overload) */
		for (int k = first; k < t->cnt && !h; k++) {
			struct rprobe *o = &t->probes[k];

			if (k == i || o->lib != p->lib || o->attached ||
			    strcmp(o->qualname, p->qualname))
				continue;
			if (!strcmp(o->name, p->shared_name))
				h = o;
			else if (o->shared_name && !strcmp(o->shared_name, p->shared_name))
				overload = true;
		}
		if (!h && !overload)
			continue;
		pp = overload_params(p);
		hp = h ? overload_params(h) : NULL;
		if (!pp || (h && !hp) ||
		    asprintf(&pn, "%s%s", p->shared_name, pp) < 0 ||
		    (h && asprintf(&hn, "%s%s", h->name, hp) < 0)) {
			free(pp);
			free(hp);
			continue;	/* not an overload's signature: its name stays */
		}
		if (!h && !strcmp(p->name, pn)) {
			free(pp);
			free(pn);
			continue;
		}
		if (!name_taken(t, pn, i) && (!hn || (!name_taken(t, hn, h - t->probes) &&
						     strcmp(hn, pn)))) {
			free(p->name);
			p->name = pn;
			pn = NULL;
			if (h) {
				h->shared_name = h->name;
				h->name = hn;
				hn = NULL;
			}
			renamed = true;
		}
		free(pn);
		free(hn);
		free(pp);
		free(hp);
	}
	if (!renamed)
		return 0;
	/* the names' hash, made again; a copy in another file shares its name again */
	memset(t->names, 0, t->names_cap * sizeof(*t->names));
	for (int i = 0; i < t->cnt; i++)
		if (target_name_add(t, i))
			return -ENOMEM;
	for (int i = first; i < t->cnt; i++)
		target_mark_other_files(t, i);
	return 0;
}
