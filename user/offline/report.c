// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report: one pass over a trace's events (tracestream.h). A row per host function, device
 * kernel and copy direction sums count, time and bytes as the events go by; each span's
 * duration goes to a spool (spool.h) with its row's id, sorted at the end so that p50 and
 * p99 are exact (nearest rank) in bounded memory; each device span's interval goes to a
 * second spool, sorted by device and start, whose union is the device's busy time.
 *
 * Why a device idled (as Holistic Trace Analysis splits it): each gap between its work is cut
 * into time when work was queued for it (a launch had returned, its work had not started:
 * launch and device span joined by correlation through a third spool), time when nothing was
 * queued and a host thread was inside a wait (a synchronize, query or wait call), and the rest,
 * host-bound: the host was not feeding the device. The host calls, kept in a fourth spool by
 * start, give each function's time inside the host-bound gaps.
 */
#include <dirent.h>
#include <errno.h>
#include <search.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/array.h"
#include "common/exitcodes.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/util.h"
#include "offline/jsonparse.h"
#include "offline/report.h"
#include "offline/spool.h"
#include "offline/tracestream.h"
#include "output/facts.h"
#include "output/jsonw.h"

/* ts and dur beyond ±9e12 µs (104 days) are not a trace's */
#define REPORT_MAX_US	9000000000000LL
/* the host functions shown beside the host-bound idle time (--json: all) */
#define REPORT_IDLE_ROWS	10
/* sorted runs of the spools kept in memory: past that, spilled to $TMPDIR */
#define REPORT_SPOOL_MEM	(16u << 20)

/* ROW_PYLINE: a Python line (args.python of host calls made with --python), not a function */
enum row_kind { ROW_HOST, ROW_KERNEL, ROW_COPY, ROW_PYLINE };

/* A host function, a device kernel or a copy direction: what its spans sum to. */
struct row {
	int kind;
	const char *name;	/* owned (strdup) */
	int64_t pid, tid;	/* --by-thread: its thread's (host rows); else -1 */
	uint32_t id;
	uint64_t count;
	int64_t total_ns;
	int64_t p50_ns, p99_ns;
	uint64_t bytes;		/* copies: args.bytes summed */
	int64_t host_bound_ns;	/* host: its time inside the devices' host-bound idle time */
	int64_t seen_end;	/* Python lines: the end of their calls so far (host_bound_sum) */
};

/* Device work on one (pid, tid): a stream, or a lane of concurrent copies. */
struct track {
	int64_t pid, tid;
	uint64_t spans;
	int64_t busy_ns;	/* its spans' durations summed: a stream runs one thing at once */
};

/* Sorted, disjoint intervals [lo, hi) */
struct ivl {
	int64_t lo, hi;
};

struct ivs {
	struct ivl *v;
	size_t n, cap;
};

struct device {
	int64_t pid;
	uint64_t spans;
	int64_t busy_ns;	/* the union of its tracks' spans */
	int64_t first_ns, last_ns;
	struct ivs gaps;	/* between its work: idle */
	struct ivs queued;	/* work launched for it, not started yet */
	struct ivs kern;	/* its kernels' time (copies apart) */
	int64_t host;		/* the process whose launches it ran: -1 none seen, -2 several */
	int64_t idle_ns, queued_ns, waiting_ns, host_bound_ns;
};

/* process_name (tid -1) and thread_name */
struct track_name {
	int64_t pid, tid;
	char *name;
};

struct dur_rec {
	uint32_t id, pad;
	int64_t ns;
};

struct busy_rec {
	int64_t pid, ts, end;
};

/* A collective op of one process (a rank): libspyre_comms's spyre_comms::Context::OP spans */
struct coll {
	int64_t pid;
	const char *op;		/* static: one of coll_ops */
	uint64_t count, bytes;
	int64_t total_ns;
};

#define COMMS_PREFIX	"spyre_comms::Context::"

static const char *const coll_ops[] = { "allgather", "allreduce", "alltoall", "barrier",
					"broadcast", "gather", "recv", "reduce",
					"reduce_scatter", "scatter", "send" };

/* A host call that is no wait: when it ran, on which thread, and its row */
struct span_rec {
	int64_t ts, end;
	uint32_t id;
	uint32_t tid;
};

/*
 * Device memory of one process and device, from the [memory] instants (ours and the PyTorch
 * profiler's): its peak, when, on which thread, and the host call that made it (the innermost
 * span of that thread around the peak's moment, found among the host calls at the end).
 */
struct mem {
	int64_t pid, type, dev;
	int64_t peak, last;		/* "Total Allocated" */
	int64_t peak_ts, peak_tid;
	uint64_t allocs, frees;
	int64_t who_len;		/* the span found so far: the shortest around the peak */
	uint32_t who;			/* its row; UINT32_MAX: none */
};

/* One side of a launch: the host call that queued work (@dev -1: its end), or the work */
struct corr_rec {
	uint64_t corr;
	int64_t t;		/* the launch's end, the work's start */
	int64_t dev;		/* the device pid of the work; -1 for the launch */
	int64_t host;		/* the launch's process */
};

/*
 * A process's (a rank's) collectives against its devices' kernels: how much of the time it
 * spent in collectives its devices computed meanwhile (HTA's communication/computation overlap)
 */
struct overlap {
	int64_t pid;
	int64_t comm_ns, overlap_ns;
};

struct rep {
	void *by_name;			/* tsearch: struct row * by kind and name */
	struct row **rows;
	size_t nrows, rows_cap;
	struct track *tracks;
	size_t ntracks, tracks_cap;
	struct device *devs;
	size_t ndevs;
	struct track_name *names;
	size_t nnames, names_cap;
	struct spool *durs, *busy, *corrs, *waits, *queued, *hosts;
	struct spool *kerns, *comms;	/* kernels by device, collectives by process */
	struct overlap *ovl;
	size_t novl, ovl_cap;
	struct ivs waiting;		/* host threads inside a wait call */
	struct coll *colls;
	size_t ncolls, colls_cap;
	struct mem *mems;
	size_t nmems, mems_cap;
	struct ivs host_bound;		/* some device idle, nothing queued, no wait */
	uint64_t events;
	int64_t first_ns, last_ns;
	bool have_x;
	bool by_thread;
};

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind - y->kind;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->name, y->name);
}

static struct row *row_of(struct rep *r, int kind, const char *name, int64_t pid, int64_t tid)
{
	struct row key = { .kind = kind, .name = name, .pid = pid, .tid = tid }, *row;
	struct row *const *hit = tfind(&key, &r->by_name, row_cmp);
	void *added;

	if (hit)
		return *hit;
	if (array_reserve(&r->rows, &r->rows_cap, r->nrows + 1, sizeof(*r->rows), 16))
		return NULL;
	row = calloc(1, sizeof(*row));
	if (!row || !(row->name = strdup(name))) {
		free(row);
		return NULL;
	}
	row->kind = kind;
	row->pid = pid;
	row->tid = tid;
	row->id = (uint32_t)r->nrows;
	added = tsearch(row, &r->by_name, row_cmp);
	if (!added) {
		free((char *)row->name);
		free(row);
		return NULL;
	}
	r->rows[r->nrows++] = row;
	return row;
}

