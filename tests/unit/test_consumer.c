// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The consumer: ring records (struct spyre_event, made here as the BPF side makes them) into
 * trace events, read back from a trace written to memory. No BPF, no /proc (procfs NULL).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "offline/jsonparse.h"
#include "output/jsonw.h"
#include "output/trace_writer.h"
#include "report/summary.h"
#include "resolve/probes.h"
#include "resolve/resolve.h"
#include "stream/consumer.h"
#include "stream/memledger.h"

#define BASE	5000000000ull	/* CLOCK_MONOTONIC of the trace's ts 0 */
#define MS	1000000ull
#define PID	100
#define TID	101

/* One line per probe, in this order: the probe index of each record is its line. */
enum { P_CALL, P_UNW, P_KNAME, P_LAUNCH, P_SYNC, P_ALLOC, P_INSTANT, NPROBES };
static const char table_text[] =
	"libx.so call arg1=stream:x arg2=n:d ret=rc:u\n"
	"libx.so unw arg1=a:u ret=r:u\n"
	"libx.so kname str=arg1:c dev=kname\n"
	"libx.so launch arg1=stream:x dev=launch op=compute stream=arg1\n"
	"libx.so sync arg1=stream:x dev=sync stream=arg1\n"
	"libx.so alloc arg1=bytes:u ret=ptr:x mem=alloc ptr=ret size=arg1\n"
	"libx.so cb type=instant arg1=key:u\n";
static const char *const names[NPROBES] = {
	"call", "unw", "kname", "launch", "sync", "alloc", "cb",
};

struct rig {
	struct probe_table table;
	struct target t;
	struct rlib lib;
	struct rprobe probes[NPROBES];
	struct trace_writer *tw;
	struct memledger mem;
	struct consumer c;
	struct jv *root;	/* the trace read back (rig_finish) */
};

static void rig_init(struct rig *r)
{
	static const struct trace_meta meta = {
		.mono_base_ns = BASE, .real_base_ns = 1700000000000000000ull,
		.trace_name = "unit", .tool_version = "test", .hostname = "h",
	};
	char err[128] = "";

	memset(r, 0, sizeof(*r));
	CHECK_EQ_INT(probes_parse_text(&r->table, table_text, "unit", err, sizeof(err)), 0);
	if (err[0])
		fprintf(stderr, "    %s\n", err);
	CHECK_EQ_INT(r->table.cnt, NPROBES);
	r->lib.path = "/usr/lib/libx.so";
	for (int i = 0; i < NPROBES; i++) {
		r->probes[i].spec = i;
		r->probes[i].name = (char *)names[i];
	}
	r->t.pid = PID;
	r->t.table = &r->table;
	r->t.probes = r->probes;
	r->t.cnt = NPROBES;
	r->t.libs = &r->lib;
	r->t.nlibs = 1;
	CHECK_EQ_INT(trace_begin(&r->tw, jw_memopen(), &meta), 0);
	CHECK_EQ_INT(consumer_init(&r->c, r->tw, &r->t, NULL), 0);
	CHECK_EQ_INT(memledger_init(&r->mem), 0);
	r->c.mem = &r->mem;
}

/* The metadata written, the trace closed and parsed into r->root. */
static void rig_finish(struct rig *r)
{
	struct jw *w = trace_jw(r->tw);
	char err[128] = "";
	const char *d;
	size_t len;

	consumer_write_metadata(&r->c);
	CHECK_EQ_INT(trace_finish(r->tw, NULL), 0);
	d = jw_mem_data(w, &len);
	r->root = jv_parse(d, len, err, sizeof(err));
	if (!r->root)
		fprintf(stderr, "    %s\n%s\n", err, d);
	CHECK(r->root);
	jw_close(w);
}

static void rig_free(struct rig *r)
{
	jv_free(r->root);
	consumer_free(&r->c);
	memledger_free(&r->mem);
	probes_free(&r->table);
}

/* A call record of probe @probe on thread TID: entry at @ts_ms, returned @dur_ms later. */
static struct spyre_event call(uint16_t type, uint32_t probe, double ts_ms, double dur_ms)
{
	return (struct spyre_event){
		.type = type, .probe = probe, .tgid = PID, .tid = TID,
		.ts = BASE + (uint64_t)(ts_ms * MS), .dur = (uint64_t)(dur_ms * MS),
	};
}

