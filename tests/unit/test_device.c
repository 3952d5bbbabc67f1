// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Device timeline: launch/completion matching in either order, lanes, no overlap, flows. */
#include <string.h>
#include "stream/device.h"
#include "offline/jsonparse.h"
#include "output/jsonw.h"
#include "output/trace_writer.h"
#include "unit.h"

#define BASE 1000000ull

struct ev {
	char ph;
	char name[48];
	char cat[24];
	unsigned pid, tid;
	double ts, dur, corr, bytes, id;
	char end[16];
};

/* Finish @tw and read back every event of the trace. */
static int read_events(struct trace_writer *tw, struct ev *out, int max)
{
	struct jw *w = trace_jw(tw);
	struct jv *root, *evs, *e;
	char err[128];
	const char *data;
	size_t len;
	int n = 0;

	CHECK_EQ_INT(trace_finish(tw, NULL), 0);
	data = jw_mem_data(w, &len);
	root = jv_parse(data, len, err, sizeof(err));
	CHECK(root);
	if (!root)
		return 0;
	evs = jv_get(root, "traceEvents");
	jv_foreach(e, evs) {
		struct jv *args = jv_get(e, "args");
		struct ev *v = &out[n];
		double d = 0;

		if (n == max)
			break;
		memset(v, 0, sizeof(*v));
		v->ph = jv_get_str(e, "ph")[0];
		snprintf(v->name, sizeof(v->name), "%s", jv_get_str(e, "name") ?: "");
		snprintf(v->cat, sizeof(v->cat), "%s", jv_get_str(e, "cat") ?: "");
		jv_get_num(e, "pid", &d);
		v->pid = d;
		jv_get_num(e, "tid", &d);
		v->tid = d;
		jv_get_num(e, "ts", &v->ts);
		jv_get_num(e, "dur", &v->dur);
		if (args) {
			jv_get_num(args, "correlation", &v->corr);
			jv_get_num(args, "bytes", &v->bytes);
			snprintf(v->end, sizeof(v->end), "%s", jv_get_str(args, "end") ?: "");
		}
		if (v->ph == 's' || v->ph == 'f')
			jv_get_num(e, "id", &v->id);
		n++;
	}
	jv_free(root);
	jw_close(w);
	return n;
}

static struct trace_writer *mem_trace(void)
{
	struct trace_meta m = { .mono_base_ns = BASE, .real_base_ns = 1, .trace_name = "t" };
	struct trace_writer *tw = NULL;

	CHECK_EQ_INT(trace_begin(&tw, jw_memopen(), &m), 0);
	return tw;
}

static const struct ev *device_span(const struct ev *evs, int n, double corr)
{
	for (int i = 0; i < n; i++)
		if (evs[i].ph == 'X' && evs[i].corr == corr)
			return &evs[i];
	return NULL;
}

/* The 'f' of the arrow that 's' @s starts (the only one with its id), NULL if none or several. */
static const struct ev *flow_finish(const struct ev *evs, int n, const struct ev *s)
{
	const struct ev *f = NULL;

	for (int i = 0; i < n; i++) {
		if (evs[i].ph != 'f' || evs[i].id != s->id)
			continue;
		if (f)
			return NULL;
		f = &evs[i];
	}
	return f;
}

/* The device span an arrow's 'f' binds to: on its pid/tid, starting at its ts. */
static const struct ev *span_at(const struct ev *evs, int n, const struct ev *f)
{
	for (int i = 0; i < n; i++)
		if (evs[i].ph == 'X' && evs[i].pid == f->pid && evs[i].tid == f->tid &&
		    evs[i].ts == f->ts)
			return &evs[i];
	return NULL;
}

