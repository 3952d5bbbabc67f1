// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "offline/check.h"
#include "cmd/env.h"
#include "offline/jsonparse.h"
#include "offline/recover.h"
#include "output/trace_writer.h"
#include "tracefile.h"
#include "unit.h"


static char *slurp(const char *path, size_t *len)
{
	struct trace_file tf;
	char err[128];

	if (trace_file_read(path, &tf, err, sizeof(err))) {
		fprintf(stderr, "    %s: %s\n", path, err);
		return NULL;
	}
	*len = tf.len;
	return tf.data;
}

static struct jv *parse_file(const char *path)
{
	char err[128];
	struct jv *doc;
	size_t len;
	char *buf = slurp(path, &len);

	if (!buf)
		return NULL;
	doc = jv_parse(buf, len, err, sizeof(err));
	if (!doc)
		fprintf(stderr, "    %s: %s\n", path, err);
	free(buf);
	return doc;
}

static void write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK_EQ_INT(write(fd, data, len), len);
	close(fd);
}

static bool exists(const char *path)
{
	struct stat st;

	return !lstat(path, &st);
}

/* ------------------------------------------------------------------------------------------ */

struct expect {
	const char *file;
	enum check_kind kind;	/* CK_NKINDS: expect a clean trace */
	size_t count;
	size_t events;
};

static const struct expect fixtures[] = {
	{ "clean.json", CK_NKINDS, 0, 20 },
	{ "not-object.json", CK_NOT_OBJECT, 1, 0 },
	{ "bare-array.json", CK_BARE_ARRAY, 1, 1 },
	{ "no-trace-events.json", CK_NO_EVENTS, 1, 0 },
	{ "device-properties.json", CK_DEVICE_PROPS, 1, 20 },
	{ "no-base-time.json", CK_NO_BASE_TIME, 1, 20 },
	{ "not-an-event.json", CK_NOT_EVENT, 1, 2 },
	{ "no-ts.json", CK_NO_TS, 3, 3 },
	{ "bad-ph.json", CK_BAD_PH, 4, 4 },
	{ "bad-pid-tid.json", CK_BAD_PID_TID, 4, 4 },
	/* ... and a dur, tts or tdur that is not a number, on any event (Perfetto drops it) */
	{ "bad-dur.json", CK_BAD_DUR, 7, 9 },
	{ "overlap.json", CK_OVERLAP, 2, 11 },
	{ "no-correlation.json", CK_NO_CORRELATION, 2, 2 },
	{ "cmpt-exec.json", CK_CMPT_EXEC, 1, 1 },
	{ "flow-unmatched.json", CK_FLOW_UNMATCHED, 3, 5 },
	{ "flow-no-bp.json", CK_FLOW_NO_BP, 1, 4 },
	{ "flow-off-span.json", CK_FLOW_OFF_SPAN, 2, 5 },
	/* ... and a rename (a later name at a later ts) that is not one */
	{ "metadata-conflict.json", CK_META_CONFLICT, 2, 7 },
	{ "sort-index.json", CK_SORT_INDEX, 3, 4 },
	{ "metadata-order.json", CK_META_ORDER, 1, 4 },
	{ "no-name.json", CK_NO_NAME, 2, 4 },
	/* every event before ts 0: Perfetto drops each */
	{ "negative-ts.json", CK_NEGATIVE_TS, 3, 4 },
	/* no scope, or one other than t, p, g */
	{ "instant-scope.json", CK_INSTANT_SCOPE, 3, 6 },
	{ "flow-no-cat.json", CK_FLOW_NO_CAT, 2, 4 },
	{ "bad-args.json", CK_BAD_ARGS, 2, 3 },
	{ "counter-args.json", CK_COUNTER, 4, 6 },
	/*
	 * two processes' arrows with one id; fine: a hex string id, one id under another name.
	 * Flow v2: a bind_id started twice (once as a hex string), and one below the count of v1
	 * arrows (3); fine: an end and a step of a started one, and bind_id 3
	 */
	{ "flow-duplicate-id.json", CK_FLOW_DUP, 5, 20 },
	{ "flow-invalid-id.json", CK_FLOW_BAD_ID, 2, 6 },
	{ "flow-backwards.json", CK_FLOW_BACKWARDS, 1, 4 },
	{ "flow-no-direction.json", CK_FLOW_NO_DIR, 2, 4 },
	{ "metadata-no-name.json", CK_META_NAME, 3, 4 },
	{ "too-deep.json", CK_TOO_DEEP, 2, 514 },
};

