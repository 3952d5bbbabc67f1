/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Subcommands that read traces: check (validate) and recover (close a cut trace). */
#ifndef SPYRE_CHECK_H
#define SPYRE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct jv;

/* Exit codes per env.h: 0 clean, EXIT_CHECK problems found, others for unreadable input. */
int cmd_check(const char *path);
int cmd_recover(const char *path);

/* Largest trace (uncompressed) check and recover read into memory. */
#define CHECK_MAX_BYTES		(2ull << 30)
/* Problem lines printed; the rest are only counted. */
#define CHECK_MAX_LINES		50

/* What `check` can find; docs/check-recover.md explains each. */
enum check_kind {
	CK_NOT_OBJECT,		/* top level is neither an object nor an array */
	CK_BARE_ARRAY,		/* top level is an array (JSON Array Format) */
	CK_NO_EVENTS,		/* no traceEvents array */
	CK_DEVICE_PROPS,	/* deviceProperties missing or not exactly one entry */
	CK_NO_BASE_TIME,	/* baseTimeNanoseconds missing */
	CK_NOT_EVENT,		/* traceEvents element that is not an object */
	CK_NO_TS,		/* ts missing / not a number */
	CK_BAD_PH,		/* ph missing or not one of X M s f i I C */
	CK_BAD_PID_TID,		/* pid/tid missing or not a non-negative integer */
	CK_BAD_DUR,		/* X without dur, or negative dur */
	CK_OVERLAP,		/* two X on one pid/tid partially overlap */
	CK_NO_CORRELATION,	/* cat "kernel" without args.correlation */
	CK_CMPT_EXEC,		/* "* Cmpt Exec" without args TS1..TS5 */
	CK_FLOW_UNMATCHED,	/* s without f (same cat and id) or f without s, or no id */
	CK_FLOW_NO_BP,		/* f without bp:"e" */
	CK_FLOW_OFF_SPAN,	/* flow ts not inside an X event on its pid/tid */
	CK_META_CONFLICT,	/* process_name/thread_name given twice with different values */
	CK_SORT_INDEX,		/* *_sort_index whose args.sort_index is not an integer */
	CK_META_ORDER,		/* M events of one pid/tid with decreasing ts */
	CK_NO_NAME,		/* event without a string name */
	CK_NEGATIVE_TS,		/* X event with ts < 0 */
	CK_INSTANT_SCOPE,	/* i/I event without a string s (scope) */
	CK_FLOW_NO_CAT,		/* s/f event without a string cat */
	CK_BAD_ARGS,		/* args present but not an object */
	CK_COUNTER,		/* C event without args, or with a member that is not a number */
	CK_NKINDS
};

struct check_result {
	size_t events;			/* elements of traceEvents */
	size_t problems;		/* all problems, printed or not */
	size_t by_kind[CK_NKINDS];
};

/* Short tag printed at the end of each problem line, e.g. "overlap". */
const char *check_kind_name(enum check_kind k);

/*
 * Check a parsed trace. Problem lines (at most CHECK_MAX_LINES, then a count) go to @out,
 * prefixed "check: @label: "; @out may be NULL to only count. Does not print the summary line.
 * Returns the number of problems or -ENOMEM.
 */
long check_doc(const struct jv *root, const char *label, FILE *out, struct check_result *res);

/* cmd_check with the report going to @out (errors still go to stderr). Returns an exit code. */
int check_file(const char *path, FILE *out);

/* A whole trace file in memory, decompressed. */
struct trace_file {
	char *data;		/* malloc'd, NUL-terminated */
	size_t len;
	bool gzip;		/* the file started with the gzip magic */
	bool cut;		/* gzip stream ended early or in corrupt data: data is what inflated */
};

/*
 * Read @path (plain, or gzip detected by its magic bytes) into @tf; refuses more than
 * CHECK_MAX_BYTES uncompressed (-EFBIG). A message goes to @err. Returns 0 or -errno.
 */
int trace_file_read(const char *path, struct trace_file *tf, char *err, size_t errlen);
void trace_file_free(struct trace_file *tf);

/* recover_buffer() results besides -errno */
#define RECOVER_REPAIRED	0
#define RECOVER_COMPLETE	1

struct recover_info {
	size_t kept_events;	/* events in the repaired trace */
	size_t dropped_bytes;	/* bytes of the input cut away */
};

/*
 * Repair a cut trace held in the malloc'd buffer *@buf (@len bytes): drop the partial tail
 * after the last complete event line and close the document. *@buf may be reallocated; on
 * RECOVER_REPAIRED *@len is the repaired length and the result was proven to parse.
 * Returns RECOVER_COMPLETE (untouched) when the input already parses, -EINVAL when it is not a
 * trace (no "traceEvents":[ near the start), -EBADMSG when the repaired text still does not
 * parse, -ENOMEM. A message goes to @err.
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
int recover_file(const char *path, FILE *out, char *outpath, size_t outpath_len);

#endif