static struct jv *events(const struct rig *r)
{
	return jv_get(r->root, "traceEvents");
}

/* The @nth (0: first) event of phase @ph named @name on thread @tid (-1: any), else NULL. */
static struct jv *find(const struct rig *r, const char *ph, const char *name, long tid, int nth)
{
	struct jv *e;
	double d;

	jv_foreach(e, events(r)) {
		if (strcmp(jv_get_str(e, "ph") ?: "", ph) ||
		    strcmp(jv_get_str(e, "name") ?: "", name))
			continue;
		if (tid >= 0 && (!jv_get_num(e, "tid", &d) || d != tid))
			continue;
		if (!nth--)
			return e;
	}
	return NULL;
}

static int count(const struct rig *r, const char *ph, const char *name)
{
	int n = 0;

	while (find(r, ph, name, -1, n))
		n++;
	return n;
}

static double num(const struct jv *o, const char *key)
{
	double d = -1;

	return jv_get_num(o, key, &d) ? d : -1;
}

static bool has(const struct jv *o, const char *key)
{
	return jv_get(o, key) != NULL;
}

/* A span record is one complete event: name, category, pid, tid, ts and dur in µs, its args. */
TEST(consumer_span_is_one_complete_event)
{
	struct spyre_event e = call(SPYRE_EV_SPAN, P_CALL, 2, 1.5);
	struct jv *x, *a;
	struct rig r;

	rig_init(&r);
	e.call.args[0] = 0xabc0;
	e.call.args[1] = (uint64_t)-5;
	e.call.ret = 7;
	CHECK_EQ_INT(consumer_event(&r.c, &e), 0);
	e.ts += 3 * MS;		/* its second call: through the probe's prepared format */
	e.call.ret = 8;
	consumer_event(&r.c, &e);
	rig_finish(&r);
	CHECK_EQ_INT(count(&r, "X", "call"), 2);
	CHECK_EQ_INT(count(&r, "B", "call") + count(&r, "E", "call"), 0);
	x = find(&r, "X", "call", TID, 0);
	CHECK(x);
	CHECK_STR(jv_get_str(x, "cat"), "privateuse1_runtime");
	CHECK_EQ_INT(num(x, "pid"), PID);
	CHECK_EQ_INT(num(x, "tid"), TID);
	CHECK_EQ_INT(num(x, "ts"), 2000);
	CHECK_EQ_INT(num(x, "dur"), 1500);
	a = jv_get(x, "args");
	CHECK_STR(jv_get_str(a, "stream"), "0xabc0");
	CHECK_EQ_INT(num(a, "n"), -5);
	CHECK_EQ_INT(num(a, "rc"), 7);
	CHECK_EQ_INT(jv_len(a), 3);
	x = find(&r, "X", "call", TID, 1);
	CHECK(x);
	CHECK_EQ_INT(num(x, "ts"), 5000);
	CHECK_EQ_INT(num(jv_get(x, "args"), "rc"), 8);
	CHECK_EQ_INT(r.c.events, 2);
	CHECK_EQ_INT(r.c.delivered[P_CALL], 2);
	CHECK_EQ_INT(r.c.stats[P_CALL].count, 2);
	rig_free(&r);
}

/*
 * An unwound call: a span to where the unwind was seen with its entry args and "unwound", not
 * the values read at a return (the record's ret is stale); delivered but not in the latencies.
 * A call with no return: an instant at its entry, "noReturn", not delivered.
 */
