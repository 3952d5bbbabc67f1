// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report/prom.h"
#include "unit.h"

/* Exact comparison; on a mismatch report the first differing line, not 3 KB of text. */
static void check_text(const char *got, const char *want, int line)
{
	const char *g = got, *w = want;
	char m[512];
	int ln = 1;

	if (got && !strcmp(got, want))
		return;
	if (!got) {
		unit_fail(__FILE__, line, "text is NULL");
		return;
	}
	while (*g && *g == *w) {
		if (*g == '\n') {
			ln++;
			got = g + 1;
			want = w + 1;
		}
		g++;
		w++;
	}
	snprintf(m, sizeof(m), "line %d differs: got \"%.*s\" want \"%.*s\"", ln,
		 (int)strcspn(got, "\n"), got, (int)strcspn(want, "\n"), want);
	unit_fail(__FILE__, line, m);
}
#define CHECK_TEXT(got, want) check_text(got, want, __LINE__)

static struct fn_stats *stats_of(uint64_t ns, int n)
{
	struct fn_stats *s = calloc(1, sizeof(*s));

	for (int i = 0; i < n; i++)
		fn_stats_add(s, ns);
	return s;
}

/* One window: a span probe, an instant probe and per-function drops. */
static void small_window(struct prom_window *w)
{
	const struct prom_job job = { 4242, "python3", "0123abcd" };
	struct fn_stats *s = stats_of(1500000, 3);	/* one value: quantiles are exact */

	prom_window_init(w, "1.2.3", 100, 60000000000ull);
	prom_window_begin(w, 1700000000500000000ull);
	CHECK_EQ_INT(prom_window_add_span(w, &job, "aiuMalloc", s), 0);
	CHECK_EQ_INT(prom_window_add_count(w, &job, "aiuOperationComplete", 7), 0);
	CHECK_EQ_INT(prom_window_add_drops(w, NULL, "aiuMalloc", 2, 0, 0), 0);
	prom_window_add_counts(w, &(struct run_counts){ .events = 12, .hits = 9, .ring = 2,
							.unwound = 1 });
	w->attach_ns = 250000000;
	w->detach_ns = 60000000;
	prom_window_end(w, 2000000000);
	free(s);
}

