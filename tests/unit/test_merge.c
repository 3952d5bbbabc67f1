// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "offline/check.h"
#include "cmd/env.h"
#include "offline/jsonparse.h"
#include "output/jsonw.h"
#include "offline/merge.h"
#include "tracefile.h"
#include "unit.h"


/* A trace to merge, its text in memory */
static struct merge_src *src_text(const char *name, const char *text, size_t len)
{
	struct merge_src *src = calloc(1, sizeof(*src));
	char *copy = malloc(len + 1);

	if (!src || !copy) {
		free(src);
		free(copy);
		return NULL;
	}
	memcpy(copy, text, len);
	copy[len] = 0;
	*src = (struct merge_src){ .name = name, .data = copy, .len = len };
	return src;
}

static void src_free(struct merge_src *src)
{
	if (src)
		free((char *)src->data);
	free(src);
}

static struct merge_src *load_fixture(const char *name)
{
	struct merge_src *src;
	struct trace_file tf;
	char path[600], err[160];

	snprintf(path, sizeof(path), "%s/%s", unit_traces_dir(), name);
	if (trace_file_read(path, &tf, err, sizeof(err))) {
		fprintf(stderr, "    %s: %s\n", path, err);
		return NULL;
	}
	src = src_text(name, tf.data, tf.len);
	trace_file_free(&tf);
	return src;
}

static struct merge_src *parse_text(const char *text)
{
	return src_text("trace.json", text, strlen(text));
}

/* @src's text parsed, or NULL */
static struct jv *src_doc(const struct merge_src *src)
{
	char err[160];
	struct jv *doc = jv_parse(src->data, src->len, err, sizeof(err));

	if (!doc)
		fprintf(stderr, "    %s\n", err);
	return doc;
}

/* Merge two traces in memory; returns the parsed result (NULL on error, *ret says why). */
static struct jv *merge_mem(const struct merge_src *ours, const struct merge_src *kineto,
			    struct merge_info *mi, int *ret, char *err, size_t errlen)
{
	struct jw *w = jw_memopen();
	struct jv *out = NULL;
	struct merge *m = NULL;
	const char *data;
	size_t len;

	struct merge_src o = *ours, k = *kineto;

	o.name = "ours.json";
	k.name = "kineto.json";
	*ret = merge_plan(&o, &k, NULL, mi, &m, err, errlen);
	if (!*ret)
		*ret = merge_write(m, w, err, errlen);
	merge_free(m);
	data = jw_mem_data(w, &len);
	if (!*ret) {
		char perr[160];

		out = jv_parse(data, len, perr, sizeof(perr));
		if (!out)
			fprintf(stderr, "    merged output does not parse: %s\n", perr);
	}
	jw_close(w);
	return out;
}

/* The one event with this name, ph, pid (-1: any) and tid (-1: any); NULL unless exactly one. */
static const struct jv *find(const struct jv *doc, const char *ph, const char *name, long pid,
			     long tid)
{
	const struct jv *ev, *hit = NULL;
	int n = 0;

	jv_foreach(ev, jv_get(doc, "traceEvents")) {
		double p = -2, t = -2;

		jv_get_num(ev, "pid", &p);
		jv_get_num(ev, "tid", &t);
		if (strcmp(jv_get_str(ev, "ph") ?: "", ph) || strcmp(jv_get_str(ev, "name") ?: "", name))
			continue;
		if ((pid >= 0 && p != pid) || (tid >= 0 && t != tid))
			continue;
		hit = ev;
		n++;
	}
	return n == 1 ? hit : NULL;
}

static const char *raw(const struct jv *v)
{
	return v && v->type == JV_NUMBER ? v->num.raw : "(none)";
}

static size_t count_ph(const struct jv *doc, const char *ph, const char *name, long pid)
{
	const struct jv *ev;
	size_t n = 0;

	jv_foreach(ev, jv_get(doc, "traceEvents")) {
		double p = -2;

		jv_get_num(ev, "pid", &p);
		if (!strcmp(jv_get_str(ev, "ph") ?: "", ph) &&
		    (!name || !strcmp(jv_get_str(ev, "name") ?: "", name)) && (pid < 0 || p == pid))
			n++;
	}
	return n;
}

