// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Device timeline: launch/completion matching in either order, lanes, no overlap, flows. */
#include <string.h>
#include "device.h"
#include "jsonparse.h"
#include "jsonw.h"
#include "trace_writer.h"
#include "unit.h"

#define BASE 1000000ull

struct ev {
	char ph;
	char name[48];
	char cat[24];
	unsigned pid, tid;
	double ts, dur, corr, bytes, id;
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
