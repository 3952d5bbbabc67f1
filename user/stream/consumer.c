// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/array.h"
#include "stream/consumer.h"
#include "stream/lanes.h"
#include "stream/pystack.h"
#include "stream/ustack.h"
#include "stream/pyspans.h"
#include "stream/memledger.h"
#include "stream/record.h"
#include "stream/vfio_decode.h"
#include "common/util.h"

int consumer_init(struct consumer *c, struct trace_writer *tw, const struct target *t,
		  const char *procfs)
{
	memset(c, 0, sizeof(*c));
	c->tw = tw;
	c->t = t;
	c->procfs = procfs;
	c->tcap = 256;
	c->threads = calloc(c->tcap, sizeof(*c->threads));
	if (!c->threads || device_init(&c->dev, tw))
		return -ENOMEM;
	return consumer_resize(c, t->cnt);
}

int consumer_resize(struct consumer *c, int nprobes)
{
	struct probe_out *o;
	struct fn_stats *s;
	uint64_t *d;

	if (nprobes <= c->nprobes)
		return 0;
	o = realloc(c->out, nprobes * sizeof(*o));
	if (!o)
		return -ENOMEM;
	c->out = o;
	memset(&c->out[c->nprobes], 0, (nprobes - c->nprobes) * sizeof(*o));
	/*
	 * A histogram takes 8 KiB: zeroed pages from calloc, never written for a probe that is
	 * never called, keep it out of RSS (realloc + memset made 5,498 probes cost 44 MB)
	 */
	s = calloc(nprobes, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (c->nprobes)
		memcpy(s, c->stats, c->nprobes * sizeof(*s));
	free(c->stats);
	c->stats = s;
	d = realloc(c->delivered, nprobes * sizeof(*d));
	if (!d)
		return -ENOMEM;
	c->delivered = d;
	memset(&c->delivered[c->nprobes], 0, (nprobes - c->nprobes) * sizeof(*d));
	d = realloc(c->trig_ns, nprobes * sizeof(*d));
	if (!d)
		return -ENOMEM;
	c->trig_ns = d;
	memset(&c->trig_ns[c->nprobes], 0, (nprobes - c->nprobes) * sizeof(*d));
	c->nprobes = nprobes;
	return 0;
}

static void read_comm(const char *procfs, uint32_t pid, uint32_t tid, char *name, size_t len)
{
	char path[96];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/task/%u/comm", procfs, pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, name, len - 1);
		close(fd);
	}
	if (n <= 0) {
		/* the thread is gone already: a stable placeholder beats an empty name */
		snprintf(name, len, "thread %u", tid);
		return;
	}
	name[n] = 0;
	if (n && name[n - 1] == '\n')
		name[n - 1] = 0;
}

static int threads_grow(struct consumer *c)
{
	uint32_t ncap = c->tcap * 2;
	struct thread_info *nt = calloc(ncap, sizeof(*nt));

	if (!nt)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->tcap; i++) {
		uint32_t h;

		if (!c->threads[i].tid)
			continue;
		h = (c->threads[i].tid * 2654435761u) & (ncap - 1);
		while (nt[h].tid)
			h = (h + 1) & (ncap - 1);
		nt[h] = c->threads[i];
	}
	free(c->threads);
	c->threads = nt;
	c->tcap = ncap;
	return 0;
}

/* The slot of @tid: its own, or the empty one where it belongs. */
static struct thread_info *thread_slot(struct consumer *c, uint32_t tid)
{
	uint32_t h = (tid * 2654435761u) & (c->tcap - 1);

	while (c->threads[h].tid && c->threads[h].tid != tid)
		h = (h + 1) & (c->tcap - 1);
	return &c->threads[h];
}

static struct thread_info *add_thread(struct consumer *c, uint32_t pid, uint32_t tid)
{
	struct thread_info *ti = thread_slot(c, tid);

	if (ti->tid)
		return ti;
	ti->tid = tid;
	ti->pid = pid;
	ti->name[0] = 0;
	/* keep the load under 1/2 so probing stays short */
	if (++c->tcnt * 2 > c->tcap && !threads_grow(c))
		ti = thread_slot(c, tid);
	return ti;
}

/* The container a process runs in, from the last path component of its cgroup (v2 and v1
 * layouts of docker, containerd, cri-o, podman: "...-<64 hex>.scope" or ".../<64 hex>"). */
static void read_container(const char *procfs, uint32_t pid, char *out, size_t len)
{
	char path[64], line[512];
	FILE *f;

	out[0] = 0;
	snprintf(path, sizeof(path), "%s/%u/cgroup", procfs, pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *best = NULL;
		size_t n = 0;

		/* a run of 64 hex digits: the container id of docker, containerd, cri-o, podman */
		while (*p) {
			size_t k = strspn(p, "0123456789abcdef");

			if (k > n) {
				n = k;
				best = p;
			}
			p += k ? k : 1;
		}
		if (n == 64 && n < len) {
			memcpy(out, best, n);
			out[n] = 0;
			break;
		}
	}
	fclose(f);
}

static void read_cmdline(const char *procfs, uint32_t pid, char *out, size_t len)
{
	char path[64];
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/cmdline", procfs, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, out, len - 1);
		close(fd);
	}
	if (n < 0)
		n = 0;
	out[n] = 0;
	for (ssize_t i = 0; i < n; i++)
		if (out[i] == 0 || (unsigned char)out[i] < 0x20)
			out[i] = ' ';
	while (n && out[n - 1] == ' ')
		out[--n] = 0;
}

/* The value of NAME= in environment block @env, NULL if absent. */
static const char *env_value(const char *env, size_t len, const char *name)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < len; i += strnlen(env + i, len - i) + 1)
		if (len - i > nl && !strncmp(env + i, name, nl) && env[i + nl] == '=')
			return env + i + nl + 1;
	return NULL;
}

