// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/ohash.h"

static inline char *slot(const struct ohash *h, size_t i)
{
	return (char *)h->slots + i * h->esize;
}

static inline uint64_t key_of(const struct ohash *h, const char *e)
{
	uint64_t key;

	memcpy(&key, e + h->key_off, sizeof(key));
	return key;
}

static inline uint32_t pid_of(const struct ohash *h, const char *e)
{
	uint32_t pid;

	memcpy(&pid, e + h->pid_off, sizeof(pid));
	return pid;
}

/*
 * The pid spread over all 64 bits first: processes number their ops alike (a forked child goes
 * on from its parent's counter), so (pid, key) pairs differ in both; then Fibonacci hashing.
 */
size_t ohash_home(uint32_t pid, uint64_t key, size_t cap)
{
	return (size_t)(((key ^ (uint64_t)pid * 0xff51afd7ed558ccdull) * 0x9e3779b97f4a7c15ull) >>
			32) & (cap - 1);
}

void *ohash_find(const struct ohash *h, uint32_t pid, uint64_t key)
{
	size_t i;

	if (!h->cap)
		return NULL;
	for (i = ohash_home(pid, key, h->cap); key_of(h, slot(h, i)); i = (i + 1) & (h->cap - 1))
		if (key_of(h, slot(h, i)) == key && pid_of(h, slot(h, i)) == pid)
			return slot(h, i);
	return NULL;
}

/* The first free slot of (pid, key)'s probe in @slots of @cap */
static char *free_slot(const struct ohash *h, void *slots, size_t cap, uint32_t pid,
		       uint64_t key)
{
	size_t i = ohash_home(pid, key, cap);
	char *e;

	while (key_of(h, e = (char *)slots + i * h->esize))
		i = (i + 1) & (cap - 1);
	return e;
}

void *ohash_add(struct ohash *h, uint32_t pid, uint64_t key)
{
	char *e;

	if (h->cnt + 1 >= h->cap)
		return NULL;
	e = free_slot(h, h->slots, h->cap, pid, key);
	memcpy(e + h->key_off, &key, sizeof(key));
	memcpy(e + h->pid_off, &pid, sizeof(pid));
	h->cnt++;
	return e;
}

void ohash_del(struct ohash *h, void *entry)
{
	size_t i = (size_t)((char *)entry - (char *)h->slots) / h->esize, j = i;

	for (;;) {
		size_t k;

		j = (j + 1) & (h->cap - 1);
		if (!key_of(h, slot(h, j)))
			break;
		k = ohash_home(pid_of(h, slot(h, j)), key_of(h, slot(h, j)), h->cap);
		/* move j back to i unless its home k lies cyclically in (i, j] */
		if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
			memcpy(slot(h, i), slot(h, j), h->esize);
			i = j;
		}
	}
	memset(slot(h, i), 0, h->esize);
	h->cnt--;
}

int ohash_resize(struct ohash *h, size_t ncap, bool (*keep)(void *entry, void *ctx), void *ctx)
{
	char *ns, *e;

	if (ncap <= h->cnt || ncap & (ncap - 1))
		return -EINVAL;
	ns = calloc(ncap, h->esize);
	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < h->cap; i++) {
		e = slot(h, i);
		if (!key_of(h, e))
			continue;
		if (keep && !keep(e, ctx)) {
			h->cnt--;
			continue;
		}
		memcpy(free_slot(h, ns, ncap, pid_of(h, e), key_of(h, e)), e, h->esize);
	}
	free(h->slots);
	h->slots = ns;
	h->cap = ncap;
	return 0;
}

int ohash_reserve(struct ohash *h, size_t first_cap)
{
	if ((h->cnt + 1) * 2 <= h->cap)
		return 0;
	return ohash_resize(h, h->cap ? h->cap * 2 : first_cap, NULL, NULL);
}

void *ohash_next(const struct ohash *h, size_t *i)
{
	while (*i < h->cap) {
		char *e = slot(h, (*i)++);

		if (key_of(h, e))
			return e;
	}
	return NULL;
}

void ohash_clear(struct ohash *h)
{
	if (h->cap)
		memset(h->slots, 0, h->cap * h->esize);
	h->cnt = 0;
}

void ohash_free(struct ohash *h)
{
	free(h->slots);
	h->slots = NULL;
	h->cap = h->cnt = 0;
}
