// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The device memory ledger: accounts, peaks, unknown frees, reuse of a live pointer, the trace. */
#include <errno.h>
#include <linux/vfio.h>
#include <stdlib.h>

#include "unit.h"
#include "stream/consumer.h"
#include "stream/memledger.h"
#include "report/memreport.h"
#include "report/prom.h"

TEST(memledger_alloc_free_peak)
{
	struct memledger m;
	struct mem_acct *a;
	uint64_t size;
	int dev;

	CHECK_EQ_INT(memledger_init(&m), 0);
	a = memledger_alloc(&m, 10, 11, MEMK_ALLOC, 0, 0x1000, 100, 1000, 3);
	CHECK(a && a->cur == 100 && a->peak == 100 && a->peak_ns == 1000);
	memledger_alloc(&m, 10, 11, MEMK_ALLOC, 0, 0x2000, 50, 2000, 3);
	a = memledger_alloc(&m, 10, 12, MEMK_ALLOC, 1, 0x3000, 7, 2500, 4);
	CHECK(a && a->dev == 1 && a->cur == 7);
	a = memledger_release(&m, 10, MEMK_ALLOC, 0x1000, 3000, &size, &dev);
	CHECK(a && size == 100 && dev == 0);
	CHECK(a && a->cur == 50 && a->peak == 150 && a->peak_ns == 2000);
	/* a lower high does not move the peak, an equal one keeps the first time */
	memledger_alloc(&m, 10, 11, MEMK_ALLOC, 0, 0x4000, 100, 4000, 3);
	a = memledger_acct(&m, 10, MEMK_ALLOC, 0, false);
	CHECK(a && a->cur == 150 && a->peak == 150 && a->peak_ns == 2000);
	CHECK(a && a->allocs == 3 && a->frees == 1 && a->bytes_alloc == 250 &&
	      a->bytes_freed == 100);
	/* the same pointer in another process is another block */
	CHECK(memledger_alloc(&m, 20, 21, MEMK_ALLOC, 0, 0x2000, 5, 5000, 3));
	a = memledger_release(&m, 20, MEMK_ALLOC, 0x2000, 6000, &size, &dev);
	CHECK(a && a->pid == 20 && size == 5 && a->cur == 0);
	CHECK_EQ_INT(m.cnt, 3);
	memledger_free(&m);
}

TEST(memledger_unknown_and_failed)
{
	struct memledger m;
	struct mem_acct *a;
	uint64_t size = 1;
	int dev = 5;

	CHECK_EQ_INT(memledger_init(&m), 0);
	/* allocated before we attached: counted, never negative */
	CHECK(!memledger_release(&m, 10, MEMK_ALLOC, 0x1000, 10, &size, &dev));
	CHECK_EQ_INT(size, 0);
	a = memledger_acct(&m, 10, MEMK_ALLOC, 0, false);
	CHECK(a && a->unknown_frees == 1 && a->cur == 0 && a->frees == 0);
	/* free(NULL) is nothing */
	CHECK(!memledger_release(&m, 10, MEMK_ALLOC, 0, 10, &size, &dev));
	CHECK(a && a->unknown_frees == 1);
	/* an allocation that returned 0 */
	a = memledger_alloc(&m, 10, 11, MEMK_ALLOC, 0, 0, 4096, 20, 1);
	CHECK(a && a->failed == 1 && a->allocs == 0 && a->cur == 0);
	/* a free twice: the second is unknown */
	memledger_alloc(&m, 10, 11, MEMK_ALLOC, 0, 0x5000, 64, 30, 1);
	CHECK(memledger_release(&m, 10, MEMK_ALLOC, 0x5000, 40, &size, &dev));
	CHECK(!memledger_release(&m, 10, MEMK_ALLOC, 0x5000, 50, &size, &dev));
	a = memledger_acct(&m, 10, MEMK_ALLOC, 0, false);
	CHECK(a && a->unknown_frees == 2 && a->cur == 0);
	memledger_free(&m);
}

