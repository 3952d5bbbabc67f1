/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The BPF side of a tracing session, libbpf-tools style: open -> configure rodata -> load ->
 * attach, then drain the ring buffer on a timer. Used once by `-p`/`--` and once per window in
 * fleet mode.
 */
#ifndef SPYRE_UPROBE_TIER_H
#define SPYRE_UPROBE_TIER_H

#include <stdbool.h>
#include <stdint.h>
#include "resolve/resolve.h"
#include "stream/spyre_event_user.h"

/*
 * Drain interval: the ring holds rate x interval events; 10 ms keeps it small. While the ring
 * stays nearly empty the interval doubles up to TRACER_DRAIN_MAX_MS: each drain wakes the
 * tracer on the job's CPUs, and under QEMU TCG each wakeup that switched the job out cost it
 * ~0.8 ms of its own CPU time (QEMU flushes its TLB and jump cache at each address-space
 * switch): on real PyTorch in the 7.3 guest (one CPU) our consumer was 6-14 us of the ~28 us
 * a traced call added, the probes themselves 0.8x the empty uprobe+uretprobe pair; drained
 * every 100 ms, the tracer woke 11x less and the added time fell from 30 to 21 us a call
 * (make vm-next-torch, docs/performance.md).
 */
#define TRACER_DRAIN_MS		10
#define TRACER_DRAIN_MAX_MS	100
/* ... back to TRACER_DRAIN_MS when a drain finds the ring this full (a burst) */
#define TRACER_DRAIN_BUSY	(1.0 / 8)
/* ... and longer only while it finds it under this */
#define TRACER_DRAIN_IDLE	(1.0 / 64)
/* How often targets' maps are read again for libraries loaded later (dlopen). */
#define TRACER_RESCAN_MS	1000

struct spyre_bpf;
struct bpf_link;

struct tracer_opts {
	uint32_t sample_every;		/* record 1 in N calls; 0/1 = all */
	uint64_t rate_cap;		/* events/s per process; 0 = no cap */
	int follow_pid;			/* --follow: trace this process and its descendants */
	int ring_fd;			/* the ring buffer, from tracer_ring_create */
	/* returns through the kernel's uretprobes instead of return sites (--uretprobes) */
	bool uretprobes;
	int room;			/* probes the counters hold: tracer_room() */
	/* load the programs that do the return themselves (retcheck_emulation_loads) */
	bool emulated_returns;
	bool python;			/* --python: every span probe's entry walks Python frames */
	bool ustack;			/* --ustack: every span probe's entry takes its stack */
	bool ustack_map;		/* ... or some probe's (stack=1): the ustacks map sized
					 * (set with ustack too) */
};

struct tracer {
	struct spyre_bpf *skel;
	/* perf-event links of probe i (no uprobe_multi): its entry, its uretprobe */
	struct bpf_link **entry_links, **ret_links;
	int nlinks;				/* probes they have room for */
	int perf_uprobes;			/* perf-event uprobes attached */
	bool perf_limit_said;			/* past SPYRE_PERF_MAX_UPROBES, said once */
	int room;				/* probes the counters hold (tracer_opts) */
	struct spyre_counters *counters;	/* [room], CPUs summed: tracer_read_counters */
	int attached;				/* probes with live links */
	/*
	 * Emulated returns: their programs loaded (tracer_opts), and used by the return sites
	 * attached from now on (set once the self-test passed, before the first attach)
	 */
	bool emu_loaded, emulate;
	/*
	 * uprobe_multi (Linux 6.6+): one link per library and kind instead of one perf event
	 * per probe. Removing a uprobe waits for an RCU grace period (~0.3 s each on these
	 * VMs), so 30 perf-event probes took seconds to detach; a multi link waits once.
	 */
	struct bpf_link *fork_link;		/* --follow */
	bool task_storage;			/* per-thread stacks in task storage, not a hash */
	bool stage;				/* spans staged per thread (stage_events) */
	bool stack_regions;			/* open calls kept per stack (stack_regions) */
	/* thread exits: flushes the stage, counts cancelled calls, reports process exits */
	bool exit_hook;
	struct bpf_link *exit_link;
	struct bpf_link **site_links;		/* return sites, perf-event links */
	int nsite_links;
	size_t cap_site_links;
	bool unwind_guard;			/* type=unwind probes can be attached */
	bool unwind_warned;			/* ... or the user was told they cannot */
	bool multi;
	int *mlinks;				/* uprobe_multi link fds */
	bool *mlink_ret;			/* ... of return probes (closed first) */
	int nmlinks;
	size_t capmlinks;
	bool python;				/* tracer_opts.python */
	bool ustack;				/* tracer_opts.ustack */
};

