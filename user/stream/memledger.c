// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <linux/vfio.h>
#include <stdlib.h>
#include <string.h>
#include "common/array.h"
#include "stream/record.h"
#include "stream/memledger.h"

int memledger_init(struct memledger *m)
{
	memset(m, 0, sizeof(*m));
	m->cap = 1024;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	return m->slots ? 0 : -ENOMEM;
}

void memledger_free(struct memledger *m)
{
	free(m->pend);
	free(m->slots);
	free(m->accts);
	trace_fmt_free(&m->fmt);
	memset(m, 0, sizeof(*m));
}

static uint32_t block_hash(uint32_t pid, uint8_t kind, uint64_t ptr)
{
	uint64_t k = ptr ^ ((uint64_t)pid << 40) ^ ((uint64_t)kind << 63);

	return (uint32_t)((k * 0x9e3779b97f4a7c15ull) >> 32);
}

/* The slot of (@pid, @kind, @ptr): its own, or the empty one where it belongs. */
static struct mem_block *block_slot(const struct memledger *m, uint32_t pid, uint8_t kind,
				    uint64_t ptr)
{
	uint32_t h = block_hash(pid, kind, ptr) & (m->cap - 1);

	while (m->slots[h].ptr &&
	       (m->slots[h].ptr != ptr || m->slots[h].pid != pid || m->slots[h].kind != kind))
		h = (h + 1) & (m->cap - 1);
	return &m->slots[h];
}

static int blocks_grow(struct memledger *m)
{
	uint32_t ocap = m->cap;
	struct mem_block *old = m->slots;

	m->slots = calloc(ocap * 2, sizeof(*old));
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->cap = ocap * 2;
	for (uint32_t i = 0; i < ocap; i++)
		if (old[i].ptr)
			*block_slot(m, old[i].pid, old[i].kind, old[i].ptr) = old[i];
	free(old);
	return 0;
}

/* Linear probing without tombstones: later entries of the run move back into the hole. */
static void block_remove(struct memledger *m, struct mem_block *b)
{
	uint32_t hole = b - m->slots, i = hole;

	for (;;) {
		uint32_t home;

		i = (i + 1) & (m->cap - 1);
		if (!m->slots[i].ptr)
			break;
		home = block_hash(m->slots[i].pid, m->slots[i].kind, m->slots[i].ptr) &
		       (m->cap - 1);
		/* may the entry at i move to the hole? only if its home is not in (hole, i] */
		if (((i - home) & (m->cap - 1)) >= ((i - hole) & (m->cap - 1))) {
			m->slots[hole] = m->slots[i];
			hole = i;
		}
	}
	memset(&m->slots[hole], 0, sizeof(m->slots[hole]));
	m->cnt--;
}

struct mem_acct *memledger_acct(struct memledger *m, uint32_t pid, enum mem_kind kind, int dev,
				bool create)
{
	struct mem_acct *a;

	if (kind == MEMK_MAPPED)
		dev = -1;
	/* a handful per process: a scan beats a hash */
	for (int i = m->nacct - 1; i >= 0; i--) {
		a = &m->accts[i];
		if (a->pid == pid && a->kind == kind && a->dev == dev)
			return a;
	}
	if (!create)
		return NULL;
	if (array_reserve(&m->accts, &m->capacct, (size_t)m->nacct + 1, sizeof(*m->accts), 8))
		return NULL;
	a = &m->accts[m->nacct++];
	memset(a, 0, sizeof(*a));
	a->pid = pid;
	a->kind = kind;
	a->dev = dev;
	return a;
}

static void acct_add(struct mem_acct *a, uint64_t size, uint64_t ts)
{
	a->allocs++;
	a->bytes_alloc += size;
	a->cur += size;
	if (a->cur > a->peak) {
		a->peak = a->cur;
		a->peak_ns = ts;
	}
}

static void acct_sub(struct mem_acct *a, uint64_t size)
{
	a->frees++;
	a->bytes_freed += size;
	a->cur = a->cur >= size ? a->cur - size : 0;
}

