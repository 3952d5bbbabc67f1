/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Records of one fixed size, sorted in bounded memory: sorted runs spill to an unlinked
 * temporary file ($TMPDIR, else /tmp) and are merged as they are read back. check keeps what
 * its cross-event rules need of a trace of any size this way.
 */
#ifndef SPYRE_SPOOL_H
#define SPYRE_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct spool;

/* Records of @rec bytes in the order of @cmp, @mem bytes of them in memory at most. */
struct spool *spool_new(size_t rec, int (*cmp)(const void *, const void *), size_t mem);
/* Add a record: 0, or -errno (the spool is then unusable). */
int spool_add(struct spool *sp, const void *rec);
/* After the last spool_add: 0 or -errno. Then spool_next gives the records in order. */
int spool_sort(struct spool *sp);
/* The next record (valid until the next call), NULL after the last or on an error of reading. */
const void *spool_next(struct spool *sp);
/* -errno of a failed read in spool_next, else 0. */
int spool_error(const struct spool *sp);
uint64_t spool_count(const struct spool *sp);
/* Runs written to the temporary file (0: all in memory). */
size_t spool_runs(const struct spool *sp);
void spool_free(struct spool *sp);

#endif
