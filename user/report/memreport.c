// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The device memory ledger's report (memreport.h): the summary's lines, the trace's spyreMemory
 * member, fleet mode's gauges. The ledger itself (stream/memledger.c) only books the events.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common/util.h"
#include "report/memreport.h"
#include "report/prom.h"
#include "stream/consumer.h"
#include "stream/memledger.h"
#include "stream/pystack.h"
#include "stream/ustack.h"

void prom_window_add_memory(struct prom_window *pw, const struct consumer *c,
			    const struct memledger *m)
{
	for (int i = 0; i < m->nacct; i++) {
		const struct mem_acct *a = &m->accts[i];
		const struct process_info *p = c ? consumer_process(c, a->pid) : NULL;
		struct prom_job job;

		/* a job not seen in this window keeps its series until they expire (prom.h) */
		if (!p)
			continue;
		job = (struct prom_job){ .pid = a->pid, .comm = p->name[0] ? p->name : NULL,
					 .container = p->container };
		prom_window_set_memory(pw, &job, a->dev, a->kind == MEMK_MAPPED, a->cur, a->peak);
	}
}

/* --- what is still live ---------------------------------------------------------------------- */

struct live_group {
	uint32_t pid, tid, probe;
	int dev;
	uint64_t size, count, oldest;
	uint64_t py;		/* the Python line that allocated them (mem_block.py) */
	uint32_t ustack;	/* ... and the native stack (mem_block.ustack, .ucaller) */
	uint64_t ucaller;
};

static int by_group_key(const void *x, const void *y)
{
	const struct mem_block *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	if (a->probe != b->probe)
		return a->probe < b->probe ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->size != b->size)
		return a->size < b->size ? -1 : 1;
	if (a->py != b->py)
		return a->py < b->py ? -1 : 1;
	if (a->ustack != b->ustack)
		return a->ustack < b->ustack ? -1 : 1;
	if (a->ucaller != b->ucaller)
		return a->ucaller < b->ucaller ? -1 : 1;
	return a->ts < b->ts ? -1 : a->ts > b->ts;
}

static int by_oldest(const void *x, const void *y)
{
	const struct live_group *a = x, *b = y;

	if (a->oldest != b->oldest)
		return a->oldest < b->oldest ? -1 : 1;
	return a->size > b->size ? -1 : a->size < b->size;
}