TEST(check_fixtures_find_exactly_their_problem)
{
	bool covered[CK_NKINDS] = {};
	char path[600];

	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		const struct expect *x = &fixtures[i];
		struct check_result res;
		struct jv *doc;
		long n;

		snprintf(path, sizeof(path), "%s/%s", unit_traces_dir(), x->file);
		doc = parse_file(path);
		CHECK(doc != NULL);
		if (!doc)
			continue;
		n = check_doc(doc, x->file, NULL, &res);
		jv_free(doc);
		if (n != (long)x->count || res.events != x->events)
			fprintf(stderr, "    %s: %ld problems, %zu events\n", x->file, n, res.events);
		CHECK_EQ_INT(n, x->count);
		CHECK_EQ_INT(res.problems, x->count);
		CHECK_EQ_INT(res.events, x->events);
		for (int k = 0; k < CK_NKINDS; k++) {
			size_t want = k == (int)x->kind ? x->count : 0;

			if (res.by_kind[k] != want)
				fprintf(stderr, "    %s: %zu x %s, want %zu\n", x->file,
					res.by_kind[k], check_kind_name(k), want);
			CHECK_EQ_INT(res.by_kind[k], want);
		}
		if (x->kind != CK_NKINDS)
			covered[x->kind] = true;
	}
	/* a new kind needs a fixture */
	for (int k = 0; k < CK_NKINDS; k++)
		CHECK(covered[k]);
}

static char *run_check_file(const char *path, int *rc)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	*rc = check_file(path, f);
	fclose(f);
	return text;
}

TEST(check_file_reports_and_exit_codes)
{
	char dir[] = "/tmp/spyre-check-XXXXXX", path[600], gz[600], big[600], cut[600];
	char *text, *buf;
	size_t len = 0;
	gzFile g;
	int rc, fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/clean.json", unit_traces_dir());
	text = run_check_file(path, &rc);
	CHECK_EQ_INT(rc, EXIT_OK);
	CHECK(text && strstr(text, "clean.json: 20 events, 0 problems\n"));
	free(text);

	snprintf(path, sizeof(path), "%s/overlap.json", unit_traces_dir());
	text = run_check_file(path, &rc);
	CHECK_EQ_INT(rc, EXIT_CHECK);
	/* the line names the event, its pid/tid and ts, and the kind */
	CHECK(text && strstr(text, "event 2 (b, pid 100, tid 101, ts 25.000): "));
	CHECK(text && strstr(text, "partially overlaps event 1 (a) [10.000, 30.000]"));
	CHECK(text && strstr(text, "[overlap]\n"));
	CHECK(text && strstr(text, "overlap.json: 11 events, 2 problems\n"));
	free(text);

	/* the same clean trace, gzip'd: detected by its magic, not its name */
	snprintf(path, sizeof(path), "%s/clean.json", unit_traces_dir());
	buf = slurp(path, &len);
	CHECK(buf != NULL);
	snprintf(gz, sizeof(gz), "%s/clean.trace", dir);
	g = gzopen(gz, "wb");
	CHECK(g != NULL);
	CHECK_EQ_INT(gzwrite(g, buf, (unsigned int)len), len);
	CHECK_EQ_INT(gzclose(g), Z_OK);
	text = run_check_file(gz, &rc);
	CHECK_EQ_INT(rc, EXIT_OK);
	CHECK(text && strstr(text, "20 events, 0 problems"));
	free(text);

	/* a cut trace is unparseable: an error, not a list of problems */
	snprintf(cut, sizeof(cut), "%s/cut.json", dir);
	write_file(cut, buf, len / 2);
	text = run_check_file(cut, &rc);
	CHECK_EQ_INT(rc, EXIT_ERROR);
	CHECK(text && !*text);
	free(text);
	free(buf);

	snprintf(path, sizeof(path), "%s/missing.json", dir);
	text = run_check_file(path, &rc);
	CHECK_EQ_INT(rc, EXIT_ERROR);
	free(text);

	/* over the limit: refused from its size, without reading 2 GiB of holes */
	snprintf(big, sizeof(big), "%s/big.json", dir);
	fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ_INT(ftruncate(fd, (off_t)TRACE_FILE_MAX_BYTES + 1), 0);
	close(fd);
	{
		struct trace_file tf;
		char err[128];

		CHECK_EQ_INT(trace_file_read(big, &tf, err, sizeof(err)), -EFBIG);
		CHECK(strstr(err, "2 GiB") != NULL);
	}
	text = run_check_file(big, &rc);
	CHECK_EQ_INT(rc, EXIT_ERROR);
	free(text);

	unlink(gz);
	unlink(cut);
	unlink(big);
	rmdir(dir);
}