TEST(consumer_unwound_and_noreturn)
{
	struct spyre_event e = call(SPYRE_EV_UNWOUND, P_UNW, 1, 0.25);
	struct jv *x, *a;
	struct rig r;

	rig_init(&r);
	e.call.args[0] = 9;
	e.call.ret = 1234;
	consumer_event(&r.c, &e);
	e = call(SPYRE_EV_NORETURN, P_UNW, 4, 0);
	e.call.args[0] = 10;
	consumer_event(&r.c, &e);
	rig_finish(&r);
	x = find(&r, "X", "unw", TID, 0);
	CHECK(x);
	CHECK_EQ_INT(num(x, "ts"), 1000);
	CHECK_EQ_INT(num(x, "dur"), 250);
	a = jv_get(x, "args");
	CHECK_EQ_INT(num(a, "a"), 9);
	CHECK(!has(a, "r"));
	CHECK(jv_get(a, "unwound") && jv_get(a, "unwound")->type == JV_BOOL &&
	      jv_get(a, "unwound")->b);
	x = find(&r, "i", "unw", TID, 0);
	CHECK(x);
	CHECK_EQ_INT(num(x, "ts"), 4000);
	a = jv_get(x, "args");
	CHECK_EQ_INT(num(a, "a"), 10);
	CHECK(jv_get(a, "noReturn") && jv_get(a, "noReturn")->b);
	CHECK(!has(a, "unwound"));
	CHECK_EQ_INT(count(&r, "X", "unw") + count(&r, "i", "unw"), 2);
	CHECK_EQ_INT(r.c.events, 2);
	CHECK_EQ_INT(r.c.delivered[P_UNW], 1);
	CHECK_EQ_INT(r.c.stats[P_UNW].count, 0);
	rig_free(&r);
}

/*
 * A thread's record names it and its process (once); a thread seen without one is named
 * "thread TID", its process "process" (no /proc here); the process's exit is kept, no event.
 */
TEST(consumer_names_and_exit)
{
	struct spyre_event e = { .type = SPYRE_EV_THREAD, .tgid = PID, .tid = TID, .ts = BASE };
	struct jv *m;
	struct rig r;
	int code = 0;

	rig_init(&r);
	memcpy(e.thread.comm, "worker-0", 9);
	memcpy(e.thread.proc_comm, "trainjob", 9);
	consumer_event(&r.c, &e);
	consumer_event(&r.c, &e);	/* sent again: written once */
	e = call(SPYRE_EV_SPAN, P_CALL, 1, 1);
	consumer_event(&r.c, &e);
	/* another process's thread, its record lost (ring full) */
	e.tgid = 200;
	e.tid = 202;
	consumer_event(&r.c, &e);
	e = (struct spyre_event){ .type = SPYRE_EV_EXIT, .tgid = PID, .tid = PID, .ts = BASE + MS,
				  .exit.code = 0x100 };
	CHECK(!consumer_exit_code(&r.c, PID, &code));
	CHECK_EQ_INT(consumer_event(&r.c, &e), 0);
	CHECK(consumer_exit_code(&r.c, PID, &code));
	CHECK_EQ_INT(code, 0x100);
	CHECK(!consumer_exit_code(&r.c, 200, &code));
	CHECK_STR(consumer_thread_name(&r.c, TID), "worker-0");
	rig_finish(&r);
	CHECK_EQ_INT(count(&r, "M", "process_name"), 2);
	CHECK_EQ_INT(count(&r, "M", "thread_name"), 2);
	m = find(&r, "M", "process_name", 0, 0);
	CHECK(m && num(m, "pid") == PID);
	CHECK_STR(jv_get_str(jv_get(m, "args"), "name"), "trainjob");
	m = find(&r, "M", "thread_name", TID, 0);
	CHECK(m && num(m, "pid") == PID);
	CHECK_STR(jv_get_str(jv_get(m, "args"), "name"), "worker-0");
	m = find(&r, "M", "thread_name", 202, 0);
	CHECK(m && num(m, "pid") == 200);
	CHECK_STR(jv_get_str(jv_get(m, "args"), "name"), "thread 202");
	m = find(&r, "M", "process_name", 0, 1);
	CHECK(m && num(m, "pid") == 200);
	CHECK_STR(jv_get_str(jv_get(m, "args"), "name"), "process");
	CHECK_EQ_INT(count(&r, "X", "call"), 2);
	/*
	 * the exit is the summary's (processExits), no event of the trace: 2 processes and 2
	 * threads, each a name and a sort index, and the 2 calls
	 */
	CHECK_EQ_INT(jv_len(events(&r)), 8 + 2);
	rig_free(&r);
}

/*
 * What the run's end says of @bad unreadable records: the summary line's "dropped" counts them
 * and names them, the metadata's spyreStats.recordsUnreadable has them.
 */