/* A non-negative decimal int that is the whole entry, else -1. */
static int env_int(const char *v)
{
	char *end;
	long n;

	if (!v || *v < '0' || *v > '9')
		return -1;
	errno = 0;
	n = strtol(v, &end, 10);
	return *end || errno || n > INT32_MAX ? -1 : (int)n;
}

size_t environ_whole(const char *env, size_t len)
{
	/* entries end with their NUL: what follows the last one is part of one */
	while (len && env[len - 1])
		len--;
	return len;
}

void dist_from_environ(const char *env, size_t len, struct dist_info *d)
{
	int rank = env_int(env_value(env, len, "RANK"));
	int size = env_int(env_value(env, len, "WORLD_SIZE"));

	/* a Spyre job started without torchrun may carry only the stack's own variable */
	if (size < 0)
		size = env_int(env_value(env, len, "AIU_WORLD_SIZE"));
	if (size >= 0) {
		d->world_size = size;
		d->size_from_env = true;
	}
	if (rank < 0)
		return;
	d->rank = rank;
	d->rank_from_env = true;
	dist_pci_from_environ(env, len, d);
}

void dist_pci_from_environ(const char *env, size_t len, struct dist_info *d)
{
	char name[32];
	const char *pci;

	d->pci_bus_id[0] = 0;
	if (d->rank < 0)
		return;
	snprintf(name, sizeof(name), "AIU_WORLD_RANK_%d", d->rank);
	pci = env_value(env, len, name);
	if (pci)
		snprintf(d->pci_bus_id, sizeof(d->pci_bus_id), "%s", pci);
}

/*
 * Its rank and world size, when its environment has them (@pci_only: only the card of the rank
 * d has, which a dist=rank probe gave). Once per process, and again when a probe gives a rank.
 */
static void read_dist(const char *procfs, uint32_t pid, struct dist_info *d, bool pci_only)
{
	char path[64], *buf;
	ssize_t n, len = 0;
	/* torchrun's environments are a few kB; the variables are near the end of it */
	const size_t cap = 256 << 10;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/environ", procfs, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	buf = malloc(cap + 1);
	while (buf && (size_t)len < cap && (n = read(fd, buf + len, cap - len)) > 0)
		len += n;
	close(fd);
	if (buf && (size_t)len == cap)	/* the cap may have cut an entry: RANK=12|345 */
		len = (ssize_t)environ_whole(buf, (size_t)len);
	if (buf) {
		buf[len] = 0;
		if (pci_only)
			dist_pci_from_environ(buf, len, d);
		else
			dist_from_environ(buf, len, d);
	}
	free(buf);
}

const char *consumer_thread_name(const struct consumer *c, uint32_t tid)
{
	uint32_t h = (tid * 2654435761u) & (c->tcap - 1);

	while (c->threads[h].tid && c->threads[h].tid != tid)
		h = (h + 1) & (c->tcap - 1);
	return c->threads[h].tid ? c->threads[h].name : "";
}

const struct process_info *consumer_process(const struct consumer *c, uint32_t pid)
{
	for (int i = 0; i < c->nprocs; i++)
		if (c->procs[i].pid == pid)
			return &c->procs[i];
	return NULL;
}

static struct process_info *see_process(struct consumer *c, uint32_t pid, const char *comm)
{
	struct process_info *np, *p = (struct process_info *)consumer_process(c, pid);

	if (!p) {
		np = realloc(c->procs, (c->nprocs + 1) * sizeof(*np));
		if (!np)
			return NULL;
		c->procs = np;
		p = &np[c->nprocs++];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
		p->dist.rank = p->dist.world_size = -1;
		/* the libraries its native stacks name, while it lives */
		ustack_add_proc(c->ustack, pid);
		/* once per process: who it is, for the trace and for per-job metrics */
		if (c->procfs) {
			read_cmdline(c->procfs, pid, p->cmdline, sizeof(p->cmdline));
			read_container(c->procfs, pid, p->container, sizeof(p->container));
			read_dist(c->procfs, pid, &p->dist, false);
		}
	}
	if (comm)
		snprintf(p->name, sizeof(p->name), "%s", comm);
	return p;
}

/*
 * The trace's name for thread @tid (0: process @pid) is @name from now on. Written when first
 * known, at ts 0 with its sort index, so that a trace cut short keeps it; after that only when
 * it changed: a rename, at @ts (see trace_renamed).
 */
static void write_name(struct consumer *c, uint32_t pid, uint32_t tid, char named[16],
		       const char *name, int sort_index, uint64_t ts)
{
	if (!c->tw || !name[0] || !strncmp(named, name, 15))
		return;
	/* records of several CPUs come out of time order: keep the metadata's ts monotonic */
	if (ts < c->rename_ts)
		ts = c->rename_ts;
	if (named[0]) {
		trace_renamed(c->tw, pid, tid, name, ts);
		c->rename_ts = ts;
	} else if (tid) {
		trace_thread_name(c->tw, pid, tid, name, sort_index);
	} else {
		trace_process_name(c->tw, pid, name, sort_index);
	}
	snprintf(named, 16, "%s", name);
}

/* "cmdline, pid N in its namespace, container ID" into @out; false when there is nothing. */
static bool process_labels(const struct process_info *p, char *out, size_t len)
{
	int n;

	if (!p->cmdline[0] && !p->container[0] && !(p->ns_pid && p->ns_pid != p->pid))
		return false;
	n = snprintf(out, len, "%s", p->cmdline);
	if (p->ns_pid && p->ns_pid != p->pid && n < (int)len)
		n += snprintf(out + n, len - n, "%spid %u in its namespace", n ? ", " : "",
			      p->ns_pid);
	if (p->container[0] && n < (int)len)
		snprintf(out + n, len - n, "%scontainer %.12s", n ? ", " : "", p->container);
	return true;
}