static const char small_expected[] =
	"# HELP spyre_tracer_info spyre-bpftrace version, always 1.\n"
	"# TYPE spyre_tracer_info gauge\n"
	"spyre_tracer_info{version=\"1.2.3\"} 1\n"
	"# HELP spyre_sampling_ratio Fraction of calls traced inside a window "
	"(1/N with --sample-every N).\n"
	"# TYPE spyre_sampling_ratio gauge\n"
	"spyre_sampling_ratio 0.01\n"
	"# HELP spyre_window_start_seconds Start of the last tracing window, Unix time.\n"
	"# TYPE spyre_window_start_seconds gauge\n"
	"spyre_window_start_seconds 1700000000.5\n"
	"# HELP spyre_window_duration_seconds Traced time of the last tracing window: from its "
	"probes attached to their detach.\n"
	"# TYPE spyre_window_duration_seconds gauge\n"
	"spyre_window_duration_seconds 2\n"
	"# HELP spyre_window_attach_seconds What attaching the last window's probes took (the "
	"scan for new processes included).\n"
	"# TYPE spyre_window_attach_seconds gauge\n"
	"spyre_window_attach_seconds 0.25\n"
	"# HELP spyre_window_detach_seconds What detaching the last window's probes took.\n"
	"# TYPE spyre_window_detach_seconds gauge\n"
	"spyre_window_detach_seconds 0.06\n"
	"# HELP spyre_window_period_seconds Time from one window start to the next "
	"(0: tracing continuously).\n"
	"# TYPE spyre_window_period_seconds gauge\n"
	"spyre_window_period_seconds 60\n"
	"# HELP spyre_windows_total Tracing windows completed since the tracer started.\n"
	"# TYPE spyre_windows_total counter\n"
	"spyre_windows_total 1\n"
	"# HELP spyre_overhead_ratio The job's extra CPU time caused by tracing over the CPU time "
	"it would have used untraced, in the last window (NaN: not known).\n"
	"# TYPE spyre_overhead_ratio gauge\n"
	"spyre_overhead_ratio NaN\n"
	"# HELP spyre_trace_events_total Trace events written (summed over the windows).\n"
	"# TYPE spyre_trace_events_total counter\n"
	"spyre_trace_events_total 12\n"
	"# HELP spyre_probe_hits_total Probe hits of traced functions, the unwinder's apart "
	"(summed over the windows).\n"
	"# TYPE spyre_probe_hits_total counter\n"
	"spyre_probe_hits_total 9\n"
	"# HELP spyre_calls_dropped_total Calls dropped before the trace, by reason (summed over "
	"the windows).\n"
	"# TYPE spyre_calls_dropped_total counter\n"
	"spyre_calls_dropped_total{reason=\"ring_full\"} 2\n"
	"spyre_calls_dropped_total{reason=\"too_deep\"} 0\n"
	"spyre_calls_dropped_total{reason=\"no_stack\"} 0\n"
	"spyre_calls_dropped_total{reason=\"unreadable\"} 0\n"
	"# HELP spyre_device_spans_dropped_total Device spans lost for want of room (summed over "
	"the windows).\n"
	"# TYPE spyre_device_spans_dropped_total counter\n"
	"spyre_device_spans_dropped_total 0\n"
	"# HELP spyre_unwound_calls_total Calls left by an exception, a longjmp or a cancel "
	"(summed over the windows).\n"
	"# TYPE spyre_unwound_calls_total counter\n"
	"spyre_unwound_calls_total 1\n"
	"# HELP spyre_calls_total Traced calls since the tracer started "
	"(cumulative over windows).\n"
	"# TYPE spyre_calls_total counter\n"
	"spyre_calls_total{pid=\"4242\",comm=\"python3\",container_id=\"0123abcd\","
	"function=\"aiuMalloc\"} 3\n"
	"spyre_calls_total{pid=\"4242\",comm=\"python3\",container_id=\"0123abcd\","
	"function=\"aiuOperationComplete\"} 7\n"
	"# HELP spyre_call_seconds_total Time spent in traced calls since the tracer started "
	"(cumulative over windows).\n"
	"# TYPE spyre_call_seconds_total counter\n"
	"spyre_call_seconds_total{pid=\"4242\",comm=\"python3\",container_id=\"0123abcd\","
	"function=\"aiuMalloc\"} 0.0045\n"
	"# HELP spyre_window_calls Traced calls in the last window.\n"
	"# TYPE spyre_window_calls gauge\n"
	"spyre_window_calls{pid=\"4242\",comm=\"python3\",container_id=\"0123abcd\","
	"function=\"aiuMalloc\"} 3\n"
	"spyre_window_calls{pid=\"4242\",comm=\"python3\",container_id=\"0123abcd\","
	"function=\"aiuOperationComplete\"} 7\n"
	"# HELP spyre_window_call_seconds Time spent in traced calls in the last window.\n"
	"# TYPE spyre_window_call_seconds gauge\n"
	"spyre_window_call_seconds{pid=\"4242\",comm=\"python3\",container_id=\"0123abcd\","
	"function=\"aiuMalloc\"} 0.0045\n"
	"# HELP spyre_call_duration_seconds Call duration: quantiles over the last window, "
	"_sum and _count cumulative.\n"
	"# TYPE spyre_call_duration_seconds summary\n"
	"spyre_call_duration_seconds{pid=\"4242\",comm=\"python3\",container_id=\"0123abcd\","
	"function=\"aiuMalloc\",quantile=\"0.5\"} 0.0015\n"
	"spyre_call_duration_seconds{pid=\"4242\",comm=\"python3\",container_id=\"0123abcd\","
	"function=\"aiuMalloc\",quantile=\"0.99\"} 0.0015\n"
	"spyre_call_duration_seconds_sum{pid=\"4242\",comm=\"python3\",container_id=\"0123abcd\","
	"function=\"aiuMalloc\"} 0.0045\n"
	"spyre_call_duration_seconds_count{pid=\"4242\",comm=\"python3\","
	"container_id=\"0123abcd\",function=\"aiuMalloc\"} 3\n"
	"# HELP spyre_dropped_events_total Events lost by the tracer since it started "
	"(cumulative over windows).\n"
	"# TYPE spyre_dropped_events_total counter\n"
	"spyre_dropped_events_total{function=\"aiuMalloc\",reason=\"ring_full\"} 2\n"
	"spyre_dropped_events_total{function=\"aiuMalloc\",reason=\"too_deep\"} 0\n";

