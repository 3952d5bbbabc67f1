/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The BPF ring buffer's records into the consumer, in bounded batches. */
#ifndef SPYRE_DRAIN_H
#define SPYRE_DRAIN_H

#include <stdbool.h>
#include <stdint.h>

struct consumer;
struct drain;
struct jw;

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
/*
 * A bound on a trace file (--max-size): drain_run ends its batch as soon as @w holds @bytes
 * (jw_bytes), with the ring's other records left for the next file; @w NULL: no bound. At most
 * one ring record (a thread's staged spans, SPYRE_STAGE events) passes the bound.
 */
void drain_set_bound(struct drain *d, const struct jw *w, uint64_t bytes);
/* The bound's file holds its bytes: switch files or stop before draining again. */
bool drain_full(const struct drain *d);
/*
 * Take every record left in the ring without reading it (a file full, the run stopping):
 * how many calls and other records they held, for the summary's count of what was not written.
 */
uint64_t drain_skip(struct drain *d);
/* How full the ring is (0..1; 0 when not mapped). */
double drain_fill(const struct drain *d);
void drain_close(struct drain *d);

#endif