static int block_by_ts(const void *x, const void *y)
{
	const struct mem_block *a = x, *b = y;

	return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/*
 * The live allocations (not mappings) of every process: blocks sorted by (pid, device, probe,
 * thread, size, Python line, native stack), groups of equal keys oldest first. Both malloc'd;
 * -ENOMEM.
 */
static int live_groups(const struct memledger *m, struct mem_block **blocks, uint32_t *nblocks,
		       struct live_group **groups, uint32_t *ngroups)
{
	struct mem_block *bl = malloc((m->cnt ? m->cnt : 1) * sizeof(*bl));
	struct live_group *gr = malloc((m->cnt ? m->cnt : 1) * sizeof(*gr));
	uint32_t nb = 0, ng = 0;

	if (!bl || !gr) {
		free(bl);
		free(gr);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->cap; i++)
		if (m->slots[i].ptr && m->slots[i].kind == MEMK_ALLOC)
			bl[nb++] = m->slots[i];
	qsort(bl, nb, sizeof(*bl), by_group_key);
	for (uint32_t i = 0; i < nb; i++) {
		struct live_group *g = ng ? &gr[ng - 1] : NULL;

		if (!g || g->pid != bl[i].pid || g->dev != bl[i].dev || g->probe != bl[i].probe ||
		    g->tid != bl[i].tid || g->size != bl[i].size || g->py != bl[i].py ||
		    g->ustack != bl[i].ustack || g->ucaller != bl[i].ucaller) {
			g = &gr[ng++];
			*g = (struct live_group){ .pid = bl[i].pid, .tid = bl[i].tid,
						  .probe = bl[i].probe, .dev = bl[i].dev,
						  .size = bl[i].size, .oldest = bl[i].ts,
						  .py = bl[i].py, .ustack = bl[i].ustack,
						  .ucaller = bl[i].ucaller };
		}
		g->count++;	/* sorted by ts within a key: the first is the oldest */
	}
	qsort(gr, ng, sizeof(*gr), by_oldest);
	qsort(bl, nb, sizeof(*bl), block_by_ts);
	*blocks = bl;
	*nblocks = nb;
	*groups = gr;
	*ngroups = ng;
	return 0;
}

static const char *ledger_probe_name(const struct consumer *c, uint32_t probe)
{
	return c && c->t && probe < (uint32_t)c->t->cnt ? c->t->probes[probe].name : "?";
}

/*
 * The Python line that allocated a block of process @pid (frame word @py), "FILE:LINE QUALNAME"
 * into @buf; NULL when there is none or it cannot be named.
 */
static const char *alloc_python(const struct consumer *c, uint32_t pid, uint64_t py, char *buf,
				size_t len)
{
	if (!py || !c || !c->py || !pystack_frame(c->py, pid, py, buf, len))
		return NULL;
	return buf;
}

/*
 * The native stack that allocated a block of process @pid (mem_block.ustack, .ucaller) into @v,
 * innermost first (the allocating function itself first): its frames, 0 when none.
 */
static int alloc_native(const struct consumer *c, uint32_t pid, uint32_t ustack, uint64_t caller,
			const char **v)
{
	if (!ustack || !c || !c->ustack)
		return 0;
	return ustack_frames(c->ustack, pid, (int64_t)ustack - 1, caller, v, NULL);
}

static void json_native(struct jw *w, const struct consumer *c, uint32_t pid, uint32_t ustack,
			uint64_t caller)
{
	const char *v[USTACK_MAX_NAMES];
	int n = alloc_native(c, pid, ustack, caller, v);

	if (!n)
		return;
	jw_key(w, "ustack");
	jw_arr_begin(w);
	for (int i = 0; i < n; i++) {
		jw_elem(w);
		jw_str(w, v[i]);
	}
	jw_arr_end(w);
}

static void json_acct(struct jw *w, const struct mem_acct *a, uint64_t base_ns)
{
	jw_obj_begin(w);
	jw_kv_u64(w, "current", a->cur);
	jw_kv_u64(w, "peak", a->peak);
	if (a->peak_ns)
		jw_kv_us(w, "peakTs", (int64_t)(a->peak_ns - base_ns));
	else
		jw_kv_null(w, "peakTs");
	jw_kv_u64(w, "allocs", a->allocs);
	jw_kv_u64(w, "frees", a->frees);
	jw_kv_u64(w, "bytesAllocated", a->bytes_alloc);
	jw_kv_u64(w, "bytesFreed", a->bytes_freed);
	jw_kv_u64(w, "unknownFrees", a->unknown_frees);
	jw_kv_u64(w, "failedAllocs", a->failed);
	jw_kv_u64(w, "freesMissed", a->replaced);
	jw_obj_end(w);
}

/* One process's accounts, its live groups (every one, oldest first) and its oldest blocks. */
static void process_json(struct jw *w, const struct memledger *m, const struct consumer *c,
			 uint32_t pid, const struct live_group *gr, uint32_t ng,
			 const struct mem_block *bl, uint32_t nb)
{
	const struct mem_acct *mapped = NULL;
	uint32_t listed = 0;
	char py[320];

	jw_obj_begin(w);
	jw_kv_u64(w, "pid", pid);
	jw_key(w, "devices");
	jw_arr_begin(w);
	for (int i = 0; i < m->nacct; i++) {
		const struct mem_acct *a = &m->accts[i];

		if (a->pid != pid)
			continue;
		if (a->kind == MEMK_MAPPED) {
			mapped = a;
			continue;
		}
		jw_obj_begin(w);
		jw_kv_i64(w, "device", a->dev);
		jw_key(w, "allocated");
		json_acct(w, a, m->base_ns);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "mapped");
	if (mapped)
		json_acct(w, mapped, m->base_ns);
	else
		jw_lit(w, "null");
	jw_key(w, "liveGroups");
	jw_arr_begin(w);
	for (uint32_t i = 0; i < ng; i++) {
		const struct live_group *g = &gr[i];

		if (g->pid != pid)
			continue;
		jw_nl(w);
		jw_obj_begin(w);
		jw_kv_i64(w, "device", g->dev);
		jw_kv_u64(w, "bytes", g->size);
		jw_kv_u64(w, "count", g->count);
		jw_kv_str(w, "probe", ledger_probe_name(c, g->probe));
		jw_kv_u64(w, "tid", g->tid);
		jw_kv_str(w, "thread", c ? consumer_thread_name(c, g->tid) : "");
		if (alloc_python(c, pid, g->py, py, sizeof(py)))
			jw_kv_str(w, "python", py);
		json_native(w, c, pid, g->ustack, g->ucaller);
		jw_kv_us(w, "oldestTs", (int64_t)(g->oldest - m->base_ns));
		jw_obj_end(w);
	}
	jw_arr_end(w);
	/* the blocks themselves, oldest first, as many as MEMLEDGER_LIST_BLOCKS */
	jw_key(w, "liveBlocks");
	jw_arr_begin(w);
	for (uint32_t i = 0; i < nb; i++) {
		const struct mem_block *b = &bl[i];

		if (b->pid != pid || ++listed > MEMLEDGER_LIST_BLOCKS)
			continue;
		jw_nl(w);
		jw_obj_begin(w);
		jw_kv_i64(w, "device", b->dev);
		jw_kv_hex(w, "addr", b->ptr);
		jw_kv_u64(w, "bytes", b->size);
		jw_kv_str(w, "probe", ledger_probe_name(c, b->probe));
		jw_kv_u64(w, "tid", b->tid);
		if (alloc_python(c, pid, b->py, py, sizeof(py)))
			jw_kv_str(w, "python", py);
		json_native(w, c, pid, b->ustack, b->ucaller);
		jw_kv_us(w, "ts", (int64_t)(b->ts - m->base_ns));
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_kv_u64(w, "liveBlocksNotListed",
		  listed > MEMLEDGER_LIST_BLOCKS ? listed - MEMLEDGER_LIST_BLOCKS : 0);
	jw_obj_end(w);
}

void memledger_json(struct memledger *m, const struct consumer *c, struct jw *w)
{
	struct live_group *gr = NULL;
	struct mem_block *bl = NULL;
	uint32_t nb = 0, ng = 0;
	int npid = 0;
	uint32_t *pids = malloc((m->nacct ? m->nacct : 1) * sizeof(*pids));

	if (!pids || live_groups(m, &bl, &nb, &gr, &ng)) {
		free(pids);
		return;
	}
	for (int i = 0; i < m->nacct; i++) {
		int k = 0;

		while (k < npid && pids[k] != m->accts[i].pid)
			k++;
		if (k == npid)
			pids[npid++] = m->accts[i].pid;
	}
	jw_nl(w);
	jw_key(w, "spyreMemory");
	jw_obj_begin(w);
	jw_kv_str(w, "note", "only allocations made while traced are known: a free of a block "
		  "allocated before is counted in unknownFrees");
	jw_kv_u64(w, "deviceType", MEMLEDGER_DEVICE_TYPE);
	jw_kv_u64(w, "allocsWithoutPointer", m->no_pointer);
	jw_kv_u64(w, "blocksUntracked", m->blocks_untracked);
	jw_kv_u64(w, "freeEntriesLost", m->entries_lost);
	jw_kv_u64(w, "nestedAllocs", m->nested_allocs);
	if (m->pauses) {
		jw_kv_bool(w, "sampled", true);
		jw_kv_u64(w, "pauses", m->pauses);
		jw_kv_str(w, "sampledNote", "tracing paused by --max-overhead: allocations and "
			  "frees made while paused are not known (a block freed then stays live)");
	}
	jw_key(w, "processes");
	jw_arr_begin(w);
	for (int k = 0; k < npid; k++) {
		jw_nl(w);
		process_json(w, m, c, pids[k], gr, ng, bl, nb);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	free(pids);
	free(bl);
	free(gr);
}

static double secs(uint64_t ts, uint64_t base)
{
	return ((int64_t)(ts - base)) / 1e9;
}

void memledger_summary(struct memledger *m, const struct consumer *c, FILE *f)
{
	struct live_group *gr = NULL;
	struct mem_block *bl = NULL;
	uint32_t nb = 0, ng = 0;
	const char *v[USTACK_MAX_NAMES];
	char b1[32], b2[32], py[320];
	int n;

	if (!m->nacct && !m->no_pointer)
		return;
	if (live_groups(m, &bl, &nb, &gr, &ng))
		return;
	fprintf(f, "device memory (allocations made before tracing started are not known%s):\n",
		m->pauses ? "; sampled: nor those made or freed while --max-overhead paused "
		"tracing" : "");
	for (int i = 0; i < m->nacct; i++) {
		const struct mem_acct *a = &m->accts[i];

		if (a->kind == MEMK_MAPPED)
			fprintf(f, "  pid %u DMA mapped: ", a->pid);
		else
			fprintf(f, "  pid %u device %d: ", a->pid, a->dev);
		fprintf(f, "peak %s", fmt_bytes(a->peak, b1, sizeof(b1)));
		if (a->peak_ns)
			fprintf(f, " at %+.3f s", secs(a->peak_ns, m->base_ns));
		fprintf(f, ", %s still %s; %llu allocs, %llu frees", fmt_bytes(a->cur, b2,
			sizeof(b2)), a->kind == MEMK_MAPPED ? "mapped" : "allocated",
			(unsigned long long)a->allocs, (unsigned long long)a->frees);
		if (a->unknown_frees)
			fprintf(f, ", %llu frees of unknown pointers",
				(unsigned long long)a->unknown_frees);
		if (a->failed)
			fprintf(f, ", %llu failed", (unsigned long long)a->failed);
		if (a->replaced)
			fprintf(f, ", %llu frees missed", (unsigned long long)a->replaced);
		fprintf(f, "\n");
	}
	if (m->no_pointer)
		fprintf(f, "  %llu allocations without a pointer (their probe sees entries only)\n",
			(unsigned long long)m->no_pointer);
	if (m->blocks_untracked)
		fprintf(f, "  %llu blocks not tracked (more than %u live)\n",
			(unsigned long long)m->blocks_untracked, MEMLEDGER_MAX_BLOCKS);
	if (ng) {
		fprintf(f, "  still allocated at the end, oldest first "
			"(%u block%s in %u group%s%s):\n", nb, nb == 1 ? "" : "s", ng,
			ng == 1 ? "" : "s",
			ng > MEMLEDGER_SUMMARY_GROUPS ? ", top 10; all in the trace metadata" : "");
		for (uint32_t i = 0; i < ng && i < MEMLEDGER_SUMMARY_GROUPS; i++) {
			const struct live_group *g = &gr[i];

			fprintf(f, "    %6llu x %-10s pid %u device %d  %s  thread %s (%u)  since "
				"%+.3f s", (unsigned long long)g->count,
				fmt_bytes(g->size, b1, sizeof(b1)), g->pid, g->dev,
				ledger_probe_name(c, g->probe), c ? consumer_thread_name(c, g->tid) : "?",
				g->tid, secs(g->oldest, m->base_ns));
			/* the line of the model that allocated them (--python, py=1) */
			if (alloc_python(c, g->pid, g->py, py, sizeof(py)))
				fprintf(f, "  from %s", py);
			fputc('\n', f);
			/* and the native code that did (--ustack, stack=1): its callers */
			n = alloc_native(c, g->pid, g->ustack, g->ucaller, v);
			for (int k = 1; k < n && k <= MEMLEDGER_SUMMARY_FRAMES; k++)
				fprintf(f, "%s%s", k == 1 ? "        called from " : " <- ", v[k]);
			if (n > 1)
				fputc('\n', f);
		}
	}
	free(bl);
	free(gr);
}