TEST(device_spans_serialize_per_stream_and_flows_link)
{
	struct trace_writer *tw = mem_trace();
	struct device_tl d;
	struct ev evs[64];
	const struct ev *a, *b, *c;
	int n, flows_s = 0, flows_f = 0;

	CHECK_EQ_INT(device_init(&d, tw), 0);
	/*
	 * two computes on one stream launched back to back; the second waits for the first. The
	 * first was submitted (its doorbell written) 200 ns into its launch: it starts there.
	 */
	device_launch(&d, 10, 11, 1, 0xAAA, OP_COMPUTE, 0, BASE + 1000, BASE + 1200);
	device_launch(&d, 10, 11, 2, 0xAAA, OP_COMPUTE, 0, BASE + 1500, BASE + 1500);
	device_complete(&d, 10, 1, 0xAAA, BASE + 5000);
	device_complete(&d, 10, 2, 0xAAA, BASE + 9000);
	/* a copy whose completion arrives before its launch record (launch returns late) */
	device_complete(&d, 10, 3, 0xBBB, BASE + 4000);
	device_launch(&d, 10, 12, 3, 0xBBB, OP_H2D, 8000, BASE + 2000, BASE + 2000);
	/* done before its submission was seen (ran inside the launch): from the launch's entry */
	device_launch(&d, 10, 12, 5, 0xCCC, OP_COMPUTE, 0, BASE + 3000, BASE + 3900);
	device_complete(&d, 10, 5, 0xCCC, BASE + 3500);
	/* a launch never completed, a completion never launched */
	device_launch(&d, 10, 11, 4, 0xAAA, OP_COMPUTE, 0, BASE + 9500, BASE + 9500);
	device_complete(&d, 10, 99, 0xAAA, BASE + 9600);
	device_finish(&d);
	CHECK_EQ_INT(d.st.matched, 4);
	CHECK_EQ_INT(d.st.launches_unmatched, 1);
	CHECK_EQ_INT(d.st.completions_unmatched, 1);
	n = read_events(tw, evs, 64);

	a = device_span(evs, n, 1);
	b = device_span(evs, n, 2);
	c = device_span(evs, n, 3);
	CHECK(a && b && c);
	if (!a || !b || !c)
		return;
	CHECK_STR(a->cat, "kernel");
	CHECK_EQ_INT(a->pid, DEVICE_PID);
	CHECK(a->ts == 1.2 && a->dur == 3.8);		/* submitted at 1.2 µs, done at 5 µs */
	CHECK(b->ts == 5.0 && b->dur == 4.0);		/* waits for a: starts at 5, not 1.5 */
	CHECK_EQ_INT(a->tid, b->tid);
	CHECK_STR(c->cat, "gpu_memcpy");
	CHECK(c->ts == 2.0 && c->dur == 2.0 && c->bytes == 8000);
	CHECK_EQ_INT(c->tid, 100);		/* first HtoD lane: tid = 100 * kind (1) + lane */
	for (int i = 0; i < n; i++) {
		if (evs[i].ph == 's') {
			const struct ev *f = flow_finish(evs, n, &evs[i]);
			const struct ev *sp = f ? span_at(evs, n, f) : NULL;

			flows_s++;
			CHECK(sp);
			if (!sp)
				continue;
			/* the arrow leaves the launch's thread at the launch time */
			CHECK_EQ_INT(evs[i].pid, 10);
			CHECK(sp->corr != 3 || evs[i].ts == 2.0);
			CHECK(sp->corr != 1 || evs[i].ts == 1.0);
			/* ids are their own sequence, not the correlation */
			CHECK(evs[i].id == (double)(DEVICE_FLOW_ID_BASE + flows_s));
		}
		if (evs[i].ph == 'f')
			flows_f++;
	}
	c = device_span(evs, n, 5);
	CHECK(c && c->ts == 3.0 && c->dur == 0.5);
	CHECK_EQ_INT(flows_s, 4);
	CHECK_EQ_INT(flows_f, 4);
	device_free(&d);
}

/*
 * Two processes with the same op ids in flight at once (jobs started alike, a forked child
 * going on from its parent's counter): each completion goes to its own process's launch, and
 * every arrow has an id of its own.
 */