TEST(prom_exact_text)
{
	struct prom_window w;
	size_t len = 0;
	char *t;

	small_window(&w);
	t = prom_render(&w, &len);
	CHECK_TEXT(t, small_expected);
	CHECK_EQ_INT(len, strlen(small_expected));
	free(t);
	prom_window_free(&w);
}

/* Counters keep growing across windows; gauges and quantiles are the last window's. */
TEST(prom_cumulative_across_windows)
{
	const struct prom_job job = { 4242, "python3", "0123abcd" };
	struct fn_stats *s = stats_of(250000, 2);
	struct prom_window w;
	char *t;

	small_window(&w);
	prom_window_begin(&w, 1700000060000000000ull);
	CHECK_EQ_INT(prom_window_add_span(&w, &job, "aiuMalloc", s), 0);
	CHECK_EQ_INT(prom_window_add_drops(&w, NULL, "aiuMalloc", 1, 5, 0), 0);
	/* the instant probe saw nothing this window but is still traced */
	CHECK_EQ_INT(prom_window_add_count(&w, &job, "aiuOperationComplete", 0), 0);
	/* the run's counts: summed over the windows, each its own counter */
	prom_window_add_counts(&w, &(struct run_counts){ .events = 30, .depth = 5,
							 .unreadable = 1 });
	prom_window_end(&w, 1999999999);
	t = prom_render(&w, NULL);
	CHECK(t && strstr(t, "\nspyre_windows_total 2\n"));
	CHECK(t && strstr(t, "\nspyre_trace_events_total 42\n"));
	CHECK(t && strstr(t, "\nspyre_calls_dropped_total{reason=\"ring_full\"} 2\n"));
	CHECK(t && strstr(t, "\nspyre_calls_dropped_total{reason=\"too_deep\"} 5\n"));
	CHECK(t && strstr(t, "\nspyre_calls_dropped_total{reason=\"unreadable\"} 1\n"));
	/* not known (the default): NaN; known: the ratio */
	CHECK(t && strstr(t, "\nspyre_overhead_ratio NaN\n"));
	free(t);
	w.overhead_ratio = 0.125;
	t = prom_render(&w, NULL);
	CHECK(t && strstr(t, "\nspyre_overhead_ratio 0.125\n"));
	CHECK(t && strstr(t, "\nspyre_window_start_seconds 1700000060\n"));
	CHECK(t && strstr(t, "\nspyre_window_duration_seconds 1.999999999\n"));
	CHECK(t && strstr(t, "\nspyre_calls_total{pid=\"4242\",comm=\"python3\","
			  "container_id=\"0123abcd\",function=\"aiuMalloc\"} 5\n"));
	CHECK(t && strstr(t, "\nspyre_calls_total{pid=\"4242\",comm=\"python3\","
			  "container_id=\"0123abcd\",function=\"aiuOperationComplete\"} 7\n"));
	CHECK(t && strstr(t, "\nspyre_window_calls{pid=\"4242\",comm=\"python3\","
			  "container_id=\"0123abcd\",function=\"aiuOperationComplete\"} 0\n"));
	CHECK(t && strstr(t, "\nspyre_call_seconds_total{pid=\"4242\",comm=\"python3\","
			  "container_id=\"0123abcd\",function=\"aiuMalloc\"} 0.005\n"));
	CHECK(t && strstr(t, "\nspyre_window_calls{pid=\"4242\",comm=\"python3\","
			  "container_id=\"0123abcd\",function=\"aiuMalloc\"} 2\n"));
	CHECK(t && strstr(t, "\nspyre_window_call_seconds{pid=\"4242\",comm=\"python3\","
			  "container_id=\"0123abcd\",function=\"aiuMalloc\"} 0.0005\n"));
	CHECK(t && strstr(t, ",quantile=\"0.99\"} 0.00025\n"));
	CHECK(t && strstr(t, "_count{pid=\"4242\",comm=\"python3\",container_id=\"0123abcd\","
			  "function=\"aiuMalloc\"} 5\n"));
	CHECK(t && strstr(t, "{function=\"aiuMalloc\",reason=\"ring_full\"} 3\n"));
	CHECK(t && strstr(t, "{function=\"aiuMalloc\",reason=\"too_deep\"} 5\n"));
	/* no thread stack: no series until it happens, then one that counts on */
	CHECK(t && !strstr(t, "function=\"aiuMalloc\",reason=\"no_stack\""));
	free(t);
	CHECK_EQ_INT(prom_window_add_drops(&w, NULL, "aiuMalloc", 0, 0, 4), 0);
	t = prom_render(&w, NULL);
	CHECK(t && strstr(t, "{function=\"aiuMalloc\",reason=\"no_stack\"} 4\n"));
	CHECK(t && strstr(t, "{function=\"aiuMalloc\",reason=\"too_deep\"} 5\n"));
	free(t);

	/* a window without calls: no quantiles (NaN), counters unchanged */
	prom_window_begin(&w, 1700000120000000000ull);
	s->count = 0;
	s->total_ns = 0;
	memset(s->buckets, 0, sizeof(s->buckets));
	CHECK_EQ_INT(prom_window_add_span(&w, &job, "aiuMalloc", s), 0);
	prom_window_end(&w, 2000000000);
	t = prom_render(&w, NULL);
	CHECK(t && strstr(t, ",quantile=\"0.5\"} NaN\n"));
	CHECK(t && strstr(t, "function=\"aiuMalloc\"} 5\n"));
	free(t);
	free(s);
	prom_window_free(&w);
}

