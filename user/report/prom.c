// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/array.h"
#include "output/jsonw.h"
#include "report/prom.h"
#include "common/utf8.h"

/*
 * The exposition text is built whole in jsonw's memory writer (its raw calls only: the format
 * is not JSON) and written out in one go.
 */

/* Longest label value kept, in input bytes: comm is 16, container ids 64, names from tables. */
#define PROM_LABEL_MAX	256

/* ns as decimal seconds, exactly (no float rounding): 1500000000 -> "1.5". */
static void put_secs(struct jw *b, uint64_t ns)
{
	char t[40];
	int n = snprintf(t, sizeof(t), "%llu", (unsigned long long)(ns / 1000000000));
	uint64_t frac = ns % 1000000000;

	if (frac) {
		n += snprintf(t + n, sizeof(t) - n, ".%09llu", (unsigned long long)frac);
		while (t[n - 1] == '0')
			n--;
	}
	jw_raw(b, t, n);
}

/* Shortest text that reads back as the same double. */
static void put_dbl(struct jw *b, double v)
{
	char t[40];
	int n = 0;

	for (int prec = 15; prec <= 17; prec++) {
		n = snprintf(t, sizeof(t), "%.*g", prec, v);
		if (strtod(t, NULL) == v)
			break;
	}
	jw_raw(b, t, n);
}

/*
 * A label value from the traced process: the format escapes only \, " and newline, and the
 * collector rejects the whole file on invalid UTF-8, so bad bytes and other control characters
 * become U+FFFD.
 */
static void put_label_value(struct jw *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strnlen(str, PROM_LABEL_MAX);

	for (size_t i = 0; i < n;) {
		size_t l = utf8_seq_len(s + i, n - i);

		if (s[i] == '\\') {
			jw_lit(b, "\\\\");
		} else if (s[i] == '"') {
			jw_lit(b, "\\\"");
		} else if (s[i] == '\n') {
			jw_lit(b, "\\n");
		} else if (!l || s[i] < 0x20 || s[i] == 0x7f) {
			jw_lit(b, "\xef\xbf\xbd");
			l = 1;
		} else {
			jw_raw(b, (const char *)s + i, l);
		}
		i += l ? l : 1;
	}
}

static void put_label(struct jw *b, bool *first, const char *key, const char *val)
{
	jw_lit(b, *first ? "{" : ",");
	*first = false;
	jw_lit(b, key);
	jw_lit(b, "=\"");
	put_label_value(b, val);
	jw_lit(b, "\"");
}

/* name{pid=..,comm=..,container_id=..,function=..[,extra=..]} */
static void put_series(struct jw *b, const char *name, const struct prom_series *s,
		      const char *xkey, const char *xval)
{
	bool first = true;
	char pid[16];

	jw_lit(b, name);
	if (s->has_job) {
		snprintf(pid, sizeof(pid), "%u", s->pid);
		put_label(b, &first, "pid", pid);
		if (s->comm)
			put_label(b, &first, "comm", s->comm);
		if (s->container)
			put_label(b, &first, "container_id", s->container);
	}
	put_label(b, &first, "function", s->func);
	if (xkey)
		put_label(b, &first, xkey, xval);
	jw_lit(b, "} ");
}

static void put_family(struct jw *b, const char *name, const char *type, const char *help)
{
	jw_lit(b, "# HELP ");
	jw_lit(b, name);
	jw_lit(b, " ");
	jw_lit(b, help);
	jw_lit(b, "\n# TYPE ");
	jw_lit(b, name);
	jw_lit(b, " ");
	jw_lit(b, type);
	jw_lit(b, "\n");
}

void prom_window_init(struct prom_window *w, const char *version, unsigned int sample_every,
		      uint64_t period_ns)
{
	memset(w, 0, sizeof(*w));
	snprintf(w->version, sizeof(w->version), "%s", version ? version : "unknown");
	w->sample_every = sample_every;
	w->period_ns = period_ns;
	w->expire_after = 3;
	w->overhead_ratio = NAN;
}

static void series_free(struct prom_series *s)
{
	free(s->comm);
	free(s->container);
	free(s->func);
}

static void mem_free(struct prom_mem *m)
{
	free(m->comm);
	free(m->container);
}

