// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report's reading and its sums: one pass over a trace's events (tracestream.h). A row per
 * host function, device kernel and copy direction sums count, time and bytes as the events go
 * by; each span's duration goes to a spool (spool.h) with its row's id, sorted at the end so
 * that p50 and p99 are exact (nearest rank) in bounded memory; each device span's interval goes
 * to a second spool, sorted by device and start, whose union is the device's busy time.
 *
 * Why a device idled (as Holistic Trace Analysis splits it): each gap between its work is cut
 * into time when work was queued for it (a launch had returned, its work had not started:
 * launch and device span joined by correlation through a third spool), time when nothing was
 * queued and a host thread was inside a wait (a synchronize, query or wait call), and the rest,
 * host-bound: the host was not feeding the device. The host calls, kept in a fourth spool by
 * start, give each function's time inside the host-bound gaps.
 */
#include <errno.h>
#include <search.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "offline/jsonparse.h"
#include "offline/reportcalc.h"
#include "offline/spool.h"
#include "offline/tracestream.h"

/* ts and dur beyond ±9e12 µs (104 days) are not a trace's */
#define REPORT_MAX_US	9000000000000LL
/* sorted runs of the spools kept in memory: past that, spilled to $TMPDIR */
#define REPORT_SPOOL_MEM	(16u << 20)

struct dur_rec {
	uint32_t id, pad;
	int64_t ns;
};

struct busy_rec {
	int64_t pid, ts, end;
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

/* One side of a launch: the host call that queued work (@dev -1: its end), or the work */
struct corr_rec {
	uint64_t corr;
	int64_t t;		/* the launch's end, the work's start */
	int64_t dev;		/* the device pid of the work; -1 for the launch */
	int64_t host;		/* the launch's process */
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
	/* once a row, not once a call: strcasestr was 5 % of report's time (perf) */
	row->wait = kind == ROW_HOST && is_wait(name);
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

const char *rep_name_of(const struct rep *r, int64_t pid, int64_t tid)
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
	if (rep_name_of(r, pid, tid))
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

int rep_take_event(struct rep *r, const struct jv *ev)
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
	if (row->wait) {
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


static double num_or(const struct jv *obj, const char *key)
{
	double d;

	return jv_get_num(obj, key, &d) ? d : 0;
}

/*
 * A count from a trace's metadata (any file: a negative, fractional or huge number, or NaN,
 * would make the conversion undefined): 0 unless a whole number in range.
 */
static uint64_t count_or(const struct jv *obj, const char *key)
{
	double d = num_or(obj, key);

	return d >= 0 && d < 18446744073709551616.0 && d == (double)(uint64_t)d ? (uint64_t)d : 0;
}

void rep_health_of(const struct jv *head, struct health *h)
{
	const struct jv *st = jv_get(head, "spyreStats"), *b = jv_get(st, "budget");
	const struct jv *mem = jv_get(head, "spyreMemory"), *sampled = jv_get(mem, "sampled");

	memset(h, 0, sizeof(*h));
	h->ours = st && st->type == JV_OBJECT;
	for (size_t i = 0; i < run_count_nkeys; i++)
		*run_count_at(&h->rc, &run_count_keys[i]) =
			count_or(st, run_count_keys[i].key);
	/* a trace from before the causes were kept has their sum ("drops") only */
	h->rc.causes_known = jv_get(st, "dropsRingFull") != NULL;
	if (!h->rc.causes_known)
		h->rc.ring = count_or(st, "drops");
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

void rep_free(struct rep *r)
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

int rep_init(struct rep *r, bool by_thread)
{
	*r = (struct rep){ .by_thread = by_thread };
	r->durs = spool_new(sizeof(struct dur_rec), dur_cmp, REPORT_SPOOL_MEM);
	r->busy = spool_new(sizeof(struct busy_rec), busy_cmp, REPORT_SPOOL_MEM);
	r->corrs = spool_new(sizeof(struct corr_rec), corr_cmp, REPORT_SPOOL_MEM);
	r->waits = spool_new(sizeof(struct busy_rec), busy_cmp, REPORT_SPOOL_MEM);
	r->queued = spool_new(sizeof(struct busy_rec), busy_cmp, REPORT_SPOOL_MEM);
	r->hosts = spool_new(sizeof(struct span_rec), span_cmp, REPORT_SPOOL_MEM);
	r->kerns = spool_new(sizeof(struct busy_rec), busy_cmp, REPORT_SPOOL_MEM);
	r->comms = spool_new(sizeof(struct busy_rec), busy_cmp, REPORT_SPOOL_MEM);
	if (!r->durs || !r->busy || !r->corrs || !r->waits || !r->queued || !r->hosts ||
	    !r->kerns || !r->comms)
		return -ENOMEM;
	return 0;
}

int rep_compute(struct rep *r)
{
	return percentiles(r) ?: device_busy(r) ?: device_idle(r) ?: host_bound_sum(r) ?:
	       comm_overlap(r);
}