/* Name process @p in the trace (a rename at @ts), and label it the first time. */
static void name_process(struct consumer *c, struct process_info *p, uint64_t ts)
{
	char labels[320];

	/* sort processes in the order they were seen */
	write_name(c, p->pid, 0, p->named, p->name[0] ? p->name : "process",
		   (int)(p - c->procs), ts);
	if (c->tw && !p->labeled && process_labels(p, labels, sizeof(labels))) {
		trace_process_labels(c->tw, p->pid, labels);
		p->labeled = true;
	}
}

/* A thread seen without its SPYRE_EV_THREAD (ring was full then): ask /proc. */
static void see_thread(struct consumer *c, uint32_t pid, uint32_t tid)
{
	struct thread_info *ti = thread_slot(c, tid);
	struct process_info *p;

	if (ti->tid)
		return;
	ti = add_thread(c, pid, tid);
	if (c->procfs)
		read_comm(c->procfs, pid, tid, ti->name, sizeof(ti->name));
	p = see_process(c, pid, NULL);
	if (p && !p->name[0] && c->procfs) {
		read_comm(c->procfs, pid, pid, p->name, sizeof(p->name));
		if (!strncmp(p->name, "thread ", 7))
			p->name[0] = 0;		/* gone: named "process" for now */
	}
	if (p)
		name_process(c, p, 0);
	if (!ti->name[0])
		snprintf(ti->name, sizeof(ti->name), "thread %u", tid);
	/* sort threads by tid: creation order, main thread first */
	write_name(c, pid, tid, ti->named, ti->name, (int)(tid - pid), 0);
}

static int on_thread_event(struct consumer *c, const struct spyre_event *e)
{
	struct thread_info *ti = add_thread(c, e->tgid, e->tid);
	struct process_info *p;
	char comm[SPYRE_COMM_LEN];

	/* the kernel NUL-terminates comm within its 16 bytes; do not rely on it */
	memcpy(ti->name, e->thread.comm, sizeof(ti->name) - 1);
	ti->name[sizeof(ti->name) - 1] = 0;
	memcpy(comm, e->thread.proc_comm, sizeof(comm) - 1);
	comm[sizeof(comm) - 1] = 0;
	p = see_process(c, e->tgid, comm);
	if (p) {
		p->cgroup_id = e->thread.cgroup_id;
		p->ns_pid = e->thread.ns_pid;
		name_process(c, p, e->ts);
	}
	write_name(c, e->tgid, e->tid, ti->named, ti->name, (int)(e->tid - e->tgid), e->ts);
	return 0;
}

static struct pid_probe_stats *pid_stats_slot(struct consumer *c, uint64_t key)
{
	uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 40) & (c->pcap - 1);

	while (c->pid_stats[h].key && c->pid_stats[h].key != key)
		h = (h + 1) & (c->pcap - 1);
	return &c->pid_stats[h];
}

/* System-wide mode: the same statistics per (process, probe), for per-job metrics. */
static void pid_stats_add(struct consumer *c, uint32_t pid, uint32_t probe, uint64_t dur,
			  bool span)
{
	uint64_t key = (uint64_t)pid << 32 | (probe + 1);
	struct pid_probe_stats *ps;

	if ((c->pcnt + 1) * 2 > c->pcap) {
		uint32_t ocap = c->pcap, ncap = ocap ? ocap * 2 : 64;
		struct pid_probe_stats *old = c->pid_stats;

		c->pid_stats = calloc(ncap, sizeof(*old));
		if (!c->pid_stats) {
			c->pid_stats = old;
			return;
		}
		c->pcap = ncap;
		for (uint32_t i = 0; i < ocap; i++)
			if (old[i].key)
				*pid_stats_slot(c, old[i].key) = old[i];
		free(old);
	}
	ps = pid_stats_slot(c, key);
	if (!ps->key) {
		ps->st = calloc(1, sizeof(*ps->st));
		if (!ps->st)
			return;
		ps->key = key;
		c->pcnt++;
	}
	ps->delivered++;
	if (span)
		fn_stats_add(ps->st, dur);
}

/*
 * A probe's event's arguments at most: its labels, the correlation, the string, the file, the
 * Python line and stack, the native stack
 */
#define EVENT_MAX_ARGS (PROBE_MAX_LABELS + 6)

/* Read when the call's record is made, at its return: an unwound call has none of these. */
static bool returned_value(int src)
{
	return src == PROBE_VAL_RET ||
	       (src >= PROBE_VAL_DEREF && src < PROBE_VAL_DEREF + SPYRE_MAX_DEREFS);
}

/*
 * The trace arguments of probe @p's event, keys included; returns how many. @str: the call's
 * string (str=, args.name), @corr: the launch's id from device_new_corr (2^52 + n: every launch
 * has one, launches return none to key on; 0: not a launch). A function
 * traced in two files of its library has one name: its events say which file ("file"). An
 * unwound call (or one with no return) returned nothing: the values read at the return are
 * left out.
 */
static int build_args(const struct consumer *c, const struct rprobe *p,
		      const struct probe_spec *s, const struct spyre_event *e,
		      struct trace_arg *args, const char *str, uint64_t corr)
{
	bool unwound = e->type == SPYRE_EV_UNWOUND || e->type == SPYRE_EV_NORETURN;
	int n = 0;

	for (int i = 0; i < s->nargs; i++) {
		const struct probe_arg *a = &s->args[i];
		uint64_t v = record_value(e, a->src);

		if (unwound && returned_value(a->src))
			continue;

		args[n].key = a->label;
		switch (a->fmt) {
		case ARG_SIGNED:
			args[n].type = TA_I64;
			args[n].i = (int64_t)v;
			break;
		case ARG_INT32:
			args[n].type = TA_I64;
			args[n].i = (int32_t)v;
			break;
		case ARG_BOOL:
			args[n].type = TA_BOOL;
			args[n].u = (uint8_t)v != 0;
			break;
		case ARG_UNSIGNED:
			args[n].type = TA_U64;
			args[n].u = v;
			break;
		default:
			args[n].type = TA_HEX;
			args[n].u = v;
			break;
		}
		n++;
	}
	if (s->dev == DEV_LAUNCH && !(unwound && (!s->key || returned_value(s->key)))) {
		/*
		 * Kineto's key for host-to-device links, which aiu-trace-analyzer reads too: the
		 * tracer's own id of the launch (its device span carries the same), not the
		 * runtime's key; the key's value only where a record came without an id
		 */
		args[n].key = "correlation";
		args[n].type = TA_U64;
		args[n].u = corr ? corr : record_value(e, s->key);
		n++;
	}
	if (s->str) {
		args[n].key = "name";
		args[n].type = TA_STR;
		args[n].s = str ? str : "";
		n++;
	}
	if (p->other_file) {
		args[n].key = "file";
		args[n].type = TA_STR;
		args[n].s = c->t->libs[p->lib].path;
		n++;
	}
	return n;
}