void prom_window_free(struct prom_window *w)
{
	for (int i = 0; i < w->nmem; i++)
		mem_free(&w->mem[i]);
	free(w->mem);
	w->mem = NULL;
	w->nmem = w->capmem = 0;
	for (int i = 0; i < w->nseries; i++)
		series_free(&w->series[i]);
	free(w->series);
	w->series = NULL;
	w->nseries = w->cap = 0;
}

void prom_window_begin(struct prom_window *w, uint64_t start_realtime_ns)
{
	w->window++;
	w->start_ns = start_realtime_ns;
	w->duration_ns = 0;
	for (int i = 0; i < w->nseries; i++) {
		struct prom_series *s = &w->series[i];

		s->win_calls = s->win_total_ns = 0;
		s->win_p50_ns = s->win_p99_ns = s->win_q_calls = 0;
	}
}

void prom_window_end(struct prom_window *w, uint64_t duration_ns)
{
	int j = 0;

	w->duration_ns = duration_ns;
	w->windows++;
	/* after the window's adds: a series that comes back is not cut in between */
	for (int i = 0; i < w->nseries; i++) {
		struct prom_series *s = &w->series[i];

		if (w->window - s->last_window > w->expire_after) {
			series_free(s);
			continue;
		}
		w->series[j++] = *s;	/* keep the order: stable output */
	}
	w->nseries = j;
	j = 0;
	for (int i = 0; i < w->nmem; i++) {
		if (w->window - w->mem[i].last_window > w->expire_after) {
			mem_free(&w->mem[i]);
			continue;
		}
		w->mem[j++] = w->mem[i];
	}
	w->nmem = j;
}

/* Stored strings are cut at PROM_LABEL_MAX: compare as far, or a long one never matches. */
static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return !strncmp(a, b, PROM_LABEL_MAX);
}

static char *dup_or_null(const char *s, bool *oom)
{
	char *d;

	if (!s)
		return NULL;
	d = strndup(s, PROM_LABEL_MAX);
	if (!d)
		*oom = true;
	return d;
}

static struct prom_series *lookup(struct prom_window *w, const struct prom_job *job,
				  const char *func)
{
	const char *container = job && job->container && *job->container ? job->container : NULL;
	const char *comm = job ? job->comm : NULL;
	uint32_t pid = job ? job->pid : 0;
	struct prom_series *s;
	bool oom = false;

	if (strlen(func) > PROM_LABEL_MAX)
		return NULL;	/* would collide with another name after truncation */
	for (int i = 0; i < w->nseries; i++) {
		s = &w->series[i];
		if (s->has_job == !!job && s->pid == pid && !strcmp(s->func, func) &&
		    str_eq(s->comm, comm) && str_eq(s->container, container))
			goto found;
	}
	if (array_reserve(&w->series, &w->cap, (size_t)w->nseries + 1, sizeof(*w->series), 32))
		return NULL;
	s = &w->series[w->nseries];
	memset(s, 0, sizeof(*s));
	s->has_job = !!job;
	s->pid = pid;
	s->func = dup_or_null(func, &oom);
	s->comm = dup_or_null(comm, &oom);
	s->container = dup_or_null(container, &oom);
	if (oom) {
		series_free(s);
		return NULL;
	}
	w->nseries++;
found:
	s->last_window = w->window;
	return s;
}

/* The series of (@job, @func), made if new: 0, -EINVAL (no or too long a name) or -ENOMEM. */
static int series(struct prom_window *w, const struct prom_job *job, const char *func,
		  struct prom_series **out)
{
	if (!func)
		return -EINVAL;
	*out = lookup(w, job, func);
	if (!*out)
		return strlen(func) > PROM_LABEL_MAX ? -EINVAL : -ENOMEM;
	return 0;
}

int prom_window_add_span(struct prom_window *w, const struct prom_job *job, const char *func,
			 const struct fn_stats *st)
{
	struct prom_series *s;
	struct fn_row r;
	int err;

	if (!st)
		return -EINVAL;
	err = series(w, job, func, &s);
	if (err)
		return err;
	r = fn_stats_row(st);	/* the figures the summary's row has */
	s->has_calls = s->span = true;
	s->calls += r.count;
	s->total_ns += r.total_ns;
	s->win_calls += r.count;
	s->win_total_ns += r.total_ns;
	if (r.count > s->win_q_calls) {
		s->win_q_calls = r.count;
		s->win_p50_ns = r.p50_ns;
		s->win_p99_ns = r.p99_ns;
	}
	return 0;
}

