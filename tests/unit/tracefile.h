/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A trace file read whole into memory, plain or gzip, for the unit tests (check, recover and merge
 * stream theirs: user/offline/tracestream.h). */
#ifndef SPYRE_TRACEFILE_H
#define SPYRE_TRACEFILE_H

#include <stdbool.h>
#include <stddef.h>

/* Largest trace (uncompressed) read into memory. */
#define TRACE_FILE_MAX_BYTES	(2ull << 30)

/* A whole trace file in memory, decompressed. */
struct trace_file {
	char *data;		/* malloc'd, NUL-terminated */
	size_t len;
	bool gzip;		/* the file started with the gzip magic */
	bool cut;		/* gzip stream ended early or in corrupt data: data is what inflated */
};

/*
 * Read @path (plain, or gzip detected by its magic bytes) into @tf; refuses more than
 * TRACE_FILE_MAX_BYTES uncompressed (-EFBIG). A message goes to @err. Returns 0 or -errno.
 */
int trace_file_read(const char *path, struct trace_file *tf, char *err, size_t errlen);
void trace_file_free(struct trace_file *tf);

#endif