static struct track *track_of(struct rep *r, int64_t pid, int64_t tid)
{
	for (size_t i = r->ntracks; i-- > 0;)
		if (r->tracks[i].pid == pid && r->tracks[i].tid == tid)
			return &r->tracks[i];
	if (array_reserve(&r->tracks, &r->tracks_cap, r->ntracks + 1, sizeof(*r->tracks), 16))
		return NULL;
	r->tracks[r->ntracks] = (struct track){ .pid = pid, .tid = tid };
	return &r->tracks[r->ntracks++];
}

static bool int_member(const struct jv *ev, const char *key, int64_t *out)
{
	double d;

	if (!jv_get_num(ev, key, &d) || d != (double)(int64_t)d)
		return false;
	*out = (int64_t)d;
	return true;
}

static const char *name_of(const struct rep *r, int64_t pid, int64_t tid)
{
	for (size_t i = 0; i < r->nnames; i++)
		if (r->names[i].pid == pid && r->names[i].tid == tid)
			return r->names[i].name;
	return NULL;
}

/* process_name and thread_name: the first of each track's names */
static int take_name(struct rep *r, const struct jv *ev)
{
	const char *what = jv_get_str(ev, "name"), *val = jv_get_str(jv_get(ev, "args"), "name");
	int64_t pid, tid = -1;
	char *copy;

	if (!what || !val || !int_member(ev, "pid", &pid))
		return 0;
	if (!strcmp(what, "thread_name")) {
		if (!int_member(ev, "tid", &tid))
			return 0;
	} else if (strcmp(what, "process_name")) {
		return 0;
	}
	if (name_of(r, pid, tid))
		return 0;
	if (array_reserve(&r->names, &r->names_cap, r->nnames + 1, sizeof(*r->names), 16) ||
	    !(copy = strdup(val)))
		return -ENOMEM;
	r->names[r->nnames++] = (struct track_name){ pid, tid, copy };
	return 0;
}

/* Append [@lo, @hi) to @s, kept sorted by lo: merged into the last one when they touch. */
static int ivs_add(struct ivs *s, int64_t lo, int64_t hi)
{
	if (hi <= lo)
		return 0;
	if (s->n && lo <= s->v[s->n - 1].hi) {
		if (hi > s->v[s->n - 1].hi)
			s->v[s->n - 1].hi = hi;
		return 0;
	}
	if (array_reserve(&s->v, &s->cap, s->n + 1, sizeof(*s->v), 64))
		return -ENOMEM;
	s->v[s->n++] = (struct ivl){ lo, hi };
	return 0;
}

static int64_t ivs_len(const struct ivs *s)
{
	int64_t t = 0;

	for (size_t i = 0; i < s->n; i++)
		t += s->v[i].hi - s->v[i].lo;
	return t;
}

/* @a's parts inside @b (@in) or outside it (!@in), into @out; both sorted and disjoint */
static int ivs_cut(const struct ivs *a, const struct ivs *b, bool in, struct ivs *out)
{
	size_t j = 0;
	int err = 0;

	for (size_t i = 0; i < a->n && !err; i++) {
		int64_t lo = a->v[i].lo, hi = a->v[i].hi;

		while (j < b->n && b->v[j].hi <= lo)
			j++;
		for (size_t k = j; k < b->n && b->v[k].lo < hi && !err; k++) {
			int64_t x = b->v[k].lo > lo ? b->v[k].lo : lo;
			int64_t y = b->v[k].hi < hi ? b->v[k].hi : hi;

			err = in ? ivs_add(out, x, y) : ivs_add(out, lo, x);
			lo = y;
		}
		if (!in && !err)
			err = ivs_add(out, lo, hi);
	}
	return err;
}

/* How long [@lo, @hi) lies inside @s */
static int64_t ivs_overlap(const struct ivs *s, int64_t lo, int64_t hi)
{
	size_t a = 0, b = s->n;
	int64_t t = 0;

	while (a < b) {		/* the first interval ending after lo */
		size_t m = a + (b - a) / 2;

		if (s->v[m].hi <= lo)
			a = m + 1;
		else
			b = m;
	}
	for (; a < s->n && s->v[a].lo < hi; a++)
		t += (s->v[a].hi < hi ? s->v[a].hi : hi) - (s->v[a].lo > lo ? s->v[a].lo : lo);
	return t;
}

