// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "offline/jsonparse.h"
#include "jv_at.h"
#include "output/trace_writer.h"
#include "unit.h"

#define MONO_BASE	5000000000ull
#define REAL_BASE	1700000000123456789ull

static const struct trace_meta meta = {
	.mono_base_ns = MONO_BASE,
	.real_base_ns = REAL_BASE,
	.trace_name = "unit \"trace\"",
	.tool_version = "0.1-test",
	.hostname = "host1",
	.device_id = 3,
};

static struct trace_writer *begin(void)
{
	struct trace_writer *t = NULL;
	struct jw *w = jw_memopen();

	CHECK(w != NULL);
	CHECK_EQ_INT(trace_begin(&t, w, &meta), 0);
	CHECK(t != NULL);
	return t;
}

/* Finish @t and parse what it wrote; the text is left in *@text (caller frees). */
static struct jv *finish_parse(struct trace_writer *t, const char *extra, char **text)
{
	struct jw *w = trace_jw(t);
	char err[128] = "";
	const char *d;
	size_t len;
	struct jv *v;

	CHECK_EQ_INT(trace_finish(t, extra), 0);
	d = jw_mem_data(w, &len);
	v = jv_parse(d, len, err, sizeof(err));
	if (!v) {
		unit_fail(__FILE__, __LINE__, err);
		fprintf(stderr, "%s\n", d);
	}
	*text = strdup(d);
	CHECK_EQ_INT(jw_close(w), 0);
	return v;
}

static double num(const struct jv *o, const char *key)
{
	double d = -1e300;

	if (!jv_get_num(o, key, &d)) {
		char m[128];

		snprintf(m, sizeof(m), "member \"%s\" missing or not a number", key);
		unit_fail(__FILE__, __LINE__, m);
	}
	return d;
}

static void check_header(const struct jv *v)
{
	const struct jv *dp, *st;

	CHECK_EQ_INT(v->type, JV_OBJECT);
	CHECK_EQ_INT(num(v, "schemaVersion"), 1);
	dp = jv_get(v, "deviceProperties");
	CHECK(dp && dp->type == JV_ARRAY);
	CHECK_EQ_INT(jv_len(dp), 1);
	CHECK_EQ_INT(num(jv_first(dp), "id"), 3);
	CHECK_STR(jv_get_str(jv_first(dp), "name"), "Spyre (AIU)");
	CHECK_STR(jv_get_str(v, "displayTimeUnit"), "ms");
	/* 19 digits do not survive a double: compare the text */
	CHECK_STR(jv_get(v, "baseTimeNanoseconds")->num.raw, "1700000000123456789");
	CHECK_STR(jv_get_str(v, "traceName"), "unit \"trace\"");
	st = jv_get(v, "spyreTracer");
	CHECK(st && st->type == JV_OBJECT);
	CHECK_STR(jv_get_str(st, "version"), "0.1-test");
	CHECK_STR(jv_get_str(st, "hostname"), "host1");
	CHECK_STR(jv_get_str(st, "clock"), "CLOCK_MONOTONIC");
	CHECK_STR(jv_get(st, "monotonicBaseNs")->num.raw, "5000000000");
	CHECK_STR(jv_get(st, "realtimeBaseNs")->num.raw, "1700000000123456789");
	CHECK(jv_get(v, "traceEvents") && jv_get(v, "traceEvents")->type == JV_ARRAY);
}

TEST(trace_empty)
{
	struct trace_writer *t = begin();
	char *text;
	struct jv *v = finish_parse(t, NULL, &text);

	CHECK(v != NULL);
	if (v) {
		check_header(v);
		CHECK_EQ_INT(jv_len(jv_get(v, "traceEvents")), 0);
	}
	CHECK(text[0] == '{');
	jv_free(v);
	free(text);
}

