// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fmtbench: the consumer's per-event userspace work without BPF, uprobes or a second core:
 * how many spans per second one core turns into trace JSON.
 *
 *   path "trace":    trace_complete() only (user/output/trace_writer.c + user/output/jsonw.c), args of a copy launch
 *   path "consumer": consumer_event() on ringbuf-shaped records of the default probe table:
 *                    statistics, thread table, argument decoding, then trace_complete()
 * into three sinks: memory (jw_memopen), /dev/null (write(2) included) and gzip level 1 into
 * /dev/null (the tracer's *.gz level). Every line is the median of REPS runs of N events.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "stream/consumer.h"
#include "resolve/probes.h"
#include "resolve/resolve.h"
#include "output/trace_writer.h"

enum sink { SINK_MEM, SINK_NULL, SINK_GZNULL };
static const char *const sink_names[] = { "memory", "/dev/null", "gzip1>/dev/null" };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static struct jw *open_sink(enum sink s)
{
	int fd;

	if (s == SINK_MEM)
		return jw_memopen();
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	return jw_fdopen(fd, s == SINK_GZNULL ? 1 : 0);
}

/* A realistic fake target: one resolved probe per spec of the built-in table. */
static int fake_target(struct probe_table *table, struct target *t)
{
	char err[256];
	int e;

	e = probes_load_default(table, err, sizeof(err));
	if (e) {
		fprintf(stderr, "fmtbench: default table: %s\n", err);
		return e;
	}
	e = target_init(t, 4242, table, SPYRE_MAX_PROBES);
	if (e)
		return e;
	t->probes = calloc(table->cnt, sizeof(*t->probes));
	t->libs = calloc(1, sizeof(*t->libs));
	if (!t->probes || !t->libs)
		return -1;
	t->nlibs = 1;
	t->libs[0].path = strdup("/opt/spyre/lib/libflex.so");
	t->libs[0].open_path = strdup(t->libs[0].path);
	for (int i = 0; i < table->cnt; i++) {
		struct rprobe *p = &t->probes[i];

		p->spec = i;
		p->qualname = strdup(table->specs[i].sym);
		p->name = probe_name(&table->specs[i], p->qualname, NULL, NULL);
	}
	t->cnt = table->cnt;
	t->cap = table->cnt;
	return 0;
}

/* The mock job's mix: mostly launches and waits with pointer-sized args and small op ids. */
static void make_event(struct spyre_event *e, long i, int nprobes, uint64_t ts)
{
	memset(e, 0, sizeof(*e));
	e->ts = ts;
	e->dur = 1000 + (i * 7919) % 90000;
	e->call.args[0] = 0x55d0c0a8e2a0ull + (i & 3) * 0x40;
	e->call.args[1] = 0x7f3a12000000ull + (i & 0xffff) * 0x10000;
	e->call.args[2] = 0x7f3a0c001000ull;
	e->call.args[3] = 65536;
	e->call.args[4] = 0;
	e->call.args[5] = 0;
	e->call.ret = 100000 + i;
	e->tgid = 4242;
	e->tid = 4243 + (i & 1);
	e->probe = i % (nprobes > 12 ? 12 : nprobes);	/* the first rows of the table */
	e->type = SPYRE_EV_SPAN;
	e->depth = 0;
}

static double run_trace(enum sink s, long n, uint64_t *bytes)
{
	const struct trace_meta m = {
		.mono_base_ns = 1000000000ull, .real_base_ns = 1700000000000000000ull,
		.trace_name = "fmtbench", .tool_version = "bench", .hostname = "bench",
	};
	struct trace_writer *tw;
	struct trace_arg a[6] = {
		{ .key = "stream", .type = TA_HEX }, { .key = "dst", .type = TA_HEX },
		{ .key = "src", .type = TA_HEX }, { .key = "bytes", .type = TA_U64 },
		{ .key = "op", .type = TA_U64 }, { .key = "correlation", .type = TA_U64 },
	};
	uint64_t t0, t, ts = 2000000000ull;

	if (trace_begin(&tw, open_sink(s), &m))
		return -1;
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		ts += 1000 + (i & 1023);
		a[0].u = 0x55d0c0a8e2a0ull + (i & 3) * 0x40;
		a[1].u = 0x7f3a12000000ull + (i & 0xffff) * 0x10000;
		a[2].u = 0x7f3a0c001000ull;
		a[3].u = 65536;
		a[4].u = a[5].u = 100000 + i;
		trace_complete(tw, 4242, 4243 + (i & 1), ts, 1000 + (i * 7919) % 90000,
			       "aiuDataTransferHtoD", "privateuse1_runtime", a, 6);
	}
	t = now_ns() - t0;
	*bytes = jw_bytes(trace_jw(tw));
	trace_end(tw, NULL);
	return (double)t;
}

static double run_consumer(enum sink s, long n, const struct target *tg, uint64_t *bytes)
{
	const struct trace_meta m = {
		.mono_base_ns = 1000000000ull, .real_base_ns = 1700000000000000000ull,
		.trace_name = "fmtbench", .tool_version = "bench", .hostname = "bench",
	};
	struct trace_writer *tw;
	struct consumer c;
	struct spyre_event e;
	uint64_t t0, t, ts = 2000000000ull;

	if (trace_begin(&tw, open_sink(s), &m))
		return -1;
	if (consumer_init(&c, tw, tg, NULL)) {
		trace_end(tw, NULL);
		return -1;
	}
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		ts += 1000 + (i & 1023);
		make_event(&e, i, tg->cnt, ts);
		consumer_event(&c, &e);
	}
	t = now_ns() - t0;
	*bytes = jw_bytes(trace_jw(tw));
	consumer_free(&c);
	trace_end(tw, NULL);
	return (double)t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int reps = argc > 2 ? atoi(argv[2]) : 5;
	const char *only = argc > 3 ? argv[3] : NULL;
	struct probe_table table = {};
	struct target tg = {};
	double t[64];

	if (n <= 0 || reps < 1 || reps > 64) {
		fprintf(stderr, "usage: fmtbench [EVENTS [REPS [trace|consumer]]]\n");
		return 2;
	}
	if (fake_target(&table, &tg))
		return 1;
	for (int path = 0; path < 2; path++) {
		if (only && strcmp(only, path ? "consumer" : "trace"))
			continue;
		for (int s = SINK_MEM; s <= SINK_GZNULL; s++) {
			uint64_t bytes = 0;

			for (int r = 0; r < reps; r++) {
				t[r] = path ? run_consumer(s, n, &tg, &bytes) :
					      run_trace(s, n, &bytes);
				if (t[r] < 0) {
					fprintf(stderr, "fmtbench: cannot open the sink\n");
					return 1;
				}
			}
			qsort(t, reps, sizeof(t[0]), cmp_double);
			/* machine-readable: the bench script greps these lines */
			printf("fmt path=%s sink=%s events=%ld ns_per_event=%.1f events_per_s=%.0f "
			       "mb_per_s=%.1f bytes_per_event=%.1f\n", path ? "consumer" : "trace",
			       sink_names[s], n, t[reps / 2] / n, n * 1e9 / t[reps / 2],
			       bytes / (t[reps / 2] / 1e9) / 1e6, (double)bytes / n);
		}
	}
	target_free(&tg);
	probes_free(&table);
	return 0;
}