TEST(prom_series_expire)
{
	const struct prom_job a = { 1, "a", NULL }, b = { 2, "b", "" };
	struct prom_window w;
	char *t;

	prom_window_init(&w, "v", 0, 0);
	w.expire_after = 1;
	prom_window_begin(&w, 0);
	prom_window_add_count(&w, &a, "f", 1);
	prom_window_add_count(&w, &b, "f", 1);
	prom_window_end(&w, 1);
	/* b's job is gone: kept one idle window, then dropped; a keeps going */
	for (int i = 0; i < 2; i++) {
		prom_window_begin(&w, 0);
		prom_window_add_count(&w, &a, "f", 1);
		prom_window_end(&w, 1);
		t = prom_render(&w, NULL);
		CHECK(t && strstr(t, "spyre_calls_total{pid=\"1\",comm=\"a\",function=\"f\"}"));
		/* an empty container id is no label */
		CHECK_EQ_INT(t && strstr(t, "spyre_calls_total{pid=\"2\",comm=\"b\","
					    "function=\"f\"} 1"), i == 0);
		free(t);
	}
	CHECK_EQ_INT(w.nseries, 1);
	/* sampling off: ratio 1; no job at all: no per-series families */
	prom_window_free(&w);
	prom_window_init(&w, "v", 1, 0);
	t = prom_render(&w, NULL);
	CHECK(t && strstr(t, "\nspyre_sampling_ratio 1\n"));
	CHECK(t && !strstr(t, "spyre_calls_total"));
	CHECK(t && !strstr(t, "spyre_call_duration_seconds"));
	free(t);
	prom_window_free(&w);
}

