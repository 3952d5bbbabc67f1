// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The ring's records into the consumer (drain.h). */
#include <errno.h>
#include <stdlib.h>
#include "stream/consumer.h"
#include "stream/drain.h"
#include "stream/ringbuf.h"

/* Records per consume call before the main loop looks at the clock and signals again. */
#define DRAIN_BATCH	65536

struct drain {
	struct rb_reader *rb;
	struct consumer *cons;	/* of the current drain_run */
	long batch;
};

static int on_event(void *ctx, const void *data, size_t len)
{
	struct drain *d = ctx;

	/* one event, or up to SPYRE_STAGE spans a thread staged (see stage_events in the BPF) */
	for (size_t off = 0; off + sizeof(struct spyre_event) <= len;
	     off += sizeof(struct spyre_event)) {
		consumer_event(d->cons, (const struct spyre_event *)((const char *)data + off));
		d->batch++;
	}
	/* libbpf 1.1 keeps consuming while the producer keeps pace: stop to look around */
	return d->batch >= DRAIN_BATCH ? -EAGAIN : 0;
}

int drain_open(struct drain **out, int ring_fd)
{
	struct drain *d = calloc(1, sizeof(*d));
	int err;

	*out = NULL;
	if (!d)
		return -ENOMEM;
	err = rb_open(&d->rb, ring_fd, on_event, d);
	if (err) {
		free(d);
		return err;
	}
	*out = d;
	return 0;
}

bool drain_run(struct drain *d, struct consumer *c, bool all)
{
	int n;

	if (!d)
		return false;	/* not mapped: not attached either */
	d->cons = c;
	do {
		d->batch = 0;
		n = rb_consume(d->rb);
	} while (all && n == -EAGAIN);
	return n == -EAGAIN;
}

double drain_fill(const struct drain *d)
{
	return d ? rb_fill(d->rb) : 0;
}

void drain_close(struct drain *d)
{
	if (!d)
		return;
	rb_close(d->rb);
	free(d);
}