TEST(merge_fixtures_shift_remap_and_keep_kineto)
{
	struct merge_src *ours = load_fixture("spyre-sample.json");
	struct merge_src *kin = load_fixture("kineto-sample.json");
	struct check_result rk, rm;
	struct merge_info mi;
	const struct jv *ev, *m;
	struct jv *out, *in;
	char err[256];
	int ret;

	CHECK(ours && kin);
	if (!ours || !kin)
		goto out_free;
	out = merge_mem(ours, kin, &mi, &ret, err, sizeof(err));
	CHECK_EQ_INT(ret, 0);
	CHECK(out != NULL);
	if (!out)
		goto out_free;

	/* clocks: ours started 432000.001 s after Kineto's base */
	CHECK_EQ_INT(mi.shift_ns, 432000001000000LL);
	CHECK(!mi.kineto_absolute);
	CHECK_STR(raw(jv_get(out, "baseTimeNanoseconds")), "1798746264000000000");
	m = jv_get(out, "spyreMerged");
	CHECK_STR(raw(jv_get(m, "shiftNs")), "432000001000000");
	CHECK_STR(raw(jv_get(m, "spyreRealtimeBaseNs")), "1799178264001000000");
	CHECK_STR(jv_get_str(m, "kinetoTimestamps"), "relative");
	CHECK_STR(jv_get_str(m, "kinetoTrace"), "kineto.json");

	/* exactly one deviceProperties entry: Kineto's */
	CHECK_EQ_INT(jv_len(jv_get(out, "deviceProperties")), 1);
	CHECK_STR(jv_get_str(jv_first(jv_get(out, "deviceProperties")), "name"), "IBM Spyre");
	/* Kineto's other members and ours survive; traceName is Kineto's */
	CHECK_STR(jv_get_str(out, "traceName"), "/tmp/spyre-job/kineto.pt.trace.json");
	CHECK(jv_get(jv_get(out, "distributedInfo"), "world_size") != NULL);
	CHECK(jv_get(jv_get(out, "spyreStats"), "deviceSpans") != NULL);
	CHECK_STR(jv_get_str(jv_get(out, "spyreTracer"), "clock"), "CLOCK_MONOTONIC");

	/* our launch, on the job's own pid/tid, now inside Kineto's aten::linear of step 2 */
	ev = find(out, "X", "aiuLaunchComputeStream", 4242, 4242);
	CHECK(ev == NULL);	/* Kineto has one too: two in the merged trace */
	CHECK_EQ_INT(count_ph(out, "X", "aiuLaunchComputeStream", 4242), 2);
	ev = find(out, "X", "aiuLaunchControlBlocks", 4242, 4242);
	CHECK_STR(raw(jv_get(ev, "ts")), "432000001155.000");
	CHECK_STR(raw(jv_get(ev, "dur")), "5.000");
	/* 210.1235 µs is 210123.5 ns: rounded half away from zero */
	ev = find(out, "X", "aiuScheduleWait", 4242, 4250);
	CHECK_STR(raw(jv_get(ev, "ts")), "432000001210.124");

	/*
	 * our device pid 0 clashed with Kineto's device 0: moved to 1, renamed; our smallest
	 * correlation (1) moved just past Kineto's largest (1)
	 */
	CHECK_EQ_INT(mi.ndev, 1);
	CHECK_EQ_INT(mi.dev_from[0], 0);
	CHECK_EQ_INT(mi.dev_to[0], 1);
	CHECK_EQ_INT(mi.corr_offset, 1);
	ev = find(out, "X", "Spyre compute", 1, 0);
	CHECK(ev != NULL);
	CHECK_STR(raw(jv_get(ev, "ts")), "432000001180.000");
	CHECK_STR(raw(jv_get(jv_get(ev, "args"), "correlation")), "2");
	CHECK_STR(raw(jv_get(jv_get(ev, "args"), "device")), "0");
	CHECK_EQ_INT(count_ph(out, "X", "Spyre compute", 0), 0);
	ev = find(out, "M", "process_name", 1, -1);
	CHECK_STR(jv_get_str(jv_get(ev, "args"), "name"), "Spyre 0 (spyre-bpftrace)");
	ev = find(out, "f", "ac2g", 1, 200);
	CHECK_STR(raw(jv_get(ev, "id")), "3");
	CHECK_STR(raw(jv_get(ev, "ts")), "432000001300.000");

	/* Kineto's events are untouched */
	ev = find(out, "X", "linear_fwd_8x64x64", 0, 1);
	CHECK_STR(raw(jv_get(ev, "ts")), "432000000180.000");
	CHECK_STR(raw(jv_get(jv_get(ev, "args"), "correlation")), "1");
	ev = find(out, "f", "ac2g", 0, 1);
	CHECK_STR(raw(jv_get(ev, "id")), "1");
	CHECK(jv_get(find(out, "X", "aten::linear", 4242, 4242), "ts") == NULL);	/* two */
	CHECK_EQ_INT(count_ph(out, "X", "aten::linear", 4242), 2);

	/* names of tracks Kineto names are Kineto's: one process_name for the job, one thread_name */
	CHECK_EQ_INT(count_ph(out, "M", "process_name", 4242), 1);
	CHECK_STR(jv_get_str(jv_get(find(out, "M", "process_name", 4242, -1), "args"), "name"),
		  "python3");
	CHECK_STR(jv_get_str(jv_get(find(out, "M", "thread_name", 4242, 4242), "args"), "name"),
		  "thread 4242 (python3)");
	CHECK_STR(jv_get_str(jv_get(find(out, "M", "thread_name", 4242, 4250), "args"), "name"),
		  "train-0");
	CHECK_EQ_INT(mi.dropped_meta, 4);
	CHECK_EQ_INT(mi.kineto_events, 21);
	CHECK_EQ_INT(mi.spyre_events, 22 - 4);
	CHECK_EQ_INT(jv_len(jv_get(out, "traceEvents")), 21 + 22 - 4);
	CHECK(mi.overlap_known && mi.gap_us == 0);

	/* merging adds no problem: the merged trace has exactly Kineto's own (its pid "" marker) */
	in = src_doc(kin);
	CHECK_EQ_INT(check_doc(in, "kineto", NULL, &rk), 2);
	jv_free(in);
	CHECK_EQ_INT(check_doc(out, "merged", NULL, &rm), 2);
	CHECK_EQ_INT(rm.by_kind[CK_BAD_PID_TID], 2);
	jv_free(out);
out_free:
	src_free(ours);
	src_free(kin);
}