TEST(device_ops_are_per_process_and_arrow_ids_unique)
{
	struct trace_writer *tw = mem_trace();
	struct device_tl d;
	struct ev evs[64];
	double ids[8];
	int n, ns = 0;

	CHECK_EQ_INT(device_init(&d, tw), 0);
	/* pid 10 copies 1000 bytes, pid 20 2000, both as op 7, then both as op 8 */
	device_launch(&d, 10, 11, 7, 0xA, OP_H2D, 1000, BASE + 1000, BASE + 1000);
	device_launch(&d, 20, 21, 7, 0xB, OP_H2D, 2000, BASE + 1100, BASE + 1100);
	device_complete(&d, 20, 7, 0xB, BASE + 3000);
	device_complete(&d, 10, 7, 0xA, BASE + 4000);
	device_complete(&d, 10, 8, 0xA, BASE + 5000);	/* before its launch record */
	device_launch(&d, 20, 21, 8, 0xB, OP_D2H, 2000, BASE + 4500, BASE + 4500);
	device_launch(&d, 10, 11, 8, 0xA, OP_D2H, 1000, BASE + 4600, BASE + 4600);
	device_complete(&d, 20, 8, 0xB, BASE + 6000);
	device_finish(&d);
	CHECK_EQ_INT(d.st.matched, 4);
	CHECK_EQ_INT(d.st.launches_unmatched, 0);
	CHECK_EQ_INT(d.st.completions_unmatched, 0);
	n = read_events(tw, evs, 64);
	for (int i = 0; i < n; i++) {
		const struct ev *f, *sp;

		if (evs[i].ph != 's')
			continue;
		f = flow_finish(evs, n, &evs[i]);
		sp = f ? span_at(evs, n, f) : NULL;
		CHECK(sp);
		if (!sp || ns == 8)
			continue;
		/* the span of the launching process: its byte count, its completion time */
		CHECK(sp->bytes == (evs[i].pid == 10 ? 1000 : 2000));
		if (sp->corr == 7)
			CHECK(sp->ts + sp->dur == (evs[i].pid == 10 ? 4.0 : 3.0));
		for (int k = 0; k < ns; k++)
			CHECK(ids[k] != evs[i].id);
		ids[ns++] = evs[i].id;
	}
	CHECK_EQ_INT(ns, 4);
	device_free(&d);
}

/* One stream address in two processes (a forked child's copy of its parent's): two queues. */
TEST(device_same_stream_address_in_two_processes_is_two_tracks)
{
	struct trace_writer *tw = mem_trace();
	const struct ev *a, *b;
	struct device_tl d;
	struct ev evs[32];
	int n;

	CHECK_EQ_INT(device_init(&d, tw), 0);
	device_launch(&d, 10, 11, 1, 0xA, OP_COMPUTE, 0, BASE + 1000, BASE + 1000);
	device_launch(&d, 20, 21, 2, 0xA, OP_COMPUTE, 0, BASE + 1100, BASE + 1100);
	device_complete(&d, 10, 1, 0xA, BASE + 5000);
	device_complete(&d, 20, 2, 0xA, BASE + 4000);
	n = read_events(tw, evs, 32);
	a = device_span(evs, n, 1);
	b = device_span(evs, n, 2);
	CHECK(a && b);
	if (a && b) {
		CHECK(a->tid != b->tid);
		/* pid 20's kernel ran from its launch, not after pid 10's (which ended later) */
		CHECK(b->ts == 1.1 && b->dur == 2.9);
	}
	device_free(&d);
}

TEST(device_concurrent_copies_get_lanes)
{
	struct trace_writer *tw = mem_trace();
	struct device_tl d;
	struct ev evs[64];
	const struct ev *x, *y;
	int n;

	CHECK_EQ_INT(device_init(&d, tw), 0);
	/* two D2H copies on different streams overlapping in time */
	device_launch(&d, 10, 11, 7, 0x1, OP_D2H, 100, BASE + 1000, BASE + 1000);
	device_launch(&d, 10, 12, 8, 0x2, OP_D2H, 100, BASE + 1200, BASE + 1200);
	device_complete(&d, 10, 7, 0x1, BASE + 3000);
	device_complete(&d, 10, 8, 0x2, BASE + 3200);
	device_finish(&d);
	n = read_events(tw, evs, 64);
	x = device_span(evs, n, 7);
	y = device_span(evs, n, 8);
	CHECK(x && y);
	if (x && y) {
		/* overlapping copies must not share a tid */
		CHECK(x->tid != y->tid);
		CHECK_EQ_INT(x->tid / 100, 2);	/* DtoH lanes: 200 + lane */
		CHECK_EQ_INT(y->tid / 100, 2);
	}
	device_free(&d);
}

/*
 * Void launches on one in-order stream: no key for the computes, a key for a D2H copy. The
 * earliest evidence ends them: a later op's callback ends the ops before it, a query true ends
 * what was launched before its entry, a synchronize's return the rest.
 */