static int ivl_cmp(const void *a, const void *b)
{
	const struct ivl *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* @s's intervals added to @all, which is unsorted until ivs_union */
static int ivs_append(struct ivs *all, const struct ivs *s)
{
	if (!s->n)
		return 0;
	if (array_reserve(&all->v, &all->cap, all->n + s->n, sizeof(*all->v), 64))
		return -ENOMEM;
	memcpy(all->v + all->n, s->v, s->n * sizeof(*s->v));
	all->n += s->n;
	return 0;
}

/* The union of what was appended to @all (ivs_append) into @out; @all is freed. */
static int ivs_union(struct ivs *all, struct ivs *out)
{
	bool sorted = true;
	int err = 0;

	/* one part (one device) comes sorted: the sort only when parts interleave */
	for (size_t k = 1; k < all->n && sorted; k++)
		sorted = all->v[k - 1].lo <= all->v[k].lo;
	if (!sorted)
		qsort(all->v, all->n, sizeof(*all->v), ivl_cmp);
	for (size_t k = 0; k < all->n && !err; k++)
		err = ivs_add(out, all->v[k].lo, all->v[k].hi);
	free(all->v);
	*all = (struct ivs){};
	return err;
}

/*
 * A host call in which the host waits for the device: our synchronize, query and schedule
 * wait calls (spyreStreamSynchronize, aiuStreamQuery, aiuScheduleWait), a profiler's
 * cudaStreamSynchronize-like ones
 */
static bool is_wait(const char *name)
{
	return strcasestr(name, "synchronize") || strcasestr(name, "wait") ||
	       strcasestr(name, "query");
}

/* A [memory] instant: a process's device memory after an allocation or a free */
static int take_memory(struct rep *r, const struct jv *ev, int64_t ts)
{
	const struct jv *args = jv_get(ev, "args");
	int64_t pid, tid = -1;
	double type = -1, dev = -1, total, bytes = 0;
	struct mem *m = NULL;

	if (!int_member(ev, "pid", &pid) || !jv_get_num(args, "Total Allocated", &total))
		return 0;
	int_member(ev, "tid", &tid);
	jv_get_num(args, "Device Type", &type);
	jv_get_num(args, "Device Id", &dev);
	jv_get_num(args, "Bytes", &bytes);
	for (size_t i = 0; i < r->nmems && !m; i++)
		if (r->mems[i].pid == pid && r->mems[i].type == (int64_t)type &&
		    r->mems[i].dev == (int64_t)dev)
			m = &r->mems[i];
	if (!m) {
		if (array_reserve(&r->mems, &r->mems_cap, r->nmems + 1, sizeof(*m), 4))
			return -ENOMEM;
		m = &r->mems[r->nmems++];
		*m = (struct mem){ .pid = pid, .type = (int64_t)type, .dev = (int64_t)dev,
				   .peak = -1, .who = UINT32_MAX };
	}
	m->last = (int64_t)total;
	if (bytes > 0)
		m->allocs++;
	else if (bytes < 0)
		m->frees++;
	if (m->last > m->peak) {
		m->peak = m->last;
		m->peak_ts = ts;
		m->peak_tid = tid;
	}
	return 0;
}

/* A collective op's span: its (pid, op) summed */
static int take_collective(struct rep *r, const struct jv *ev, const char *name, int64_t ts,
			   int64_t dur)
{
	const char *op = NULL;
	struct coll *c = NULL;
	int64_t pid;
	double bytes;

	for (size_t i = 0; i < sizeof(coll_ops) / sizeof(coll_ops[0]) && !op; i++)
		if (!strcmp(name + strlen(COMMS_PREFIX), coll_ops[i]))
			op = coll_ops[i];
	if (!op || !int_member(ev, "pid", &pid))
		return 0;
	for (size_t i = 0; i < r->ncolls && !c; i++)
		if (r->colls[i].pid == pid && r->colls[i].op == op)
			c = &r->colls[i];
	if (!c) {
		if (array_reserve(&r->colls, &r->colls_cap, r->ncolls + 1, sizeof(*c), 16))
			return -ENOMEM;
		c = &r->colls[r->ncolls++];
		*c = (struct coll){ .pid = pid, .op = op };
	}
	c->count++;
	c->total_ns += dur;
	if (jv_get_num(jv_get(ev, "args"), "bytes", &bytes) && bytes > 0)
		c->bytes += (uint64_t)bytes;
	if (dur > 0) {
		struct busy_rec b = { pid, ts, ts + dur };

		if (spool_add(r->comms, &b))
			return -EIO;
	}
	return 0;
}

static int take_event(struct rep *r, const struct jv *ev)
{
	const char *ph = jv_get_str(ev, "ph"), *cat, *name;
	int64_t ts, dur = 0, pid, tid;
	struct dur_rec d = {};
	struct row *row;
	uint64_t corr;
	double bytes;
	int kind;

	if (ev->type != JV_OBJECT || !ph)
		return 0;
	if (!strcmp(ph, "M"))
		return take_name(r, ev);
	if (!jv_us_ns(jv_get(ev, "ts"), REPORT_MAX_US, &ts))
		return 0;
	if ((!strcmp(ph, "i") || !strcmp(ph, "I")) && !strcmp(jv_get_str(ev, "name") ?: "",
							     "[memory]"))
		return take_memory(r, ev, ts);
	if (strcmp(ph, "X"))
		return 0;
	if (!jv_us_ns(jv_get(ev, "dur"), REPORT_MAX_US, &dur) || dur < 0)
		dur = 0;
	if (!r->have_x || ts < r->first_ns)
		r->first_ns = ts;
	if (!r->have_x || ts + dur > r->last_ns)
		r->last_ns = ts + dur;
	r->have_x = true;
	cat = jv_get_str(ev, "cat");
	name = jv_get_str(ev, "name") ?: "(no name)";
	kind = !trace_device_cat(cat) ? ROW_HOST : strcmp(cat, "kernel") ? ROW_COPY : ROW_KERNEL;
	if (kind != ROW_HOST || !r->by_thread || !int_member(ev, "pid", &pid) ||
	    !int_member(ev, "tid", &tid))
		pid = tid = -1;
	row = row_of(r, kind, name, pid, tid);
	if (!row)
		return -ENOMEM;
	row->count++;
	row->total_ns += dur;
	if (kind == ROW_COPY && jv_get_num(jv_get(ev, "args"), "bytes", &bytes) && bytes > 0)
		row->bytes += (uint64_t)bytes;
	if (kind == ROW_HOST && !strncmp(name, COMMS_PREFIX, strlen(COMMS_PREFIX)) &&
	    take_collective(r, ev, name, ts, dur))
		return -ENOMEM;
	if (kind == ROW_HOST && is_wait(name)) {
		struct busy_rec w = { 0, ts, ts + dur };

		if (spool_add(r->waits, &w))
			return -EIO;
	} else if (kind == ROW_HOST && dur) {
		const char *py = jv_get_str(jv_get(ev, "args"), "python");
		struct span_rec h = { ts, ts + dur, row->id, 0 };

		if (int_member(ev, "tid", &tid))
			h.tid = (uint32_t)tid;

		if (spool_add(r->hosts, &h))
			return -EIO;
		/* the Python line that made the call (--python): its time, apart from the call */
		if (py && *py) {
			struct row *line = row_of(r, ROW_PYLINE, py, -1, -1);

			if (!line)
				return -ENOMEM;
			h.id = line->id;
			if (spool_add(r->hosts, &h))
				return -EIO;
		}
	}
	if (jv_u64_exact(jv_get(jv_get(ev, "args"), "correlation"), &corr)) {
		struct corr_rec c = { corr, kind == ROW_HOST ? ts + dur : ts, -1, -1 };

		if (kind != ROW_HOST && !int_member(ev, "pid", &c.dev))
			c.dev = -2;
		if (kind == ROW_HOST)
			int_member(ev, "pid", &c.host);
		if (c.dev != -2 && spool_add(r->corrs, &c))
			return -EIO;
	}
	d.id = row->id;
	d.ns = dur;
	if (spool_add(r->durs, &d))
		return -EIO;
	if (kind != ROW_HOST && int_member(ev, "pid", &pid) && int_member(ev, "tid", &tid)) {
		struct busy_rec b = { pid, ts, ts + dur };
		struct track *t = track_of(r, pid, tid);

		if (!t)
			return -ENOMEM;
		t->spans++;
		t->busy_ns += dur;
		if (spool_add(r->busy, &b))
			return -EIO;
		if (kind == ROW_KERNEL && dur > 0 && spool_add(r->kerns, &b))
			return -EIO;
	}
	return 0;
}

static int dur_cmp(const void *a, const void *b)
{
	const struct dur_rec *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

static int span_cmp(const void *a, const void *b)
{
	const struct span_rec *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int busy_cmp(const void *a, const void *b)
{
	const struct busy_rec *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Nearest rank: the k-th smallest of n, k = ceil(p n / 100) (1-based). */
static uint64_t rank_of(uint64_t n, int p)
{
	uint64_t k = (n * p + 99) / 100;

	return k ? k : 1;
}

/* Each row's p50 and p99 from its sorted durations. */
static int percentiles(struct rep *r)
{
	const struct dur_rec *d;
	uint64_t at = 0;
	uint32_t id = UINT32_MAX;
	int err = spool_sort(r->durs);

	if (err)
		return err;
	while ((d = spool_next(r->durs))) {
		struct row *row = r->rows[d->id];

		at = d->id == id ? at + 1 : 1;
		id = d->id;
		if (at == rank_of(row->count, 50))
			row->p50_ns = d->ns;
		if (at == rank_of(row->count, 99))
			row->p99_ns = d->ns;
	}
	return spool_error(r->durs);
}

/* Each device's busy time: the union of its spans' intervals, sorted by start. */
static int device_busy(struct rep *r)
{
	const struct busy_rec *b;
	struct device *dev = NULL;
	int64_t end = 0;
	int err = spool_sort(r->busy);


	if (err)
		return err;
	r->devs = calloc(r->ntracks + 1, sizeof(*r->devs));
	if (!r->devs)
		return -ENOMEM;
	while ((b = spool_next(r->busy))) {
		if (!dev || dev->pid != b->pid) {
			dev = &r->devs[r->ndevs++];
			*dev = (struct device){ .pid = b->pid, .first_ns = b->ts, .host = -1 };
			end = b->ts;
		}
		dev->spans++;
		if (b->ts > end && (err = ivs_add(&dev->gaps, end, b->ts)))
			return err;
		if (b->end > end) {
			dev->busy_ns += b->end - (b->ts > end ? b->ts : end);
			end = b->end;
		}
		if (b->end > dev->last_ns)
			dev->last_ns = b->end;
	}
	return spool_error(r->busy);
}

static int corr_cmp(const void *a, const void *b)
{
	const struct corr_rec *x = a, *y = b;

	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	return x->dev < y->dev ? -1 : x->dev > y->dev;	/* the launch (-1) first */
}

static struct device *device_of(struct rep *r, int64_t pid)
{
	for (size_t i = 0; i < r->ndevs; i++)
		if (r->devs[i].pid == pid)
			return &r->devs[i];
	return NULL;
}

/* Each device's idle time cut into queued, waiting and host-bound (see the top). */
static int device_idle(struct rep *r)
{
	const struct corr_rec *c;
	const struct busy_rec *b;
	struct corr_rec launch = { .dev = 0 };
	struct ivs all = {};
	int err;

	/* work queued: from a launch's end to its work's start, per device */
	if ((err = spool_sort(r->corrs)))
		return err;
	while ((c = spool_next(r->corrs))) {
		if (c->dev == -1) {
			launch = *c;
		} else if (launch.dev == -1 && launch.corr == c->corr) {
			struct busy_rec q = { c->dev, launch.t, c->t };
			struct device *d = device_of(r, c->dev);

			/* whose device: the process that launched its work */
			if (d && launch.host >= 0)
				d->host = d->host == -1 || d->host == launch.host ? launch.host : -2;
			if (c->t > launch.t && (err = spool_add(r->queued, &q)))
				return err;
		}
	}
	if ((err = spool_error(r->corrs)) || (err = spool_sort(r->queued)))
		return err;
	while ((b = spool_next(r->queued))) {
		struct device *d = device_of(r, b->pid);

		if (d && (err = ivs_add(&d->queued, b->ts, b->end)))
			return err;
	}
	if ((err = spool_error(r->queued)) || (err = spool_sort(r->waits)))
		return err;
	while ((b = spool_next(r->waits)))
		if ((err = ivs_add(&r->waiting, b->ts, b->end)))
			return err;
	if ((err = spool_error(r->waits)))
		return err;
	for (size_t i = 0; i < r->ndevs && !err; i++) {
		struct device *d = &r->devs[i];
		struct ivs rest = {}, hb = {}, q = {}, w = {};

		d->idle_ns = ivs_len(&d->gaps);
		err = ivs_cut(&d->gaps, &d->queued, true, &q);
		err = err ?: ivs_cut(&d->gaps, &d->queued, false, &rest);
		err = err ?: ivs_cut(&rest, &r->waiting, true, &w);
		err = err ?: ivs_cut(&rest, &r->waiting, false, &hb);
		d->queued_ns = ivs_len(&q);
		d->waiting_ns = ivs_len(&w);
		d->host_bound_ns = ivs_len(&hb);
		/* the devices' host-bound time together: their union below */
		err = err ?: ivs_append(&all, &hb);
		free(rest.v);
		free(hb.v);
		free(q.v);
		free(w.v);
	}
	if (!err)
		return ivs_union(&all, &r->host_bound);
	free(all.v);
	return err;
}

/*
 * Each process's collectives against its devices' kernels (a device is a process's when that
 * process launched its work; one launched by several is no one's): the union of its
 * collectives' spans, and how much of it the union of its devices' kernels covers.
 */
static int comm_overlap(struct rep *r)
{
	const struct busy_rec *b;
	struct device *d = NULL;
	int err = spool_sort(r->kerns);

	while (!err && (b = spool_next(r->kerns))) {
		if (!d || d->pid != b->pid)
			d = device_of(r, b->pid);
		if (d)
			err = ivs_add(&d->kern, b->ts, b->end);
	}
	err = err ?: spool_error(r->kerns) ?: spool_sort(r->comms);
	b = err ? NULL : spool_next(r->comms);
	while (!err && b) {
		struct ivs c = {}, k = {}, x = {};
		struct overlap *o;
		int64_t pid = b->pid;

		for (; b && b->pid == pid && !err; b = spool_next(r->comms))
			err = ivs_add(&c, b->ts, b->end);
		/* its devices' kernels, together */
		for (size_t i = 0; i < r->ndevs && !err; i++)
			if (r->devs[i].host == pid)
				err = ivs_append(&x, &r->devs[i].kern);
		err = err ?: ivs_union(&x, &k);
		free(x.v);
		x = (struct ivs){};
		err = err ?: ivs_cut(&c, &k, true, &x);
		err = err ?: array_reserve(&r->ovl, &r->ovl_cap, r->novl + 1, sizeof(*r->ovl), 8);
		if (!err) {
			o = &r->ovl[r->novl++];
			*o = (struct overlap){ pid, ivs_len(&c), ivs_len(&x) };
		}
		free(c.v);
		free(k.v);
		free(x.v);
	}
	return err ?: spool_error(r->comms);
}

/*
 * Each host function's time inside the host-bound idle time, and the calls that made the
 * memory peaks, from the host calls kept in order.
 */
static int host_bound_sum(struct rep *r)
{
	const struct span_rec *sp;
	int err = spool_sort(r->hosts);

	if (err)
		return err;
	while ((sp = spool_next(r->hosts))) {
		struct row *row = r->rows[sp->id];

		/*
		 * a Python line's calls nest (its call's callees carry the same line) or run on
		 * several threads: its time is their union, each instant once (calls in start order)
		 */
		if (row->kind == ROW_PYLINE) {
			int64_t from = sp->ts > row->seen_end ? sp->ts : row->seen_end;

			if (sp->end > from)
				row->host_bound_ns += ivs_overlap(&r->host_bound, from, sp->end);
			if (sp->end > row->seen_end)
				row->seen_end = sp->end;
			continue;
		}
		row->host_bound_ns += ivs_overlap(&r->host_bound, sp->ts, sp->end);
		/* the memory peaks' makers: the innermost call around each, on its thread */
		for (size_t i = 0; i < r->nmems; i++) {
			struct mem *m = &r->mems[i];

			if (sp->tid == (uint32_t)m->peak_tid && sp->ts <= m->peak_ts &&
			    sp->end >= m->peak_ts &&
			    (m->who == UINT32_MAX || sp->end - sp->ts < m->who_len)) {
				m->who = sp->id;
				m->who_len = sp->end - sp->ts;
			}
		}
	}
	return spool_error(r->hosts);
}

/* Equal figures: by name, then thread (--by-thread), so that the order is the same each run */
static int row_tie(const struct row *x, const struct row *y)
{
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int by_total(const void *a, const void *b)
{
	const struct row *x = *(const struct row *const *)a, *y = *(const struct row *const *)b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return row_tie(x, y);
}

static int by_host_bound(const void *a, const void *b)
{
	const struct row *x = *(const struct row *const *)a, *y = *(const struct row *const *)b;

	if (x->host_bound_ns != y->host_bound_ns)
		return x->host_bound_ns > y->host_bound_ns ? -1 : 1;
	return row_tie(x, y);
}

/* The rows of @kind in the order of @cmp (by_total: the largest total first), or NULL */
static const struct row **rows_sorted(const struct rep *r, int kind,
				      int (*cmp)(const void *, const void *), size_t *n)
{
	const struct row **v = calloc(r->nrows + 1, sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < r->nrows; i++)
		if (r->rows[i]->kind == kind)
			v[(*n)++] = r->rows[i];
	qsort(v, *n, sizeof(*v), cmp);
	return v;
}

/* --- the trace's health, from its metadata ------------------------------------------------- */

struct health {
	bool ours;			/* spyreStats: a trace of spyre-bpftrace */
	struct run_counts rc;		/* the run's summary line, by the same keys (facts.h) */
	double no_return, driver_drops, in_flight;
	double sample_every;
	bool budget;
	double traced_s, run_s, windows, cut_at_pause;
	bool memory_sampled;
};

static double num_or(const struct jv *obj, const char *key)
{
	double d;

	return jv_get_num(obj, key, &d) ? d : 0;
}

static void health_of(const struct jv *head, struct health *h)
{
	const struct jv *st = jv_get(head, "spyreStats"), *b = jv_get(st, "budget");
	const struct jv *mem = jv_get(head, "spyreMemory"), *sampled = jv_get(mem, "sampled");

	memset(h, 0, sizeof(*h));
	h->ours = st && st->type == JV_OBJECT;
	for (size_t i = 0; i < run_count_nkeys; i++)
		*run_count_at(&h->rc, &run_count_keys[i]) =
			(uint64_t)num_or(st, run_count_keys[i].key);
	/* a trace from before the causes were kept has their sum ("drops") only */
	h->rc.causes_known = jv_get(st, "dropsRingFull") != NULL;
	if (!h->rc.causes_known)
		h->rc.ring = (uint64_t)num_or(st, "drops");
	h->no_return = num_or(st, "noReturn");
	h->driver_drops = num_or(st, "driverDrops");
	h->in_flight = num_or(st, "launchesInFlight");
	h->sample_every = num_or(jv_get(head, "spyreSampling"), "sampleEvery");
	h->budget = b && b->type == JV_OBJECT;
	h->traced_s = num_or(b, "tracedSec");
	h->run_s = num_or(b, "runSec");
	h->windows = num_or(b, "windows");
	h->cut_at_pause = num_or(b, "launchesCutAtPause");
	h->memory_sampled = sampled && sampled->type == JV_BOOL && sampled->b;
}

/*
 * Process @pid's rank: a trace of one rank names it in distributedInfo (its process is
 * spyreStats.targetPid), a merge of ranks in spyreDistributedInfo, by pid. -1: not known.
 */
static int64_t rank_of_pid(const struct jv *head, int64_t pid)
{
	const struct jv *list = jv_get(head, "spyreDistributedInfo"), *e;
	double p, rank;

	if (list && list->type == JV_ARRAY) {
		jv_foreach(e, list)
			if (jv_get_num(e, "pid", &p) && p == pid && jv_get_num(e, "rank", &rank))
				return (int64_t)rank;
		return -1;
	}
	if (jv_get_num(jv_get(head, "spyreStats"), "targetPid", &p) && p == pid &&
	    jv_get_num(jv_get(head, "distributedInfo"), "rank", &rank))
		return (int64_t)rank;
	return -1;
}

/* A process's rank as the text tables show it: "?" when the trace does not say */
static const char *rank_str(const struct jv *head, int64_t pid, char *buf, size_t len)
{
	int64_t rank = rank_of_pid(head, pid);

	if (rank < 0)
		return "?";
	snprintf(buf, len, "%lld", (long long)rank);
	return buf;
}

/* ... and in the JSON: null when the trace does not say */
static void json_rank(struct jw *w, const struct jv *head, int64_t pid)
{
	int64_t rank = rank_of_pid(head, pid);

	if (rank >= 0)
		jw_kv_i64(w, "rank", rank);
	else
		jw_kv_null(w, "rank");
}

static int coll_cmp(const void *a, const void *b)
{
	const struct coll *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->op, y->op);
}

/* --- rendering ------------------------------------------------------------------------------ */

static double pct(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

static int64_t busy_total(const struct rep *r)
{
	int64_t t = 0;

	for (size_t i = 0; i < r->ndevs; i++)
		t += r->devs[i].busy_ns;
	return t;
}

/* A row's calls in the model the summary and the metadata share (output/facts.h). */
static struct fn_row fn_row_of(const struct row *x)
{
	return (struct fn_row){ .count = x->count, .total_ns = (uint64_t)x->total_ns,
				.p50_ns = (uint64_t)x->p50_ns, .p99_ns = (uint64_t)x->p99_ns };
}

static void text_rows(FILE *f, const struct rep *r, int kind, const char *what)
{
	int64_t busy = busy_total(r);
	const struct row **v;
	char c[32], b[32];
	size_t n;

	v = rows_sorted(r, kind, by_total, &n);
	if (!v || !n) {
		free(v);
		return;
	}
	fprintf(f, "\n%s\n", what);
	if (kind == ROW_COPY)
		fprintf(f, "      count           bytes     total ms    mean µs      GB/s");
	else
		fn_row_head(f);
	fprintf(f, "%s  %s\n", kind == ROW_KERNEL ? "  device %" : "",
		kind == ROW_HOST ? "function" : kind == ROW_KERNEL ? "kernel" : "direction");
	for (size_t i = 0; i < n; i++) {
		const struct row *x = v[i];
		struct fn_row fr = fn_row_of(x);

		if (kind == ROW_COPY)
			fprintf(f, "%11s %15s %12.3f %10.1f %9.3f", fmt_count(x->count, c, sizeof(c)),
				fmt_count(x->bytes, b, sizeof(b)), x->total_ns / 1e6,
				x->count ? x->total_ns / 1e3 / x->count : 0,
				x->total_ns ? (double)x->bytes / x->total_ns : 0);
		else
			fn_row_text(f, &fr);
		if (kind == ROW_KERNEL)
			fprintf(f, " %9.1f", pct(x->total_ns, busy));
		fprintf(f, "  %s", x->name);
		if (x->tid >= 0)	/* --by-thread */
			fprintf(f, "  [tid %lld%s%s]", (long long)x->tid,
				name_of(r, x->pid, x->tid) ? " " : "", name_of(r, x->pid, x->tid) ?: "");
		fputc('\n', f);
	}
	free(v);
}

static int track_cmp(const void *a, const void *b)
{
	const struct track *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void text_devices(FILE *f, struct rep *r)
{
	char c[32];

	if (!r->ndevs)
		return;
	qsort(r->tracks, r->ntracks, sizeof(*r->tracks), track_cmp);
	fprintf(f, "\ndevices: busy = the union of their streams' work, over each device's first "
		"to last\n");
	for (size_t i = 0; i < r->ndevs; i++) {
		const struct device *d = &r->devs[i];
		int64_t span = d->last_ns - d->first_ns;
		const char *name = name_of(r, d->pid, -1);

		fprintf(f, "  device pid %lld%s%s%s: busy %.1f %% of %.3f ms (idle %.3f ms), %s "
			"spans\n", (long long)d->pid, name ? " \"" : "", name ?: "",
			name ? "\"" : "", pct(d->busy_ns, span), span / 1e6,
			(span - d->busy_ns) / 1e6, fmt_count(d->spans, c, sizeof(c)));
		for (size_t k = 0; k < r->ntracks; k++) {
			const struct track *t = &r->tracks[k];
			const char *tn = name_of(r, t->pid, t->tid);

			if (t->pid != d->pid)
				continue;
			fprintf(f, "    tid %lld%s%s%s: busy %.1f %%, %s spans\n",
				(long long)t->tid, tn ? " \"" : "", tn ?: "", tn ? "\"" : "",
				pct(t->busy_ns, span), fmt_count(t->spans, c, sizeof(c)));
		}
	}
}

/*
 * The rows of @kind with time in the host-bound idle time, the largest REPORT_IDLE_ROWS, after
 * @head (nothing when none has any)
 */
static void text_bound_rows(FILE *f, const struct rep *r, int kind, const char *head)
{
	int64_t all = ivs_len(&r->host_bound);
	size_t n, shown = 0;
	const struct row **v = rows_sorted(r, kind, by_host_bound, &n);

	for (size_t i = 0; v && i < n && v[i]->host_bound_ns; i++) {
		if (!shown++)
			fputs(head, f);
		if (shown > REPORT_IDLE_ROWS)
			break;
		fprintf(f, "%12.3f %6.1f %%  %s\n", v[i]->host_bound_ns / 1e6,
			pct(v[i]->host_bound_ns, all), v[i]->name);
	}
	free(v);
}

static void text_idle(FILE *f, const struct rep *r)
{
	int64_t all;
	char head[192];

	if (!r->ndevs)
		return;
	fprintf(f, "\nwhy the devices idled: work queued (launched, not started), the host in a "
		"wait call with nothing queued, host-bound (neither)\n");
	for (size_t i = 0; i < r->ndevs; i++) {
		const struct device *d = &r->devs[i];

		fprintf(f, "  device pid %lld: idle %.3f ms: queued %.3f ms (%.1f %%), waiting %.3f "
			"ms (%.1f %%), host-bound %.3f ms (%.1f %%)\n", (long long)d->pid,
			d->idle_ns / 1e6, d->queued_ns / 1e6, pct(d->queued_ns, d->idle_ns),
			d->waiting_ns / 1e6, pct(d->waiting_ns, d->idle_ns),
			d->host_bound_ns / 1e6, pct(d->host_bound_ns, d->idle_ns));
	}
	all = ivs_len(&r->host_bound);
	snprintf(head, sizeof(head), "while a device idled host-bound (%.3f ms), the host ran "
		 "(inclusive: a call and its callees each count)\n"
		 "    total ms   of it  function\n", all / 1e6);
	text_bound_rows(f, r, ROW_HOST, head);
	text_bound_rows(f, r, ROW_PYLINE, "... and the Python lines that made those calls "
			"(args.python, --python: a line's nested calls count once)\n"
			"    total ms   of it  line\n");
}

static void text_collectives(FILE *f, struct rep *r, const struct jv *head)
{
	char c[32], b[32];

	if (!r->ncolls)
		return;
	qsort(r->colls, r->ncolls, sizeof(*r->colls), coll_cmp);
	fprintf(f, "\ncollectives, by process and op (algbw: bytes over the op's time)\n"
		"   rank         pid       count           bytes     total ms  algbw GB/s  op\n");
	for (size_t i = 0; i < r->ncolls; i++) {
		const struct coll *x = &r->colls[i];
		char rk[24];

		fprintf(f, "%7s %11lld %11s %15s %12.3f %11.3f  %s\n",
			rank_str(head, x->pid, rk, sizeof(rk)), (long long)x->pid,
			fmt_count(x->count, c, sizeof(c)), fmt_count(x->bytes, b, sizeof(b)),
			x->total_ns / 1e6, x->total_ns ? (double)x->bytes / x->total_ns : 0,
			x->op);
	}
}

static void text_overlap(FILE *f, const struct rep *r, const struct jv *head)
{
	if (!r->novl)
		return;
	fprintf(f, "\ncompute/communication overlap, by process (its collectives' time while its "
		"devices ran kernels)\n"
		"   rank         pid    collectives ms  overlapped ms  overlap\n");
	for (size_t i = 0; i < r->novl; i++) {
		const struct overlap *o = &r->ovl[i];
		char rk[24];

		fprintf(f, "%7s %11lld %17.3f %14.3f %7.1f%%\n",
			rank_str(head, o->pid, rk, sizeof(rk)), (long long)o->pid,
			o->comm_ns / 1e6, o->overlap_ns / 1e6, pct(o->overlap_ns, o->comm_ns));
	}
}

static void text_memory(FILE *f, const struct rep *r, const struct jv *head)
{
	const struct jv *procs = jv_get(jv_get(head, "spyreMemory"), "processes"), *p, *g;

	if (!r->nmems)
		return;
	fprintf(f, "\ndevice memory (the [memory] events' allocated bytes)\n");
	for (size_t i = 0; i < r->nmems; i++) {
		const struct mem *m = &r->mems[i];
		char a[32], b[32], n1[32], n2[32];

		fprintf(f, "  pid %lld device %lld: peak %s B at %.3f ms (tid %lld%s%s), %s B "
			"allocated at the end; %s allocations, %s frees\n", (long long)m->pid,
			(long long)m->dev, fmt_count(m->peak, a, sizeof(a)), m->peak_ts / 1e6,
			(long long)m->peak_tid, m->who != UINT32_MAX ? ", in " : "",
			m->who != UINT32_MAX ? r->rows[m->who]->name : "",
			fmt_count(m->last, b, sizeof(b)), fmt_count(m->allocs, n1, sizeof(n1)),
			fmt_count(m->frees, n2, sizeof(n2)));
	}
	/* ours: the ledger's blocks still allocated at the end, by the site that made them */
	jv_foreach(p, procs) {
		double pid, bytes, count;
		int shown = 0;

		jv_foreach(g, jv_get(p, "liveGroups")) {
			const char *py = jv_get_str(g, "python");
			char a[32], n[32];

			if (!jv_get_num(g, "bytes", &bytes) || !jv_get_num(g, "count", &count))
				continue;
			if (!shown++ && jv_get_num(p, "pid", &pid))
				fprintf(f, "  still allocated at the end in pid %.0f, by where it was "
					"allocated:\n", pid);
			/* a group is one site and one block size */
			fprintf(f, "    %s x %s B: %s%s%s\n",
				fmt_count((uint64_t)count, n, sizeof(n)),
				fmt_count((uint64_t)bytes, a, sizeof(a)),
				jv_get_str(g, "probe") ?: "?", py ? " at " : "", py ?: "");
		}
	}
}

static void text_health(FILE *f, const struct health *h)
{
	fprintf(f, "\nhealth: ");
	if (!h->ours) {
		fprintf(f, "not a trace of spyre-bpftrace (no spyreStats): what was lost is not "
			"known\n");
		return;
	}
	/* the run's own summary line, from the counts its metadata kept */
	run_counts_text(f, &h->rc);
	fprintf(f, " (the run's summary line)\n");
	if (h->driver_drops)
		fprintf(f, "  %.0f driver events lost\n", h->driver_drops);
	if (h->sample_every > 1)
		fprintf(f, "  sampled: 1 call in %.0f traced; the host counts above are of the "
			"calls traced, not all\n", h->sample_every);
	if (h->budget)
		fprintf(f, "  budget: traced %.3f s of %.3f s (%.0f %%) in %.0f windows; the figures "
			"above cover the windows only (%.0f launches cut at a pause)\n",
			h->traced_s, h->run_s, h->run_s > 0 ? 100 * h->traced_s / h->run_s : 0,
			h->windows, h->cut_at_pause);
	if (h->rc.unwound)
		fprintf(f, "  %llu calls left by an exception or longjmp: their spans end where the "
			"unwind was seen\n", (unsigned long long)h->rc.unwound);
	if (h->in_flight)
		fprintf(f, "  %.0f launches still in flight at the end: their device spans are "
			"missing\n", h->in_flight);
	if (h->memory_sampled)
		fprintf(f, "  device memory was not followed all the time (budget pauses): its "
			"ledger is sampled\n");
}

static void json_rows(struct jw *w, const struct rep *r, int kind, const char *key)
{
	int64_t busy = busy_total(r);
	const struct row **v;
	size_t n;

	v = rows_sorted(r, kind, by_total, &n);
	jw_key(w, key);
	jw_arr_begin(w);
	for (size_t i = 0; v && i < n; i++) {
		const struct row *x = v[i];

		jw_obj_begin(w);
		jw_kv_str(w, "name", x->name);
		if (x->tid >= 0) {	/* --by-thread */
			jw_kv_i64(w, "pid", x->pid);
			jw_kv_i64(w, "tid", x->tid);
			jw_kv_str(w, "thread", name_of(r, x->pid, x->tid) ?: "");
		}
		if (kind == ROW_COPY) {
			jw_kv_u64(w, "count", x->count);
			jw_kv_i64(w, "totalNs", x->total_ns);
			jw_kv_dbl(w, "meanNs", x->count ? (double)x->total_ns / x->count : 0, 1);
			jw_kv_u64(w, "bytes", x->bytes);
			jw_kv_dbl(w, "gbPerSec", x->total_ns ? (double)x->bytes / x->total_ns : 0, 3);
		} else {	/* count, totalNs, meanNs, p50Ns, p99Ns: as spyreProbes has them */
			struct fn_row fr = fn_row_of(x);

			fn_row_json(w, &fr);
		}
		if (kind == ROW_KERNEL)
			jw_kv_dbl(w, "deviceBusyPct", pct(x->total_ns, busy), 3);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	free(v);
}

/* Member @key: the rows of @kind by their time in the host-bound idle time, largest first */
static void json_bound_rows(struct jw *w, const struct rep *r, int kind, const char *key)
{
	size_t n;
	const struct row **v = rows_sorted(r, kind, by_host_bound, &n);

	jw_key(w, key);
	jw_arr_begin(w);
	for (size_t i = 0; v && i < n && v[i]->host_bound_ns; i++) {
		jw_obj_begin(w);
		jw_kv_str(w, "name", v[i]->name);
		jw_kv_i64(w, "ns", v[i]->host_bound_ns);
		jw_obj_end(w);
	}
	free(v);
	jw_arr_end(w);
}

/* hostBound: the devices' host-bound idle time, who ran on the host meanwhile, which lines */
static void json_host_bound(struct jw *w, const struct rep *r)
{
	jw_key(w, "hostBound");
	jw_obj_begin(w);
	jw_kv_i64(w, "ns", ivs_len(&r->host_bound));
	json_bound_rows(w, r, ROW_HOST, "functions");
	json_bound_rows(w, r, ROW_PYLINE, "pythonLines");
	jw_obj_end(w);
}

static void json_report(struct jw *w, const char *path, struct rep *r,
			const struct jv *head, const struct health *h)
{
	jw_obj_begin(w);
	jw_kv_str(w, "file", path);
	jw_kv_u64(w, "events", r->events);
	jw_kv_i64(w, "spanNs", r->have_x ? r->last_ns - r->first_ns : 0);
	json_rows(w, r, ROW_HOST, "host");
	json_rows(w, r, ROW_KERNEL, "kernels");
	json_rows(w, r, ROW_COPY, "copies");
	jw_key(w, "devices");
	jw_arr_begin(w);
	for (size_t i = 0; i < r->ndevs; i++) {
		const struct device *d = &r->devs[i];

		jw_obj_begin(w);
		jw_kv_i64(w, "pid", d->pid);
		jw_kv_str(w, "name", name_of(r, d->pid, -1) ?: "");
		jw_kv_u64(w, "spans", d->spans);
		jw_kv_i64(w, "busyNs", d->busy_ns);
		jw_kv_i64(w, "spanNs", d->last_ns - d->first_ns);
		jw_key(w, "idle");
		jw_obj_begin(w);
		jw_kv_i64(w, "ns", d->idle_ns);
		jw_kv_i64(w, "queuedNs", d->queued_ns);
		jw_kv_i64(w, "waitingNs", d->waiting_ns);
		jw_kv_i64(w, "hostBoundNs", d->host_bound_ns);
		jw_obj_end(w);
		jw_key(w, "tracks");
		jw_arr_begin(w);
		for (size_t k = 0; k < r->ntracks; k++) {
			const struct track *t = &r->tracks[k];

			if (t->pid != d->pid)
				continue;
			jw_obj_begin(w);
			jw_kv_i64(w, "tid", t->tid);
			jw_kv_str(w, "name", name_of(r, t->pid, t->tid) ?: "");
			jw_kv_u64(w, "spans", t->spans);
			jw_kv_i64(w, "busyNs", t->busy_ns);
			jw_obj_end(w);
		}
		jw_arr_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	json_host_bound(w, r);
	qsort(r->colls, r->ncolls, sizeof(*r->colls), coll_cmp);
	jw_key(w, "collectives");
	jw_arr_begin(w);
	for (size_t i = 0; i < r->ncolls; i++) {
		const struct coll *x = &r->colls[i];

		jw_obj_begin(w);
		json_rank(w, head, x->pid);
		jw_kv_i64(w, "pid", x->pid);
		jw_kv_str(w, "op", x->op);
		jw_kv_u64(w, "count", x->count);
		jw_kv_u64(w, "bytes", x->bytes);
		jw_kv_i64(w, "totalNs", x->total_ns);
		jw_kv_dbl(w, "algbwGBps", x->total_ns ? (double)x->bytes / x->total_ns : 0, 3);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "overlap");
	jw_arr_begin(w);
	for (size_t i = 0; i < r->novl; i++) {
		const struct overlap *o = &r->ovl[i];

		jw_obj_begin(w);
		json_rank(w, head, o->pid);
		jw_kv_i64(w, "pid", o->pid);
		jw_kv_i64(w, "collectivesNs", o->comm_ns);
		jw_kv_i64(w, "overlapNs", o->overlap_ns);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "memory");
	jw_arr_begin(w);
	for (size_t i = 0; i < r->nmems; i++) {
		const struct mem *m = &r->mems[i];

		jw_obj_begin(w);
		jw_kv_i64(w, "pid", m->pid);
		jw_kv_i64(w, "deviceType", m->type);
		jw_kv_i64(w, "device", m->dev);
		jw_kv_i64(w, "peakBytes", m->peak);
		jw_kv_us(w, "peakTs", m->peak_ts);
		jw_kv_i64(w, "peakTid", m->peak_tid);
		if (m->who != UINT32_MAX)
			jw_kv_str(w, "peakIn", r->rows[m->who]->name);
		else
			jw_kv_null(w, "peakIn");
		jw_kv_i64(w, "endBytes", m->last);
		jw_kv_u64(w, "allocs", m->allocs);
		jw_kv_u64(w, "frees", m->frees);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "health");
	jw_obj_begin(w);
	jw_kv_bool(w, "spyreTrace", h->ours);
	if (h->ours)	/* the run's counts, as its metadata has them */
		run_counts_json(w, &h->rc);
	jw_kv_bool(w, "dropCausesKnown", h->rc.causes_known);
	jw_kv_u64(w, "dropped", run_counts_dropped(&h->rc));
	jw_kv_dbl(w, "driverDrops", h->driver_drops, 0);
	jw_kv_dbl(w, "launchesInFlight", h->in_flight, 0);
	jw_kv_dbl(w, "sampleEvery", h->sample_every ? h->sample_every : 1, 0);
	if (h->budget) {
		jw_kv_dbl(w, "tracedSec", h->traced_s, 3);
		jw_kv_dbl(w, "runSec", h->run_s, 3);
		jw_kv_dbl(w, "windows", h->windows, 0);
	}
	jw_kv_bool(w, "memorySampled", h->memory_sampled);
	jw_obj_end(w);
	jw_obj_end(w);
	jw_nl(w);
}

static void rep_free(struct rep *r)
{
	for (size_t i = 0; i < r->nrows; i++)
		free((char *)r->rows[i]->name);
	tdestroy(r->by_name, free);	/* the rows themselves */
	free(r->rows);
	free(r->tracks);
	for (size_t i = 0; i < r->ndevs; i++) {
		free(r->devs[i].gaps.v);
		free(r->devs[i].queued.v);
		free(r->devs[i].kern.v);
	}
	free(r->devs);
	free(r->waiting.v);
	free(r->colls);
	free(r->mems);
	free(r->host_bound.v);
	spool_free(r->corrs);
	spool_free(r->waits);
	spool_free(r->queued);
	spool_free(r->hosts);
	for (size_t i = 0; i < r->nnames; i++)
		free(r->names[i].name);
	free(r->names);
	spool_free(r->durs);
	spool_free(r->busy);
	spool_free(r->kerns);
	spool_free(r->comms);
	free(r->ovl);
}

/*
 * The tables for people: names, paths and args are the traced processes' and the trace's
 * (untrusted): written whole, then to @out with their control bytes escaped, as the summary is
 */
static void text_report(FILE *out, const char *path, struct rep *r, const struct jv *head,
			const struct health *h)
{
	char *text = NULL, c[32];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return;
	fprintf(f, "report: %s: %s events over %.3f s (first span to last end)\n", path,
		fmt_count(r->events, c, sizeof(c)), r->have_x ? (r->last_ns - r->first_ns) / 1e9 : 0);
	text_rows(f, r, ROW_HOST, "host calls, by total time");
	text_rows(f, r, ROW_KERNEL, "device kernels, by total time (device %: of the devices' "
		  "busy time)");
	text_rows(f, r, ROW_COPY, "copies, by direction");
	text_devices(f, r);
	text_idle(f, r);
	text_collectives(f, r, head);
	text_overlap(f, r, head);
	text_memory(f, r, head);
	text_health(f, h);
	if (!fclose(f))
		log_write_lines(out, text, len);
	free(text);
}

/* One file: read, summed, rendered. 0, or -errno with a message said. */
static int report_one(const char *path, FILE *out, struct jw *w, bool by_thread)
{
	struct rep r = { .by_thread = by_thread };
	struct tstream *ts;
	const struct jv *ev;
	struct health h;
	char err[256];
	int rc, ret = 0;

	ts = tstream_open(path, err, sizeof(err));
	if (!ts) {
		pr_err("%s: %s", path, err);
		return -EIO;
	}
	r.durs = spool_new(sizeof(struct dur_rec), dur_cmp, REPORT_SPOOL_MEM);
	r.busy = spool_new(sizeof(struct busy_rec), busy_cmp, REPORT_SPOOL_MEM);
	r.corrs = spool_new(sizeof(struct corr_rec), corr_cmp, REPORT_SPOOL_MEM);
	r.waits = spool_new(sizeof(struct busy_rec), busy_cmp, REPORT_SPOOL_MEM);
	r.queued = spool_new(sizeof(struct busy_rec), busy_cmp, REPORT_SPOOL_MEM);
	r.hosts = spool_new(sizeof(struct span_rec), span_cmp, REPORT_SPOOL_MEM);
	r.kerns = spool_new(sizeof(struct busy_rec), busy_cmp, REPORT_SPOOL_MEM);
	r.comms = spool_new(sizeof(struct busy_rec), busy_cmp, REPORT_SPOOL_MEM);
	if (!r.durs || !r.busy || !r.corrs || !r.waits || !r.queued || !r.hosts || !r.kerns ||
	    !r.comms) {
		ret = -ENOMEM;
		goto out;
	}
	while ((rc = tstream_next(ts, &ev, err, sizeof(err))) == 1) {
		r.events++;
		ret = take_event(&r, ev);
		if (ret)
			break;
	}
	if (rc < 0) {
		pr_err("%s: not a whole trace: %s%s", path, err, tstream_cut(ts) ?
		       " (cut short: `spyre-bpftrace recover` closes it)" : "");
		ret = -EINVAL;
		goto out;
	}
	if (!ret)
		ret = percentiles(&r);
	if (!ret)
		ret = device_busy(&r);
	if (!ret)
		ret = device_idle(&r);
	if (!ret)
		ret = host_bound_sum(&r);
	if (!ret)
		ret = comm_overlap(&r);
	if (ret) {
		pr_err("%s: %s", path, strerror(-ret));
		goto out;
	}
	health_of(tstream_head(ts), &h);
	if (w) {
		json_report(w, path, &r, tstream_head(ts), &h);
		goto out;
	}
	text_report(out, path, &r, tstream_head(ts), &h);
out:
	tstream_close(ts);
	rep_free(&r);
	return ret;
}

int report_files(char *const *paths, int n, bool json, bool by_thread, FILE *out)
{
	struct jw *w = json ? jw_memopen() : NULL;
	int bad = 0, files = 0;
	struct stat st;
	char p[4096];

	if (json) {
		if (!w)
			return EXIT_ERROR;
		jw_obj_begin(w);
		jw_key(w, "files");
		jw_arr_begin(w);
		jw_nl(w);
	}
	for (int i = 0; i < n; i++) {
		struct dirent **ents;
		int k;

		if (stat(paths[i], &st) || !S_ISDIR(st.st_mode)) {
			if (files++ && !w)
				fputc('\n', out);
			bad += !!report_one(paths[i], out, w, by_thread);
			continue;
		}
		k = trace_dir_scan(paths[i], &ents);
		if (k <= 0) {
			pr_err("%s: %s", paths[i], k ? strerror(-k) :
			       "no trace files (*.json, *.json.gz) in the directory");
			bad++;
			continue;
		}
		for (int j = 0; j < k; j++) {
			snprintf(p, sizeof(p), "%s%s%s", paths[i],
				 str_ends_with(paths[i], "/") ? "" : "/", ents[j]->d_name);
			if (files++ && !w)
				fputc('\n', out);
			bad += !!report_one(p, out, w, by_thread);
			free(ents[j]);
		}
		free(ents);
	}
	if (w) {
		char *text;
		size_t len;

		jw_arr_end(w);
		jw_obj_end(w);
		text = jw_mem_take(w, &len);
		if (!text)
			return EXIT_ERROR;
		fprintf(out, "%s\n", text);
		free(text);
	}
	return bad ? EXIT_ERROR : EXIT_OK;
}

int cmd_report(char *const *paths, int n, bool json, bool by_thread)
{
	return report_files(paths, n, json, by_thread, stdout);
}