TEST(merge_absolute_kineto_and_clock_errors)
{
	static const char ours_text[] =
		"{\"baseTimeNanoseconds\":1799178264001000000,\"spyreTracer\":{\"realtimeBaseNs\":"
		"1799178264001000000},\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"privateuse1_runtime\","
		"\"name\":\"aiuMalloc\",\"pid\":7,\"tid\":7,\"ts\":-0.0005,\"dur\":1.5}]}";
	/* pre-2023 Kineto: no base, ts in µs since the epoch, object or bare array */
	static const char abs_text[] =
		"{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":7,"
		"\"tid\":7,\"ts\":1799178264000900.5,\"dur\":100}]}";
	static const char rel_text[] =
		"{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":7,"
		"\"tid\":7,\"ts\":900.5,\"dur\":100}]}";
	static const char far_text[] =
		"{\"baseTimeNanoseconds\":1000000000000000000,\"traceEvents\":[]}";
	struct merge_src *ours = parse_text(ours_text), *abs = parse_text(abs_text);
	struct merge_src *rel = parse_text(rel_text), *far = parse_text(far_text);
	struct jv *out;
	struct merge_info mi;
	const struct jv *ev;
	char err[256];
	int ret;

	CHECK(ours && abs && rel && far);
	if (!ours || !abs || !rel || !far)
		goto out;
	out = merge_mem(ours, abs, &mi, &ret, err, sizeof(err));
	CHECK_EQ_INT(ret, 0);
	CHECK(mi.kineto_absolute);
	CHECK_EQ_INT(mi.shift_ns, 1799178264001000000LL);
	CHECK_STR(raw(jv_get(out, "baseTimeNanoseconds")), "0");
	CHECK_STR(jv_get_str(jv_get(out, "spyreMerged"), "kinetoTimestamps"), "absolute");
	/* -0.0005 µs rounds to -1 ns: exact integer arithmetic, no float */
	ev = find(out, "X", "aiuMalloc", 7, 7);
	CHECK_STR(raw(jv_get(ev, "ts")), "1799178264000999.999");
	ev = find(out, "X", "aten::mm", 7, 7);
	CHECK_STR(raw(jv_get(ev, "ts")), "1799178264000900.5");
	CHECK(jv_len(jv_get(out, "deviceProperties")) == 1);
	CHECK(mi.ndev == 0 && mi.corr_offset == 0);
	jv_free(out);

	/* the bare array form of the same Kineto trace */
	{
		struct merge_src *arr = parse_text("[{\"ph\":\"X\",\"name\":\"a\",\"pid\":7,\"tid\":7,"
					    "\"ts\":1799178264000900.5,\"dur\":1}]");

		out = merge_mem(ours, arr, &mi, &ret, err, sizeof(err));
		CHECK_EQ_INT(ret, 0);
		CHECK(mi.kineto_absolute);
		jv_free(out);
		src_free(arr);
	}

	/* relative ts without a base: no way to align */
	out = merge_mem(ours, rel, &mi, &ret, err, sizeof(err));
	CHECK_EQ_INT(ret, -ERANGE);
	CHECK(out == NULL);
	CHECK(strstr(err, "no baseTimeNanoseconds") != NULL);

	/* bases 25 years apart: refused rather than written with meaningless ts */
	out = merge_mem(ours, far, &mi, &ret, err, sizeof(err));
	CHECK_EQ_INT(ret, -ERANGE);
	CHECK(strstr(err, "days apart") != NULL);

	/* the arguments swapped: ours has no spyreTracer, the other one does */
	out = merge_mem(abs, ours, &mi, &ret, err, sizeof(err));
	CHECK_EQ_INT(ret, -EINVAL);
	CHECK(strstr(err, "give ours first") != NULL);

	/* ours without any clock anchor */
	out = merge_mem(rel, abs, &mi, &ret, err, sizeof(err));
	CHECK_EQ_INT(ret, -EINVAL);
	CHECK(strstr(err, "clock is unknown") != NULL);
out:
	src_free(ours);
	src_free(abs);
	src_free(rel);
	src_free(far);
}

