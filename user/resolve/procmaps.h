/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Parser for /proc/PID/maps. Input is chosen by the traced process (paths): never trust it. */
#ifndef SPYRE_PROCMAPS_H
#define SPYRE_PROCMAPS_H

#include <stdbool.h>
#include <stdio.h>

struct map_entry {
	unsigned long start;
	unsigned long end;
	unsigned long offset;		/* file offset of start */
	unsigned long inode;
	unsigned int dev_major;
	unsigned int dev_minor;
	char perms[5];			/* "r-xp" */
	bool deleted;			/* path ended in " (deleted)"; suffix stripped from path */
	const char *path;		/* valid only during the callback; "" for anonymous */
};

/* Return non-zero from the callback to stop; that value is returned by procmaps_parse(). */
typedef int (*procmaps_cb)(const struct map_entry *e, void *ctx);

/*
 * Parse a maps stream, calling @cb for each well-formed line (anonymous ones too).
 * Malformed lines are skipped. Returns 0, the callback's non-zero value, or -errno.
 */
int procmaps_parse(FILE *f, procmaps_cb cb, void *ctx);

/*
 * procmaps_parse of a process's /proc/PID/maps, then the same file read again: -ESRCH when its
 * address space was gone by then. The kernel reads a process's mappings anew at each read(2)
 * (stdio reads 1 KiB at a time) and a process that exits between two reads shows nothing past
 * the first: a view cut in the middle looks like a whole one (the executable's mappings, which
 * come first, and not its libraries'). Read to its end while the address space still exists,
 * the view was whole; the callback has been called either way.
 */
int procmaps_parse_whole(FILE *f, procmaps_cb cb, void *ctx);

/* Same, from a buffer (used by the fuzzer and tests). */
int procmaps_parse_buf(const char *buf, size_t len, procmaps_cb cb, void *ctx);

/* Basename of a path ("" stays ""). */
const char *path_basename(const char *path);

#endif