TEST(memledger_realloc_live_pointer)
{
	struct memledger m;
	struct mem_acct *a, *b;
	uint64_t size;
	int dev;

	CHECK_EQ_INT(memledger_init(&m), 0);
	memledger_alloc(&m, 10, 11, MEMK_ALLOC, 0, 0x1000, 100, 10, 1);
	/* its free was missed: the new block replaces it, the old bytes are gone */
	a = memledger_alloc(&m, 10, 11, MEMK_ALLOC, 0, 0x1000, 30, 20, 1);
	CHECK(a && a->cur == 30 && a->replaced == 1 && a->peak == 100);
	/* ... also when the new block is on another device */
	b = memledger_alloc(&m, 10, 11, MEMK_ALLOC, 2, 0x1000, 8, 30, 1);
	a = memledger_acct(&m, 10, MEMK_ALLOC, 0, false);
	CHECK(a && b && a->cur == 0 && a->replaced == 2 && b->cur == 8);
	CHECK_EQ_INT(m.cnt, 1);
	b = memledger_release(&m, 10, MEMK_ALLOC, 0x1000, 40, &size, &dev);
	CHECK(b && size == 8 && dev == 2 && b->cur == 0);
	CHECK_EQ_INT(m.cnt, 0);
	memledger_free(&m);
}

/* A process that ended is forgotten, with all its blocks; the others stay findable. */
TEST(memledger_forget_process)
{
	struct memledger m;
	uint64_t size;
	int dev, bad = 0;

	CHECK_EQ_INT(memledger_init(&m), 0);
	for (uint64_t i = 1; i <= 3000; i++)
		memledger_alloc(&m, i % 3 ? 7 : 8, 1, MEMK_ALLOC, 0, i * 64, 1, i, 0);
	memledger_alloc(&m, 8, 1, MEMK_MAPPED, 0, 0x1000, 4096, 1, 0);
	memledger_forget(&m, 8);
	CHECK_EQ_INT(m.cnt, 2000);
	CHECK(!memledger_acct(&m, 8, MEMK_ALLOC, 0, false));
	CHECK(!memledger_acct(&m, 8, MEMK_MAPPED, 0, false));
	for (uint64_t i = 1; i <= 3000; i++)
		if (i % 3 && !memledger_release(&m, 7, MEMK_ALLOC, i * 64, 0, &size, &dev))
			bad++;
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(m.cnt, 0);
	CHECK_EQ_INT(memledger_acct(&m, 7, MEMK_ALLOC, 0, false)->cur, 0);
	memledger_free(&m);
}

/* Many blocks: the table grows, and frees in any order find every block (backward shift). */
TEST(memledger_many_blocks)
{
	struct memledger m;
	struct mem_acct *a;
	uint64_t size, want = 0;
	int dev, bad = 0;

	CHECK_EQ_INT(memledger_init(&m), 0);
	for (uint64_t i = 1; i <= 20000; i++) {
		memledger_alloc(&m, 7, 8, MEMK_ALLOC, 0, i * 4096, i, i, 1);
		want += i;
	}
	a = memledger_acct(&m, 7, MEMK_ALLOC, 0, false);
	CHECK(a && a->cur == want && m.cnt == 20000);
	for (uint64_t i = 1; i <= 20000; i += 2) {
		if (!memledger_release(&m, 7, MEMK_ALLOC, i * 4096, 0, &size, &dev) || size != i)
			bad++;
		want -= i;
	}
	for (uint64_t i = 20000; i >= 2; i -= 2) {
		if (!memledger_release(&m, 7, MEMK_ALLOC, i * 4096, 0, &size, &dev) || size != i)
			bad++;
		want -= i;
	}
	CHECK_EQ_INT(bad, 0);
	a = memledger_acct(&m, 7, MEMK_ALLOC, 0, false);
	CHECK(a && a->cur == 0 && want == 0 && m.cnt == 0 && a->unknown_frees == 0);
	memledger_free(&m);
}

