// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * BPF ring buffer reader (see ringbuf.h). The layout is the kernel's ABI: page 0 holds the
 * consumer position (the only page userspace may write), page 1 the producer position, the
 * data pages follow. Each record starts with an 8-byte header {u32 len; u32 pgoff}, len having
 * the BUSY bit while the producer writes and the DISCARD bit for discarded records; records
 * are rounded up to 8 bytes, so a header never straddles the end of the data area.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "stream/ringbuf.h"

struct rb_reader {
	bool mapped;			/* false: rb_open_mem, the caller owns the memory */
	size_t page;
	size_t size;			/* data bytes, a power of two */
	unsigned long *consumer_pos;	/* page 0, read-write */
	void *prod_map;			/* page 1 and the data pages, read-only */
	const unsigned long *producer_pos;
	const char *data;
	char *tmp;			/* a record that wraps, made contiguous */
	size_t tmp_cap;
	rb_sample_fn fn;
	void *ctx;
};

int rb_open(struct rb_reader **out, int map_fd, rb_sample_fn fn, void *ctx)
{
	struct bpf_map_info info = {};
	__u32 info_len = sizeof(info);
	struct rb_reader *r;
	void *p;
	int err;

	*out = NULL;
	if (bpf_obj_get_info_by_fd(map_fd, &info, &info_len))
		return -errno;
	if (info.type != BPF_MAP_TYPE_RINGBUF || !info.max_entries ||
	    (info.max_entries & (info.max_entries - 1)))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->mapped = true;
	r->page = (size_t)sysconf(_SC_PAGESIZE);
	r->size = info.max_entries;
	r->fn = fn;
	r->ctx = ctx;
	p = mmap(NULL, r->page, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		free(r);
		return err;
	}
	r->consumer_pos = p;
	/* the kernel offers the data twice in a row; one copy is enough here */
	p = mmap(NULL, r->page + r->size, PROT_READ, MAP_SHARED, map_fd, r->page);
	if (p == MAP_FAILED) {
		err = -errno;
		munmap(r->consumer_pos, r->page);
		free(r);
		return err;
	}
	r->prod_map = p;
	r->producer_pos = p;
	r->data = (const char *)p + r->page;
	*out = r;
	return 0;
}

int rb_open_mem(struct rb_reader **out, unsigned long *consumer_pos,
		const unsigned long *producer_pos, const void *data, size_t size, rb_sample_fn fn,
		void *ctx)
{
	struct rb_reader *r;

	*out = NULL;
	if (!size || (size & (size - 1)) || (size & 7))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->size = size;
	r->consumer_pos = consumer_pos;
	r->producer_pos = producer_pos;
	r->data = data;
	r->fn = fn;
	r->ctx = ctx;
	*out = r;
	return 0;
}

/* The payload of @n bytes at data offset @off, contiguous (copied if it wraps); NULL: ENOMEM. */
static const void *payload(struct rb_reader *r, size_t off, size_t n)
{
	size_t first = r->size - off;

	if (n <= first)
		return r->data + off;
	if (n > r->tmp_cap) {
		char *t = realloc(r->tmp, n);

		if (!t)
			return NULL;
		r->tmp = t;
		r->tmp_cap = n;
	}
	memcpy(r->tmp, r->data + off, first);
	memcpy(r->tmp + first, r->data, n - first);
	return r->tmp;
}

double rb_fill(const struct rb_reader *r)
{
	unsigned long cons = __atomic_load_n(r->consumer_pos, __ATOMIC_ACQUIRE);
	unsigned long prod = __atomic_load_n(r->producer_pos, __ATOMIC_ACQUIRE);

	return prod > cons ? (double)(prod - cons) / (double)r->size : 0;
}

int rb_consume(struct rb_reader *r)
{
	unsigned long cons = __atomic_load_n(r->consumer_pos, __ATOMIC_ACQUIRE), prod;
	size_t mask = r->size - 1;
	int cnt = 0, err;

	while (cons < (prod = __atomic_load_n(r->producer_pos, __ATOMIC_ACQUIRE))) {
		do {
			const __u32 *hdr = (const __u32 *)(r->data + (cons & mask));
			__u32 len = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
			size_t n = len & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
			const void *data;

			if (len & BPF_RINGBUF_BUSY_BIT)
				return cnt;	/* still being written: the next drain takes it */
			err = 0;
			if (!(len & BPF_RINGBUF_DISCARD_BIT)) {
				data = payload(r, (cons + BPF_RINGBUF_HDR_SZ) & mask, n);
				err = data ? r->fn(r->ctx, data, n) : -ENOMEM;
				cnt++;
			}
			cons += (BPF_RINGBUF_HDR_SZ + n + 7) & ~(size_t)7;
			/* free the space at once: producers may be waiting for it */
			__atomic_store_n(r->consumer_pos, cons, __ATOMIC_RELEASE);
			if (err < 0)
				return err;
		} while (cons < prod);
	}
	return cnt;
}

void rb_close(struct rb_reader *r)
{
	if (!r)
		return;
	if (r->mapped) {
		munmap(r->prod_map, r->page + r->size);
		munmap(r->consumer_pos, r->page);
	}
	free(r->tmp);
	free(r);
}
