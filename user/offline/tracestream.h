/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A trace read as a stream (plain or gzip): the elements of its "traceEvents" array one at a
 * time, each parsed by the strict parser (jsonparse.h), in memory bounded by the largest event,
 * not by the file. check reads traces of any size this way.
 */
#ifndef SPYRE_TRACESTREAM_H
#define SPYRE_TRACESTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jv;
struct tstream;

/*
 * Largest event, and largest sum of the other members of the document, held in memory: a trace
 * event is a few hundred bytes; a bigger one is not a trace's (untrusted input).
 */
#define TSTREAM_MAX_VALUE	(256u << 20)

/* Open @path (gzip detected by its magic bytes). NULL with a message in @err (errno set). */
struct tstream *tstream_open(const char *path, char *err, size_t errlen);
/* The same over @len bytes of @data (kept by the caller), read @chunk bytes at a time (tests). */
struct tstream *tstream_open_mem(const char *data, size_t len, size_t chunk);
void tstream_close(struct tstream *s);

/*
 * The next element of traceEvents (of the top level itself when it is an array) into *@ev,
 * valid until the next call: 1. At the document's end 0: tstream_head() is then the rest. On
 * bad or cut input -1, with "line:col: message" in @err (tstream_cut() says whether the input
 * ended inside the document). Once 0 or -1, it stays so.
 */
int tstream_next(struct tstream *s, const struct jv **ev, char *err, size_t errlen);

/*
 * After tstream_next() returned 0: the document without its events. An object with every
 * member, "traceEvents" an empty array when it was one (streamed); an empty array when the top
 * level was an array; else the top-level value itself.
 */
const struct jv *tstream_head(const struct tstream *s);

/* The text of the element tstream_next() returned last, as in the input. */
const char *tstream_raw(const struct tstream *s, size_t *len);

/* Its end's offset in the input (decompressed). */
uint64_t tstream_raw_end(const struct tstream *s);

/*
 * The document's members read so far as text, "{...}" (closed once the document ended), the
 * events' array written "[]" at offset *@events_at; recover writes the header it kept from it.
 */
const char *tstream_head_text(const struct tstream *s, size_t *len, size_t *events_at);
/* The events' array was reached (the top-level "traceEvents" array, or the top level). */
bool tstream_in_events(const struct tstream *s);

/* The input ended inside the document (a writer that died): `recover` can close it. */
bool tstream_cut(const struct tstream *s);
/* Gzip input; and a gzip stream that ends early or in corrupt data (what inflated is read). */
bool tstream_gzip(const struct tstream *s);
bool tstream_gzip_cut(const struct tstream *s);
/* Bytes read of the input (decompressed), for the rate. */
uint64_t tstream_bytes(const struct tstream *s);

/* A cat of device work in a Kineto-layout trace: "kernel", "gpu_memcpy" or "gpu_memset". */
bool trace_device_cat(const char *cat);
struct dirent;
/*
 * The trace files (*.json, *.json.gz, no dot files) of directory @dir in name order, for the
 * subcommands that take FILE|DIR: their count (scandir's @ents, each and the array freed by
 * the caller), or -errno.
 */
int trace_dir_scan(const char *dir, struct dirent ***ents);
#endif