TEST(check_output_is_limited)
{
	struct check_result res;
	size_t len = 0, cap = 1 << 16, lines = 0;
	char *json = malloc(cap), *text = NULL;
	struct jv *doc;
	FILE *f;
	int n;

	n = snprintf(json, cap, "{\"deviceProperties\":[{}],\"baseTimeNanoseconds\":1,"
		     "\"traceEvents\":[");
	for (int i = 0; i < 60; i++)
		n += snprintf(json + n, cap - n, "%s{\"ph\":\"B\",\"name\":\"e%d\",\"pid\":1,"
			      "\"tid\":1,\"ts\":%d}", i ? "," : "", i, i);
	n += snprintf(json + n, cap - n, "]}");
	doc = jv_parse(json, (size_t)n, NULL, 0);
	CHECK(doc != NULL);
	f = open_memstream(&text, &len);
	CHECK_EQ_INT(check_doc(doc, "x", f, &res), 60);
	fclose(f);
	for (char *p = text; p && *p; p++)
		lines += *p == '\n';
	CHECK_EQ_INT(lines, CHECK_MAX_LINES + 1);
	CHECK(strstr(text, "event 49 (e49, pid 1, tid 1, ts 49)") != NULL);
	CHECK(strstr(text, "event 50 (") == NULL);
	CHECK(strstr(text, "check: x: ... and 10 more problems\n") != NULL);
	CHECK_EQ_INT(res.by_kind[CK_BAD_PH], 60);
	jv_free(doc);
	free(text);
	free(json);
}

/* ------------------------------------------------------------------------------------------ */
/* recover */

TEST(recover_output_names)
{
	char out[64];

	CHECK_EQ_INT(recover_out_path("t.json", false, out, sizeof(out)), 0);
	CHECK_STR(out, "t.recovered.json");
	CHECK_EQ_INT(recover_out_path("/a/t.json.gz", true, out, sizeof(out)), 0);
	CHECK_STR(out, "/a/t.recovered.json.gz");
	CHECK_EQ_INT(recover_out_path("t.gz", true, out, sizeof(out)), 0);
	CHECK_STR(out, "t.recovered.json.gz");
	CHECK_EQ_INT(recover_out_path("trace", false, out, sizeof(out)), 0);
	CHECK_STR(out, "trace.recovered.json");
	/* gzip content under a plain name still gets a .gz copy */
	CHECK_EQ_INT(recover_out_path("t.json", true, out, sizeof(out)), 0);
	CHECK_STR(out, "t.recovered.json.gz");
	CHECK_EQ_INT(recover_out_path("a-rather-long-name.json", false, out, 20), -ENAMETOOLONG);
}

#define GEN_MAX 16

/*
 * Write a trace with the real writer, flushing after every event, and note the file size
 * after the header and after each event: off[k] is where a trace of k events ends.
 */
static int gen_trace(const char *path, bool gz, size_t *off)
{
	struct trace_meta m = { .mono_base_ns = 1000000, .real_base_ns = 1700000000000000000ull,
				.trace_name = "unit \"cut\"", .tool_version = "t",
				.hostname = "h", .device_id = 0 };
	struct trace_arg args[2] = {
		{ .key = "correlation", .type = TA_U64, .u = 7 },
		{ .key = "note", .type = TA_STR, .s = "},\n{\"ph\":\"X\"}" },
	};
	struct trace_writer *t;
	struct stat st;
	struct jw *w;
	int fd, n = 0, err;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	w = jw_fdopen(fd, gz ? 6 : 0);
	if (!w)
		return -ENOMEM;
	/* every event on disk at its commit, a gzip stream sync-flushed: a cut point each */
	jw_set_flush_threshold(w, 0);
	err = trace_begin(&t, w, &m);
	if (err)
		return err;
#define STEP(call)							\
	do {								\
		call;							\
		if (stat(path, &st))					\
			return -errno;					\
		off[n++] = (size_t)st.st_size;				\
	} while (0)
	STEP((void)0);
	STEP(trace_process_name(t, 100, "job", -1));
	STEP(trace_thread_name(t, 100, 101, "train\n0", -1));
	/* in the tracer's order: launch span, its device span, then the arrow's start and finish */
	for (int i = 0; i < 4; i++) {
		/* a name with an escaped newline and brace: one line per event regardless */
		STEP(trace_complete(t, 100, 101, 2000000 + i * 1000, 500, i == 1 ? "a\n}{b" :
				    "aiuLaunchComputeStream", "privateuse1_runtime", args, 2));
		if (i & 1)
			continue;
		STEP(trace_complete(t, 0, 1, 2500000 + i * 4000, 3000, "kernel", "kernel", args, 1));
		STEP(trace_flow(t, 's', 10 + i, 100, 101, 2000000 + i * 1000 + 100));
		STEP(trace_flow(t, 'f', 10 + i, 0, 1, 2500000 + i * 4000));
	}
#undef STEP
	err = trace_end(t, "\"done\":true");
	return err ? err : n - 1;
}

