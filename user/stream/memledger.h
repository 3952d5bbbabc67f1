/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Device memory ledger: what each traced process holds on each device, over time.
 *
 * Two kinds of account per process: "allocated", from the probes the table marks mem=alloc and
 * mem=free (one account per device), and "mapped", from the driver tier's VFIO_IOMMU_MAP_DMA and
 * UNMAP_DMA (one per process: an IOMMU container is the process's, not a device's), keyed by
 * iova. Every live block is kept with its size, device, time, thread and probe, so a free needs
 * only its pointer, and what is still live at the end can be named.
 *
 * Only what happened while traced is known: a block allocated before the probes were attached
 * has no entry, and its free is counted as a free of an unknown pointer, never as negative
 * bytes. Events are taken in ring order, which is the order that matters for one pointer: an
 * allocation is handed to the ring before its function returns the pointer, a free at its
 * entry (SPYRE_CK_MEM_ENTRY), before the allocator can give the pointer out again.
 *
 * In the trace: a Kineto "[memory]" instant per allocation and free on the calling thread
 * (args Device Type, Device Id, Addr, Bytes (negative for a free), Total Allocated, Total
 * Reserved), and ph:"C" counters per process: "Spyre memory (device N)" {allocated}, with
 * allocations on several devices also "Spyre memory (all devices)" {allocated}, and "Spyre DMA
 * mapped" {mapped}, which Perfetto draws as memory tracks.
 */
#ifndef SPYRE_MEMLEDGER_H
#define SPYRE_MEMLEDGER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "output/jsonw.h"
#include "output/trace_writer.h"

struct probe_spec;
struct spyre_event;

/* c10::DeviceType::PrivateUse1, the device type PyTorch's profiler writes for Spyre */
#define MEMLEDGER_DEVICE_TYPE	20
/*
 * Live blocks tracked at most (48 bytes each, the table at most half full: 48 MiB at the
 * limit, under the fleet unit's 128 MiB); more are counted in blocks_untracked and their frees
 * will look unknown.
 */
#define MEMLEDGER_MAX_BLOCKS	(1u << 19)
/* Live blocks listed one by one in the trace metadata (the groups list them all) */
#define MEMLEDGER_LIST_BLOCKS	4096
/* Groups of live blocks in the summary */
#define MEMLEDGER_SUMMARY_GROUPS	10
/* ... and the native callers each names (--ustack, stack=1) */
#define MEMLEDGER_SUMMARY_FRAMES	4

enum mem_kind { MEMK_ALLOC = 0, MEMK_MAPPED = 1 };

struct mem_acct {
	uint32_t pid;
	int32_t dev;		/* device index; -1 for MEMK_MAPPED */
	enum mem_kind kind;
	uint64_t cur;		/* bytes live now */
	uint64_t peak;
	uint64_t peak_ns;	/* CLOCK_MONOTONIC of the first time at peak; 0: never above 0 */
	uint64_t allocs, frees;
	uint64_t bytes_alloc, bytes_freed;
	uint64_t unknown_frees;	/* frees of pointers not live in the ledger */
	uint64_t failed;	/* allocations that returned 0 (or ended at a tail jump) */
	uint64_t replaced;	/* allocations of a pointer still live: its free was missed */
};

struct mem_block {
	uint64_t ptr;		/* 0 = empty slot */
	uint64_t size;
	uint64_t ts;		/* CLOCK_MONOTONIC of the allocation */
	uint32_t pid, tid;
	uint32_t probe;
	int16_t dev;
	uint8_t kind;
	uint8_t pad;
	uint64_t py;		/* the allocating call's innermost Python frame (a frame word of
				 * bpf/spyre_event.h, stream/pystack.h names it); 0: none */
	uint32_t ustack;	/* its native stack's id + 1 (stream/ustack.h); 0: none */
	uint32_t pad2;
	uint64_t ucaller;	/* ... and the allocating call's return address */
};