static void rig_said_lost(struct rig *r, int bad)
{
	struct spyre_counters counters[NPROBES] = {};
	struct run_end end = {};
	char *text = NULL, *m, *doc = NULL, want[64], err[128];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct jv *root = NULL, *st;
	double v;

	CHECK(f);
	if (!f)
		return;
	summary_print(f, &r->c, &r->t, counters, &end);
	fclose(f);
	snprintf(want, sizeof(want), "%d dropped (ring full 0, too deep 0, unreadable records %d,",
		 bad, bad);
	CHECK(strstr(text, want));
	if (!strstr(text, want))
		fprintf(stderr, "    %s\n", text);
	free(text);
	m = summary_trace_metadata(&r->c, &r->t, counters, &end);
	CHECK(m);
	if (m && asprintf(&doc, "{%s}", m) > 0)
		root = jv_parse(doc, strlen(doc), err, sizeof(err));
	st = root ? jv_get(root, "spyreStats") : NULL;
	CHECK(st && jv_get_num(st, "recordsUnreadable", &v) && v == bad);
	jv_free(root);
	free(doc);
	free(m);
}

/*
 * A record of a probe the consumer does not know, or of a kind it does not know, is counted,
 * not written; nor is it an event.
 */
TEST(consumer_bad_probe_counted_not_written)
{
	struct spyre_event e = call(SPYRE_EV_SPAN, NPROBES + 5, 1, 1);
	struct rig r;

	rig_init(&r);
	CHECK_EQ_INT(consumer_event(&r.c, &e), 0);
	e.type = SPYRE_EV_UNWOUND;
	consumer_event(&r.c, &e);
	e.type = SPYRE_EV_INSTANT;
	consumer_event(&r.c, &e);
	/* a kind the BPF side never makes, of a known probe: no call either */
	e = call(SPYRE_EV_USTACK + 40, 0, 1, 1);
	CHECK_EQ_INT(consumer_event(&r.c, &e), 0);
	CHECK_EQ_INT(r.c.bad, 4);
	CHECK_EQ_INT(r.c.events, 0);
	rig_finish(&r);
	/* not even its thread's name: nothing of it reaches the trace */
	CHECK_EQ_INT(jv_len(events(&r)), 0);
	rig_said_lost(&r, 4);
	rig_free(&r);
}

/*
 * A str= call's string (its record comes first) is its args.name; a dev=kname call's names the
 * thread's next compute launch, which gets our correlation id and, once a synchronize of its
 * stream returned, a device span of that name; an instant probe's call is a ph:"i".
 */
TEST(consumer_string_launch_sync_instant)
{
	struct spyre_event s = { .type = SPYRE_EV_STR, .probe = P_KNAME, .tgid = PID, .tid = TID,
				 .ts = BASE + 1 * MS };
	struct spyre_event e = call(SPYRE_EV_SPAN, P_KNAME, 1, 0.1);
	struct jv *x, *k;
	double corr = -1;
	struct rig r;

	rig_init(&r);
	snprintf(s.str.s, sizeof(s.str.s), "mlp_fwd#2");
	consumer_event(&r.c, &s);
	consumer_event(&r.c, &e);
	e = call(SPYRE_EV_SPAN, P_LAUNCH, 2, 0.1);
	e.call.args[0] = 0x5000;
	consumer_event(&r.c, &e);
	e = call(SPYRE_EV_SPAN, P_SYNC, 3, 1);
	e.call.args[0] = 0x5000;
	consumer_event(&r.c, &e);
	e = call(SPYRE_EV_INSTANT, P_INSTANT, 5, 0);
	e.call.args[0] = 42;
	consumer_event(&r.c, &e);
	rig_finish(&r);
	x = find(&r, "X", "kname", TID, 0);
	CHECK_STR(jv_get_str(jv_get(x, "args"), "name"), "mlp_fwd#2");
	x = find(&r, "X", "launch", TID, 0);
	CHECK(x);
	CHECK_STR(jv_get_str(jv_get(x, "args"), "kernel"), "mlp_fwd#2");
	CHECK_STR(jv_get_str(jv_get(x, "args"), "stream"), "0x5000");
	CHECK(jv_get_num(jv_get(x, "args"), "correlation", &corr) && corr > 0);
	k = find(&r, "X", "mlp_fwd#2", -1, 0);
	CHECK(k);
	CHECK_STR(jv_get_str(k, "cat"), "kernel");
	CHECK_STR(jv_get_str(jv_get(k, "args"), "end"), "synchronize");
	CHECK(num(jv_get(k, "args"), "correlation") == corr);
	/* from the launch's return to the synchronize's */
	CHECK_EQ_INT(num(k, "ts"), 2100);
	CHECK_EQ_INT(num(k, "dur"), 1900);
	CHECK_EQ_INT(count(&r, "s", "ac2g"), 1);
	x = find(&r, "i", "cb", TID, 0);
	CHECK(x);
	CHECK_EQ_INT(num(x, "ts"), 5000);
	CHECK(!has(x, "dur"));
	CHECK_EQ_INT(num(jv_get(x, "args"), "key"), 42);
	rig_free(&r);
}