int prom_window_add_count(struct prom_window *w, const struct prom_job *job, const char *func,
			  uint64_t calls)
{
	struct prom_series *s;
	int err;

	err = series(w, job, func, &s);
	if (err)
		return err;
	s->has_calls = true;
	s->calls += calls;
	s->win_calls += calls;
	return 0;
}

int prom_window_add_drops(struct prom_window *w, const struct prom_job *job, const char *func,
			  uint64_t ring_full, uint64_t too_deep, uint64_t no_stack)
{
	struct prom_series *s;
	int err;

	err = series(w, job, func, &s);
	if (err)
		return err;
	s->has_drops = true;
	s->drops_ring += ring_full;
	s->drops_depth += too_deep;
	s->drops_nostack += no_stack;
	return 0;
}

/* HELP/TYPE once, then one sample per series that has the value. */
enum which { CALLS, SECONDS, WIN_CALLS, WIN_SECONDS, DURATION, DROPS };

static bool has(const struct prom_series *s, enum which k)
{
	switch (k) {
	case CALLS:
	case WIN_CALLS:
		return s->has_calls;
	case DROPS:
		return s->has_drops;
	default:
		return s->span;
	}
}

static void per_series(struct jw *b, const struct prom_window *w, enum which k,
		       const char *name, const char *type, const char *help)
{
	bool any = false;

	for (int i = 0; i < w->nseries && !any; i++)
		any = has(&w->series[i], k);
	if (!any)
		return;	/* no empty families: the Go parser drops them anyway */
	put_family(b, name, type, help);
	for (int i = 0; i < w->nseries; i++) {
		const struct prom_series *s = &w->series[i];
		char sub[64];

		if (!has(s, k))
			continue;
		switch (k) {
		case CALLS:
			put_series(b, name, s, NULL, NULL);
			jw_u64(b, s->calls);
			break;
		case SECONDS:
			put_series(b, name, s, NULL, NULL);
			put_secs(b, s->total_ns);
			break;
		case WIN_CALLS:
			put_series(b, name, s, NULL, NULL);
			jw_u64(b, s->win_calls);
			break;
		case WIN_SECONDS:
			put_series(b, name, s, NULL, NULL);
			put_secs(b, s->win_total_ns);
			break;
		case DURATION:
			/* no calls in the window: no quantile (NaN, as client libraries do) */
			put_series(b, name, s, "quantile", "0.5");
			if (s->win_q_calls)
				put_secs(b, s->win_p50_ns);
			else
				jw_lit(b, "NaN");
			jw_lit(b, "\n");
			put_series(b, name, s, "quantile", "0.99");
			if (s->win_q_calls)
				put_secs(b, s->win_p99_ns);
			else
				jw_lit(b, "NaN");
			jw_lit(b, "\n");
			snprintf(sub, sizeof(sub), "%s_sum", name);
			put_series(b, sub, s, NULL, NULL);
			put_secs(b, s->total_ns);
			jw_lit(b, "\n");
			snprintf(sub, sizeof(sub), "%s_count", name);
			put_series(b, sub, s, NULL, NULL);
			jw_u64(b, s->calls);
			break;
		case DROPS:
			put_series(b, name, s, "reason", "ring_full");
			jw_u64(b, s->drops_ring);
			jw_lit(b, "\n");
			put_series(b, name, s, "reason", "too_deep");
			jw_u64(b, s->drops_depth);
			/* rare (task storage busy): a series from its first occurrence on */
			if (s->drops_nostack) {
				jw_lit(b, "\n");
				put_series(b, name, s, "reason", "no_stack");
				jw_u64(b, s->drops_nostack);
			}
			break;
		}
		jw_lit(b, "\n");
	}
}