/* memledger_alloc, the block made by the call @o says (NULL: nothing known) */
static struct mem_acct *alloc_from(struct memledger *m, uint32_t pid, uint32_t tid,
				   enum mem_kind kind, int dev, uint64_t ptr, uint64_t size,
				   uint64_t ts, uint32_t probe, const struct mem_origin *o)
{
	static const struct mem_origin none;
	struct mem_acct *a = memledger_acct(m, pid, kind, dev, true), *old;
	struct mem_block *b;

	if (!a)
		return NULL;
	if (!ptr) {
		a->failed++;
		return a;
	}
	b = block_slot(m, pid, kind, ptr);
	if (b->ptr) {
		/* the pointer is live already: its free was not seen (dropped, or untraced) */
		old = memledger_acct(m, pid, kind, b->dev, false);
		if (old) {
			old->cur = old->cur >= b->size ? old->cur - b->size : 0;
			old->replaced++;
		}
		a = memledger_acct(m, pid, kind, dev, false);	/* the array may have moved */
	} else {
		if (m->cnt >= MEMLEDGER_MAX_BLOCKS) {
			m->blocks_untracked++;
			acct_add(a, size, ts);
			return a;
		}
		m->cnt++;
	}
	if (!o || kind != MEMK_ALLOC)
		o = &none;
	*b = (struct mem_block){ .ptr = ptr, .size = size, .ts = ts, .pid = pid, .tid = tid,
				 .probe = probe, .dev = (int16_t)a->dev, .kind = kind,
				 .py = o->py, .ustack = o->ustack, .ucaller = o->caller };
	acct_add(a, size, ts);
	/* keep the load under 1/2 so probing stays short */
	if (m->cnt * 2 > m->cap)
		blocks_grow(m);
	return a;
}

struct mem_acct *memledger_alloc(struct memledger *m, uint32_t pid, uint32_t tid,
				 enum mem_kind kind, int dev, uint64_t ptr, uint64_t size,
				 uint64_t ts, uint32_t probe)
{
	return alloc_from(m, pid, tid, kind, dev, ptr, size, ts, probe, NULL);
}

struct mem_acct *memledger_release(struct memledger *m, uint32_t pid, enum mem_kind kind,
				   uint64_t ptr, uint64_t ts, uint64_t *size, int *dev)
{
	struct mem_block *b;
	struct mem_acct *a;

	(void)ts;
	*size = 0;
	*dev = kind == MEMK_MAPPED ? -1 : 0;
	if (!ptr)
		return NULL;	/* free(NULL) and the like: nothing */
	b = block_slot(m, pid, kind, ptr);
	if (!b->ptr) {
		/* allocated before we attached (or its allocation was not tracked) */
		a = memledger_acct(m, pid, kind, *dev, true);
		if (a)
			a->unknown_frees++;
		return NULL;
	}
	*size = b->size;
	*dev = b->dev;
	a = memledger_acct(m, pid, kind, b->dev, true);
	block_remove(m, b);
	if (a)
		acct_sub(a, *size);
	return a;
}

void memledger_forget(struct memledger *m, uint32_t pid)
{
	int j = 0;

	/* removing shifts later entries back into the hole: look at the same slot again */
	for (uint32_t i = 0; i < m->cap;) {
		if (m->slots[i].ptr && m->slots[i].pid == pid)
			block_remove(m, &m->slots[i]);
		else
			i++;
	}
	for (int i = 0; i < m->nacct; i++)
		if (m->accts[i].pid != pid)
			m->accts[j++] = m->accts[i];
	m->nacct = j;
}

/* --- the trace ------------------------------------------------------------------------------- */

static void counter(struct trace_writer *tw, const struct mem_acct *a, uint64_t ts)
{
	struct trace_arg arg = { .key = a->kind == MEMK_MAPPED ? "mapped" : "allocated",
				 .type = TA_U64, .u = a->cur };
	char name[48];

	if (a->kind == MEMK_MAPPED)
		snprintf(name, sizeof(name), "Spyre DMA mapped");
	else
		snprintf(name, sizeof(name), "Spyre memory (device %d)", a->dev);
	trace_counter(tw, a->pid, ts, name, &arg, 1);
}

/* A process with allocations on several devices also gets its total: "Spyre memory (all)". */
static void process_counter(struct memledger *m, struct trace_writer *tw, uint32_t pid,
			    uint64_t ts)
{
	struct trace_arg arg = { .key = "allocated", .type = TA_U64 };
	int ndev = 0;

	for (int i = 0; i < m->nacct; i++) {
		if (m->accts[i].pid != pid || m->accts[i].kind != MEMK_ALLOC)
			continue;
		arg.u += m->accts[i].cur;
		ndev++;
	}
	if (ndev > 1)
		trace_counter(tw, pid, ts, "Spyre memory (all devices)", &arg, 1);
}

void memledger_carry(struct memledger *m, struct trace_writer *tw, uint64_t ts)
{
	/* a later trace: its tracks start where the last one ended, not at zero */
	if (tw)
		for (int i = 0; i < m->nacct; i++)
			if (m->accts[i].allocs)
				counter(tw, &m->accts[i], ts);
}

