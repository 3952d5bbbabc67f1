/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Buffered JSON text writer, plain or gzip (zlib). No allocation per value; output leaves the
 * buffer only at whole-event boundaries (jw_commit), so a cut file always ends between events
 * and `spyre-bpftrace recover` can close it.
 */
#ifndef SPYRE_JSONW_H
#define SPYRE_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct jw;

/* Takes ownership of @fd. @gzip_level: 0 = plain text, 1..9 = gzip. NULL on ENOMEM. */
struct jw *jw_fdopen(int fd, int gzip_level);
/* Writer into a growable memory buffer (text built whole, tests); jw_mem_data() reads it. */
struct jw *jw_memopen(void);
/* Everything written so far, NUL-terminated; valid until the next write or jw_close. */
const char *jw_mem_data(struct jw *w, size_t *len);
/*
 * End a memory writer and keep its text: malloc'd and NUL-terminated, the caller frees it
 * (@len may be NULL). NULL if memory ran out on the way; the writer is freed either way.
 */
char *jw_mem_take(struct jw *w, size_t *len);
/*
 * A test knob: jw_commit writes out once this many bytes are buffered (default, the only value
 * the tool uses: most of the 256 KiB buffer). Tests use small values to exercise partial
 * writes; 0 writes at every commit and, for gzip, sync-flushes, so that the file on disk
 * decompresses to exactly the committed events (recover's cut points).
 */
void jw_set_flush_threshold(struct jw *w, size_t bytes);

void jw_raw(struct jw *w, const char *s, size_t n);
/* raw NUL-terminated text; inline so that a literal's length is known at compile time */
static inline void jw_lit(struct jw *w, const char *s)
{
	jw_raw(w, s, strlen(s));
}
void jw_str(struct jw *w, const char *s);		/* quoted, escaped (control chars, ", \\,
							 * invalid UTF-8 replaced by U+FFFD);
							 * NULL writes "" */
/* Same for at most @n bytes of @s, stopping at a NUL (fixed-size fields such as comm[16]). */
void jw_strn(struct jw *w, const char *s, size_t n);
void jw_u64(struct jw *w, uint64_t v);
void jw_i64(struct jw *w, int64_t v);
void jw_hex(struct jw *w, uint64_t v);		/* "0x1f" as a JSON string */
/* At most @decimals (0..9) decimals, trailing zeros dropped (12.50 -> 12.5); non-finite -> 0 */
void jw_dbl(struct jw *w, double v, int decimals);
void jw_us_signed(struct jw *w, int64_t ns);	/* ns -> µs with 3 decimals: 1234567 -> 1234.567 */

/*
 * Direct formatting, for a caller that writes a whole event at once: jw_reserve() returns room
 * for @n more bytes (NULL once memory ran out, the error is recorded), the jw_fmt_* write one
 * value each (at most JW_FMT_MAX bytes) and return its end, jw_advance() takes the text up to
 * @end. Same output as the jw_u64/jw_i64/jw_hex/jw_us_signed above, which are built on them.
 */
#define JW_FMT_MAX	24
char *jw_reserve(struct jw *w, size_t n);
void jw_advance(struct jw *w, const char *end);
char *jw_fmt_u64(char *p, uint64_t v);
char *jw_fmt_i64(char *p, int64_t v);
char *jw_fmt_hex(char *p, uint64_t v);		/* quoted */
char *jw_fmt_us(char *p, uint64_t ns);		/* ns -> µs with 3 decimals */
char *jw_fmt_us_signed(char *p, int64_t ns);

/*
 * Keyed JSON, with the commas tracked for you (as bpftool's json_writer): objects and arrays
 * opened and closed in pairs, members named by jw_key or the jw_kv_* shorthands (key and
 * value), plain array elements after jw_elem (objects and arrays in an array need nothing).
 * jw_members_begin opens a level without a brace, for members that go into an object another
 * writer opened (the trace's closing metadata): @first false when it has members already, so
 * the first one here takes a comma. jw_nl puts a line break after the next separator (before
 * the next member or element): the layout a reader sees in an editor, nothing to JSON. Deeper
 * than JW_MAX_DEPTH levels, or an end without its begin, is an error (jw_error).
 */
#define JW_MAX_DEPTH	64
void jw_members_begin(struct jw *w, bool first);
void jw_members_end(struct jw *w);
void jw_obj_begin(struct jw *w);
void jw_obj_end(struct jw *w);
void jw_arr_begin(struct jw *w);
void jw_arr_end(struct jw *w);
void jw_nl(struct jw *w);
void jw_key(struct jw *w, const char *key);
void jw_elem(struct jw *w);
void jw_kv_str(struct jw *w, const char *key, const char *v);
void jw_kv_u64(struct jw *w, const char *key, uint64_t v);
void jw_kv_i64(struct jw *w, const char *key, int64_t v);
void jw_kv_hex(struct jw *w, const char *key, uint64_t v);
void jw_kv_bool(struct jw *w, const char *key, bool v);
void jw_kv_dbl(struct jw *w, const char *key, double v, int decimals);
void jw_kv_null(struct jw *w, const char *key);
void jw_kv_us(struct jw *w, const char *key, int64_t ns);	/* jw_us_signed */

/* End of a whole event: the buffer may be written out here, and only here. */
void jw_commit(struct jw *w);
/*
 * Write out every committed byte now (gzip: a sync flush, so that the file decompresses to
 * them): what a tracer killed later leaves on disk.
 */
void jw_flush(struct jw *w);
/* First error seen (-errno), sticky; 0 if none. */
int jw_error(const struct jw *w);
/* Bytes produced so far, buffered ones included (before compression). */
uint64_t jw_bytes(const struct jw *w);
/* Flush, finish the gzip stream, fsync-free close. Returns first error (-errno) or 0. */
int jw_close(struct jw *w);

#endif
