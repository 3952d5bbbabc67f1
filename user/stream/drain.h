/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The BPF ring buffer's records into the consumer, in bounded batches. */
#ifndef SPYRE_DRAIN_H
#define SPYRE_DRAIN_H

#include <stdbool.h>

struct consumer;
struct drain;

/*
 * Map the ring buffer @ring_fd; before the first attach, after every BPF object is loaded:
 * its pages count in RSS, and so do the ~11 MB libbpf holds for a moment to parse vmlinux BTF
 * (once per object). Records wait in the ring until then. 0 or -errno.
 */
int drain_open(struct drain **out, int ring_fd);
/*
 * Hand the ring's records to @c; @all: until empty, else one bounded batch. True when the
 * batch was cut short with records left: drain again without waiting. @d NULL: false.
 */
bool drain_run(struct drain *d, struct consumer *c, bool all);
/* How full the ring is (0..1; 0 when not mapped). */
double drain_fill(const struct drain *d);
void drain_close(struct drain *d);

#endif
