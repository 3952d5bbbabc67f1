/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Small strict JSON (RFC 8259) DOM parser for reading traces back: tests, and the check,
 * recover and merge subcommands. The whole tree lives in one arena freed by jv_free(root); it
 * does not point into the input buffer. Strings are unescaped UTF-8 and NUL-terminated (a
 * \u0000 inside shortens them for C functions; str.len has the real length).
 */
#ifndef SPYRE_JSONPARSE_H
#define SPYRE_JSONPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nesting limit of arrays/objects: deeper input is rejected instead of exhausting the stack. */
#define JV_MAX_DEPTH	256

enum jv_type { JV_NULL, JV_BOOL, JV_NUMBER, JV_STRING, JV_ARRAY, JV_OBJECT };

struct jv {
	struct jv *next;	/* next element/member of the parent, NULL at the end */
	const char *key;	/* member name when the parent is an object, else NULL */
	union {
		bool b;
		struct {
			double d;
			const char *raw;	/* the number's text exactly as in the input */
		} num;
		struct {
			const char *s;
			size_t len;
		} str;
		struct {
			struct jv *first;	/* elements/members in document order */
			size_t n;
		} kids;
	};
	enum jv_type type;
};

/*
 * Parse @len bytes of @buf (no NUL needed) as one JSON document. On error returns NULL and
 * writes "line:col: message" (1-based, col in bytes) into @err if @errlen > 0.
 */
struct jv *jv_parse(const char *buf, size_t len, char *err, size_t errlen);
/* Free a tree returned by jv_parse (only the root may be passed). NULL is fine. */
void jv_free(struct jv *root);

/*
 * jv_parse into an arena kept in *@keep (NULL at first) from one call to the next, for a stream
 * of small documents (a trace's events, one at a time): the tree lives until the next call or
 * jv_keep_free(), and is not passed to jv_free. The arena's first block (1 MiB) is reused
 * instead of allocated for each event.
 */
struct jv_keep;
struct jv *jv_parse_keep(struct jv_keep **keep, const char *buf, size_t len, char *err,
			 size_t errlen);
void jv_keep_free(struct jv_keep **keep);

/* First member named @key of object @obj; NULL if absent or @obj is not an object. */
struct jv *jv_get(const struct jv *obj, const char *key);
/* Number of elements/members of an array/object, 0 for anything else. */
size_t jv_len(const struct jv *v);
/* First element/member of an array/object (then follow ->next), NULL if none. */
struct jv *jv_first(const struct jv *v);
#define jv_foreach(c, parent) for ((c) = jv_first(parent); (c); (c) = (c)->next)

/* Typed access: NULL / false when @v is NULL or of another type. */
const char *jv_str(const struct jv *v);
bool jv_num(const struct jv *v, double *out);
/*
 * A number of µs as integer ns, exactly: plain decimals digit by digit, rounded half away from
 * zero past the third decimal (a double holds ts to ~1 ns only: Kineto's ts reach 7.9e12 µs);
 * others through the double. False past ±@max_us.
 */
bool jv_us_ns(const struct jv *v, int64_t max_us, int64_t *out);
/* A number written as plain digits, exactly (ids past 2^53, where doubles lose units). */
bool jv_u64_exact(const struct jv *v, uint64_t *out);
/* Shorthands for a member of an object. */
const char *jv_get_str(const struct jv *obj, const char *key);
bool jv_get_num(const struct jv *obj, const char *key, double *out);

const char *jv_type_name(enum jv_type t);

#endif