TEST(merge_files_writes_refuses_overwrite_and_gzips)
{
	char dir[] = "/tmp/spyre-merge-XXXXXX", ours[600], kin[600], out[700], gz[700];
	struct trace_file tf;
	struct jv *doc;
	char err[160];
	FILE *msg;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(ours, sizeof(ours), "%s/spyre-sample.json", unit_traces_dir());
	snprintf(kin, sizeof(kin), "%s/kineto-sample.json", unit_traces_dir());
	snprintf(out, sizeof(out), "%s/merged.json", dir);
	snprintf(gz, sizeof(gz), "%s/merged.json.gz", dir);
	msg = fopen("/dev/null", "w");
	CHECK(msg != NULL);
	if (!msg)
		return;

	CHECK_EQ_INT(merge_files(ours, kin, out, false, NULL, msg), EXIT_OK);
	CHECK_EQ_INT(merge_files(ours, kin, out, false, NULL, msg), EXIT_OUTPUT);
	CHECK_EQ_INT(merge_files(ours, kin, out, true, NULL, msg), EXIT_OK);
	CHECK_EQ_INT(merge_files(ours, kin, gz, false, NULL, msg), EXIT_OK);
	CHECK_EQ_INT(trace_file_read(gz, &tf, err, sizeof(err)), 0);
	CHECK(tf.gzip);
	doc = jv_parse(tf.data, tf.len, err, sizeof(err));
	CHECK(doc != NULL);
	CHECK_EQ_INT(jv_len(jv_get(doc, "traceEvents")), 39);
	jv_free(doc);
	trace_file_free(&tf);
	/* a failed merge leaves no output behind */
	snprintf(out, sizeof(out), "%s/bad.json", dir);
	CHECK_EQ_INT(merge_files(kin, ours, out, false, NULL, msg), EXIT_ERROR);
	CHECK(access(out, F_OK) != 0);
	CHECK_EQ_INT(merge_files(ours, "/nonexistent.json", out, false, NULL, msg), EXIT_ERROR);
	fclose(msg);

	unlink(gz);
	snprintf(out, sizeof(out), "%s/merged.json", dir);
	unlink(out);
	rmdir(dir);
}