TEST(device_ends_come_from_callbacks_queries_and_synchronize)
{
	struct trace_writer *tw = mem_trace();
	struct device_tl d;
	struct ev evs[64];
	const struct ev *v;
	uint64_t c1, c2, c3, c4;
	int n;

	CHECK_EQ_INT(device_init(&d, tw), 0);
	c1 = device_new_corr(&d);
	c2 = device_new_corr(&d);
	CHECK(c1 != c2 && c1 > 0xffffffffffffull && c2 < (1ull << 53));
	struct dev_launch l1 = { .pid = 10, .tid = 11, .corr = c1, .stream = 0xA, .op = OP_COMPUTE,
				 .ts = BASE + 1000, .submit = BASE + 1100, .name = "fused_add#0" };
	struct dev_launch l2 = { .pid = 10, .tid = 11, .corr = c2, .stream = 0xA, .op = OP_COMPUTE,
				 .ts = BASE + 1200, .submit = BASE + 1300 };
	struct dev_launch l3 = { .pid = 10, .tid = 11, .key = 0x7000, .stream = 0xA, .op = OP_D2H,
				 .bytes = 4096, .ts = BASE + 1400, .submit = BASE + 1500 };
	device_launch_op(&d, &l1);
	device_launch_op(&d, &l2);
	device_launch_op(&d, &l3);
	/* the copy's callback: it and both computes before it on the stream are done */
	device_complete(&d, 10, 0x7000, 0, BASE + 5000);
	CHECK_EQ_INT(d.st.matched, 3);
	CHECK_EQ_INT(d.queued, 0);

	/* a query true ends what was launched before its entry, not what came after */
	c3 = device_new_corr(&d);
	c4 = device_new_corr(&d);
	struct dev_launch l4 = { .pid = 10, .tid = 11, .corr = c3, .stream = 0xA, .op = OP_COMPUTE,
				 .ts = BASE + 6000, .submit = BASE + 6100 };
	struct dev_launch l5 = { .pid = 10, .tid = 11, .corr = c4, .stream = 0xA, .op = OP_COMPUTE,
				 .ts = BASE + 8000, .submit = BASE + 8100 };
	device_launch_op(&d, &l4);
	device_launch_op(&d, &l5);
	device_stream_done(&d, 10, 0xA, BASE + 7000, BASE + 7050, END_QUERY);
	CHECK_EQ_INT(d.st.matched, 4);
	/* another stream's synchronize ends nothing here */
	device_stream_done(&d, 10, 0xB, BASE + 9000, BASE + 9500, END_SYNC);
	CHECK_EQ_INT(d.st.matched, 4);
	device_stream_done(&d, 10, 0xA, BASE + 9000, BASE + 9900, END_SYNC);
	CHECK_EQ_INT(d.st.matched, 5);
	/* a launch from before that synchronize's entry, reaching us late, ends at it too */
	struct dev_launch l6 = { .pid = 10, .tid = 12, .corr = device_new_corr(&d), .stream = 0xA,
				 .op = OP_COMPUTE, .ts = BASE + 8500, .submit = BASE + 8600 };
	device_launch_op(&d, &l6);
	CHECK_EQ_INT(d.st.matched, 6);
	/* the copy's callback after the sync ended it is no orphan */
	struct dev_launch l7 = { .pid = 10, .tid = 11, .key = 0x7100, .stream = 0xA, .op = OP_H2D,
				 .bytes = 64, .ts = BASE + 10000, .submit = BASE + 10100 };
	device_launch_op(&d, &l7);
	device_stream_done(&d, 10, 0xA, BASE + 10200, BASE + 10300, END_SYNC);
	device_complete(&d, 10, 0x7100, 0, BASE + 10400);
	CHECK_EQ_INT(d.st.matched, 7);
	device_finish(&d);
	CHECK_EQ_INT(d.st.launches_unmatched, 0);
	CHECK_EQ_INT(d.st.completions_unmatched, 0);

	n = read_events(tw, evs, 64);
	/* compute 1: named by its kernel, ends where compute 2 could start (its submission) */
	v = device_span(evs, n, (double)c1);
	CHECK(v);
	if (v) {
		CHECK_STR(v->name, "fused_add#0");
		CHECK_STR(v->end, "callback");
		CHECK(v->ts == 1.1 && v->dur == 0.2);
	}
	v = device_span(evs, n, (double)c2);
	CHECK(v);
	if (v) {
		CHECK_STR(v->name, "Spyre compute");
		CHECK(v->ts == 1.3 && v->dur == 0.2);
	}
	v = device_span(evs, n, (double)0x7000);
	CHECK(v);
	if (v) {
		CHECK_STR(v->end, "callback");
		CHECK(v->ts == 1.5 && v->dur == 3.5);
	}
	v = device_span(evs, n, (double)c3);
	CHECK(v);
	if (v) {
		CHECK_STR(v->end, "query");
		CHECK(v->ts == 6.1 && v->dur == 0.95);
	}
	v = device_span(evs, n, (double)c4);
	CHECK(v);
	if (v) {
		CHECK_STR(v->end, "synchronize");
		CHECK(v->ts == 8.1 && v->dur == 1.8);
	}
	v = device_span(evs, n, (double)0x7100);
	CHECK(v);
	if (v)
		CHECK_STR(v->end, "synchronize");
	device_free(&d);
}

