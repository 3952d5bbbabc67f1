// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The ring's records into the consumer (drain.h). */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include "common/util.h"
#include "output/jsonw.h"
#include "stream/consumer.h"
#include "stream/drain.h"
#include "stream/ringbuf.h"

/*
 * Records per consume call before the main loop looks at the clock and signals again; a batch
 * also ends after DRAIN_BATCH_NS. Records cost what the traced process makes them cost (the
 * Python frames it shows us, its code objects): 65,536 records of a target whose every frame
 * named a 1 MiB line table took minutes, SIGTERM unseen all along. The clock is read every
 * DRAIN_CLOCK_EVERY records (a vDSO call, ~20 ns), so one batch overruns by at most that many.
 */
#define DRAIN_BATCH	65536
#define DRAIN_BATCH_NS	(50 * 1000 * 1000ull)
#define DRAIN_CLOCK_EVERY	16

struct drain {
	struct rb_reader *rb;
	struct consumer *cons;	/* of the current drain_run; NULL: records counted, not read */
	long batch;
	unsigned int calls;	/* on_event calls in the batch */
	uint64_t batch_end;	/* CLOCK_MONOTONIC ns the batch ends at */
	uint64_t skipped;	/* records drain_skip took */
	/* drain_set_bound: a batch ends once the file holds this many bytes (0: no bound) */
	const struct jw *bound_w;
	uint64_t bound;
};

static int on_event(void *ctx, const void *data, size_t len)
{
	struct drain *d = ctx;

	/* one event, or up to SPYRE_STAGE spans a thread staged (see stage_events in the BPF) */
	for (size_t off = 0; off + sizeof(struct spyre_event) <= len;
	     off += sizeof(struct spyre_event)) {
		if (d->cons)
			consumer_event(d->cons, (const struct spyre_event *)((const char *)data + off));
		else
			d->skipped++;
		d->batch++;
	}
	/* a file at its size bound: the session switches files (or stops) before the next */
	if (d->bound && d->cons && jw_bytes(d->bound_w) >= d->bound)
		return -EAGAIN;
	/* libbpf 1.1 keeps consuming while the producer keeps pace: stop to look around */
	if (d->batch >= DRAIN_BATCH)
		return -EAGAIN;
	if (++d->calls % DRAIN_CLOCK_EVERY == 0 && now_ns(CLOCK_MONOTONIC) >= d->batch_end)
		return -EAGAIN;
	return 0;
}

/* A batch begins: its count and its deadline */
static void batch_begin(struct drain *d)
{
	d->batch = 0;
	d->calls = 0;
	d->batch_end = now_ns(CLOCK_MONOTONIC) + DRAIN_BATCH_NS;
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
		batch_begin(d);
		n = rb_consume(d->rb);
	} while (all && n == -EAGAIN);
	return n == -EAGAIN;
}

void drain_set_bound(struct drain *d, const struct jw *w, uint64_t bytes)
{
	if (!d)
		return;
	d->bound_w = w;
	d->bound = w ? bytes : 0;
}

bool drain_full(const struct drain *d)
{
	return d && d->bound && jw_bytes(d->bound_w) >= d->bound;
}

uint64_t drain_skip(struct drain *d)
{
	uint64_t n;

	if (!d)
		return 0;
	d->cons = NULL;
	d->skipped = 0;
	do
		batch_begin(d);
	while (rb_consume(d->rb) == -EAGAIN);
	n = d->skipped;
	d->skipped = 0;
	return n;
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