/* What made an allocation: its call's stacks (--python, py=1, --ustack, stack=1). */
struct mem_origin {
	uint64_t py;		/* the innermost Python frame (mem_block.py); 0: none */
	uint32_t ustack;	/* the native stack's id + 1 (mem_block.ustack); 0: none */
	uint64_t caller;	/* ... and the call's return address (mem_block.ucaller) */
	/* the stacks as the call's event has them (args.python, pystack, ustack) */
	const struct trace_arg *args;
	int nargs;
};

/* Frees taken at their entry whose span has not come yet, per thread (newest last). */
#define MEMLEDGER_PENDING	4
struct mem_pending {
	uint32_t tid;		/* 0 = empty slot */
	uint32_t n;
	uint64_t ptr[MEMLEDGER_PENDING];
};

struct memledger {
	struct mem_block *slots;	/* open addressing on (pid, kind, ptr) */
	uint32_t cap, cnt;
	struct mem_pending *pend;	/* open addressing on tid */
	uint32_t pcap, pcnt;
	uint64_t entries_lost;		/* free spans whose entry found the ring full */
	struct mem_acct *accts;
	int nacct;
	size_t capacct;
	uint64_t blocks_untracked;	/* over MEMLEDGER_MAX_BLOCKS */
	uint64_t no_pointer;		/* ptr=ret allocations seen at entry only */
	uint64_t nested_allocs;		/* allocations whose block a traced callee booked */
	/*
	 * Pauses of --max-overhead: what was allocated or freed while paused is not known, so
	 * the figures are those of the traced windows (a block freed while paused stays live)
	 */
	uint32_t pauses;
	uint64_t base_ns;		/* the current trace's ts 0 */
	struct trace_fmt fmt;		/* the [memory] event */
	int fmt_state;			/* 0: not made yet, 1: made, -1: failed */
};

int memledger_init(struct memledger *m);
void memledger_free(struct memledger *m);

/*
 * The core, without a trace: a block of @size at @ptr allocated, or @ptr freed. Return the
 * account changed (NULL: out of memory, or a free of an unknown pointer, counted). @dev is
 * ignored for frees (the block knows it) and for MEMK_MAPPED.
 */
struct mem_acct *memledger_alloc(struct memledger *m, uint32_t pid, uint32_t tid,
				 enum mem_kind kind, int dev, uint64_t ptr, uint64_t size,
				 uint64_t ts, uint32_t probe);
struct mem_acct *memledger_release(struct memledger *m, uint32_t pid, enum mem_kind kind,
				   uint64_t ptr, uint64_t ts, uint64_t *size, int *dev);
/* Drop every account and block of @pid (a process that ended, in fleet mode). */
void memledger_forget(struct memledger *m, uint32_t pid);
/* The account of (@pid, @kind, @dev), made if new with @create; NULL if not there (or ENOMEM). */
struct mem_acct *memledger_acct(struct memledger *m, uint32_t pid, enum mem_kind kind, int dev,
				bool create);

/*
 * The consumer's hooks (its mem member points to @m). A new trace @tw, whose ts 0 is @base_ns,
 * starts: the counters start there at their current values (a fleet window's consumer: the
 * ledger outlives it).
 */
void memledger_start(struct memledger *m, struct trace_writer *tw, uint64_t base_ns);
/* The next file of the same trace (--switch-output): each device's counters, as held at @ts. */
void memledger_carry(struct memledger *m, struct trace_writer *tw, uint64_t ts);
/*
 * An event of a mem= probe (SPYRE_EV_SPAN, SPYRE_EV_INSTANT or SPYRE_EV_MEM_ENTRY), made by the
 * call @o says (NULL: nothing known): a block allocated keeps its stacks, its [memory] event
 * carries them.
 */
void memledger_event(struct memledger *m, struct trace_writer *tw, const struct probe_spec *s,
		     const struct spyre_event *e, const struct mem_origin *o);
/* A driver tier ioctl event: MAP_DMA and UNMAP_DMA that succeeded change the mapped account. */
void memledger_ioctl(struct memledger *m, struct trace_writer *tw, const struct spyre_event *e);

#endif