/* A mem=alloc call: its own event, and the ledger's [memory] event and counter. */
TEST(consumer_memory_allocation)
{
	struct spyre_event e = call(SPYRE_EV_SPAN, P_ALLOC, 1, 0.5);
	struct jv *x;
	struct rig r;

	rig_init(&r);
	e.call.args[0] = 4096;
	e.call.ret = 0x7000;
	consumer_event(&r.c, &e);
	/* an unwound allocation allocated nothing, whatever its record's return word holds */
	e = call(SPYRE_EV_UNWOUND, P_ALLOC, 2, 0.5);
	e.call.args[0] = 8192;
	e.call.ret = 0x9000;
	consumer_event(&r.c, &e);
	rig_finish(&r);
	CHECK_EQ_INT(count(&r, "X", "alloc"), 2);
	x = find(&r, "X", "alloc", TID, 1);
	CHECK(x && !has(jv_get(x, "args"), "ptr") && has(jv_get(x, "args"), "unwound"));
	x = find(&r, "i", "[memory]", TID, 0);
	CHECK(x);
	CHECK_EQ_INT(num(jv_get(x, "args"), "Bytes"), 4096);
	CHECK_EQ_INT(num(jv_get(x, "args"), "Addr"), 0x7000);
	CHECK_EQ_INT(count(&r, "i", "[memory]"), 1);
	CHECK_EQ_INT(count(&r, "C", "Spyre memory (device 0)"), 1);
	/* nor is it the summary's allocation whose pointer was never seen */
	CHECK_EQ_INT(r.mem.no_pointer, 0);
	rig_free(&r);
}

/*
 * A thread that switches stacks inside traced calls (a coroutine): a span that crosses one of
 * its thread's spans (starts inside it, ends after it) goes to the thread's "other stack" track,
 * named for the thread; a launch there keeps its arrow to its device span from that track.
 */
TEST(consumer_crossing_spans_on_a_track_of_their_own)
{
	struct spyre_event e = call(SPYRE_EV_SPAN, P_CALL, 1, 3);	/* 1-4 ms */
	const uint32_t other = TID + (1u << 22);
	struct jv *x, *m;
	int named = 0;
	struct rig r;

	rig_init(&r);
	consumer_event(&r.c, &e);
	e = call(SPYRE_EV_SPAN, P_LAUNCH, 2, 4);	/* 2-6 ms: crosses 1-4 */
	e.call.args[0] = 0x5000;
	consumer_event(&r.c, &e);
	e = call(SPYRE_EV_SPAN, P_CALL, 7, 1);		/* after both: the thread's track */
	consumer_event(&r.c, &e);
	e = call(SPYRE_EV_SPAN, P_SYNC, 8, 1);
	e.call.args[0] = 0x5000;
	consumer_event(&r.c, &e);
	rig_finish(&r);
	CHECK(find(&r, "X", "call", TID, 0) && find(&r, "X", "call", TID, 1));
	CHECK(find(&r, "X", "launch", other, 0));
	CHECK(!find(&r, "X", "launch", TID, 0));
	CHECK(find(&r, "X", "sync", TID, 0));
	/* the arrow leaves from the launch's track */
	x = find(&r, "s", "ac2g", -1, 0);
	CHECK(x && num(x, "tid") == other);
	jv_foreach(m, events(&r)) {
		if (!strcmp(jv_get_str(m, "ph") ?: "", "M") &&
		    !strcmp(jv_get_str(m, "name") ?: "", "thread_name") && num(m, "tid") == other) {
			CHECK_STR(jv_get_str(jv_get(m, "args"), "name"), "thread 101: other stack 1");
			named++;
		}
	}
	CHECK_EQ_INT(named, 1);
	rig_free(&r);
}
