/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the kernel lets our programs do, asked by loading the small programs of
 * bpf/spyre_feat.bpf.c, each on its own: the one place a kernel feature is probed, and where
 * the warm-up's, the calibration's and the return-site self-test's own programs come from.
 */
#ifndef SPYRE_FEAT_H
#define SPYRE_FEAT_H

#include <stdbool.h>
#include <stddef.h>

/* bpf_find_vma with a callback loads in a uprobe program (5.17+ with a BPF JIT). */
bool feat_find_vma(void);
/* bpf_probe_write_user is offered to uprobe programs (not under lockdown). */
bool feat_write_user(void);
/*
 * An empty uprobe program, for uprobe_multi links (@multi) or perf-event uprobes: its fd, or
 * -errno.
 */
int feat_empty_prog(bool multi);
/*
 * A program counting its hits in array map @map (one u64 at key 0), doing the probed x86-64
 * `ret` itself with @emulate: its fd, or -errno; the verifier's words in @log (@len bytes,
 * NULL: none).
 */
int feat_count_prog(int map, bool emulate, bool multi, char *log, size_t len);

#endif