void memledger_start(struct memledger *m, struct trace_writer *tw, uint64_t base_ns)
{
	m->base_ns = base_ns;
	memledger_carry(m, tw, base_ns);
}

/* Kineto's [memory] instant: Bytes negative for a free, totals after the change. */
#define MEMORY_EVENT_STACK_ARGS	3	/* python, pystack, ustack */
static void memory_event(struct memledger *m, struct trace_writer *tw, const struct mem_acct *a,
			 uint32_t tid, uint64_t ts, uint64_t ptr, int64_t bytes,
			 const struct mem_origin *o)
{
	static const char *const keys[] = { "Device Type", "Device Id", "Addr", "Bytes",
					    "Total Allocated", "Total Reserved" };
	struct trace_arg args[6 + MEMORY_EVENT_STACK_ARGS] = {
		{ .type = TA_I64, .i = MEMLEDGER_DEVICE_TYPE },
		{ .type = TA_I64, .i = a->dev },
		{ .type = TA_U64, .u = ptr },
		{ .type = TA_I64, .i = bytes },
		{ .type = TA_U64, .u = a->cur },
		/* what torch_spyre reports too: the runtime keeps no cache we could see */
		{ .type = TA_U64, .u = a->cur },
	};

	int n = 6, nstk = bytes > 0 && o ? o->nargs : 0;

	if (!m->fmt_state)
		m->fmt_state = trace_fmt_init(&m->fmt, true, "cpu_instant_event", "[memory]", keys,
					      6) ? -1 : 1;
	/* an allocation's stacks (--python, --ustack): the generic path, with their keys */
	if (m->fmt_state == 1 && !nstk) {
		trace_event(tw, &m->fmt, a->pid, tid, ts, 0, args, 6);
		return;
	}
	for (int i = 0; i < 6; i++)
		args[i].key = keys[i];
	for (int i = 0; i < nstk && i < MEMORY_EVENT_STACK_ARGS; i++)
		args[n++] = o->args[i];
	trace_instant(tw, a->pid, tid, ts, "[memory]", "cpu_instant_event", args, n);
}

/* The pending frees of thread @tid (created if new with @create; NULL: none, or ENOMEM). */
static struct mem_pending *pending_of(struct memledger *m, uint32_t tid, bool create)
{
	struct mem_pending *p;
	uint32_t h;

	if (!m->pcap) {
		if (!create)
			return NULL;
		m->pend = calloc(64, sizeof(*m->pend));
		if (!m->pend)
			return NULL;
		m->pcap = 64;
	}
	h = (tid * 2654435761u) & (m->pcap - 1);
	while (m->pend[h].tid && m->pend[h].tid != tid)
		h = (h + 1) & (m->pcap - 1);
	p = &m->pend[h];
	if (p->tid || !create)
		return p->tid ? p : NULL;
	if ((m->pcnt + 1) * 2 > m->pcap) {
		struct mem_pending *old = m->pend, *np = calloc(m->pcap * 2, sizeof(*np));
		uint32_t ocap = m->pcap;

		if (!np)
			return NULL;
		m->pend = np;
		m->pcap = ocap * 2;
		for (uint32_t i = 0; i < ocap; i++) {
			if (!old[i].tid)
				continue;
			h = (old[i].tid * 2654435761u) & (m->pcap - 1);
			while (m->pend[h].tid)
				h = (h + 1) & (m->pcap - 1);
			m->pend[h] = old[i];
		}
		free(old);
		return pending_of(m, tid, true);
	}
	m->pcnt++;
	p->tid = tid;
	return p;
}

/* A free's entry record came: its span, when it comes, changes nothing. */
static void pending_push(struct memledger *m, uint32_t tid, uint64_t ptr)
{
	struct mem_pending *p = pending_of(m, tid, true);

	if (!p)
		return;
	if (p->n == MEMLEDGER_PENDING) {	/* spans lost too: the oldest is stale */
		memmove(p->ptr, p->ptr + 1, sizeof(p->ptr[0]) * (MEMLEDGER_PENDING - 1));
		p->n--;
	}
	p->ptr[p->n++] = ptr;
}

/* A free's span: was its entry record seen (then forget it)? */
static bool pending_pop(struct memledger *m, uint32_t tid, uint64_t ptr)
{
	struct mem_pending *p = pending_of(m, tid, false);

	for (int i = p ? (int)p->n - 1 : -1; i >= 0; i--) {
		if (p->ptr[i] != ptr)
			continue;
		memmove(p->ptr + i, p->ptr + i + 1, sizeof(p->ptr[0]) * (p->n - i - 1));
		p->n--;
		return true;
	}
	return false;
}