struct ev_id {
	char name[64];
	char ph;
	double ts;
};

static size_t events_of(const struct jv *doc, struct ev_id *ids, size_t max)
{
	const struct jv *e;
	size_t n = 0;

	jv_foreach(e, jv_get(doc, "traceEvents")) {
		if (n < max) {
			const char *ph = jv_get_str(e, "ph");

			snprintf(ids[n].name, sizeof(ids[n].name), "%s", jv_get_str(e, "name"));
			ids[n].ph = ph ? ph[0] : 0;
			ids[n].ts = 0;
			jv_get_num(e, "ts", &ids[n].ts);
		}
		n++;
	}
	return n;
}

/* Recover @cut and check the copy holds exactly the first @want events of @full. */
static void recover_and_compare(const char *cut, const char *outname, const struct ev_id *full,
				size_t want, FILE *quiet, const char *what)
{
	struct ev_id got[GEN_MAX];
	char op[600];
	struct jv *doc;
	size_t n;
	int rc;

	rc = recover_file(cut, NULL, false, quiet, op, sizeof(op));
	if (rc)
		fprintf(stderr, "    %s: rc %d\n", what, rc);
	CHECK_EQ_INT(rc, EXIT_OK);
	if (rc)
		return;
	CHECK(strstr(op, outname) != NULL);
	doc = parse_file(op);
	CHECK(doc != NULL);
	if (doc) {
		const struct jv *flag = jv_get(doc, "spyreRecovered");

		n = events_of(doc, got, GEN_MAX);
		if (n != want)
			fprintf(stderr, "    %s: kept %zu events, want %zu\n", what, n, want);
		CHECK_EQ_INT(n, want);
		for (size_t i = 0; i < n && i < want; i++) {
			CHECK(!strcmp(got[i].name, full[i].name));
			CHECK_EQ_INT(got[i].ph, full[i].ph);
			CHECK(got[i].ts == full[i].ts);
		}
		CHECK(flag && flag->type == JV_BOOL && flag->b);
		/* the header survives */
		CHECK_STR(jv_get_str(doc, "traceName"), "unit \"cut\"");
		jv_free(doc);
	}
	unlink(op);
}