static void ioctl_event(struct spyre_event *e, uint64_t cmd, uint64_t iova, uint64_t size,
			int64_t ret, uint64_t ts)
{
	memset(e, 0, sizeof(*e));
	e->type = SPYRE_EV_IOCTL;
	e->tgid = 10;
	e->tid = 11;
	e->ts = ts;
	e->dur = 5;
	e->ioctl.ret = ret;
	e->ioctl.cmd = cmd;
	e->ioctl.iova = iova;
	e->ioctl.size = size;
	e->ioctl.flags = SPYRE_IOCTL_F_DMA;
}

/* The trace: [memory] instants, counters; the mapped account from MAP/UNMAP_DMA. */
TEST(memledger_trace_events)
{
	struct trace_meta meta = { .mono_base_ns = 1000000, .trace_name = "t", .tool_version = "v",
				   .hostname = "h" };
	struct probe_spec alloc = { .mem = MEM_ALLOC, .ptr = PROBE_VAL_RET, .size = 2 };
	struct probe_spec fr = { .mem = MEM_FREE, .ptr = 2 };
	struct jw *w = jw_memopen();
	struct trace_writer *tw = NULL;
	struct spyre_event e = {};
	struct memledger m;
	struct mem_acct *a;
	const char *d;
	size_t len;

	CHECK_EQ_INT(memledger_init(&m), 0);
	CHECK_EQ_INT(trace_begin(&tw, w, &meta), 0);
	m.base_ns = meta.mono_base_ns;
	e = (struct spyre_event){ .ts = 2000000, .dur = 1000, .call.ret = 0xabc000, .tgid = 10,
				  .tid = 11, .type = SPYRE_EV_SPAN };
	e.call.args[1] = 4096;
	memledger_event(&m, tw, &alloc, &e, NULL);
	/* a free span: taken at its entry record, its span changes nothing */
	e = (struct spyre_event){ .ts = 3000000, .tgid = 10, .tid = 12,
				  .type = SPYRE_EV_MEM_ENTRY };
	e.call.args[1] = 0xabc000;
	memledger_event(&m, tw, &fr, &e, NULL);
	e.type = SPYRE_EV_SPAN;
	memledger_event(&m, tw, &fr, &e, NULL);
	/* the ptr=ret of an entry-only allocation is never known */
	e = (struct spyre_event){ .ts = 3500000, .tgid = 10, .tid = 11, .type = SPYRE_EV_INSTANT };
	memledger_event(&m, tw, &alloc, &e, NULL);
	CHECK_EQ_INT(m.no_pointer, 1);
	ioctl_event(&e, VFIO_IOMMU_MAP_DMA, 0x100000, 8192, 0, 4000000);
	memledger_ioctl(&m, tw, &e);
	ioctl_event(&e, VFIO_IOMMU_MAP_DMA, 0x200000, 8192, -22, 4100000);	/* failed */
	memledger_ioctl(&m, tw, &e);
	ioctl_event(&e, VFIO_IOMMU_UNMAP_DMA, 0x100000, 8192, 0, 5000000);
	memledger_ioctl(&m, tw, &e);
	a = memledger_acct(&m, 10, MEMK_MAPPED, 0, false);
	CHECK(a && a->allocs == 1 && a->frees == 1 && a->peak == 8192 && a->cur == 0 &&
	      a->peak_ns == 4000005);
	CHECK_EQ_INT(trace_finish(tw, NULL), 0);
	d = jw_mem_data(w, &len);
	CHECK(strstr(d, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_instant_event\","
		      "\"name\":\"[memory]\",\"pid\":10,\"tid\":11,\"ts\":1001.000,\"args\":"
		      "{\"Device Type\":20,"
		      "\"Device Id\":0,\"Addr\":11255808,\"Bytes\":4096,\"Total Allocated\":4096,"
		      "\"Total Reserved\":4096}}"));
	CHECK(strstr(d, "\"name\":\"[memory]\",\"pid\":10,\"tid\":12,\"ts\":2000.000,\"args\":"
		      "{\"Device Type\":20,\"Device Id\":0,\"Addr\":11255808,\"Bytes\":-4096,"
		      "\"Total Allocated\":0,"));
	CHECK(strstr(d, "{\"ph\":\"C\",\"name\":\"Spyre memory (device 0)\",\"pid\":10,\"tid\":0,"
		      "\"ts\":1001.000,\"args\":{\"allocated\":4096}}"));
	CHECK(strstr(d, "{\"ph\":\"C\",\"name\":\"Spyre memory (device 0)\",\"pid\":10,\"tid\":0,"
		      "\"ts\":2000.000,\"args\":{\"allocated\":0}}"));
	CHECK(strstr(d, "{\"ph\":\"C\",\"name\":\"Spyre DMA mapped\",\"pid\":10,\"tid\":0,"
		      "\"ts\":3000.005,\"args\":{\"mapped\":8192}}"));
	CHECK(strstr(d, "\"args\":{\"mapped\":0}}"));
	/* exactly two [memory] events: the span of the free and the failed map add none */
	CHECK(strstr(d, "[memory]") && strstr(strstr(strstr(d, "[memory]") + 1, "[memory]") + 1,
					      "[memory]") == NULL);
	jw_close(w);
	memledger_free(&m);
}

