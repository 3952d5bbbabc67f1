// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The consumer (consumer.h): each record to the handler of its kind, in the files of the seams
 * it crosses: processes and threads (procs.c), a call's stacks (stacks.c), a call's path from
 * its record to its event and the device timeline (calls.c); here what is the whole consumer's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "stream/consumer.h"
#include "stream/calls.h"
#include "stream/lanes.h"
#include "stream/pyspans.h"
#include "stream/memledger.h"
#include "stream/procs.h"
#include "stream/stacks.h"
#include "stream/vfio_decode.h"
#include "common/util.h"

int consumer_init(struct consumer *c, struct trace_writer *tw, const struct target *t,
		  const char *procfs)
{
	memset(c, 0, sizeof(*c));
	c->tw = tw;
	c->t = t;
	c->procfs = procfs;
	c->tcap = 256;
	c->threads = calloc(c->tcap, sizeof(*c->threads));
	if (!c->threads || device_init(&c->dev, tw))
		return -ENOMEM;
	return consumer_resize(c, t->cnt);
}

int consumer_resize(struct consumer *c, int nprobes)
{
	struct probe_out *o;
	struct fn_stats *s;
	uint64_t *d;

	if (nprobes <= c->nprobes)
		return 0;
	o = realloc(c->out, nprobes * sizeof(*o));
	if (!o)
		return -ENOMEM;
	c->out = o;
	memset(&c->out[c->nprobes], 0, (nprobes - c->nprobes) * sizeof(*o));
	/*
	 * A histogram takes 8 KiB: zeroed pages from calloc, never written for a probe that is
	 * never called, keep it out of RSS (realloc + memset made 5,498 probes cost 44 MB)
	 */
	s = calloc(nprobes, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (c->nprobes)
		memcpy(s, c->stats, c->nprobes * sizeof(*s));
	free(c->stats);
	c->stats = s;
	d = realloc(c->delivered, nprobes * sizeof(*d));
	if (!d)
		return -ENOMEM;
	c->delivered = d;
	memset(&c->delivered[c->nprobes], 0, (nprobes - c->nprobes) * sizeof(*d));
	d = realloc(c->trig_ns, nprobes * sizeof(*d));
	if (!d)
		return -ENOMEM;
	c->trig_ns = d;
	memset(&c->trig_ns[c->nprobes], 0, (nprobes - c->nprobes) * sizeof(*d));
	c->nprobes = nprobes;
	return 0;
}

/* The driver tier's record (SPYRE_EV_IOCTL): a VFIO ioctl, stream/vfio_decode.c's. */
static int on_ioctl(struct consumer *c, const struct spyre_event *e)
{
	c->events++;
	see_thread(c, e->tgid, e->tid);
	if (c->vfio)
		vfio_event(c->vfio, c->tw, e);
	if (c->mem)
		memledger_ioctl(c->mem, c->tw, e);
	return 0;
}

/* A mem=free span's entry (SPYRE_EV_MEM_ENTRY): the ledger's, not an event of the trace. */
static int on_mem_entry(struct consumer *c, const struct spyre_event *e)
{
	if (c->mem && e->probe < (uint32_t)c->nprobes)
		memledger_event(c->mem, c->tw, &c->t->table->specs[c->t->probes[e->probe].spec], e,
				NULL);
	return 0;
}

uint64_t consumer_lanes_crossed(const struct consumer *c, uint64_t *threads)
{
	uint64_t n = 0;

	*threads = 0;
	for (uint32_t i = 0; c->threads && i < c->tcap; i++) {
		if (!c->threads[i].tid || !lanes_extra(c->threads[i].lanes))
			continue;
		++*threads;
		n += lanes_crossed(c->threads[i].lanes);
	}
	return n;
}

int consumer_event(struct consumer *c, const struct spyre_event *e)
{
	switch (e->type) {
	case SPYRE_EV_THREAD:
		return on_thread_event(c, e);
	case SPYRE_EV_EXIT:
		return on_exit_event(c, e);
	case SPYRE_EV_STR:
		return on_str(c, e);
	case SPYRE_EV_PYSTACK:
		return on_pystack(c, e);
	case SPYRE_EV_USTACK:
		return on_ustack(c, e);
	case SPYRE_EV_IOCTL:
		return on_ioctl(c, e);
	case SPYRE_EV_MEM_ENTRY:
		return on_mem_entry(c, e);
	case SPYRE_EV_UNWOUND:
	case SPYRE_EV_NORETURN:
		return on_unwound(c, e);
	case SPYRE_EV_SPAN:
	case SPYRE_EV_INSTANT:
		return on_call(c, e);
	default:	/* the BPF side makes no other kind: counted, nothing written */
		c->bad++;
		return 0;
	}
}

void consumer_write_metadata(struct consumer *c)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	device_finish(&c->dev);
	if (!c->tw)
		return;
	c->py_spans += pyspans_write(c->pyspans, c->tw);
	names_refresh(c, now);
}

void consumer_switch(struct consumer *c, struct trace_writer *tw)
{
	c->py_spans += pyspans_write(c->pyspans, c->tw);
	c->tw = tw;
	device_switch(&c->dev, tw);
	names_again(c);
}

int consumer_python_spans(struct consumer *c)
{
	if (!c->pyspans)
		c->pyspans = pyspans_new();
	return c->pyspans ? 0 : -ENOMEM;
}

int consumer_driver(struct consumer *c, const char *root, const char *const *funcs, int n)
{
	int err;

	vfio_decoder_free(c->vfio);
	c->vfio = NULL;
	err = vfio_decoder_new(&c->vfio, root);
	for (int i = 0; !err && i < n; i++)
		vfio_decoder_func(c->vfio, i, funcs[i]);
	return err;
}

void consumer_free(struct consumer *c)
{
	vfio_decoder_free(c->vfio);
	pyspans_free(c->pyspans);
	for (int i = 0; i < c->nprobes; i++)
		trace_fmt_free(&c->out[i].fmt);
	free(c->out);
	free(c->stats);
	free(c->delivered);
	free(c->trig_ns);
	free(c->pyn);
	for (uint32_t i = 0; c->threads && i < c->tcap; i++)
		lanes_free(c->threads[i].lanes);
	free(c->threads);
	free(c->procs);
	for (uint32_t i = 0; i < c->pcap; i++)
		free(c->pid_stats[i].st);
	free(c->pid_stats);
	free(c->exits);
	device_free(&c->dev);
	memset(c, 0, sizeof(*c));
}