/*
 * A probe's events share their opening and keys: render them once, on its first event (probes
 * are added while tracing). NULL when that failed: the event is then written the generic way.
 */
static const struct trace_fmt *probe_fmt(struct consumer *c, uint32_t probe,
					 const struct rprobe *p, const struct probe_spec *s,
					 const struct spyre_event *e)
{
	struct probe_out *o = &c->out[probe];
	struct trace_arg args[EVENT_MAX_ARGS];
	const char *keys[EVENT_MAX_ARGS];
	int n;

	/* the same function came in another file since: its events say which file from now */
	if (o->state == 1 && o->file != p->other_file) {
		trace_fmt_free(&o->fmt);
		o->state = 0;
	}
	if (o->state == 1)
		return &o->fmt;
	if (o->state < 0)
		return NULL;
	o->file = p->other_file;
	n = build_args(c, p, s, e, args, NULL, 0);
	for (int i = 0; i < n; i++)
		keys[i] = args[i].key;
	o->state = trace_fmt_init(&o->fmt, e->type == SPYRE_EV_INSTANT, s->cat, p->name, keys, n)
		   ? -1 : 1;
	return o->state == 1 ? &o->fmt : NULL;
}

static int on_exit_event(struct consumer *c, const struct spyre_event *e)
{
	if (array_reserve(&c->exits, &c->capexits, (size_t)c->nexits + 1, sizeof(*c->exits), 4))
		return -ENOMEM;
	c->exits[c->nexits++] = (struct proc_exit){ .pid = e->tgid,
						    .code = (int)e->exit.code };
	return 0;
}

uint64_t consumer_lanes_crossed(const struct consumer *c, uint64_t *threads)
{
	uint64_t n = 0;

	*threads = 0;
	for (uint32_t i = 0; c->threads && i < c->tcap; i++) {
		if (!c->threads[i].tid || !lanes_extra(c->threads[i].lanes))
			continue;
		++*threads;
		n += lanes_crossed(c->threads[i].lanes);
	}
	return n;
}

bool consumer_exit_code(const struct consumer *c, uint32_t pid, int *code)
{
	/* the newest: a pid can be reused */
	for (int i = c->nexits - 1; i >= 0; i--) {
		if (c->exits[i].pid == pid) {
			*code = c->exits[i].code;
			return true;
		}
	}
	return false;
}

/*
 * When the device can have a launch's work: the return of the last dev=submit call made inside
 * it (the doorbell write), else the launch's own return (its entry when it tail-called). A
 * submission from before the launch (another launch's, or one with its launch unseen) does not
 * count.
 */
static uint64_t launch_submit(struct consumer *c, const struct spyre_event *e)
{
	struct thread_info *ti = thread_slot(c, e->tid);
	uint64_t end = e->ts + e->dur, sub = ti->tid ? ti->submit : 0;

	if (ti->tid)
		ti->submit = 0;
	if (sub >= e->ts && sub <= end)
		return sub;
	/*
	 * A launch that tail-called its enqueue (`jmp launch_dma`) handed the work over somewhere
	 * in the chain, before its return, which the followed return's trap delays further (the
	 * mock's 130 us copies came out 10-20 us short from there): only its entry bounds it.
	 */
	return e->depth & SPYRE_DEPTH_FOLLOWED ? e->ts : end;
}