TEST(merge_nests_our_overhanging_span_in_the_profilers_and_moves_what_cannot)
{
	/* Kineto: aten::linear [100, 200] on thread 7, [300, 400] on thread 8; ours (base 1 µs
	 * later): addmm overhangs linear's end by 0.6 µs on 7, by 10 µs on 8 */
	struct merge_src *ours = parse_text(
		"{\"baseTimeNanoseconds\":1001000,\"spyreTracer\":{\"realtimeBaseNs\":1001000},"
		"\"traceEvents\":["
		"{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":5,\"tid\":8,\"ts\":0,"
		"\"args\":{\"name\":\"worker\"}},"
		"{\"ph\":\"X\",\"cat\":\"privateuse1_runtime\",\"name\":\"aten::addmm\",\"pid\":5,"
		"\"tid\":7,\"ts\":149.000,\"dur\":50.600},"
		"{\"ph\":\"X\",\"cat\":\"privateuse1_runtime\",\"name\":\"aten::addmm\",\"pid\":5,"
		"\"tid\":8,\"ts\":349.000,\"dur\":60.000}]}");
	struct merge_src *kin = parse_text(
		"{\"baseTimeNanoseconds\":1000000,\"traceEvents\":["
		"{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":5,\"tid\":8,\"ts\":0,"
		"\"args\":{\"name\":\"python\"}},"
		"{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::linear\",\"pid\":5,\"tid\":7,"
		"\"ts\":100,\"dur\":100},"
		"{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::linear\",\"pid\":5,\"tid\":8,"
		"\"ts\":300,\"dur\":100}]}");
	const struct jv *ev, *n;
	struct check_result r;
	struct merge_info mi;
	struct jv *out;
	char err[256];
	int ret;

	CHECK(ours && kin);
	if (!ours || !kin)
		goto out_free;
	out = merge_mem(ours, kin, &mi, &ret, err, sizeof(err));
	CHECK_EQ_INT(ret, 0);
	if (!out)
		goto out_free;
	/* thread 7: ours clamped to end with linear, at 200 */
	ev = find(out, "X", "aten::addmm", 5, 7);
	CHECK_STR(raw(jv_get(ev, "ts")), "150.000");
	CHECK_STR(raw(jv_get(ev, "dur")), "50.000");
	CHECK_EQ_INT(mi.fit.adjusted, 1);
	CHECK_EQ_INT(mi.fit.max_adjust_ns, 600);
	/* thread 8: 10 µs is past the 2 µs tolerance: a track of its own, times unchanged,
	 * named after our thread with the suffix */
	CHECK_EQ_INT(mi.fit.lanes_moved, 1);
	ev = find(out, "X", "aten::addmm", 5, 8 + MERGE_OWN_TRACK_TID);
	CHECK_STR(raw(jv_get(ev, "ts")), "350.000");
	CHECK_STR(raw(jv_get(ev, "dur")), "60.000");
	n = find(out, "M", "thread_name", 5, 8 + MERGE_OWN_TRACK_TID);
	CHECK_STR(jv_get_str(jv_get(n, "args"), "name"), "worker (spyre-bpftrace)");
	CHECK_STR(raw(jv_get(jv_get(jv_get(out, "spyreMerged"), "nesting"), "ownTracks")), "1");
	/* and check finds nothing left to say */
	CHECK_EQ_INT(check_doc(out, "merged", NULL, &r), 0);
	jv_free(out);
out_free:
	src_free(ours);
	src_free(kin);
}