TEST(trace_events)
{
	struct trace_writer *t = begin();
	struct trace_arg args[] = {
		{ .key = "correlation", .type = TA_U64, .u = 42 },
		{ .key = "addr", .type = TA_HEX, .u = 0xdeadbeef },
		{ .key = "delta", .type = TA_I64, .i = -7 },
		{ .key = "kind", .type = TA_STR, .s = "H2D\n\xff" },
		{ .key = "memory bandwidth (GB/s)", .type = TA_DBL, .d = 12.25 },
		{ .key = "unwound", .type = TA_BOOL, .u = 1 },
		{ .key = "returned", .type = TA_BOOL, .u = 0 },
	};
	const struct jv *ev, *e, *a;
	struct jv *v;
	char *text, *p;
	int nx = 0, nm = 0, i;

	trace_process_name(t, 100, "python3", 1);
	trace_thread_name(t, 100, 101, "main \"thr\"", -1);
	trace_process_name(t, 3, "Spyre 3", -1);
	trace_thread_name(t, 3, 7, "Stream 7", 2);
	trace_complete(t, 100, 101, MONO_BASE + 1500, 2000, "aiuLaunchComputeStream",
		       "privateuse1_runtime", args, 7);
	trace_complete(t, 100, 101, MONO_BASE - 2500, 0, "before base", "privateuse1_runtime",
		       NULL, 0);
	trace_flow(t, 's', 42, 100, 101, MONO_BASE + 1500);
	trace_flow(t, 'f', 42, 3, 7, MONO_BASE + 4000);
	trace_complete(t, 3, 7, MONO_BASE + 4000, 123456789, "matmul", "kernel", args, 1);

	v = finish_parse(t, "\"distributedInfo\":{\"rank\":0},\"x\":[1]", &text);
	CHECK(v != NULL);
	if (!v) {
		free(text);
		return;
	}
	check_header(v);
	CHECK_EQ_INT(num(jv_get(v, "distributedInfo"), "rank"), 0);
	CHECK_EQ_INT(jv_len(jv_get(v, "x")), 1);
	ev = jv_get(v, "traceEvents");
	CHECK_EQ_INT(jv_len(ev), 11);

	jv_foreach(e, ev) {
		const char *ph = jv_get_str(e, "ph");

		/* every event: ph, ts, non-negative integer pid/tid */
		CHECK(ph != NULL);
		CHECK(jv_get(e, "ts") && jv_get(e, "ts")->type == JV_NUMBER);
		CHECK(num(e, "pid") >= 0 && num(e, "pid") == (double)(long)num(e, "pid"));
		CHECK(num(e, "tid") >= 0 && num(e, "tid") == (double)(long)num(e, "tid"));
		if (ph && !strcmp(ph, "M"))
			nm++;
		if (ph && !strcmp(ph, "X")) {
			nx++;
			CHECK(num(e, "dur") >= 0);
		}
	}
	CHECK_EQ_INT(nm, 6);	/* 4 names + 2 sort indexes */
	CHECK_EQ_INT(nx, 3);

	e = jv_at(ev, 0);
	CHECK_STR(jv_get_str(e, "name"), "process_name");
	CHECK_EQ_INT(num(e, "pid"), 100);
	CHECK_EQ_INT(num(e, "tid"), 0);
	CHECK_EQ_INT(num(e, "ts"), 0);
	CHECK_STR(jv_get_str(jv_get(e, "args"), "name"), "python3");
	e = jv_at(ev, 1);
	CHECK_STR(jv_get_str(e, "name"), "process_sort_index");
	CHECK_EQ_INT(num(jv_get(e, "args"), "sort_index"), 1);
	e = jv_at(ev, 2);
	CHECK_STR(jv_get_str(e, "name"), "thread_name");
	CHECK_EQ_INT(num(e, "tid"), 101);
	CHECK_STR(jv_get_str(jv_get(e, "args"), "name"), "main \"thr\"");
	CHECK_STR(jv_get_str(jv_at(ev, 3), "name"), "process_name");	/* no sort index */
	CHECK_STR(jv_get_str(jv_at(ev, 5), "name"), "thread_sort_index");
	CHECK_EQ_INT(num(jv_get(jv_at(ev, 5), "args"), "sort_index"), 2);

	e = jv_at(ev, 6);
	CHECK_STR(jv_get_str(e, "ph"), "X");
	CHECK_STR(jv_get_str(e, "cat"), "privateuse1_runtime");
	CHECK_STR(jv_get_str(e, "name"), "aiuLaunchComputeStream");
	CHECK_STR(jv_get(e, "ts")->num.raw, "1.500");
	CHECK_STR(jv_get(e, "dur")->num.raw, "2.000");
	a = jv_get(e, "args");
	CHECK_EQ_INT(jv_len(a), 7);
	CHECK_STR(jv_get(a, "correlation")->num.raw, "42");
	CHECK_STR(jv_get_str(a, "addr"), "0xdeadbeef");
	CHECK_STR(jv_get(a, "delta")->num.raw, "-7");
	CHECK_STR(jv_get_str(a, "kind"), "H2D\n\xef\xbf\xbd");
	CHECK_STR(jv_get(a, "memory bandwidth (GB/s)")->num.raw, "12.25");
	/* an unwound call's flag: a JSON true, not a number or a string */
	CHECK(jv_get(a, "unwound") && jv_get(a, "unwound")->type == JV_BOOL &&
	      jv_get(a, "unwound")->b);
	CHECK(jv_get(a, "returned") && jv_get(a, "returned")->type == JV_BOOL &&
	      !jv_get(a, "returned")->b);

	e = jv_at(ev, 7);
	CHECK_STR(jv_get(e, "ts")->num.raw, "-2.500");
	CHECK_STR(jv_get(e, "dur")->num.raw, "0.000");
	CHECK(jv_get(e, "args") == NULL);

	e = jv_at(ev, 8);
	CHECK_STR(jv_get_str(e, "ph"), "s");
	CHECK_STR(jv_get_str(e, "cat"), "ac2g");
	CHECK_STR(jv_get_str(e, "name"), "ac2g");
	CHECK_EQ_INT(num(e, "id"), 42);
	CHECK_STR(jv_get(e, "ts")->num.raw, "1.500");
	CHECK(jv_get(e, "bp") == NULL);
	e = jv_at(ev, 9);
	CHECK_STR(jv_get_str(e, "ph"), "f");
	CHECK_STR(jv_get_str(e, "bp"), "e");
	CHECK_EQ_INT(num(e, "pid"), 3);
	CHECK_EQ_INT(num(e, "tid"), 7);
	CHECK_STR(jv_get(e, "ts")->num.raw, "4.000");

	e = jv_at(ev, 10);
	CHECK_STR(jv_get(e, "dur")->num.raw, "123456.789");
	CHECK_EQ_INT(jv_len(jv_get(e, "args")), 1);

	/* one event per line: header line, 11 event lines, closing line */
	for (i = 0, p = text; (p = strchr(p, '\n')); p++)
		i++;
	CHECK_EQ_INT(i, 13);
	jv_free(v);
	free(text);
}