TEST(prom_label_escaping)
{
	/* untrusted comm / function / container: quote, backslash, newline, control, bad UTF-8 */
	const struct prom_job job = { 7, "a\"b\\c\nd\te\xff", "x\"}\n" };
	struct prom_window w;
	char *t;
	char lng[400];

	prom_window_init(&w, "ver\"\n", 0, 0);
	prom_window_begin(&w, 0);
	CHECK_EQ_INT(prom_window_add_count(&w, &job, "f\xc3\xa9\xe2\x82\xac} 1\n#", 1), 0);
	/* overlong encoding of '/' and a lone continuation byte are invalid */
	CHECK_EQ_INT(prom_window_add_count(&w, NULL, "g\xc0\xaf\x80", 1), 0);
	memset(lng, 'z', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = 0;
	CHECK_EQ_INT(prom_window_add_count(&w, NULL, lng, 1), -EINVAL);
	CHECK_EQ_INT(prom_window_add_count(&w, NULL, NULL, 1), -EINVAL);
	/* an over-long comm is cut, and the same job still maps to one series */
	for (int i = 0; i < 2; i++) {
		const struct prom_job j = { 8, lng, NULL };

		CHECK_EQ_INT(prom_window_add_count(&w, &j, "h", 1), 0);
	}
	CHECK_EQ_INT(w.nseries, 3);
	t = prom_render(&w, NULL);
	CHECK(t && strstr(t, "spyre_tracer_info{version=\"ver\\\"\\n\"} 1\n"));
	CHECK(t && strstr(t, "\nspyre_calls_total{pid=\"7\","
			  "comm=\"a\\\"b\\\\c\\nd\xef\xbf\xbd" "e\xef\xbf\xbd\","
			  "container_id=\"x\\\"}\\n\","
			  "function=\"f\xc3\xa9\xe2\x82\xac" "} 1\\n#\"} 1\n"));
	CHECK(t && strstr(t, "\nspyre_calls_total{function=\"g\xef\xbf\xbd\xef\xbf\xbd"
			  "\xef\xbf\xbd\"} 1\n"));
	CHECK(t && strstr(t, "zzz\",function=\"h\"} 2\n"));
	free(t);
	prom_window_free(&w);
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static char *slurp(const char *path)
{
	static char buf[65536];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return NULL;
	buf[n] = 0;
	return buf;
}

TEST(prom_write_atomic)
{
	char dir[] = "/tmp/spyre-prom-XXXXXX", path[128], victim[128], link[128];
	struct prom_window w;
	struct stat st;
	mode_t old = umask(077);

	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/spyre.prom", dir);
	small_window(&w);
	CHECK_EQ_INT(prom_write(path, &w), 0);
	umask(old);
	/* world-readable whatever the umask: node_exporter runs unprivileged */
	CHECK(!lstat(path, &st) && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0644);
	CHECK_TEXT(slurp(path), small_expected);
	/* no temp file left behind */
	CHECK_EQ_INT(count_entries(dir), 1);
	/* a second write replaces it */
	prom_window_begin(&w, 0);
	prom_window_end(&w, 0);
	CHECK_EQ_INT(prom_write(path, &w), 0);
	CHECK(strstr(slurp(path), "\nspyre_windows_total 2\n"));
	CHECK_EQ_INT(count_entries(dir), 1);

	/* a symlink at the path is replaced, its target untouched */
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(link, sizeof(link), "%s/link.prom", dir);
	CHECK(!close(open(victim, O_WRONLY | O_CREAT, 0600)));
	CHECK(!symlink(victim, link));
	CHECK_EQ_INT(prom_write(link, &w), 0);
	CHECK(!lstat(link, &st) && S_ISREG(st.st_mode));
	CHECK(!stat(victim, &st) && st.st_size == 0);

	/* missing directory: an error, nothing created */
	snprintf(path, sizeof(path), "%s/nodir/spyre.prom", dir);
	CHECK_EQ_INT(prom_write(path, &w), -ENOENT);
	snprintf(path, sizeof(path), "%s/", dir);
	CHECK_EQ_INT(prom_write(path, &w), -EINVAL);
	prom_window_free(&w);

	snprintf(path, sizeof(path), "%s/spyre.prom", dir);
	unlink(path);
	unlink(victim);
	unlink(link);
	CHECK(!rmdir(dir));
}

/* Read the file back with the reference parser (Debian python3-prometheus-client). */
static const char *find_python(void)
{
	static const char *cands[] = { NULL, "python3", "/usr/bin/python3" };
	char cmd[256];

	cands[0] = getenv("SPYRE_PYTHON");
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
		if (!cands[i])
			continue;
		snprintf(cmd, sizeof(cmd), "%s -c 'import prometheus_client.parser' 2>/dev/null",
			 cands[i]);
		if (system(cmd) == 0)
			return cands[i];
	}
	return NULL;
}

static const char parse_py[] =
	"import json, sys\n"
	"from prometheus_client.parser import text_string_to_metric_families\n"
	"text = open(sys.argv[1], encoding='utf-8').read()\n"
	"for f in text_string_to_metric_families(text):\n"
	"    for s in f.samples:\n"
	"        labels = json.dumps(s.labels, sort_keys=True, separators=(',', ':'))\n"
	"        print(f.type, s.name, labels, repr(s.value))\n";

TEST(prom_parses_with_prometheus_client)
{
	const struct prom_job job = { 9, "evil\"\\\n\xff", "c1" };
	char dir[] = "/tmp/spyre-prom-XXXXXX", path[128], script[128], cmd[512];
	const char *py = find_python();
	struct fn_stats *s = stats_of(1500000, 3);
	char *out = NULL;
	size_t cap = 0, n;
	struct prom_window w;
	FILE *p;
	int fd, st;

	if (!py) {
		fprintf(stderr, "SKIP prom_parses_with_prometheus_client: no python3 with "
			"prometheus_client (Debian: python3-prometheus-client)\n");
		free(s);
		return;
	}
	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/spyre.prom", dir);
	snprintf(script, sizeof(script), "%s/parse.py", dir);
	fd = open(script, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0);
	CHECK_EQ_INT(write(fd, parse_py, strlen(parse_py)), strlen(parse_py));
	close(fd);

	small_window(&w);
	prom_window_begin(&w, 1700000060000000000ull);
	CHECK_EQ_INT(prom_window_add_span(&w, &job, "aiuScheduleWait", s), 0);
	CHECK_EQ_INT(prom_window_add_drops(&w, &job, "aiuScheduleWait", 0, 1, 0), 0);
	CHECK_EQ_INT(prom_window_add_span(&w, &(struct prom_job){ 10, NULL, NULL }, "idle", s), 0);
	prom_window_end(&w, 2000000000);
	/* "idle" had calls in an earlier window only: NaN quantiles must parse too */
	prom_window_begin(&w, 1700000120000000000ull);
	CHECK_EQ_INT(prom_window_add_span(&w, &job, "aiuScheduleWait", s), 0);
	CHECK_EQ_INT(prom_window_add_count(&w, &(struct prom_job){ 10, NULL, NULL }, "idle", 0), 0);
	prom_window_end(&w, 2000000000);
	CHECK_EQ_INT(prom_write(path, &w), 0);

	snprintf(cmd, sizeof(cmd), "%s %s %s", py, script, path);
	p = popen(cmd, "r");
	CHECK(p != NULL);
	if (p) {
		char line[1024];

		while (fgets(line, sizeof(line), p)) {
			n = strlen(line);
			out = realloc(out, cap + n + 1);
			memcpy(out + cap, line, n + 1);
			cap += n;
		}
		st = pclose(p);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	CHECK(out != NULL);
#define SEEN(line) CHECK(out && strstr(out, line "\n"))
	/* counters keep their _total sample name; types as declared */
	SEEN("counter spyre_calls_total {\"comm\":\"python3\",\"container_id\":\"0123abcd\","
	     "\"function\":\"aiuMalloc\",\"pid\":\"4242\"} 3.0");
	SEEN("gauge spyre_tracer_info {\"version\":\"1.2.3\"} 1.0");
	SEEN("gauge spyre_sampling_ratio {} 0.01");
	SEEN("gauge spyre_window_start_seconds {} 1700000120.0");
	SEEN("counter spyre_windows_total {} 3.0");
	SEEN("summary spyre_call_duration_seconds {\"comm\":\"evil\\\"\\\\\\n\\ufffd\","
	     "\"container_id\":\"c1\",\"function\":\"aiuScheduleWait\",\"pid\":\"9\","
	     "\"quantile\":\"0.99\"} 0.0015");
	SEEN("summary spyre_call_duration_seconds {\"comm\":\"python3\","
	     "\"container_id\":\"0123abcd\",\"function\":\"aiuMalloc\",\"pid\":\"4242\","
	     "\"quantile\":\"0.5\"} nan");
	SEEN("summary spyre_call_duration_seconds_count {\"comm\":\"python3\","
	     "\"container_id\":\"0123abcd\",\"function\":\"aiuMalloc\",\"pid\":\"4242\"} 3.0");
	SEEN("summary spyre_call_duration_seconds {\"function\":\"idle\",\"pid\":\"10\","
	     "\"quantile\":\"0.5\"} nan");
	/* the escaped comm reads back as the original (bad byte -> U+FFFD) */
	SEEN("counter spyre_calls_total {\"comm\":\"evil\\\"\\\\\\n\\ufffd\","
	     "\"container_id\":\"c1\",\"function\":\"aiuScheduleWait\",\"pid\":\"9\"} 6.0");
	SEEN("counter spyre_dropped_events_total {\"comm\":\"evil\\\"\\\\\\n\\ufffd\","
	     "\"container_id\":\"c1\",\"function\":\"aiuScheduleWait\",\"pid\":\"9\","
	     "\"reason\":\"too_deep\"} 1.0");
#undef SEEN
	if (getenv("UNIT_VERBOSE") && out)
		fputs(out, stderr);
	free(out);
	free(s);
	prom_window_free(&w);
	unlink(path);
	unlink(script);
	rmdir(dir);
}
