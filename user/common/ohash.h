/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Hash tables of the caller's own structs keyed on (pid, key), by open addressing: linear
 * probing in a power-of-two array, deletion by backward shift (no tombstones: lookups stay short
 * however many entries came and went). Key 0 marks an empty slot, so 0 is never a key (a return
 * address, a device op's key). A free slot always remains, which ends every probe; kept at most
 * half full (ohash_reserve, or the caller's own policy with ohash_resize), probes stay short.
 * The device timeline's pending ops and ustack's named return addresses are kept in one.
 */
#ifndef SPYRE_OHASH_H
#define SPYRE_OHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ohash {
	void *slots;		/* cap entries of esize bytes, zeroed when empty */
	size_t cap, cnt;	/* cap: 0 (nothing allocated) or a power of two */
	size_t esize;		/* the entry struct's size */
	size_t key_off, pid_off;	/* where its uint64_t key and uint32_t pid are */
};

/* An empty table of @type entries, keyed on its members @key (uint64_t) and @pid (uint32_t) */
#define OHASH_INIT(type, key, pid)							\
	((struct ohash){ .esize = sizeof(type), .key_off = offsetof(type, key),		\
			 .pid_off = offsetof(type, pid) })

/* The slot (pid, key) probes first in a table of @cap slots */
size_t ohash_home(uint32_t pid, uint64_t key, size_t cap);

/* The entry of (pid, key), or NULL */
void *ohash_find(const struct ohash *h, uint32_t pid, uint64_t key);
/*
 * A new entry for (pid, key), which must not be in the table: its key and pid set, the rest
 * zero. NULL when it would take the last free slot (make room first: ohash_reserve).
 */
void *ohash_add(struct ohash *h, uint32_t pid, uint64_t key);
/* Remove @entry (from ohash_find or ohash_add); the entries after it may move. */
void ohash_del(struct ohash *h, void *entry);

/* Room for one more entry at most half full: the slots double (from @first_cap). 0, -ENOMEM. */
int ohash_reserve(struct ohash *h, size_t first_cap);
/*
 * The entries moved into @ncap slots (a power of two above the count), in slot order: those
 * @keep (when not NULL) returns true for; the others are dropped. 0, or -ENOMEM / -EINVAL (too
 * few slots) with the table as it was. Pointers to entries do not survive it.
 */
int ohash_resize(struct ohash *h, size_t ncap, bool (*keep)(void *entry, void *ctx), void *ctx);

/* The next entry from slot *@i on, *@i past it; NULL when none: for (i = 0; (e = next(&i));) */
void *ohash_next(const struct ohash *h, size_t *i);
/* Every entry removed, the slots kept */
void ohash_clear(struct ohash *h);
/* The slots freed (the entries' own allocations are the caller's); the table stays usable */
void ohash_free(struct ohash *h);

#endif