/*
 * Two ranks of ours: the same correlations (5 and 6) and the same arrow ids. The merged
 * trace keeps one arrow per id: ours move past the other rank's, and still join each launch to
 * its own device span.
 */
TEST(merge_of_two_of_ours_gives_every_arrow_its_own_id)
{
#define RANK(pid, base)										\
	"{\"deviceProperties\":[{\"id\":0}],\"baseTimeNanoseconds\":" base ","			\
	"\"spyreTracer\":{\"realtimeBaseNs\":" base "},\"traceEvents\":["			\
	"{\"ph\":\"X\",\"cat\":\"privateuse1_runtime\",\"name\":\"aiuLaunchComputeStream\","	\
	"\"pid\":" pid ",\"tid\":" pid ",\"ts\":10.000,\"dur\":20.000,"			\
	"\"args\":{\"correlation\":5}},"							\
	"{\"ph\":\"X\",\"cat\":\"privateuse1_runtime\",\"name\":\"aiuLaunchComputeStream\","	\
	"\"pid\":" pid ",\"tid\":" pid ",\"ts\":40.000,\"dur\":20.000,"			\
	"\"args\":{\"correlation\":6}},"							\
	"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"Spyre compute\",\"pid\":0,\"tid\":0,"	\
	"\"ts\":35.000,\"dur\":10.000,\"args\":{\"device\":0,\"stream\":0,\"correlation\":5}},"	\
	"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"Spyre compute\",\"pid\":0,\"tid\":0,"	\
	"\"ts\":65.000,\"dur\":10.000,\"args\":{\"device\":0,\"stream\":0,\"correlation\":6}},"	\
	"{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":1000000000000001,\"pid\":" pid	\
	",\"tid\":" pid ",\"ts\":10.000},"							\
	"{\"ph\":\"f\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":1000000000000001,\"pid\":0,"	\
	"\"tid\":0,\"ts\":35.000,\"bp\":\"e\"},"						\
	"{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":1000000000000002,\"pid\":" pid	\
	",\"tid\":" pid ",\"ts\":40.000},"							\
	"{\"ph\":\"f\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":1000000000000002,\"pid\":0,"	\
	"\"tid\":0,\"ts\":65.000,\"bp\":\"e\"}]}"
	struct merge_src *r0 = parse_text(RANK("100", "1799178264001000000"));
	struct merge_src *r1 = parse_text(RANK("200", "1799178264000000000"));
#undef RANK
	struct check_result res;
	struct merge_info mi;
	const struct jv *ev;
	struct jv *out, *in;
	char err[256];
	int ret;

	CHECK(r0 && r1);
	if (!r0 || !r1)
		goto out;
	/* each alone is clean; merged without the move, the two ranks' arrows would share ids */
	in = src_doc(r0);
	CHECK_EQ_INT(check_doc(in, "r0", NULL, &res), 0);
	jv_free(in);
	out = merge_mem(r0, r1, &mi, &ret, err, sizeof(err));
	CHECK_EQ_INT(ret, 0);
	CHECK(out != NULL);
	if (!out)
		goto out;
	/* ours start just past the other rank's: ids stay near their base, below 2^53 */
	CHECK_EQ_INT(mi.flow_offset, 2);
	CHECK_EQ_INT(mi.corr_offset, 2);
	CHECK_STR(raw(jv_get(jv_get(out, "spyreMerged"), "flowIdOffset")), "2");
	/* our arrows: from our launch (pid 100) to our device, moved to pid 1 */
	ev = find(out, "s", "ac2g", 100, 100);
	CHECK(ev == NULL);	/* two */
	CHECK_EQ_INT(count_ph(out, "s", "ac2g", 100), 2);
	ev = find(out, "f", "ac2g", 1, 0);
	CHECK(ev == NULL);
	CHECK_EQ_INT(count_ph(out, "f", "ac2g", 1), 2);
	jv_foreach(ev, jv_get(out, "traceEvents")) {
		const char *ph = jv_get_str(ev, "ph");
		double pid = -1;

		jv_get_num(ev, "pid", &pid);
		if (strcmp(ph, "s") && strcmp(ph, "f"))
			continue;
		if (pid == 100 || pid == 1)
			CHECK(!strcmp(raw(jv_get(ev, "id")), "1000000000000003") ||
			      !strcmp(raw(jv_get(ev, "id")), "1000000000000004"));
		else
			CHECK(!strcmp(raw(jv_get(ev, "id")), "1000000000000001") ||
			      !strcmp(raw(jv_get(ev, "id")), "1000000000000002"));
	}
	CHECK_EQ_INT(check_doc(out, "merged", NULL, &res), 0);
	CHECK_EQ_INT(res.by_kind[CK_FLOW_DUP], 0);
	jv_free(out);
out:
	src_free(r0);
	src_free(r1);
}