TEST(recover_plain_cut_anywhere)
{
	char dir[] = "/tmp/spyre-recover-XXXXXX", full[600], cut[600], op[600], what[64];
	struct ev_id ids[GEN_MAX];
	size_t off[GEN_MAX + 1], len = 0;
	FILE *quiet = fopen("/dev/null", "w");
	struct jv *doc;
	char *buf = NULL;
	int n, rc;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(full, sizeof(full), "%s/full.json", dir);
	snprintf(cut, sizeof(cut), "%s/cut.json", dir);
	n = gen_trace(full, false, off);
	CHECK(n == 12);
	if (n != 12)
		goto out;
	doc = parse_file(full);
	CHECK(doc != NULL);
	CHECK_EQ_INT(events_of(doc, ids, GEN_MAX), n);
	jv_free(doc);
	buf = slurp(full, &len);
	CHECK(buf != NULL);
	if (!buf)
		goto out;

	for (int k = 0; k <= n; k++) {
		size_t cuts[5] = { off[k], off[k] + 1, off[k] + 2, 0, 0 };
		int nc = 3;

		if (k < n) {
			cuts[nc++] = (off[k] + off[k + 1]) / 2;
			cuts[nc++] = off[k + 1] - 1;
		}
		/* an arrow's start without its finish goes with the cut tail */
		size_t want = (size_t)k - (k > 0 && ids[k - 1].ph == 's');

		for (int c = 0; c < nc; c++) {
			snprintf(what, sizeof(what), "plain cut at %zu (k=%d)", cuts[c], k);
			write_file(cut, buf, cuts[c]);
			recover_and_compare(cut, "cut.recovered.json", ids, want, quiet, what);
		}
	}
	/* everything but the last brace of the document: all events, the closing redone */
	write_file(cut, buf, len - 2);
	recover_and_compare(cut, "cut.recovered.json", ids, (size_t)n, quiet, "len-2");

	/* complete (even without its final newline): nothing written */
	write_file(cut, buf, len - 1);
	rc = recover_file(cut, NULL, false, quiet, op, sizeof(op));
	CHECK_EQ_INT(rc, EXIT_OK);
	CHECK(op[0] == '\0');
	snprintf(op, sizeof(op), "%s/cut.recovered.json", dir);
	CHECK(!exists(op));

	/* cut inside the header: no "traceEvents":[ yet, so not recognisably a trace */
	write_file(cut, buf, off[0] - 1);
	CHECK_EQ_INT(recover_file(cut, NULL, false, quiet, op, sizeof(op)), EXIT_ERROR);
	CHECK(!exists(op));

	/* never overwrite an earlier copy */
	write_file(cut, buf, off[3]);
	snprintf(op, sizeof(op), "%s/cut.recovered.json", dir);
	write_file(op, "keep", 4);
	CHECK_EQ_INT(recover_file(cut, NULL, false, quiet, what, sizeof(what)), EXIT_OUTPUT);
	{
		size_t l;
		char *b = slurp(op, &l);

		CHECK(b && l == 4 && !memcmp(b, "keep", 4));
		free(b);
	}
	unlink(op);
	CHECK(symlink("/tmp/nonexistent-target", op) == 0);
	CHECK_EQ_INT(recover_file(cut, NULL, false, quiet, what, sizeof(what)), EXIT_OUTPUT);
	CHECK(!exists("/tmp/nonexistent-target"));
	unlink(op);

out:
	free(buf);
	fclose(quiet);
	unlink(cut);
	unlink(full);
	rmdir(dir);
}

TEST(recover_gzip_cut_mid_stream)
{
	char dir[] = "/tmp/spyre-recover-XXXXXX", full[600], cut[600], op[600], what[64];
	struct ev_id ids[GEN_MAX];
	size_t off[GEN_MAX + 1], len = 0;
	FILE *quiet = fopen("/dev/null", "w");
	struct trace_file tf;
	struct jv *doc;
	char *buf = NULL;
	ssize_t got;
	int n, fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(full, sizeof(full), "%s/full.json.gz", dir);
	snprintf(cut, sizeof(cut), "%s/cut.json.gz", dir);
	n = gen_trace(full, true, off);
	CHECK(n == 12);
	if (n != 12)
		goto out;
	doc = parse_file(full);
	CHECK(doc != NULL);
	CHECK_EQ_INT(events_of(doc, ids, GEN_MAX), n);
	jv_free(doc);

	/* the compressed bytes, as they are on disk */
	fd = open(full, O_RDONLY);
	len = (size_t)lseek(fd, 0, SEEK_END);
	buf = malloc(len);
	got = pread(fd, buf, len, 0);
	close(fd);
	CHECK_EQ_INT(got, len);

	for (int k = 0; k <= n; k++) {
		/* at a sync flush point, and two bytes into the next block */
		size_t cuts[2] = { off[k], off[k] + 2 };
		size_t want = (size_t)k - (k > 0 && ids[k - 1].ph == 's');

		for (int c = 0; c < (k < n ? 2 : 1); c++) {
			snprintf(what, sizeof(what), "gzip cut at %zu (k=%d)", cuts[c], k);
			write_file(cut, buf, cuts[c]);
			recover_and_compare(cut, "cut.recovered.json.gz", ids, want, quiet, what);
		}
	}
	/* the output is a sound gzip file */
	write_file(cut, buf, off[5]);
	CHECK_EQ_INT(recover_file(cut, NULL, false, quiet, op, sizeof(op)), EXIT_OK);
	CHECK_EQ_INT(trace_file_read(op, &tf, what, sizeof(what)), 0);
	CHECK(tf.gzip && !tf.cut);
	trace_file_free(&tf);
	unlink(op);

	/* only the gzip trailer missing: the JSON is whole, the copy is a complete .gz of it */
	write_file(cut, buf, len - 4);
	CHECK_EQ_INT(recover_file(cut, NULL, false, quiet, op, sizeof(op)), EXIT_OK);
	CHECK_EQ_INT(trace_file_read(op, &tf, what, sizeof(what)), 0);
	CHECK(tf.gzip && !tf.cut);
	CHECK(strstr(tf.data, "\"done\":true") != NULL);
	CHECK(strstr(tf.data, "spyreRecovered") == NULL);
	trace_file_free(&tf);
	unlink(op);

	/* a complete .gz: nothing to do */
	CHECK_EQ_INT(recover_file(full, NULL, false, quiet, op, sizeof(op)), EXIT_OK);
	CHECK(op[0] == '\0');

	/* cut inside the gzip header: nothing inflates, not a trace */
	write_file(cut, buf, 6);
	CHECK_EQ_INT(recover_file(cut, NULL, false, quiet, op, sizeof(op)), EXIT_ERROR);

out:
	free(buf);
	fclose(quiet);
	unlink(cut);
	unlink(full);
	rmdir(dir);
}