/* A trigger fired (--trigger): the first since the session took the last one is kept. */
static void fire(struct consumer *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fire(struct consumer *c, const char *fmt, ...)
{
	va_list ap;

	c->triggers++;
	if (c->fired[0])
		return;
	va_start(ap, fmt);
	vsnprintf(c->fired, sizeof(c->fired), fmt, ap);
	va_end(ap);
}

/* Device memory over --trigger memory>SIZE, once each time it goes over. */
static void memory_trigger(struct consumer *c)
{
	bool over = false;

	for (int i = 0; i < c->mem->nacct; i++) {
		const struct mem_acct *a = &c->mem->accts[i];

		if (a->kind != MEMK_ALLOC || a->cur <= c->trig_mem)
			continue;
		over = true;
		if (!c->mem_over)
			fire(c, "device memory of pid %u on device %d at %llu bytes (over %llu)",
			     a->pid, a->dev, (unsigned long long)a->cur,
			     (unsigned long long)c->trig_mem);
		break;
	}
	c->mem_over = over;
}

/* The string of call record @e (its SPYRE_EV_STR came right before it), else NULL. */
static const char *call_string(struct consumer *c, const struct spyre_event *e)
{
	if (!c->str.set || c->str.tid != e->tid || c->str.probe != e->probe || c->str.ts != e->ts)
		return NULL;
	c->str.set = false;
	return c->str.s;
}

/* A part of the Python stack of the call record that follows (bpf/spyre_emit.bpf.h emit_span). */
static int on_pystack(struct consumer *c, const struct spyre_event *e)
{
	uint32_t base = e->py.part * SPYRE_PY_PER_REC;

	if (e->py.part == 0 || c->pyrec.tid != e->tid || c->pyrec.ts != e->ts ||
	    c->pyrec.probe != e->probe) {
		c->pyrec.tid = e->tid;
		c->pyrec.probe = e->probe;
		c->pyrec.ts = e->ts;
		c->pyrec.n = 0;
	}
	c->pyrec.flags = e->py.flags;
	for (uint32_t i = 0; i < e->py.n && i < SPYRE_PY_PER_REC &&
			     base + i < SPYRE_PY_FRAMES; i++)
		c->pyrec.frame[base + i] = e->py.frame[i];
	if (base + e->py.n <= SPYRE_PY_FRAMES && base + e->py.n > c->pyrec.n)
		c->pyrec.n = base + e->py.n;
	return 0;
}

/* The innermost Python frame word of call record @e (its stack came before it), else 0. */
static uint64_t innermost_py(const struct consumer *c, const struct spyre_event *e)
{
	if (!c->py || !c->pyrec.n || c->pyrec.tid != e->tid || c->pyrec.probe != e->probe ||
	    c->pyrec.ts != e->ts)
		return 0;
	return c->pyrec.frame[0];
}

/*
 * The native stack id of call record @e (its SPYRE_EV_USTACK came before it), else -1, and its
 * return address into *@caller.
 */
static int64_t call_ustack(const struct consumer *c, const struct spyre_event *e,
			   uint64_t *caller)
{
	*caller = 0;
	if (!c->ustack || !c->usrec.set || c->usrec.tid != e->tid || c->usrec.probe != e->probe ||
	    c->usrec.ts != e->ts)
		return -1;
	*caller = c->usrec.caller;
	return c->usrec.id;
}

/*
 * The native stack of call record @e as "args.ustack" (innermost first) at @args: 1, or 0
 * when it has none (not asked, or not kept: counted in BPF, or not in the map).
 */
static int ustack_args(struct consumer *c, const struct spyre_event *e, struct trace_arg *args)
{
	static const char *v[USTACK_MAX_NAMES];	/* (one consumer at a time) */
	uint64_t caller;
	int64_t id = call_ustack(c, e, &caller);
	bool added;
	int n;

	c->usrec.set = false;
	if (id < 0)
		return 0;
	n = ustack_frames(c->ustack, e->tgid, id, caller, v, &added);
	if (n <= 0) {
		c->us_unread++;
		return 0;
	}
	c->us_stacks++;
	c->us_callers += added;
	args[0] = (struct trace_arg){ .key = "ustack", .type = TA_STRS, .n = (uint32_t)n,
				      .sv = v };
	return 1;
}

/* Names of a call's Python frames, innermost first (call_stacks'). */
struct py_names {
	char buf[SPYRE_PY_FRAMES][320];
	const char *v[SPYRE_PY_FRAMES];
	uint32_t n;
};

/*
 * The Python stack of call record @e (its SPYRE_EV_PYSTACK records came right before it) into
 * @out, as "args.python" (the innermost frame) and "args.pystack" (all, innermost first) at
 * @args; returns how many args were added (0: none). Frames that cannot be named (a code
 * object torn down while read) are left out, never shown with a wrong line.
 */
static int python_args(struct consumer *c, const struct spyre_event *e, struct py_names *out,
		       struct trace_arg *args)
{
	uint32_t n;

	if (!c->py || !c->pyrec.n || c->pyrec.tid != e->tid || c->pyrec.probe != e->probe ||
	    c->pyrec.ts != e->ts)
		return 0;
	n = c->pyrec.n;
	c->pyrec.n = 0;
	c->py_stacks++;
	out->n = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (pystack_frame(c->py, e->tgid, c->pyrec.frame[i], out->buf[out->n],
				  sizeof(out->buf[0]))) {
			out->v[out->n] = out->buf[out->n];
			out->n++;
		}
	}
	if (!out->n) {
		c->py_lost++;
		return 0;
	}
	/* a stack read whole and named whole gives the frames' spans their depths */
	if (c->pyspans && e->type == SPYRE_EV_SPAN)
		pyspans_add(c->pyspans, e->tgid, e->tid, e->ts, e->ts + e->dur, out->v, out->n,
			    out->n == n && !(c->pyrec.flags & (SPYRE_PY_TRUNCATED | SPYRE_PY_FAULT)));
	args[0] = (struct trace_arg){ .key = "python", .type = TA_STR, .s = out->v[0] };
	args[1] = (struct trace_arg){ .key = "pystack", .type = TA_STRS, .n = out->n,
				      .sv = out->v };
	return 2;
}

/*
 * The probe of call record @e into *@p, its line of the table into *@s, and the record counted;
 * false for a probe index this consumer does not know: counted as bad, nothing written.
 */
static bool call_probe(struct consumer *c, const struct spyre_event *e, const struct rprobe **p,
		       const struct probe_spec **s)
{
	if (e->probe >= (uint32_t)c->nprobes) {
		c->bad++;
		return false;
	}
	*p = &c->t->probes[e->probe];
	*s = &c->t->table->specs[(*p)->spec];
	c->events++;
	return true;
}

/* A str= call's string (SPYRE_EV_STR): the call's own record follows it (bpf/spyre.bpf.c). */
static int on_str(struct consumer *c, const struct spyre_event *e)
{
	c->str.tid = e->tid;
	c->str.probe = e->probe;
	c->str.ts = e->ts;
	c->str.set = true;
	memcpy(c->str.s, e->str.s, sizeof(c->str.s));
	c->str.s[sizeof(c->str.s) - 1] = '\0';
	return 0;
}

/* A stack=1 call's native stack id (SPYRE_EV_USTACK): the call's own record follows it. */
static int on_ustack(struct consumer *c, const struct spyre_event *e)
{
	c->usrec.tid = e->tid;
	c->usrec.probe = e->probe;
	c->usrec.ts = e->ts;
	c->usrec.id = e->ustack.id;
	c->usrec.caller = e->ustack.caller;
	c->usrec.set = true;
	return 0;
}