/*
 * Is allocation span @e, returning @ptr, the caller of the allocation that made the live block
 * @ptr? Two traced allocators, one calling the other (torch-spyre's allocate(size_t) and
 * allocate(size_t, directive), both mem=alloc in the default table), return one block: the
 * inner call's return books it, the outer one's is the same block, not a second one whose free
 * was missed. Told by the thread and the times: the block was booked inside @e's span.
 */
static bool nested_alloc(const struct memledger *m, const struct spyre_event *e, uint64_t ptr)
{
	const struct mem_block *b;

	if (!ptr || !m->cap)
		return false;
	b = block_slot(m, e->tgid, MEMK_ALLOC, ptr);
	return b->ptr == ptr && b->tid == e->tid && b->ts >= e->ts && b->ts <= e->ts + e->dur;
}

void memledger_event(struct memledger *m, struct trace_writer *tw, const struct probe_spec *s,
		     const struct spyre_event *e, const struct mem_origin *o)
{
	uint64_t ptr = record_value(e, s->ptr), size, ts;
	struct mem_acct *a;
	int dev;

	if (s->mem == MEM_ALLOC) {
		if (s->ptr == PROBE_VAL_RET && e->type != SPYRE_EV_SPAN) {
			m->no_pointer++;	/* entries only: the pointer is never seen */
			return;
		}
		/* the block exists from the return on: that is when its pointer can be freed */
		ts = e->type == SPYRE_EV_SPAN ? e->ts + e->dur : e->ts;
		size = record_value(e, s->size);
		dev = s->memdev ? (int)(int32_t)record_value(e, s->memdev) : 0;
		if (dev < 0 || dev > INT16_MAX)
			dev = -1;	/* not a device index: booked apart, never truncated */
		if (e->type == SPYRE_EV_SPAN && nested_alloc(m, e, ptr)) {
			m->nested_allocs++;
			return;
		}
		/*
		 * An empty tensor: torch-spyre's allocate(0) returns a null DataPtr without asking
		 * flex (spyre_allocator.cpp), a success with nothing to book and nothing to free,
		 * not a failed allocation (both overloads of it end here).
		 */
		if (!ptr && !size)
			return;
		a = alloc_from(m, e->tgid, e->tid, MEMK_ALLOC, dev, ptr, size, ts, e->probe, o);
		if (!a || !ptr || !tw)
			return;
		memory_event(m, tw, a, e->tid, ts, ptr, (int64_t)size, o);
		counter(tw, a, ts);
		process_counter(m, tw, e->tgid, ts);
		return;
	}
	/*
	 * A span's free is taken at its entry (SPYRE_EV_MEM_ENTRY), an instant's is its entry; a
	 * span whose entry record found the ring full is the free (at its entry time, as late as
	 * it can be known: the allocator may have reused the pointer meanwhile).
	 */
	if (e->type == SPYRE_EV_MEM_ENTRY)
		pending_push(m, e->tid, ptr);
	else if (e->type == SPYRE_EV_SPAN && pending_pop(m, e->tid, ptr))
		return;
	else if (e->type == SPYRE_EV_SPAN)
		m->entries_lost++;
	a = memledger_release(m, e->tgid, MEMK_ALLOC, ptr, e->ts, &size, &dev);
	if (!a || !tw)
		return;
	memory_event(m, tw, a, e->tid, e->ts, ptr, -(int64_t)size, NULL);
	counter(tw, a, e->ts);
	process_counter(m, tw, e->tgid, e->ts);
}

void memledger_ioctl(struct memledger *m, struct trace_writer *tw, const struct spyre_event *e)
{
	uint64_t cmd = e->ioctl.cmd, iova = e->ioctl.iova, size, ts;
	struct mem_acct *a;
	int dev;

	if (!(e->ioctl.flags & SPYRE_IOCTL_F_DMA) || e->ioctl.ret != 0)
		return;
	if (cmd == VFIO_IOMMU_MAP_DMA) {
		ts = e->ts + e->dur;
		a = memledger_alloc(m, e->tgid, e->tid, MEMK_MAPPED, -1, iova,
				    e->ioctl.size, ts, UINT32_MAX);
	} else if (cmd == VFIO_IOMMU_UNMAP_DMA) {
		ts = e->ts;
		a = memledger_release(m, e->tgid, MEMK_MAPPED, iova, ts, &size, &dev);
	} else {
		return;
	}
	if (a && tw)
		counter(tw, a, ts);
}
