/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Turns ringbuf records into trace events and statistics. No syscalls on the per-event path
 * except a one-time /proc read for each thread seen for the first time. */
#ifndef SPYRE_CONSUMER_H
#define SPYRE_CONSUMER_H

#include <stdint.h>
#include "stream/consumer_state.h"
#include "stream/procs.h"

int consumer_init(struct consumer *c, struct trace_writer *tw, const struct target *t,
		  const char *procfs);
/* Resolved probes can grow while tracing (libraries loaded later). */
int consumer_resize(struct consumer *c, int nprobes);
/*
 * One record of the ring, handed to the handler of its kind (SPYRE_EV_*): 0, or -ENOMEM when a
 * process's exit could not be kept. A call of a probe index past the table is counted (bad).
 */
int consumer_event(struct consumer *c, const struct spyre_event *e);
/*
 * Close the device timeline. Names are written as processes and threads are first seen; this
 * writes the names they have now (/proc) where they changed since.
 */
void consumer_write_metadata(struct consumer *c);
/*
 * The run goes on in the file @tw (--switch-output): the Python spans of the calls so far
 * written into the old one, the device timeline's work in flight carried over (device_switch),
 * every process and thread named again in the new one. Statistics go on counting the whole run.
 */
void consumer_switch(struct consumer *c, struct trace_writer *tw);
void consumer_free(struct consumer *c);
/*
 * Decode the driver tier's records too (stream/vfio_decode.h): @funcs[i] (@n of them) names
 * the kernel function of the records whose func is i, @root where fds and devices are looked up
 * (vfio_decoder_new). The decoder is the consumer's, freed with it. 0 or -errno.
 */
int consumer_driver(struct consumer *c, const char *root, const char *const *funcs, int n);
/*
 * Derive python_function spans (stream/pyspans.h) from the calls' Python stacks, written with
 * the metadata: only where every probe brings its caller's stack (--python), so that no traced
 * call without one straddles a frame's span. 0 or -ENOMEM.
 */
int consumer_python_spans(struct consumer *c);
/*
 * Threads with spans on other-stack tracks (into *@threads), and spans that crossed one on every
 * lane (LANES_MAX: put on the last, crossing there still): their count.
 */
uint64_t consumer_lanes_crossed(const struct consumer *c, uint64_t *threads);

#endif