TEST(trace_cut_file_is_repairable)
{
	/* every commit point + "]}" must be a valid document: that is what recover relies on */
	struct trace_writer *t = begin();
	struct jw *w = trace_jw(t);
	size_t cuts[4], len, i;
	const char *d;
	char *text;

	for (i = 0; i < 4; i++) {
		jw_mem_data(w, &cuts[i]);
		trace_complete(t, 1, 2, MONO_BASE + i * 1000, 10, "ev", "c", NULL, 0);
	}
	d = jw_mem_data(w, &len);
	for (i = 0; i < 4; i++) {
		char err[128] = "";
		struct jv *v;

		text = malloc(cuts[i] + 3);
		memcpy(text, d, cuts[i]);
		memcpy(text + cuts[i], "]}", 3);
		v = jv_parse(text, cuts[i] + 2, err, sizeof(err));
		CHECK_STR(err, "");
		CHECK_EQ_INT(jv_len(jv_get(v, "traceEvents")), i);
		jv_free(v);
		free(text);
	}
	trace_end(t, NULL);
}

TEST(trace_bytes_per_event)
{
	struct trace_writer *t = begin();
	struct jw *w = trace_jw(t);
	struct trace_arg args[2] = {
		{ .key = "correlation", .type = TA_U64, .u = 123456 },
		{ .key = "stream", .type = TA_U64, .u = 2 },
	};
	size_t before, after, n = 200000, i;
	struct timespec a, b;
	double secs;

	/*
	 * A typical host runtime span half a minute into the trace. The exact text proves there
	 * is no wasted byte: 68 bytes of separator, keys and punctuation plus 7 for two args'
	 * quotes, colons and comma are the minimum for the Kineto keys, the rest is payload
	 * (the long Kineto cat and name dominate).
	 */
	const char *want = ",\n{\"ph\":\"X\",\"cat\":\"privateuse1_runtime\","
			   "\"name\":\"aiuLaunchCompute\","
			   "\"pid\":123456,\"tid\":123470,\"ts\":31234567.890,\"dur\":15.432,"
			   "\"args\":{\"correlation\":123456,\"stream\":2}}";
	size_t payload = strlen("privateuse1_runtime" "aiuLaunchCompute" "123456" "123470"
				"31234567.890" "15.432" "correlation" "123456" "stream" "2");
	const char *d;

	trace_complete(t, 1, 1, MONO_BASE, 1, "first", "c", NULL, 0);
	d = jw_mem_data(w, &before);
	trace_complete(t, 123456, 123470, MONO_BASE + 31234567890ull, 15432, "aiuLaunchCompute",
		       "privateuse1_runtime", args, 2);
	d = jw_mem_data(w, &after);
	printf("    trace: %zu bytes for a runtime span with 2 args (%zu bytes of framing)\n",
	       after - before, after - before - payload);
	CHECK_STR(d + before, want);
	CHECK_EQ_INT(after - before - payload, 68 + 7);
	CHECK(after - before <= 165);

	/* a device span: short cat and name, small pid/tid */
	args[1].u = 1;
	trace_complete(t, 0, 1, MONO_BASE + 31234567890ull, 250000, "matmul", "kernel", args, 2);
	jw_mem_data(w, &before);
	printf("    trace: %zu bytes for a device kernel span with 2 args\n", before - after);
	CHECK(before - after <= 135);

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++) {
		args[0].u = i;
		trace_complete(t, 123456, 123470, MONO_BASE + i * 2345, 1543 + i % 1000,
			       "aiuLaunchCompute", "privateuse1_runtime", args, 2);
		if ((i & 8191) == 8191) {
			/* keep the memory writer small; only formatting speed is measured */
			trace_end(t, NULL);
			t = begin();
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	printf("    trace: %.2f M trace_complete/s into the memory writer\n",
	       (double)n / secs / 1e6);
	CHECK_EQ_INT(trace_end(t, NULL), 0);
}

/* Text after @from, up to the end of what @w holds. */
static char *since(struct jw *w, size_t from)
{
	size_t len;
	const char *d = jw_mem_data(w, &len);

	return strndup(d + from, len - from);
}

TEST(trace_fmt_same_as_generic)
{
	/* a prepared probe format must write exactly what the generic path writes */
	static const char *const names[] = { "aiuLaunchComputeStream", "na\"me\\\n\xff", "" };
	struct trace_arg args[] = {
		{ .key = "stream", .type = TA_HEX, .u = 0x55aa00000000ull },
		{ .key = "k\"ey", .type = TA_I64, .i = INT64_MIN },
		{ .key = "bytes", .type = TA_U64, .u = UINT64_MAX },
		{ .key = "kind", .type = TA_STR, .s = "H2D\t" },
		{ .key = "bw", .type = TA_DBL, .d = 0.125 },
		{ .key = "correlation", .type = TA_U64, .u = 0 },
	};
	const char *keys[6];
	struct trace_writer *t = begin();
	struct jw *w = trace_jw(t);
	const uint64_t ts[] = { MONO_BASE, MONO_BASE - 1, MONO_BASE + 987654321123ull };

	for (int i = 0; i < 6; i++)
		keys[i] = args[i].key;
	/* past the first event, every event starts with the same separator */
	trace_flow(t, 's', 1, 1, 1, MONO_BASE);
	for (int ni = 0; ni < 3; ni++)
		for (int inst = 0; inst < 2; inst++)
			for (int nargs = 0; nargs <= 6; nargs += 3) {
				struct trace_fmt f;
				size_t a, b;
				char *generic, *fast;

				CHECK_EQ_INT(trace_fmt_init(&f, inst, "privateuse1_runtime",
							    names[ni], keys, nargs), 0);
				jw_mem_data(w, &a);
				if (inst)
					trace_instant(t, 4242, 4243, ts[nargs % 3], names[ni],
						      "privateuse1_runtime", args, nargs);
				else
					trace_complete(t, 4242, 4243, ts[nargs % 3], 1234567,
						       names[ni], "privateuse1_runtime", args,
						       nargs);
				jw_mem_data(w, &b);
				generic = since(w, a);
				trace_event(t, &f, 4242, 4243, ts[nargs % 3], 1234567, args, nargs);
				fast = since(w, b);
				CHECK_STR(fast, generic);
				free(generic);
				free(fast);
				trace_fmt_free(&f);
			}
	CHECK_EQ_INT(trace_fmt_init(&(struct trace_fmt){ 0 }, false, "c", "n", keys,
				    TRACE_FMT_MAX_ARGS + 1), -E2BIG);
	CHECK_EQ_INT(trace_end(t, NULL), 0);
}