int prom_window_set_memory(struct prom_window *w, const struct prom_job *job, int dev,
			   bool mapped, uint64_t cur, uint64_t peak)
{
	const char *container = job->container && *job->container ? job->container : NULL;
	struct prom_mem *m = NULL;
	bool oom = false;

	if (mapped)
		dev = -1;
	for (int i = 0; i < w->nmem && !m; i++)
		if (w->mem[i].pid == job->pid && w->mem[i].dev == dev &&
		    w->mem[i].mapped == mapped && str_eq(w->mem[i].comm, job->comm) &&
		    str_eq(w->mem[i].container, container))
			m = &w->mem[i];
	if (!m) {
		if (array_reserve(&w->mem, &w->capmem, (size_t)w->nmem + 1, sizeof(*w->mem), 16))
			return -ENOMEM;
		m = &w->mem[w->nmem];
		memset(m, 0, sizeof(*m));
		m->pid = job->pid;
		m->dev = dev;
		m->mapped = mapped;
		m->comm = dup_or_null(job->comm, &oom);
		m->container = dup_or_null(container, &oom);
		if (oom) {
			mem_free(m);
			return -ENOMEM;
		}
		w->nmem++;
	}
	m->cur = cur;
	m->peak = peak > m->peak ? peak : m->peak;
	m->last_window = w->window;
	return 0;
}

static void mem_families(struct jw *b, const struct prom_window *w)
{
	static const char *const names[] = { "spyre_device_memory_bytes",
					     "spyre_device_memory_peak_bytes" };
	static const char *const help[] = {
		"Device memory a job holds at the end of the last window: allocated per device "
		"(probes mem=alloc/free), or DMA mapped (VFIO).",
		"Most device memory a job held since the tracer started (as seen while traced).",
	};

	if (!w->nmem)
		return;
	for (int k = 0; k < 2; k++) {
		put_family(b, names[k], "gauge", help[k]);
		for (int i = 0; i < w->nmem; i++) {
			const struct prom_mem *m = &w->mem[i];
			bool first = true;
			char num[16];

			jw_lit(b, names[k]);
			snprintf(num, sizeof(num), "%u", m->pid);
			put_label(b, &first, "pid", num);
			if (m->comm)
				put_label(b, &first, "comm", m->comm);
			if (m->container)
				put_label(b, &first, "container_id", m->container);
			if (!m->mapped) {
				snprintf(num, sizeof(num), "%d", m->dev);
				put_label(b, &first, "device", num);
			}
			put_label(b, &first, "kind", m->mapped ? "mapped" : "allocated");
			jw_lit(b, "} ");
			jw_u64(b, k ? m->peak : m->cur);
			jw_lit(b, "\n");
		}
	}
}

/* The window's own series, one value each, no labels. */
enum scalar_unit { SC_RATIO, SC_SECONDS, SC_COUNT, SC_DOUBLE };
static const struct scalar {
	const char *name, *type, *help;
	enum scalar_unit unit;
	size_t off;		/* the value in struct prom_window (SC_RATIO: none) */
} scalars[] = {
	{ "spyre_sampling_ratio", "gauge",
	  "Fraction of calls traced inside a window (1/N with --sample-every N).", SC_RATIO },
	{ "spyre_window_start_seconds", "gauge", "Start of the last tracing window, Unix time.",
	  SC_SECONDS, offsetof(struct prom_window, start_ns) },
	{ "spyre_window_duration_seconds", "gauge",
	  "Traced time of the last tracing window: from its probes attached to their detach.",
	  SC_SECONDS, offsetof(struct prom_window, duration_ns) },
	{ "spyre_window_attach_seconds", "gauge",
	  "What attaching the last window's probes took (the scan for new processes included).",
	  SC_SECONDS, offsetof(struct prom_window, attach_ns) },
	{ "spyre_window_detach_seconds", "gauge", "What detaching the last window's probes took.",
	  SC_SECONDS, offsetof(struct prom_window, detach_ns) },
	{ "spyre_window_period_seconds", "gauge",
	  "Time from one window start to the next (0: tracing continuously).", SC_SECONDS,
	  offsetof(struct prom_window, period_ns) },
	{ "spyre_windows_total", "counter", "Tracing windows completed since the tracer started.",
	  SC_COUNT, offsetof(struct prom_window, windows) },
	{ "spyre_overhead_ratio", "gauge",
	  "The job's extra CPU time caused by tracing over the CPU time it would have used "
	  "untraced, in the last window (NaN: not known).", SC_DOUBLE,
	  offsetof(struct prom_window, overhead_ratio) },
};

void prom_window_add_counts(struct prom_window *w, const struct run_counts *rc)
{
	for (size_t i = 0; i < run_count_nkeys; i++)
		*run_count_at(&w->counts, &run_count_keys[i]) +=
			run_count_get(rc, &run_count_keys[i]);
}