/* memdev=: one counter per device, and the process's total once it uses several. */
TEST(memledger_devices)
{
	struct trace_meta meta = { .mono_base_ns = 0, .trace_name = "t", .tool_version = "v",
				   .hostname = "h" };
	struct probe_spec alloc = { .mem = MEM_ALLOC, .ptr = PROBE_VAL_RET, .size = 2,
				    .memdev = 3 };
	struct probe_spec fr = { .mem = MEM_FREE, .ptr = 1, .type = PROBE_INSTANT };
	struct jw *w = jw_memopen();
	struct trace_writer *tw = NULL;
	struct spyre_event e;
	struct memledger m;
	const char *d;
	size_t len;

	CHECK_EQ_INT(memledger_init(&m), 0);
	CHECK_EQ_INT(trace_begin(&tw, w, &meta), 0);
	for (int i = 0; i < 3; i++) {
		e = (struct spyre_event){ .ts = 1000 * (i + 1), .call.ret = 0x1000 * (i + 1),
					  .tgid = 5, .tid = 6, .type = SPYRE_EV_SPAN };
		e.call.args[1] = 100 * (i + 1);
		e.call.args[2] = i ? 3 : 1;	/* device 1, then device 3 twice */
		memledger_event(&m, tw, &alloc, &e, NULL);
	}
	/* an instant free: its own event is the free */
	e = (struct spyre_event){ .ts = 5000, .tgid = 5, .tid = 6, .type = SPYRE_EV_INSTANT };
	e.call.args[0] = 0x2000;
	memledger_event(&m, tw, &fr, &e, NULL);
	CHECK_EQ_INT(memledger_acct(&m, 5, MEMK_ALLOC, 1, false)->cur, 100);
	CHECK_EQ_INT(memledger_acct(&m, 5, MEMK_ALLOC, 3, false)->cur, 300);
	CHECK_EQ_INT(trace_finish(tw, NULL), 0);
	d = jw_mem_data(w, &len);
	CHECK(strstr(d, "\"name\":\"Spyre memory (device 3)\",\"pid\":5,\"tid\":0,\"ts\":2.000,"
		      "\"args\":{\"allocated\":200}}"));
	CHECK(strstr(d, "\"Device Id\":3,\"Addr\":8192,\"Bytes\":-200,\"Total Allocated\":300,"));
	/* no total while the process had one device; then after every change */
	CHECK(!strstr(d, "\"ts\":1.000,\"args\":{\"allocated\":100}},\n{\"ph\":\"C\",\"name\":"
		       "\"Spyre memory (all devices)\""));
	CHECK(strstr(d, "\"name\":\"Spyre memory (all devices)\",\"pid\":5,\"tid\":0,\"ts\":2.000,"
		      "\"args\":{\"allocated\":300}}"));
	CHECK(strstr(d, "\"name\":\"Spyre memory (all devices)\",\"pid\":5,\"tid\":0,\"ts\":5.000,"
		      "\"args\":{\"allocated\":400}}"));
	jw_close(w);
	memledger_free(&m);
}

