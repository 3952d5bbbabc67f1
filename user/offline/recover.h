/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `recover`: close a trace whose writer died, into a copy next to it. */
#ifndef SPYRE_RECOVER_H
#define SPYRE_RECOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * Exit codes per exitcodes.h: 0 written or nothing to do, others for unreadable input or
 * output. @opath: the copy's name (NULL: recover_out_path's); @force: replace it.
 */
int cmd_recover(const char *path, const char *opath, bool force);

/* recover_buffer() results besides -errno */
#define RECOVER_REPAIRED	0
#define RECOVER_COMPLETE	1

struct recover_info {
	size_t kept_events;	/* events in the repaired trace */
	size_t dropped_bytes;	/* bytes of the input cut away */
};

/*
 * Repair a cut trace held in the malloc'd buffer *@buf (@len bytes): drop the partial tail
 * after the last complete event and close the document. On RECOVER_REPAIRED *@buf is replaced
 * by the repaired text (*@len its length). Returns RECOVER_COMPLETE (untouched) when the input
 * already parses, -EINVAL when it is not a trace cut short (no "traceEvents" array before the
 * cut), -EBADMSG when the text has an error that is not a cut, -ENOMEM. A message goes to @err.
 */
int recover_buffer(char **buf, size_t *len, struct recover_info *ri, char *err, size_t errlen);

/*
 * Name of the repaired copy: t.json -> t.recovered.json, t.json.gz -> t.recovered.json.gz,
 * anything else gets ".recovered.json[.gz]" appended. Returns 0 or -ENAMETOOLONG.
 */
int recover_out_path(const char *in, bool gzip, char *out, size_t outlen);

/*
 * cmd_recover with the report going to @out; the output path is copied to @outpath when
 * @outpath_len > 0 (empty when nothing was written). Returns an exit code.
 */
int recover_file(const char *path, const char *opath, bool force, FILE *out, char *outpath,
		 size_t outpath_len);

#endif
