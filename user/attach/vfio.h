/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Driver tier: the VFIO ioctls of the traced process (the kernel side of the runtime's
 * allocation and setup) as spans on the calling thread, cat "privateuse1_driver".
 *
 * The BPF side (bpf/vfio.bpf.c) has three front ends; vfio_attach() picks the first that works
 * on this kernel, in this order: fentry/fexit (needs BTF of the function's module), kprobes
 * (needs CONFIG_KPROBES and the function in /proc/kallsyms: static functions may be inlined),
 * the syscalls:sys_{enter,exit}_ioctl tracepoints (filtered by tgid and ioctl type ';').
 * Records share the uprobe programs' ring buffer, so driver spans nest inside the runtime call
 * that issued them; stream/vfio_decode.h names and renders them, report/driver.h reports them.
 */
#ifndef SPYRE_VFIO_H
#define SPYRE_VFIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "stream/spyre_event_user.h"
#include "resolve/kallsyms.h"

/* --driver */
enum vfio_mode {
	VFIO_MODE_OFF = 0,
	VFIO_MODE_AUTO,
	VFIO_MODE_FENTRY,
	VFIO_MODE_KPROBE,
	VFIO_MODE_TRACEPOINT,
};

#define VFIO_FUNC_NAME_MAX	KSYM_NAME_MAX

/* --driver-funcs, split by the command line (cmd/env.c): the kernel functions to probe */
struct vfio_funcs {
	int n;
	char name[SPYRE_DRV_MAX_FUNCS][VFIO_FUNC_NAME_MAX];
};

struct vfio_config {
	enum vfio_mode mode;
	const struct vfio_funcs *funcs;	/* NULL = the built-in list (vfio.c) */
	uint32_t tgid;		/* process to trace; 0 = every process */
	const char *root;	/* "": fds named by /proc, /sys, /dev; NULL = not named */
	const char *kallsyms;	/* NULL = "/proc/kallsyms" */
	bool verbose;		/* keep libbpf's messages of refused paths in auto mode */
};

struct vfio_tracer;

/* "fentry", "kprobe", "tracepoint", "off" */
const char *vfio_path_name(enum spyre_drv_path p);

/* What the kernel offers, as vfio_attach() found it. */
struct vfio_caps {
	int nfuncs;		/* functions present in kallsyms */
	bool fentry_btf;	/* vmlinux BTF and every present function's module BTF */
	bool kprobes;		/* kprobe PMU or kprobe_events */
};

/*
 * The paths to try for @mode, in order, into @out (room for 3). Returns their count; 0 when a
 * forced mode cannot work here, with the reason in @why.
 */
int vfio_plan(enum vfio_mode mode, const struct vfio_caps *caps, enum spyre_drv_path *out,
	      char *why, size_t whylen);

/*
 * Allocate, with a copy of @cfg's functions (none for the tracepoints or off); no kernel access
 * yet. Returns 0 or -errno (@err says why).
 */
int vfio_open(struct vfio_tracer **out, const struct vfio_config *cfg, char *err, size_t errlen);
/*
 * Pick a path (vfio_plan), load its programs into the ring buffer @events_fd and attach.
 * In auto mode a path that fails to load or attach falls back to the next; when none works
 * the tier is off and 0 is returned with a note in @err. A forced mode that fails returns
 * -errno with the reason in @err. Mounts tracefs on /sys/kernel/tracing when needed.
 */
int vfio_attach(struct vfio_tracer *v, int events_fd, char *err, size_t errlen);
/*
 * Record the ioctls that begin from now on (@on), or not: --max-overhead's pauses, which
 * detach the uprobe tier, leave the tracepoints attached (their detach waits on the kernel's
 * event_mutex) and stop the recording instead.
 */
void vfio_record(struct vfio_tracer *v, bool on);
/* Stop producing records (call before the final drain). */
void vfio_detach(struct vfio_tracer *v);
void vfio_close(struct vfio_tracer *v);
enum spyre_drv_path vfio_path(const struct vfio_tracer *v);

/* The kernel functions of --driver-funcs in order (a record's func indexes them); NULL past them. */
const char *vfio_func(const struct vfio_tracer *v, int i);
/* Was function @i found (kallsyms) and probed? */
bool vfio_func_present(const struct vfio_tracer *v, int i);

/* What the BPF side counted: records the ring had no room for, unpaired entries or returns, and
 * runs of ours the kernel skipped. */
struct vfio_counts {
	uint64_t drops_ring;
	uint64_t unpaired;
	uint64_t missed;
};
void vfio_counts(const struct vfio_tracer *v, struct vfio_counts *out);

#endif
