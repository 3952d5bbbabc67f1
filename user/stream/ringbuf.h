/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Consumer side of a BPF ring buffer map, with the data pages mapped once.
 *
 * libbpf's ring_buffer maps the data area twice, back to back, so that a record wrapping the
 * end reads contiguously; both mappings count in RSS, so every MiB of ring cost 2 MB of the
 * tracer's memory. Here the data is mapped once and the rare record that wraps is copied.
 */
#ifndef SPYRE_RINGBUF_H
#define SPYRE_RINGBUF_H

#include <stddef.h>

struct rb_reader;

/* One record's payload (without the ring header); a negative return stops the consume. */
typedef int (*rb_sample_fn)(void *ctx, const void *data, size_t len);

/* 0 or -errno (-EINVAL: @map_fd is not a ring buffer map). */
int rb_open(struct rb_reader **out, int map_fd, rb_sample_fn fn, void *ctx);
/* A reader over memory laid out like the map (tests): @data holds @size bytes, once. */
int rb_open_mem(struct rb_reader **out, unsigned long *consumer_pos,
		const unsigned long *producer_pos, const void *data, size_t size, rb_sample_fn fn,
		void *ctx);
/*
 * Hand every committed record to the callback, in order, until the ring is empty or a record
 * is still being written. Returns how many records were handed over, or the callback's
 * negative value (the record it refused counts as consumed).
 */
int rb_consume(struct rb_reader *r);
/* Bytes written and not consumed yet (records being written included), over the ring's size. */
double rb_fill(const struct rb_reader *r);
void rb_close(struct rb_reader *r);

#endif