/* The driver tier's record (SPYRE_EV_IOCTL): a VFIO ioctl, stream/vfio_decode.c's. */
static int on_ioctl(struct consumer *c, const struct spyre_event *e)
{
	c->events++;
	see_thread(c, e->tgid, e->tid);
	if (c->vfio)
		vfio_event(c->vfio, c->tw, e);
	if (c->mem)
		memledger_ioctl(c->mem, c->tw, e);
	return 0;
}

/* A mem=free span's entry (SPYRE_EV_MEM_ENTRY): the ledger's, not an event of the trace. */
static int on_mem_entry(struct consumer *c, const struct spyre_event *e)
{
	if (c->mem && e->probe < (uint32_t)c->nprobes)
		memledger_event(c->mem, c->tw, &c->t->table->specs[c->t->probes[e->probe].spec], e,
				NULL);
	return 0;
}

/*
 * The track of span [@ts, @ts + @dur) of thread @tid of @pid: the thread's own, or, when it
 * crosses one of the thread's spans there (a call on another stack: lanes.h), one of the
 * thread's other-stack tracks, named for its thread the first time in each file.
 */
static uint32_t span_track(struct consumer *c, uint32_t pid, uint32_t tid, uint64_t ts,
			   uint64_t dur)
{
	struct thread_info *ti = thread_slot(c, tid);
	char name[64];
	int k;

	if (!ti->tid)
		return tid;
	k = lanes_place(&ti->lanes, ts, ts + dur);
	if (!k)
		return tid;
	c->lane_spans++;
	if (!(ti->lanes_named & (1u << k))) {
		/* the thread's name and tid: the track's own tid is above any real one */
		if (!strncmp(ti->name, "thread ", 7))	/* named by its tid already */
			snprintf(name, sizeof(name), "%s: other stack %d", ti->name, k);
		else
			snprintf(name, sizeof(name), "%s %u: other stack %d", ti->name, tid, k);
		trace_thread_name(c->tw, pid, lane_tid(tid, k), name, (int)(tid - pid));
		ti->lanes_named |= 1u << k;
	}
	return lane_tid(tid, k);
}

/*
 * A call left by an exception, a longjmp or a cancel (SPYRE_EV_UNWOUND): a span from its entry
 * to where the unwind was seen, its entry arguments and "unwound": true; an instant at its entry
 * when that was seen only at the end (SPYRE_DEPTH_UNBOUND). A call still open at the end
 * (SPYRE_EV_NORETURN): an instant at its entry, "noReturn": true. Nothing else: its
 * duration is not the call's (not in the latency statistics), and what it would have done
 * (an allocation, a launch, a completion) did not happen, so neither the memory ledger nor
 * the device timeline sees it.
 */
static int on_unwound(struct consumer *c, const struct spyre_event *e)
{
	struct trace_arg args[EVENT_MAX_ARGS + 1];	/* + "unwound" */
	const struct probe_spec *s;
	const struct rprobe *p;
	int n;

	if (!call_probe(c, e, &p, &s))
		return 0;
	/* a call with no return is the summary's noReturn (hits less the rest), not delivered */
	if (e->type == SPYRE_EV_UNWOUND)
		c->delivered[e->probe]++;
	if (c->trig_exception && e->type != SPYRE_EV_NORETURN)
		fire(c, "a C++ exception left %s (thread %u)", p->name, e->tid);
	if (c->per_pid)
		pid_stats_add(c, e->tgid, e->probe, e->dur, false);
	see_thread(c, e->tgid, e->tid);
	if (!c->tw)
		return 0;
	n = build_args(c, p, s, e, args, NULL, 0);
	args[n].key = e->type == SPYRE_EV_NORETURN ? "noReturn" : "unwound";
	args[n].type = TA_BOOL;
	args[n].u = 1;
	/* the generic path: its keys differ from the probe's returning spans' */
	if (e->type == SPYRE_EV_NORETURN || (e->depth & SPYRE_DEPTH_UNBOUND))
		trace_instant(c->tw, e->tgid, e->tid, e->ts, p->name, s->cat, args, n + 1);
	else
		trace_complete(c->tw, e->tgid, span_track(c, e->tgid, e->tid, e->ts, e->dur),
			       e->ts, e->dur, p->name, s->cat, args, n + 1);
	return 0;
}

/* One call record on its way through on_call: what its event and the device timeline get. */
struct call_ctx {
	const struct spyre_event *e;
	const struct rprobe *p;
	const struct probe_spec *s;
	struct thread_info *ti;		/* its thread's slot (tid 0: not in the table) */
	const char *str;		/* its string (str=), NULL: none */
	const char *kernel;		/* the kernel name of its compute launch, NULL: none */
	uint64_t corr;			/* its launch's id (device_new_corr), 0: no launch */
	struct trace_arg stk[3];	/* its stacks' args: python, pystack, ustack */
	int nstk;
	uint32_t track;			/* its span's track: its thread's, or another stack's */
};

/* A call's statistics: a span's latency and its --trigger on duration; per process. */
static void count_call(struct consumer *c, const struct rprobe *p, const struct spyre_event *e)
{
	if (e->type == SPYRE_EV_SPAN) {
		fn_stats_add(&c->stats[e->probe], e->dur);
		if (c->trig_ns[e->probe] && e->dur > c->trig_ns[e->probe])
			fire(c, "%s took %.3f ms (over %.3f ms; thread %u)", p->name, e->dur / 1e6,
			     c->trig_ns[e->probe] / 1e6, e->tid);
	}
	if (c->per_pid)
		pid_stats_add(c, e->tgid, e->probe, e->dur, e->type == SPYRE_EV_SPAN);
}

/*
 * The call's stacks named once, now, while its process lives: its event's args (into @k->stk),
 * its [memory] event's and, for a block still live at the end, the report's (a mem= probe is no
 * dev= one: the ledger sees every call of its probes)
 */
