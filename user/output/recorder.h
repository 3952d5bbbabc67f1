/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The flight recorder (--flight-recorder DUR): the run kept in memory as a ring of slices,
 * each the text of a whole trace (trace_writer into jw_memopen, a slice a quarter of DUR), the
 * oldest dropped once the newer ones cover DUR or the ring passes its byte bound. A dump writes
 * the events of the slices that reach into the last DUR into one trace: event lines copied as
 * they are, the names (ph:"M") each slice begins with written once.
 */
#ifndef SPYRE_RECORDER_H
#define SPYRE_RECORDER_H

#include <stddef.h>
#include <stdint.h>
#include "output/trace_writer.h"

struct recorder;

/* Keep @keep_ns of slices, at most @max_bytes of their text. NULL on ENOMEM. */
struct recorder *recorder_new(uint64_t keep_ns, uint64_t max_bytes);
void recorder_free(struct recorder *r);
/*
 * A finished slice: @text (malloc'd, the recorder takes it) holds a whole trace written from
 * CLOCK_MONOTONIC @start_ns to @end_ns. Older slices go when the others cover @keep_ns from
 * @end_ns back, or to stay under @max_bytes; @count: the caller's, summed by recorder_write.
 * Returns 0 or -EINVAL (no "traceEvents").
 */
int recorder_add(struct recorder *r, char *text, size_t len, uint64_t start_ns, uint64_t end_ns,
		 uint64_t count);
/*
 * The events of the slices ending after @from_ns into @tw, oldest first, each name once;
 * *@start_ns: the first slice's start (0: none), *@count: their counts added up. Returns the
 * number of events written.
 */
uint64_t recorder_write(const struct recorder *r, struct trace_writer *tw, uint64_t from_ns,
			uint64_t *start_ns, uint64_t *count);
/* Text held now, and slices dropped so far for the byte bound (not for their age). */
uint64_t recorder_bytes(const struct recorder *r);
uint64_t recorder_dropped(const struct recorder *r);

#endif