/* A free span whose entry record the ring had no room for: the span is the free. */
TEST(memledger_free_entry_lost)
{
	struct probe_spec fr = { .mem = MEM_FREE, .ptr = 2 };
	struct spyre_event e;
	struct memledger m;

	CHECK_EQ_INT(memledger_init(&m), 0);
	for (uint64_t p = 1; p <= 3; p++)
		memledger_alloc(&m, 5, 6, MEMK_ALLOC, 0, p << 12, 10, 1, 0);
	/* nested frees on one thread: entries 1 then 2, spans 2 then 1 */
	e = (struct spyre_event){ .ts = 10, .tgid = 5, .tid = 6, .type = SPYRE_EV_MEM_ENTRY };
	e.call.args[1] = 1 << 12;
	memledger_event(&m, NULL, &fr, &e, NULL);
	e.call.args[1] = 2 << 12;
	memledger_event(&m, NULL, &fr, &e, NULL);
	e.type = SPYRE_EV_SPAN;
	memledger_event(&m, NULL, &fr, &e, NULL);
	e.call.args[1] = 1 << 12;
	memledger_event(&m, NULL, &fr, &e, NULL);
	CHECK_EQ_INT(m.entries_lost, 0);
	CHECK_EQ_INT(memledger_acct(&m, 5, MEMK_ALLOC, 0, false)->cur, 10);
	/* block 3's entry record was lost: its span frees it */
	e.call.args[1] = 3 << 12;
	memledger_event(&m, NULL, &fr, &e, NULL);
	CHECK_EQ_INT(m.entries_lost, 1);
	CHECK_EQ_INT(memledger_acct(&m, 5, MEMK_ALLOC, 0, false)->cur, 0);
	CHECK_EQ_INT(memledger_acct(&m, 5, MEMK_ALLOC, 0, false)->unknown_frees, 0);
	CHECK_EQ_INT(m.cnt, 0);
	memledger_free(&m);
}

/* What is still live, grouped and oldest first, in the metadata. */
TEST(memledger_json_live)
{
	struct memledger m;
	struct jw *w = jw_memopen();
	const char *d, *g1, *g2;
	size_t len;

	CHECK_EQ_INT(memledger_init(&m), 0);
	m.base_ns = 1000;
	memledger_alloc(&m, 10, 11, MEMK_ALLOC, 0, 0x3000, 64, 5000, 0);
	memledger_alloc(&m, 10, 12, MEMK_ALLOC, 0, 0x1000, 32, 2000, 0);
	memledger_alloc(&m, 10, 12, MEMK_ALLOC, 0, 0x2000, 32, 3000, 0);
	jw_members_begin(w, false);	/* after the metadata's other members */
	memledger_json(&m, NULL, w);
	jw_members_end(w);
	d = jw_mem_data(w, &len);
	CHECK(strstr(d, ",\n\"spyreMemory\":{"));
	CHECK(strstr(d, "\"allocated\":{\"current\":128,\"peak\":128,\"peakTs\":2.000,"
		      "\"allocs\":3,\"frees\":0,"));
	g1 = strstr(d, "{\"device\":0,\"bytes\":32,\"count\":2,\"probe\":\"?\",\"tid\":12,"
		       "\"thread\":\"\",\"oldestTs\":1.000}");
	g2 = strstr(d, "{\"device\":0,\"bytes\":64,\"count\":1,\"probe\":\"?\",\"tid\":11,");
	CHECK(g1 && g2 && g1 < g2);
	CHECK(strstr(d, "\"liveBlocks\":[\n{\"device\":0,\"addr\":\"0x1000\",\"bytes\":32,"));
	CHECK(strstr(d, "\"liveBlocksNotListed\":0}"));
	jw_close(w);
	memledger_free(&m);
}