static void call_stacks(struct consumer *c, struct call_ctx *k)
{
	const struct spyre_event *e = k->e;
	bool mem = c->mem && k->s->mem != MEM_NONE;
	struct mem_origin origin = { 0 };

	if (mem) {
		int64_t us = call_ustack(c, e, &origin.caller);

		origin.py = innermost_py(c, e);
		origin.ustack = us >= 0 ? (uint32_t)us + 1 : 0;
	}
	if (c->tw) {
		/* (3 KiB of names, which the call's event points into until it is written) */
		if (c->py && !c->pyn)
			c->pyn = calloc(1, sizeof(*c->pyn));
		k->nstk = c->pyn ? python_args(c, e, c->pyn, k->stk) : 0;
		k->nstk += ustack_args(c, e, k->stk + k->nstk);
	}
	if (mem) {
		origin.args = k->stk;
		origin.nargs = k->nstk;
		memledger_event(c->mem, c->tw, k->s, e, &origin);
		if (c->trig_mem)
			memory_trigger(c);
	}
}

/*
 * getRank()/getSize() (a dist= span): each for a process whose environment did not say it (one
 * with RANK but no world size takes getSize's, and the other way round)
 */
static void call_dist(struct consumer *c, const struct probe_spec *s, const struct spyre_event *e)
{
	struct process_info *pi = see_process(c, e->tgid, NULL);

	/* its card: AIU_WORLD_RANK_<rank>, read again (once) for the rank it now has */
	if (pi && s->dist == DIST_RANK && !pi->dist.rank_from_env &&
	    pi->dist.rank != (int32_t)e->call.ret) {
		pi->dist.rank = (int32_t)e->call.ret;
		if (c->procfs)
			read_dist(c->procfs, e->tgid, &pi->dist, true);
	} else if (pi && s->dist == DIST_SIZE && !pi->dist.size_from_env) {
		pi->dist.world_size = (int32_t)e->call.ret;
	}
}

/* Call @k's event: a span or an instant, with its probe's args, its kernel's name, its stacks. */
static void write_call(struct consumer *c, const struct call_ctx *k)
{
	struct trace_arg args[EVENT_MAX_ARGS + 1];	/* + kernel */
	const struct spyre_event *e = k->e;
	const struct trace_fmt *f;
	int n = build_args(c, k->p, k->s, e, args, k->str, k->corr);

	if (k->kernel) {
		args[n].key = "kernel";
		args[n].type = TA_STR;
		args[n].s = k->kernel;
		n++;
	}
	for (int i = 0; i < k->nstk; i++)
		args[n + i] = k->stk[i];
	n += k->nstk;
	/* a launch with a kernel name, a call with a stack: more args than the probe's format */
	f = k->kernel || k->nstk ? NULL : probe_fmt(c, e->probe, k->p, k->s, e);
	/* a probe is either a span or an instant: the type of its first event holds */
	if (f && f->instant == (e->type == SPYRE_EV_INSTANT))
		trace_event(c->tw, f, e->tgid, k->track, e->ts, e->dur, args, n);
	else if (e->type == SPYRE_EV_INSTANT)
		trace_instant(c->tw, e->tgid, k->track, e->ts, k->p->name, k->s->cat, args, n);
	else
		trace_complete(c->tw, e->tgid, k->track, e->ts, e->dur, k->p->name, k->s->cat,
			       args, n);
}

/*
 * What call @k tells the device timeline, after the call's own event: the arrow to a launch's
 * device work binds to that span, and a trace cut in between (tracer killed) must not hold an
 * arrow without its slice.
 */
static void call_device(struct consumer *c, const struct call_ctx *k)
{
	const struct probe_spec *s = k->s;
	const struct spyre_event *e = k->e;
	uint64_t stream = record_value(e, s->stream);
	bool span = e->type == SPYRE_EV_SPAN;

	switch (s->dev) {
	case DEV_LAUNCH: {
		struct dev_launch l = {
			.pid = e->tgid, .tid = k->track, .key = record_value(e, s->key),
			.corr = k->corr, .stream = stream, .op = s->op,
			.bytes = record_value(e, s->bytes), .ts = e->ts,
			.submit = launch_submit(c, e), .name = k->kernel,
		};

		device_launch_op(&c->dev, &l);
		if (k->kernel)
			k->ti->kname[0] = '\0';
		break;
	}
	case DEV_DESTROY:	/* no launch on it from its destructor's entry on */
		device_stream_destroy(&c->dev, e->tgid, stream, e->ts);
		break;
	case DEV_SYNC:
		/* (a synchronize that tail-called the real one has not waited yet) */
		if (span && !(e->depth & SPYRE_DEPTH_TAIL))
			device_stream_done(&c->dev, e->tgid, stream, e->ts, e->ts + e->dur,
					   END_SYNC);
		break;
	case DEV_QUERY:
		/* bool query(): true in the low byte of the return register */
		if (span && (e->call.ret & 0xff))
			device_stream_done(&c->dev, e->tgid, stream, e->ts, e->ts + e->dur,
					   END_QUERY);
		break;
	default:
		break;
	}
}

/*
 * A call's record (SPYRE_EV_SPAN, SPYRE_EV_INSTANT): its statistics, its event, and what it
 * tells the memory ledger and the device timeline.
 */
static int on_call(struct consumer *c, const struct spyre_event *e)
{
	struct call_ctx k = { .e = e };
	const struct probe_spec *s;

	if (!call_probe(c, e, &k.p, &k.s))
		return 0;
	s = k.s;
	c->delivered[e->probe]++;
	count_call(c, k.p, e);
	see_thread(c, e->tgid, e->tid);
	if (s->dev == DEV_COMPLETE) {
		/* shows up as the device span it ends, not as an event of its own */
		device_complete(&c->dev, e->tgid, record_value(e, s->key),
				record_value(e, s->stream), e->ts);
		return 0;
	}
	call_stacks(c, &k);
	k.ti = thread_slot(c, e->tid);
	/* a call inside a launch returns (and is handed over) before the launch does */
	if (s->dev == DEV_SUBMIT && k.ti->tid)
		k.ti->submit = e->ts + e->dur;
	if (s->str)
		k.str = call_string(c, e);
	if (s->dist && e->type == SPYRE_EV_SPAN)
		call_dist(c, s, e);
	/* the kernel name goes to the thread's next compute launch */
	if (s->dev == DEV_KNAME && k.ti->tid)
		snprintf(k.ti->kname, sizeof(k.ti->kname), "%s", k.str ? k.str : "");
	if (s->dev == DEV_LAUNCH && s->op == OP_COMPUTE && k.ti->tid && k.ti->kname[0])
		k.kernel = k.ti->kname;
	/* every launch gets an id of ours: its key may be a pointer reused later in the trace */
	if (s->dev == DEV_LAUNCH)
		k.corr = device_new_corr(&c->dev);
	k.track = e->tid;
	if (c->tw && e->type == SPYRE_EV_SPAN)
		k.track = span_track(c, e->tgid, e->tid, e->ts, e->dur);
	if (c->tw)
		write_call(c, &k);
	call_device(c, &k);
	return 0;
}