/*
 * Two ranks' traces: each has its rank in distributedInfo (its traced process: targetPid). The
 * merged trace keeps the second's distributedInfo, as every shared member, and lists both by
 * pid in spyreDistributedInfo; a trace that lists several processes adds them all, and a pid
 * both name is listed once (the first input's). One process in all: nothing added.
 */
TEST(merge_of_two_ranks_keeps_each_ranks_distributed_info_by_pid)
{
#define RANK(pid, dist)										\
	"{\"deviceProperties\":[{\"id\":0}],\"baseTimeNanoseconds\":1799178264000000000,"	\
	"\"spyreTracer\":{\"realtimeBaseNs\":1799178264000000000}," dist			\
	"\"spyreStats\":{\"targetPid\":" pid "},\"traceEvents\":["				\
	"{\"ph\":\"X\",\"cat\":\"privateuse1_runtime\",\"name\":\"barrier\",\"pid\":" pid	\
	",\"tid\":" pid ",\"ts\":10.000,\"dur\":20.000,\"args\":{}}]}"
#define INFO(r) "{\"backend\":\"spyre_ccl\",\"rank\":" r ",\"world_size\":2}"
	struct merge_src *r0 = parse_text(RANK("100", "\"distributedInfo\":" INFO("0") ","));
	struct merge_src *r1 = parse_text(RANK("200", "\"distributedInfo\":" INFO("1") ","));
	struct merge_src *many = parse_text(RANK("300", "\"spyreDistributedInfo\":[{\"pid\":300,"
					  "\"backend\":\"spyre_ccl\",\"rank\":2},{\"pid\":100,"
					  "\"backend\":\"spyre_ccl\",\"rank\":9}],"));
#undef RANK
#undef INFO
	const struct jv *list;
	struct merge_info mi;
	struct jv *out;
	char err[256];
	double v;
	int ret;

	CHECK(r0 && r1 && many);
	if (!r0 || !r1 || !many)
		goto out;
	out = merge_mem(r0, r1, &mi, &ret, err, sizeof(err));
	CHECK_EQ_INT(ret, 0);
	CHECK(jv_get_num(jv_get(out, "distributedInfo"), "rank", &v) && v == 1);
	list = jv_get(out, "spyreDistributedInfo");
	CHECK(list && list->type == JV_ARRAY && jv_len(list) == 2);
	if (list && jv_len(list) == 2) {
		CHECK(jv_get_num(jv_first(list), "pid", &v) && v == 100);
		CHECK(jv_get_num(jv_first(list), "rank", &v) && v == 0);
		CHECK(jv_get_num(jv_first(list), "world_size", &v) && v == 2);
		CHECK_STR(jv_get_str(jv_first(list), "backend"), "spyre_ccl");
		CHECK(jv_get_num(jv_first(list)->next, "pid", &v) && v == 200);
		CHECK(jv_get_num(jv_first(list)->next, "rank", &v) && v == 1);
	}
	jv_free(out);

	/* r0 names pid 100 first: the other's entry for 100 is dropped, its 300 kept */
	out = merge_mem(r0, many, &mi, &ret, err, sizeof(err));
	CHECK_EQ_INT(ret, 0);
	list = jv_get(out, "spyreDistributedInfo");
	CHECK(list && jv_len(list) == 2);
	if (list && jv_len(list) == 2) {
		CHECK(jv_get_num(jv_first(list), "rank", &v) && v == 0);
		CHECK(jv_get_num(jv_first(list)->next, "pid", &v) && v == 300);
	}
	jv_free(out);

	/* one process: the trace's own members, nothing added */
	out = merge_mem(r0, r0, &mi, &ret, err, sizeof(err));
	CHECK_EQ_INT(ret, 0);
	CHECK(out && !jv_get(out, "spyreDistributedInfo") && jv_get(out, "distributedInfo"));
	jv_free(out);
out:
	src_free(r0);
	src_free(r1);
	src_free(many);
}

