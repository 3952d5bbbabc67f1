/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Creating the trace file as root, safely: the path may sit in a directory the traced user
 * controls, so never follow a symlink and never clobber without --force. Traces reveal
 * addresses and arguments: mode 0600, owned by the invoking sudo user.
 */
#ifndef SPYRE_OUTPUT_H
#define SPYRE_OUTPUT_H

#include <stdbool.h>
#include "output/jsonw.h"

struct output {
	struct jw *jw;		/* NULL once handed over (trace_begin) */
	bool gzip;
};

/*
 * *.gz -> gzip. -EEXIST when the file exists and !force; -EISDIR for a directory (with or
 * without force); -ELOOP for a symlink.
 */
int output_open(struct output *o, const char *path, bool force);
/* What stands at @path that an output may not replace: -EISDIR, -ELOOP, else -EEXIST. */
int output_exists_err(const char *path);
/* The hint after "cannot create FILE: strerror(-err)" for output_open's errors, or "". */
const char *output_err_hint(int err);
void output_close(struct output *o);
/*
 * The name of file @part (0, 1, ...) of a run written to @path in parts (--switch-output):
 * the number goes before the extensions a viewer keys on, "t.json" -> "t.003.json",
 * "t.json.gz" -> "t.003.json.gz", "t" -> "t.003", so that the parts sort in order and each
 * opens as what it is. -ENAMETOOLONG when @len is short.
 */
int output_part_name(const char *path, unsigned int part, char *out, size_t len);
/* The same with any @tag in that place (a flight-recorder dump's time: t.20261207T101500Z.json). */
int output_tagged_name(const char *path, const char *tag, char *out, size_t len);

#endif