int consumer_event(struct consumer *c, const struct spyre_event *e)
{
	switch (e->type) {
	case SPYRE_EV_THREAD:
		return on_thread_event(c, e);
	case SPYRE_EV_EXIT:
		return on_exit_event(c, e);
	case SPYRE_EV_STR:
		return on_str(c, e);
	case SPYRE_EV_PYSTACK:
		return on_pystack(c, e);
	case SPYRE_EV_USTACK:
		return on_ustack(c, e);
	case SPYRE_EV_IOCTL:
		return on_ioctl(c, e);
	case SPYRE_EV_MEM_ENTRY:
		return on_mem_entry(c, e);
	case SPYRE_EV_UNWOUND:
	case SPYRE_EV_NORETURN:
		return on_unwound(c, e);
	case SPYRE_EV_SPAN:
	case SPYRE_EV_INSTANT:
		return on_call(c, e);
	default:	/* the BPF side makes no other kind: counted, nothing written */
		c->bad++;
		return 0;
	}
}

/* Was process @pid seen to exit (SPYRE_EV_EXIT)? */
static bool exited(const struct consumer *c, uint32_t pid)
{
	for (int i = 0; i < c->nexits; i++)
		if (c->exits[i].pid == pid)
			return true;
	return false;
}

void consumer_write_metadata(struct consumer *c)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	char comm[16];

	device_finish(&c->dev);
	if (!c->tw)
		return;
	c->py_spans += pyspans_write(c->pyspans, c->tw);
	/*
	 * names changed since they were first written: the trace keeps the last one, from /proc,
	 * but not for a process seen to exit: its pid may be another process's now (issue 43)
	 */
	for (int i = 0; i < c->nprocs; i++) {
		struct process_info *p = &c->procs[i];

		/* the main thread's comm is the process name; /proc has the latest one */
		comm[0] = 0;
		if (c->procfs && !exited(c, p->pid))
			read_comm(c->procfs, p->pid, p->pid, comm, sizeof(comm));
		if (comm[0] && strncmp(comm, "thread ", 7))
			snprintf(p->name, sizeof(p->name), "%s", comm);
		name_process(c, p, now);
	}
	for (uint32_t i = 0; i < c->tcap; i++) {
		struct thread_info *ti = &c->threads[i];

		if (!ti->tid)
			continue;
		if (c->procfs && !exited(c, ti->pid)) {
			read_comm(c->procfs, ti->pid, ti->tid, comm, sizeof(comm));
			if (strncmp(comm, "thread ", 7))
				snprintf(ti->name, sizeof(ti->name), "%s", comm);
		}
		if (!ti->name[0])
			snprintf(ti->name, sizeof(ti->name), "thread %u", ti->tid);
		write_name(c, ti->pid, ti->tid, ti->named, ti->name, (int)(ti->tid - ti->pid), now);
	}
}

void consumer_switch(struct consumer *c, struct trace_writer *tw)
{
	c->py_spans += pyspans_write(c->pyspans, c->tw);
	c->tw = tw;
	device_switch(&c->dev, tw);
	c->rename_ts = 0;
	/* every process and thread the run knows, named at the new file's start */
	for (int i = 0; i < c->nprocs; i++) {
		c->procs[i].named[0] = 0;
		c->procs[i].labeled = false;
		name_process(c, &c->procs[i], 0);
	}
	for (uint32_t i = 0; i < c->tcap; i++) {
		struct thread_info *ti = &c->threads[i];

		if (!ti->tid)
			continue;
		ti->named[0] = 0;
		write_name(c, ti->pid, ti->tid, ti->named, ti->name, (int)(ti->tid - ti->pid), 0);
		ti->lanes_named = 0;	/* its other stacks' tracks: named at their next span */
	}
}

int consumer_python_spans(struct consumer *c)
{
	if (!c->pyspans)
		c->pyspans = pyspans_new();
	return c->pyspans ? 0 : -ENOMEM;
}

int consumer_driver(struct consumer *c, const char *root, const char *const *funcs, int n)
{
	int err;

	vfio_decoder_free(c->vfio);
	c->vfio = NULL;
	err = vfio_decoder_new(&c->vfio, root);
	for (int i = 0; !err && i < n; i++)
		vfio_decoder_func(c->vfio, i, funcs[i]);
	return err;
}

void consumer_free(struct consumer *c)
{
	vfio_decoder_free(c->vfio);
	pyspans_free(c->pyspans);
	for (int i = 0; i < c->nprobes; i++)
		trace_fmt_free(&c->out[i].fmt);
	free(c->out);
	free(c->stats);
	free(c->delivered);
	free(c->trig_ns);
	free(c->pyn);
	for (uint32_t i = 0; c->threads && i < c->tcap; i++)
		lanes_free(c->threads[i].lanes);
	free(c->threads);
	free(c->procs);
	for (uint32_t i = 0; i < c->pcap; i++)
		free(c->pid_stats[i].st);
	free(c->pid_stats);
	free(c->exits);
	device_free(&c->dev);
	memset(c, 0, sizeof(*c));
}
