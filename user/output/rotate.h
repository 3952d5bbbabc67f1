/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Fleet mode: one trace file per tracing window in a directory, bounded in total size and count.
 *
 * Names are PREFIX-YYYYmmddTHHMMSSZ-SEQ.json[.gz] (UTC window start, SEQ zero-padded to 6
 * digits and increasing across daemon restarts), so `ls` lists them oldest first. Only names of
 * exactly that form are ours: rotate_enforce never touches anything else in the directory, never
 * follows a symlink and only deletes regular files.
 */
#ifndef SPYRE_ROTATE_H
#define SPYRE_ROTATE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define ROTATE_PREFIX_MAX	64

struct rotate {
	char dir[PATH_MAX];
	char prefix[ROTATE_PREFIX_MAX];
	uint64_t max_bytes;	/* 0: no size limit */
	int max_files;		/* 0: no count limit */
	bool gzip;
	int dirfd;		/* pinned directory: lookups and unlinks relative to it */
	uint64_t seq;		/* next sequence number */
	char last[ROTATE_PREFIX_MAX + 48];	/* newest name handed out ("" before the first) */
};

/*
 * Create @dir (mode 0700, missing parents too) if needed and pin it. @prefix: 1..63 characters
 * of [A-Za-z0-9._-], not starting with '.'. Scans the directory so sequence numbers continue
 * after those of a previous run. -EINVAL for a bad prefix, -ENOTDIR, -errno otherwise.
 */
int rotate_init(struct rotate *r, const char *dir, uint64_t max_bytes, int max_files,
		const char *prefix, bool gzip);
void rotate_close(struct rotate *r);

/*
 * Full path of a new file for a window starting now (rotate_next_path_at: at @t, Unix time).
 * The name does not exist when returned (anything already there, e.g. a planted symlink, is
 * skipped), but nothing is created: open it with output_open(path, false), which refuses
 * symlinks and existing files; on -EEXIST/-ELOOP (lost a race) ask for the next path.
 * -ENAMETOOLONG when @len is too small.
 */
int rotate_next_path(struct rotate *r, char *buf, size_t len);
int rotate_next_path_at(struct rotate *r, time_t t, char *buf, size_t len);

/*
 * Delete our oldest files until their total size (st_size) is <= max_bytes and their count
 * <= max_files. The newest file, and the name last handed out, are always kept. Files of a
 * previous run count. Call it after a window's file is closed (and, to make room, before the
 * next one is opened). Returns the number of files deleted or -errno (scan failed).
 */
int rotate_enforce(struct rotate *r);

/* Totals over our files currently in the directory (fleet mode says them with -v). */
int rotate_usage(struct rotate *r, int *files, uint64_t *bytes);

/* True when @name (a basename) is one of ours for @prefix; @seq gets its sequence number. */
bool rotate_name_match(const char *prefix, const char *name, time_t *t, uint64_t *seq);

#endif