TEST(recover_buffer_cases)
{
	struct recover_info ri;
	char err[128];
	size_t len;
	char *b;

	/* not a trace */
	b = strdup("{\"foo\":[1,2,3]}");
	len = strlen(b);
	CHECK_EQ_INT(recover_buffer(&b, &len, &ri, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "traceEvents") != NULL);
	free(b);

	/* complete, with the array not last (as Kineto writes it) */
	b = strdup("{\"traceEvents\":[{\"ph\":\"i\"}],\"x\":{}}");
	len = strlen(b);
	CHECK_EQ_INT(recover_buffer(&b, &len, &ri, err, sizeof(err)), RECOVER_COMPLETE);
	CHECK_EQ_INT(ri.kept_events, 1);
	free(b);

	/* pretty-printed by some other tool, cut inside the third event: bracket matching */
	b = strdup("{\"traceEvents\": [\n  {\n    \"ph\": \"i\",\n    \"a\": {\"b\": \"}\"}\n  },\n"
		   "  {\n    \"ph\": \"X\"\n  },\n  {\n    \"ph\": \"X\",\n    \"na");
	len = strlen(b);
	{
		/* what is dropped: everything after the second event's closing brace */
		size_t kept = (size_t)(strstr(b, "\"X\"\n  }") - b) + 7;
		size_t before = len;

		CHECK_EQ_INT(recover_buffer(&b, &len, &ri, err, sizeof(err)), RECOVER_REPAIRED);
		CHECK_EQ_INT(ri.kept_events, 2);
		CHECK_EQ_INT(ri.dropped_bytes, before - kept);
	}
	CHECK(len > 30 && !strcmp(b + len - 27, "}\n],\"spyreRecovered\":true}\n"));
	free(b);

	/* cut right after the opening bracket: an empty but valid trace */
	b = strdup("{\"a\":1,\"traceEvents\":[\n{\"ph\":");
	len = strlen(b);
	CHECK_EQ_INT(recover_buffer(&b, &len, &ri, err, sizeof(err)), RECOVER_REPAIRED);
	CHECK_EQ_INT(ri.kept_events, 0);
	CHECK_STR(b, "{\"a\":1,\"traceEvents\":[\n],\"spyreRecovered\":true}\n");
	free(b);

	/* garbage in the middle is not papered over */
	b = strdup("{\"traceEvents\":[\n{\"ph\":\"i\"}x\n,{\"ph\":\"i\"}");
	len = strlen(b);
	CHECK_EQ_INT(recover_buffer(&b, &len, &ri, err, sizeof(err)), -EBADMSG);
	free(b);
}

/*
 * A tail call's callee ends with its caller: equal ends, on a merged trace's Kineto time base
 * (5.6e12 µs). Read through a double, the callee's end came out 1 ns past its caller's and
 * check called it a partial overlap; they nest.
 */
TEST(check_reads_equal_ends_on_a_large_time_base_as_nested)
{
	static const char json[] =
		"{\"deviceProperties\":[{}],\"baseTimeNanoseconds\":1,\"traceEvents\":["
		"{\"ph\":\"X\",\"name\":\"caller\",\"pid\":1,\"tid\":1,"
		"\"ts\":5618136552134.228,\"dur\":289.223},"
		"{\"ph\":\"X\",\"name\":\"callee\",\"pid\":1,\"tid\":1,"
		"\"ts\":5618136552135.573,\"dur\":287.878}]}";
	struct check_result res;
	struct jv *doc = jv_parse(json, sizeof(json) - 1, NULL, 0);

	CHECK(doc != NULL);
	CHECK_EQ_INT(check_doc(doc, "x", NULL, &res), 0);
	CHECK_EQ_INT(res.by_kind[CK_OVERLAP], 0);
	jv_free(doc);
}