/* Pending ops no evidence ended are counted as in flight, as keyed ones always were. */
TEST(device_keyless_ops_without_evidence_are_unmatched)
{
	struct trace_writer *tw = mem_trace();
	struct device_tl d;
	struct ev evs[16];

	CHECK_EQ_INT(device_init(&d, tw), 0);
	struct dev_launch l = { .pid = 10, .tid = 11, .corr = device_new_corr(&d), .stream = 0xA,
				.op = OP_COMPUTE, .ts = BASE + 1000, .submit = BASE + 1100 };
	device_launch_op(&d, &l);
	/* a query that said false is no evidence: the consumer never passes it on; a sync
	 * entered before the launch proves nothing about it */
	device_stream_done(&d, 10, 0xA, BASE + 900, BASE + 950, END_SYNC);
	device_finish(&d);
	CHECK_EQ_INT(d.st.matched, 0);
	CHECK_EQ_INT(d.st.launches_unmatched, 1);
	CHECK_EQ_INT(read_events(tw, evs, 16) >= 0, 1);
	device_free(&d);
}

/*
 * --switch-output: a launch in flight when the run goes on in the next file ends there, its
 * device span whole and without an arrow (its host span is in the file before: an arrow would
 * bind to no slice); one launched after the switch keeps its arrow; the tracks are named again.
 */
TEST(device_switch_carries_work_in_flight_into_the_next_file)
{
	struct trace_writer *tw1 = mem_trace(), *tw2 = mem_trace();
	struct device_tl d;
	struct ev evs[32];
	int n, flows = 0, names = 0;

	CHECK_EQ_INT(device_init(&d, tw1), 0);
	device_launch(&d, 10, 11, 1, 0xAAA, OP_COMPUTE, 0, BASE + 1000, BASE + 1200);
	device_complete(&d, 10, 1, 0xAAA, BASE + 1500);	/* a span in the first file */
	device_launch(&d, 10, 11, 2, 0xAAA, OP_COMPUTE, 0, BASE + 2000, BASE + 2100);
	device_switch(&d, tw2);
	device_launch(&d, 10, 11, 3, 0xAAA, OP_COMPUTE, 0, BASE + 3000, BASE + 3100);
	device_complete(&d, 10, 2, 0xAAA, BASE + 2500);
	device_complete(&d, 10, 3, 0xAAA, BASE + 3500);
	device_finish(&d);
	CHECK_EQ_INT(d.st.matched, 3);
	CHECK_EQ_INT(d.st.launched_prev_file, 1);
	CHECK_EQ_INT(d.st.launches_unmatched, 0);
	n = read_events(tw1, evs, 32);
	CHECK(device_span(evs, n, 1) != NULL);
	n = read_events(tw2, evs, 32);
	CHECK(device_span(evs, n, 2) != NULL);
	CHECK(device_span(evs, n, 3) != NULL);
	for (int i = 0; i < n; i++) {
		flows += evs[i].ph == 's';
		names += evs[i].ph == 'M';
		if (evs[i].ph == 's')
			CHECK(evs[i].ts == 3.0);	/* launch 3's, at its entry */
	}
	CHECK_EQ_INT(flows, 1);
	CHECK(names >= 2);	/* the device and its stream, named in the new file */
	device_free(&d);
}