/* Fleet metrics: current and peak per job and device, mapped without a device; expiry. */
TEST(memledger_prom)
{
	struct prom_job job = { .pid = 42, .comm = "python3", .container = "" };
	struct prom_window pw;
	char *text;

	prom_window_init(&pw, "v", 1, 0);
	prom_window_begin(&pw, 0);
	CHECK_EQ_INT(prom_window_set_memory(&pw, &job, 1, false, 100, 300), 0);
	CHECK_EQ_INT(prom_window_set_memory(&pw, &job, 0, true, 8192, 8192), 0);
	prom_window_end(&pw, 1);
	/* a later window: the peak never goes down */
	prom_window_begin(&pw, 0);
	CHECK_EQ_INT(prom_window_set_memory(&pw, &job, 1, false, 50, 200), 0);
	prom_window_end(&pw, 1);
	text = prom_render(&pw, NULL);
	CHECK(text && strstr(text, "# TYPE spyre_device_memory_bytes gauge\n"
			     "spyre_device_memory_bytes{pid=\"42\",comm=\"python3\",device=\"1\","
			     "kind=\"allocated\"} 50\n"
			     "spyre_device_memory_bytes{pid=\"42\",comm=\"python3\","
			     "kind=\"mapped\"} 8192\n"));
	CHECK(text && strstr(text, "spyre_device_memory_peak_bytes{pid=\"42\",comm=\"python3\","
			     "device=\"1\",kind=\"allocated\"} 300\n"));
	free(text);
	/* the job is gone: its series go after expire_after idle windows */
	for (int i = 0; i < 4; i++) {
		prom_window_begin(&pw, 0);
		prom_window_end(&pw, 1);
	}
	text = prom_render(&pw, NULL);
	CHECK(text && !strstr(text, "spyre_device_memory"));
	free(text);
	prom_window_free(&pw);
}

/*
 * An allocator that returns its block by value (SpyreAllocator::allocate's DataPtr,
 * FlexAllocator::allocate's CompositeAddress): the pointer is read through the hidden result
 * pointer at the return (ptr=sret[0]), the size from the argument or a word of the result.
 */
TEST(memledger_allocations_returned_by_value)
{
	struct probe_table t = {};
	const struct probe_spec *alloc, *fr;
	struct spyre_event e;
	struct memledger m;
	uint64_t size;
	int dev;
	char err[128];

	CHECK_EQ_INT(probes_parse_text(&t,
		"c.so allocate mem=alloc ptr=sret[0] size=arg3\n"
		"f.so flexalloc mem=alloc ptr=sret[8] size=sret[16]\n"
		"c.so ReportAndDelete mem=free ptr=arg1 type=instant\n", "m", err, sizeof(err)), 0);
	alloc = &t.specs[0];
	fr = &t.specs[2];
	CHECK_EQ_INT(memledger_init(&m), 0);
	e = (struct spyre_event){ .ts = 1000, .dur = 10, .tgid = 5, .tid = 6,
				  .type = SPYRE_EV_SPAN };
	e.call.args[0] = 0x7ffc0000;	/* the hidden pointer itself is no block */
	e.call.args[2] = 4096;
	e.call.ret = 0x7ffc0000;
	e.call.deref[0] = 0xa000;
	memledger_event(&m, NULL, alloc, &e, NULL);
	e.call.deref[0] = 0xb000;
	e.call.args[2] = 512;
	memledger_event(&m, NULL, alloc, &e, NULL);
	e.call.deref[0] = 0xc00000;	/* flexalloc: sret[8] is deref 0, sret[16] deref 1 */
	e.call.deref[1] = 64;
	memledger_event(&m, NULL, &t.specs[1], &e, NULL);
	CHECK_EQ_INT(memledger_acct(&m, 5, MEMK_ALLOC, 0, false)->cur, 4096 + 512 + 64);
	e = (struct spyre_event){ .ts = 2000, .tgid = 5, .tid = 6, .type = SPYRE_EV_INSTANT };
	e.call.args[0] = 0xa000;
	memledger_event(&m, NULL, fr, &e, NULL);
	CHECK_EQ_INT(memledger_acct(&m, 5, MEMK_ALLOC, 0, false)->cur, 512 + 64);
	CHECK(!memledger_release(&m, 5, MEMK_ALLOC, 0x7ffc0000, 3000, &size, &dev));
	memledger_free(&m);
	probes_free(&t);
}

