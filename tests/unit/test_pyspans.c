// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * python_function spans from the calls' Python stacks (user/stream/pyspans.c): which frames stay
 * open across calls, where each ends, how they nest, and what is left out.
 */
#include <stdlib.h>
#include <string.h>
#include "offline/jsonparse.h"
#include "output/trace_writer.h"
#include "stream/pyspans.h"
#include "unit.h"

static const struct trace_meta meta = { .mono_base_ns = 0, .real_base_ns = 1, .trace_name = "t",
					.tool_version = "0", .hostname = "h" };

struct span {
	char name[128];
	double ts, dur;
	long long id, parent;
	int tid;
};

/* Write @p's spans into a trace and read them back: how many, into @out (up to @max) */
static int spans_of(struct pyspans *p, struct span *out, int max, uint64_t *written)
{
	struct trace_writer *t = NULL;
	struct jw *w = jw_memopen();
	char err[128];
	const char *d;
	struct jv *v, *e;
	size_t len;
	int n = 0;

	CHECK_EQ_INT(trace_begin(&t, w, &meta), 0);
	*written = pyspans_write(p, t);
	CHECK_EQ_INT(trace_finish(t, NULL), 0);
	d = jw_mem_data(w, &len);
	v = jv_parse(d, len, err, sizeof(err));
	CHECK(v != NULL);
	for (e = jv_first(jv_get(v, "traceEvents")); e && n < max; e = e->next) {
		const char *cat = jv_get_str(e, "cat");
		const struct jv *a = jv_get(e, "args"), *par;

		if (!cat || strcmp(cat, "python_function"))
			continue;
		snprintf(out[n].name, sizeof(out[n].name), "%s", jv_get_str(e, "name"));
		out[n].ts = jv_get(e, "ts")->num.d;
		out[n].dur = jv_get(e, "dur")->num.d;
		out[n].tid = (int)jv_get(e, "tid")->num.d;
		out[n].id = (long long)jv_get(a, "Python id")->num.d;
		par = jv_get(a, "Python parent id");
		out[n].parent = par ? (long long)par->num.d : 0;
		n++;
	}
	jv_free(v);
	CHECK_EQ_INT(jw_close(w), 0);
	return n;
}

static const struct span *find(const struct span *s, int n, const char *name, double ts)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s[i].name, name) && s[i].ts == ts)
			return &s[i];
	return NULL;
}

TEST(pyspans_name_is_the_profilers)
{
	char b[128];

	CHECK_STR(pyspans_name("/x/train.py:57 Model.step", b, sizeof(b)),
		  "/x/train.py(57): Model.step");
	/* a ':' in the file name is not the line's */
	CHECK_STR(pyspans_name("C:/a:b.py:3 f", b, sizeof(b)), "C:/a:b.py(3): f");
	CHECK_STR(pyspans_name("t.py:? f", b, sizeof(b)), "t.py:? f");
}

/*
 * A loop at t.py:10 in main calls step() twice (line 20 in it, which makes two traced calls at
 * lines 21 and 22), then main goes on at line 11 with one call of its own.
 */
TEST(pyspans_frames_span_their_calls_and_nest)
{
	const char *const a[] = { "t.py:21 step", "t.py:10 main", "t.py:1 <module>" };
	const char *const b[] = { "t.py:22 step", "t.py:10 main", "t.py:1 <module>" };
	const char *const c[] = { "t.py:11 main", "t.py:1 <module>" };
	struct pyspans *p = pyspans_new();
	struct span s[32];
	const struct span *mod, *m10, *m11, *s21, *s22;
	uint64_t written;
	int n;

	CHECK(p != NULL);
	/* handed over out of order, as returns come: the sweep sorts by start */
	CHECK_EQ_INT(pyspans_add(p, 7, 8, 3000, 4000, b, 3, true), 0);
	CHECK_EQ_INT(pyspans_add(p, 7, 8, 1000, 2000, a, 3, true), 0);
	/* a call nested in the first one, made from the same Python frames (no Python between) */
	CHECK_EQ_INT(pyspans_add(p, 7, 8, 1200, 1500, a, 3, true), 0);
	CHECK_EQ_INT(pyspans_add(p, 7, 8, 5000, 6000, c, 2, true), 0);
	/* cut short: left out of the spans, counted */
	CHECK_EQ_INT(pyspans_add(p, 7, 8, 7000, 7100, c, 2, false), 0);
	CHECK_EQ_INT(pyspans_left_out(p), 1);
	n = spans_of(p, s, 32, &written);
	CHECK_EQ_INT(n, 5);
	CHECK_EQ_INT(written, 5);
	mod = find(s, n, "t.py(1): <module>", 1.0);
	m10 = find(s, n, "t.py(10): main", 1.0);
	m11 = find(s, n, "t.py(11): main", 5.0);
	s21 = find(s, n, "t.py(21): step", 1.0);
	s22 = find(s, n, "t.py(22): step", 3.0);
	CHECK(mod && m10 && m11 && s21 && s22);
	if (!(mod && m10 && m11 && s21 && s22))
		return;
	/* each from its first call's start to its last call's end (µs) */
	CHECK(mod->dur == 5.0);
	CHECK(m10->dur == 3.0);
	CHECK(s21->dur == 1.0);
	CHECK(s22->dur == 1.0);
	CHECK(m11->dur == 1.0);
	/* nested by ids as the profiler's export does */
	CHECK_EQ_INT(mod->parent, 0);
	CHECK_EQ_INT(m10->parent, mod->id);
	CHECK_EQ_INT(m11->parent, mod->id);
	CHECK_EQ_INT(s21->parent, m10->id);
	CHECK_EQ_INT(s22->parent, m10->id);
	CHECK_EQ_INT(s[0].tid, 8);
	pyspans_free(p);
}

TEST(pyspans_threads_apart)
{
	const char *const a[] = { "t.py:5 work", "t.py:1 run" };
	struct pyspans *p = pyspans_new();
	struct span s[8];
	uint64_t written;

	CHECK_EQ_INT(pyspans_add(p, 1, 2, 1000, 2000, a, 2, true), 0);
	CHECK_EQ_INT(pyspans_add(p, 1, 3, 1500, 2500, a, 2, true), 0);
	/* two threads, two trees: no span of one covers the other's call */
	CHECK_EQ_INT(spans_of(p, s, 8, &written), 4);
	CHECK(find(s, 4, "t.py(1): run", 1.0) && find(s, 4, "t.py(1): run", 1.5));
	CHECK(find(s, 4, "t.py(1): run", 1.0)->tid != find(s, 4, "t.py(1): run", 1.5)->tid);
	/* written once: the calls are gone after */
	CHECK_EQ_INT(pyspans_write(p, NULL), 0);
	pyspans_free(p);
}