/* The run's counts, one counter each, in the families run_count_keys names. */
static void put_counts(struct jw *b, const struct prom_window *w)
{
	for (size_t i = 0; i < run_count_nkeys; i++) {
		const struct run_count_key *k = &run_count_keys[i];

		if (!i || strcmp(k->metric, run_count_keys[i - 1].metric))
			put_family(b, k->metric, "counter", k->help);
		jw_lit(b, k->metric);
		if (k->label) {
			jw_lit(b, "{");
			jw_lit(b, k->label);
			jw_lit(b, "}");
		}
		jw_lit(b, " ");
		jw_u64(b, run_count_get(&w->counts, k));
		jw_lit(b, "\n");
	}
}

char *prom_render(const struct prom_window *w, size_t *len)
{
	struct jw *b = jw_memopen();

	if (!b)
		return NULL;

	put_family(b, "spyre_tracer_info", "gauge", "spyre-bpftrace version, always 1.");
	jw_lit(b, "spyre_tracer_info{version=\"");
	put_label_value(b, w->version);
	jw_lit(b, "\"} 1\n");
	for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++) {
		const struct scalar *sc = &scalars[i];
		uint64_t v = sc->unit == SC_RATIO || sc->unit == SC_DOUBLE ? 0 :
			     *(const uint64_t *)((const char *)w + sc->off);

		put_family(b, sc->name, sc->type, sc->help);
		jw_lit(b, sc->name);
		jw_lit(b, " ");
		if (sc->unit == SC_RATIO)	/* of calls traced: 1/N of --sample-every N */
			put_dbl(b, w->sample_every > 1 ? 1.0 / w->sample_every : 1.0);
		else if (sc->unit == SC_DOUBLE && isnan(*(const double *)((const char *)w + sc->off)))
			jw_lit(b, "NaN");
		else if (sc->unit == SC_DOUBLE)
			put_dbl(b, *(const double *)((const char *)w + sc->off));
		else if (sc->unit == SC_SECONDS)
			put_secs(b, v);
		else
			jw_u64(b, v);
		jw_lit(b, "\n");
	}
	put_counts(b, w);
	per_series(b, w, CALLS, "spyre_calls_total", "counter",
		   "Traced calls since the tracer started (cumulative over windows).");
	per_series(b, w, SECONDS, "spyre_call_seconds_total", "counter",
		   "Time spent in traced calls since the tracer started "
		   "(cumulative over windows).");
	per_series(b, w, WIN_CALLS, "spyre_window_calls", "gauge",
		   "Traced calls in the last window.");
	per_series(b, w, WIN_SECONDS, "spyre_window_call_seconds", "gauge",
		   "Time spent in traced calls in the last window.");
	per_series(b, w, DURATION, "spyre_call_duration_seconds", "summary",
		   "Call duration: quantiles over the last window, _sum and _count cumulative.");
	per_series(b, w, DROPS, "spyre_dropped_events_total", "counter",
		   "Events lost by the tracer since it started (cumulative over windows).");
	mem_families(b, w);
	return jw_mem_take(b, len);
}

int prom_write(const char *path, const struct prom_window *w)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	const char *base = strrchr(path, '/');
	size_t dlen = base ? (size_t)(base - path) + 1 : 0, len, off = 0;
	char *text = NULL;
	int fd = -1, dfd, err = 0, n;

	base = base ? base + 1 : path;
	if (!*base)
		return -EINVAL;
	/* ".NAME.XXXXXX": the collector only reads *.prom, so it never sees the temp file */
	n = snprintf(tmp, sizeof(tmp), "%.*s.%s.XXXXXX", (int)dlen, path, base);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	text = prom_render(w, &len);
	if (!text)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	if (fchmod(fd, 0644)) {
		err = -errno;
		goto out_unlink;
	}
	while (off < len) {
		ssize_t r = write(fd, text + off, len - off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? -errno : -EIO;
			goto out_unlink;
		}
		off += r;
	}
	if (fsync(fd)) {
		err = -errno;
		goto out_unlink;
	}
	n = close(fd);
	fd = -1;
	if (n) {
		err = -errno;
		goto out_unlink;
	}
	if (rename(tmp, path)) {
		err = -errno;
		goto out_unlink;
	}
	/* the rename itself durable; best effort, the metrics are rewritten every window */
	snprintf(dir, sizeof(dir), "%.*s", dlen ? (int)dlen : 1, dlen ? path : ".");
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	goto out;
out_unlink:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out:
	free(text);
	return err;
}
