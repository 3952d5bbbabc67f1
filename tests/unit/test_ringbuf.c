// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <linux/bpf.h>

#include "stream/ringbuf.h"
#include "unit.h"

#define RING	256	/* data bytes: small, so records wrap often */

/* A producer writing the kernel's record layout into memory. */
struct fake_ring {
	unsigned long cons, prod;
	uint64_t data[RING / 8];
};

/* Append a record of @n bytes filled with @seed; @flags: BUSY/DISCARD bits left on it. */
static void produce(struct fake_ring *f, size_t n, unsigned char seed, uint32_t flags)
{
	unsigned char *d = (unsigned char *)f->data;
	size_t at = f->prod & (RING - 1);
	uint32_t hdr[2] = { (uint32_t)n | flags, 0 };

	memcpy(d + at, hdr, sizeof(hdr));
	for (size_t i = 0; i < n; i++)
		d[(at + BPF_RINGBUF_HDR_SZ + i) & (RING - 1)] = (unsigned char)(seed + i);
	f->prod += (BPF_RINGBUF_HDR_SZ + n + 7) & ~7ul;
}

struct seen {
	int n;
	size_t len[64];
	int ok[64];		/* payload matched what the producer wrote */
	unsigned char seed[64];
	int stop_at;		/* return -EAGAIN for this record (1-based), 0: never */
};

static int on_sample(void *ctx, const void *data, size_t len)
{
	struct seen *s = ctx;
	const unsigned char *p = data;
	int ok = 1;

	for (size_t i = 0; i < len; i++)
		ok &= p[i] == (unsigned char)(p[0] + i);
	s->len[s->n] = len;
	s->seed[s->n] = len ? p[0] : 0;
	s->ok[s->n] = ok;
	s->n++;
	return s->n == s->stop_at ? -EAGAIN : 0;
}

TEST(ringbuf_reads_records_in_order_across_the_wrap)
{
	struct fake_ring f = { 0 };
	struct seen s = { 0 };
	struct rb_reader *r;
	int total = 0;

	CHECK_EQ_INT(rb_open_mem(&r, &f.cons, &f.prod, f.data, RING, on_sample, &s), 0);
	if (!r)
		return;
	/* 200 bytes of records, drained, then more: the later ones straddle the end */
	for (int round = 0; round < 6; round++) {
		produce(&f, 44, (unsigned char)(10 * round), 0);	/* 56 bytes with header */
		produce(&f, 90, (unsigned char)(10 * round + 1), 0);	/* 104 */
		produce(&f, 1, (unsigned char)(10 * round + 2), BPF_RINGBUF_DISCARD_BIT);
		CHECK_EQ_INT(f.prod - f.cons, 56 + 104 + 16);
		CHECK_EQ_INT(rb_consume(r), 2);
		CHECK_EQ_INT(f.prod - f.cons, 0);	/* all consumed, discarded one too */
		total += 2;
	}
	CHECK_EQ_INT(s.n, total);
	for (int i = 0; i < s.n; i++) {
		CHECK(s.ok[i]);
		CHECK_EQ_INT(s.len[i], i % 2 ? 90 : 44);
		CHECK_EQ_INT(s.seed[i], 10 * (i / 2) + i % 2);
	}
	CHECK_EQ_INT(f.cons, f.prod);
	rb_close(r);
}

TEST(ringbuf_stops_at_a_busy_record_and_when_asked)
{
	struct fake_ring f = { 0 };
	struct seen s = { 0 };
	struct rb_reader *r;
	unsigned long busy_at;

	CHECK_EQ_INT(rb_open_mem(&r, &f.cons, &f.prod, f.data, RING, on_sample, &s), 0);
	if (!r)
		return;
	produce(&f, 8, 1, 0);
	busy_at = f.prod;
	produce(&f, 8, 2, BPF_RINGBUF_BUSY_BIT);
	produce(&f, 8, 3, 0);
	/* the producer is still writing the second: nothing past it is read */
	CHECK_EQ_INT(rb_consume(r), 1);
	CHECK_EQ_INT(f.cons, busy_at);
	((uint32_t *)f.data)[(busy_at & (RING - 1)) / 4] &= ~BPF_RINGBUF_BUSY_BIT;
	/* a callback that refuses to go on: that record is consumed, the rest stays */
	s.stop_at = 2;
	CHECK_EQ_INT(rb_consume(r), -EAGAIN);
	CHECK_EQ_INT(s.n, 2);
	CHECK(f.cons < f.prod);
	s.stop_at = 0;
	CHECK_EQ_INT(rb_consume(r), 1);
	CHECK_EQ_INT(s.n, 3);
	CHECK_EQ_INT(s.seed[2], 3);
	CHECK_EQ_INT(f.cons, f.prod);
	rb_close(r);
	CHECK_EQ_INT(rb_open_mem(&r, &f.cons, &f.prod, f.data, 100, on_sample, &s), -EINVAL);
}