/*
 * torch-spyre's allocate(size_t) calls allocate(size_t, directive); the default table's glob
 * traces both. The inner call books the block at its return, the outer one returns the same
 * block inside its own span: one allocation, not two with a missed free. A later allocation
 * of the same pointer (after an untraced free) is still a new block.
 */
TEST(memledger_nested_allocations_are_one_block)
{
	struct probe_table t = {};
	struct spyre_event e;
	struct memledger m;
	struct mem_acct *a;
	char err[128];

	CHECK_EQ_INT(probes_parse_text(&t, "c.so allocate mem=alloc ptr=sret[0] size=arg3\n", "m",
				       err, sizeof(err)), 0);
	CHECK_EQ_INT(memledger_init(&m), 0);
	/* inner [1005, 1015], outer [1000, 1020]: the inner one's span comes first */
	e = (struct spyre_event){ .ts = 1005, .dur = 10, .tgid = 5, .tid = 6,
				  .type = SPYRE_EV_SPAN };
	e.call.args[2] = 4096;
	e.call.deref[0] = 0xa000;
	memledger_event(&m, NULL, &t.specs[0], &e, NULL);
	e.ts = 1000;
	e.dur = 20;
	memledger_event(&m, NULL, &t.specs[0], &e, NULL);
	a = memledger_acct(&m, 5, MEMK_ALLOC, 0, false);
	CHECK(a != NULL);
	if (a) {
		CHECK_EQ_INT(a->cur, 4096);
		CHECK_EQ_INT(a->allocs, 1);
		CHECK_EQ_INT(a->replaced, 0);
	}
	CHECK_EQ_INT(m.nested_allocs, 1);
	/* another thread's, or a later call's, allocation of that pointer is not nested */
	e.ts = 2000;
	e.dur = 10;
	memledger_event(&m, NULL, &t.specs[0], &e, NULL);
	a = memledger_acct(&m, 5, MEMK_ALLOC, 0, false);
	if (a) {
		CHECK_EQ_INT(a->allocs, 2);
		CHECK_EQ_INT(a->replaced, 1);
	}
	CHECK_EQ_INT(m.nested_allocs, 1);
	memledger_free(&m);
	probes_free(&t);
}

/*
 * torch-spyre's allocate(0) returns a null DataPtr without calling flex: an empty tensor, not a
 * failed allocation (nothing booked, nothing to free), through both overloads. A null pointer
 * for a size asked for is still a failure.
 */
TEST(memledger_empty_allocation_is_not_a_failure)
{
	struct probe_table t = {};
	struct spyre_event e;
	struct memledger m;
	struct mem_acct *a;
	char err[128];

	CHECK_EQ_INT(probes_parse_text(&t, "c.so allocate mem=alloc ptr=sret[0] size=arg3\n", "m",
				       err, sizeof(err)), 0);
	CHECK_EQ_INT(memledger_init(&m), 0);
	/* inner [1005, 1015] and outer [1000, 1020], both returning null for 0 bytes */
	e = (struct spyre_event){ .ts = 1005, .dur = 10, .tgid = 5, .tid = 6,
				  .type = SPYRE_EV_SPAN };
	memledger_event(&m, NULL, &t.specs[0], &e, NULL);
	e.ts = 1000;
	e.dur = 20;
	memledger_event(&m, NULL, &t.specs[0], &e, NULL);
	a = memledger_acct(&m, 5, MEMK_ALLOC, 0, false);
	CHECK(!a || (a->failed == 0 && a->allocs == 0));
	CHECK_EQ_INT(m.nested_allocs, 0);
	/* 4096 bytes asked for, a null pointer returned: that one failed */
	e.call.args[2] = 4096;
	memledger_event(&m, NULL, &t.specs[0], &e, NULL);
	a = memledger_acct(&m, 5, MEMK_ALLOC, 0, false);
	CHECK(a != NULL);
	if (a) {
		CHECK_EQ_INT(a->failed, 1);
		CHECK_EQ_INT(a->allocs, 0);
		CHECK_EQ_INT(a->cur, 0);
	}
	memledger_free(&m);
	probes_free(&t);
}