/*
 * The probes the counters get room for: @max_probes when the user gave it (--max-probes, 0
 * when not); else twice the @resolved functions, at least SPYRE_PROBE_ROOM, at most
 * SPYRE_MAX_PROBES.
 */
int tracer_room(int resolved, int max_probes);
struct bpf_object;
/*
 * Makes each tail call in @obj's programs (opened, not loaded) r0 = 0, what a tail call that
 * finds no program leaves: the never-taken ones that keep our programs off the x86 JIT's
 * private stack (bpf/spyre_state.bpf.h, priv_stack_off), for the interpreter, which refuses tail
 * calls in programs with bpf-to-bpf calls. The count of instructions stays, so the relocations
 * libbpf recorded at open stay right. Returns the calls changed, or -errno.
 */
int bpf_strip_tail_calls(struct bpf_object *obj);
struct probe_spec;
struct spyre_read_cfg;
/* What probe @s reads from user memory, as the BPF programs take it. */
void probe_read_cfg(const struct probe_spec *s, struct spyre_read_cfg *r);
/* -errno; -EPERM when the kernel refuses BPF (privileges, lockdown). Uses uprobe_multi links
 * and task storage where the kernel has them (SPYRE_NO_UPROBE_MULTI=1 forces per-probe perf
 * events, SPYRE_NO_TASK_STORAGE=1 per-thread stacks in a hash map, SPYRE_NO_STAGE=1 one ring
 * record per span, SPYRE_NO_UNWIND_GUARD=1 leaves type=unwind probes unattached). */
int tracer_open(struct tracer *tr, const struct tracer_opts *o);
/*
 * A ring buffer map for tracer_opts.ring_fd (fd or -errno), made before tracer_open so that
 * the driver tier can load into the same ring at the same time (each BPF object load parses
 * vmlinux BTF for ~15 ms; on two CPUs the two run side by side). The BPF objects keep their
 * own references: the caller may close it once they are loaded.
 */
int tracer_ring_create(unsigned int ringbuf_mb);
/* The ring buffer the programs write (stream/drain.h reads it), or -EBADF before tracer_open. */
int tracer_ring_fd(const struct tracer *tr);
/* The native stacks' map (stream/ustack.h reads it), once loaded. */
int tracer_ustack_fd(const struct tracer *tr);
/*
 * Attach every resolved, not yet attached probe of @t to @pid (-1: every process). -E2BIG
 * (said on stderr) when perf-event links would exceed SPYRE_PERF_MAX_UPROBES: nothing new is
 * attached then.
 */
int tracer_attach(struct tracer *tr, struct target *t, int pid);
/*
 * Remove all probes (return probes first), then report what threads still hold (their staged
 * spans, their open calls as left) and forget their open calls: probes can be attached again
 * later, each thread announced again.
 */
void tracer_detach(struct tracer *tr, struct target *t);
/* Sum the per-CPU counters of the first @n probes into tr->counters. */
void tracer_read_counters(struct tracer *tr, int n);
/* Zero the counters in the kernel (new window). */
void tracer_reset_counters(struct tracer *tr, int n);
void tracer_close(struct tracer *tr);
struct py_proc;
/* Process @pp->pid's interpreter (its version's offsets known) for the Python walks: 0, -errno. */
int tracer_py_proc(struct tracer *tr, const struct py_proc *pp);
/* The ids of the loaded programs that do probed instructions (retcheck_emulation_ok's @own) */
int tracer_emu_prog_ids(const struct tracer *tr, unsigned int *ids, int max);
/*
 * Each name of retcheck_emu_progs is a program of the uprobe object (opened, not loaded): 0, or
 * -ENOENT when one was renamed in bpf/spyre.bpf.c and not in that list.
 */
int tracer_emu_progs_known(void);

#endif