/* Our names at our ts 0, before the other trace's ts 0: at 0, not dropped by Perfetto's sorter. */
TEST(merge_keeps_our_metadata_at_or_after_ts_0)
{
	static const char ours_text[] =
		"{\"baseTimeNanoseconds\":1799178264001000000,\"spyreTracer\":{\"realtimeBaseNs\":"
		"1799178264001000000},\"traceEvents\":["
		"{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":7,\"tid\":7,\"ts\":0.000,"
		"\"args\":{\"name\":\"train-0\"}},"
		"{\"ph\":\"X\",\"cat\":\"privateuse1_runtime\",\"name\":\"aiuMalloc\",\"pid\":7,"
		"\"tid\":7,\"ts\":1500.000,\"dur\":1.5}]}";
	static const char later_text[] =
		"{\"deviceProperties\":[{\"id\":0}],\"baseTimeNanoseconds\":1799178264002000000,"
		"\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\","
		"\"pid\":7,\"tid\":7,\"ts\":400.0,\"dur\":200}]}";
	struct merge_src *ours = parse_text(ours_text), *later = parse_text(later_text);
	struct jv *out;
	struct check_result res;
	struct merge_info mi;
	char err[256];
	int ret;

	CHECK(ours && later);
	if (!ours || !later)
		goto out;
	out = merge_mem(ours, later, &mi, &ret, err, sizeof(err));
	CHECK_EQ_INT(ret, 0);
	CHECK_EQ_INT(mi.shift_ns, -1000000);
	CHECK_STR(raw(jv_get(find(out, "M", "thread_name", 7, 7), "ts")), "0.000");
	CHECK_STR(raw(jv_get(find(out, "X", "aiuMalloc", 7, 7), "ts")), "500.000");
	CHECK_EQ_INT(check_doc(out, "merged", NULL, &res), 0);
	jv_free(out);
out:
	src_free(ours);
	src_free(later);
}

TEST(merge_refuses_an_input_that_changed_between_its_two_passes)
{
	char dir[] = "/tmp/spyre-merge-XXXXXX", ours[64], kin[64];
	struct merge_src *o = load_fixture("spyre-sample.json");
	struct merge_src *k = load_fixture("kineto-sample.json");
	struct merge_src os = { .name = ours }, ks = { .name = kin };
	struct jw *w = jw_memopen();
	struct merge *m = NULL;
	struct merge_info mi;
	char err[256];
	FILE *f;

	CHECK(o && k && mkdtemp(dir) != NULL);
	if (!o || !k)
		goto out;
	snprintf(ours, sizeof(ours), "%s/ours.json", dir);
	snprintf(kin, sizeof(kin), "%s/kin.json", dir);
	f = fopen(ours, "w");
	fwrite(o->data, 1, o->len, f);
	fclose(f);
	f = fopen(kin, "w");
	fwrite(k->data, 1, k->len, f);
	fclose(f);
	CHECK_EQ_INT(merge_plan(&os, &ks, NULL, &mi, &m, err, sizeof(err)), 0);
	/* ours replaced by a trace of other events between the plan and the writing */
	f = fopen(ours, "w");
	fwrite(k->data, 1, k->len, f);
	fclose(f);
	CHECK_EQ_INT(merge_write(m, w, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "ours.json changed while it was merged (22 events read first") != NULL);
	merge_free(m);
	unlink(ours);
	unlink(kin);
	rmdir(dir);
out:
	jw_close(w);
	src_free(o);
	src_free(k);
}
