// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "consumer.h"

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
	struct fn_stats *s;
	uint64_t *d;

	if (nprobes <= c->nprobes)
		return 0;
	s = realloc(c->stats, nprobes * sizeof(*s));
	if (!s)
		return -ENOMEM;
	c->stats = s;
	d = realloc(c->delivered, nprobes * sizeof(*d));
	if (!d)
		return -ENOMEM;
	c->delivered = d;
	memset(&c->stats[c->nprobes], 0, (nprobes - c->nprobes) * sizeof(*s));
	memset(&c->delivered[c->nprobes], 0, (nprobes - c->nprobes) * sizeof(*d));
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

static void see_process(struct consumer *c, uint32_t pid, const char *comm)
{
	struct process_info *np;

	for (int i = 0; i < c->nprocs; i++) {
		if (c->procs[i].pid == pid) {
			if (comm)
				snprintf(c->procs[i].name, sizeof(c->procs[i].name), "%s", comm);
			return;
		}
	}
	np = realloc(c->procs, (c->nprocs + 1) * sizeof(*np));
	if (!np)
		return;
	c->procs = np;
	np[c->nprocs].pid = pid;
	np[c->nprocs].name[0] = 0;
	if (comm)
		snprintf(np[c->nprocs].name, sizeof(np[c->nprocs].name), "%s", comm);
	c->nprocs++;
}

/* A thread seen without its SPYRE_EV_THREAD (ring was full then): ask /proc. */
static void see_thread(struct consumer *c, uint32_t pid, uint32_t tid)
{
	struct thread_info *ti = thread_slot(c, tid);

	if (ti->tid)
		return;
	ti = add_thread(c, pid, tid);
	if (c->procfs)
		read_comm(c->procfs, pid, tid, ti->name, sizeof(ti->name));
	see_process(c, pid, NULL);
}

static void on_thread_event(struct consumer *c, const struct spyre_event *e)
{
	struct thread_info *ti = add_thread(c, e->tgid, e->tid);
	char comm[SPYRE_COMM_LEN];

	/* the kernel NUL-terminates comm within its 16 bytes; do not rely on it */
	memcpy(ti->name, SPYRE_THREAD_COMM(e), sizeof(ti->name) - 1);
	ti->name[sizeof(ti->name) - 1] = 0;
	memcpy(comm, SPYRE_PROCESS_COMM(e), sizeof(comm) - 1);
	comm[sizeof(comm) - 1] = 0;
	see_process(c, e->tgid, comm);
}

static uint64_t value_of(const struct spyre_event *e, int src)
{
	if (src >= 1 && src <= SPYRE_MAX_ARGS)
		return e->args[src - 1];
	if (src == PROBE_VAL_RET)
		return e->ret;
	return 0;
}

int consumer_event(struct consumer *c, const struct spyre_event *e)
{
	struct trace_arg args[PROBE_MAX_ARGS + 2];
	const struct probe_spec *s;
	const struct rprobe *p;
	int n = 0;

	if (e->type == SPYRE_EV_THREAD) {
		on_thread_event(c, e);
		return 0;
	}
	if (e->probe >= (uint32_t)c->nprobes) {
		c->bad++;
		return 0;
	}
	p = &c->t->probes[e->probe];
	s = &c->t->table->specs[p->spec];
	c->events++;
	c->delivered[e->probe]++;
	if (e->type == SPYRE_EV_SPAN)
		fn_stats_add(&c->stats[e->probe], e->dur);
	see_thread(c, e->tgid, e->tid);
	if (s->dev == DEV_COMPLETE) {
		/* shows up as the device span it ends, not as an event of its own */
		device_complete(&c->dev, e->tgid, value_of(e, s->key), value_of(e, s->stream), e->ts);
		return 0;
	}
	if (s->dev == DEV_LAUNCH)
		device_launch(&c->dev, e->tgid, e->tid, value_of(e, s->key),
			      value_of(e, s->stream), s->op, value_of(e, s->bytes), e->ts);
	if (!c->tw)
		return 0;

	for (int i = 0; i < s->nargs; i++) {
		const struct probe_arg *a = &s->args[i];
		uint64_t v = value_of(e, a->src);

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
	if (s->dev == DEV_LAUNCH && s->key) {
		/* Kineto's key for host-to-device links; aiu-trace-analyzer reads it too */
		args[n].key = "correlation";
		args[n].type = TA_U64;
		args[n].u = value_of(e, s->key);
		n++;
	}
	trace_complete(c->tw, e->tgid, e->tid, e->ts, e->dur, p->name, s->cat, args, n);
	return 0;
}

void consumer_write_metadata(struct consumer *c)
{
	char comm[16];

	device_finish(&c->dev);
	if (!c->tw)
		return;
	for (int i = 0; i < c->nprocs; i++) {
		const struct process_info *p = &c->procs[i];

		/* the main thread's comm is the process name; /proc has the latest one */
		comm[0] = 0;
		if (c->procfs)
			read_comm(c->procfs, p->pid, p->pid, comm, sizeof(comm));
		if (!comm[0] || !strncmp(comm, "thread ", 7))
			snprintf(comm, sizeof(comm), "%s", p->name[0] ? p->name : "process");
		trace_process_name(c->tw, p->pid, comm, i);
	}
	for (uint32_t i = 0; i < c->tcap; i++) {
		struct thread_info *ti = &c->threads[i];

		if (!ti->tid)
			continue;
		/* a thread may have renamed itself since its first call */
		if (c->procfs) {
			read_comm(c->procfs, ti->pid, ti->tid, comm, sizeof(comm));
			if (strncmp(comm, "thread ", 7))
				snprintf(ti->name, sizeof(ti->name), "%s", comm);
		}
		if (!ti->name[0])
			snprintf(ti->name, sizeof(ti->name), "thread %u", ti->tid);
		/* sort threads by tid: creation order, main thread first */
		trace_thread_name(c->tw, ti->pid, ti->tid, ti->name, (int)(ti->tid - ti->pid));
	}
}

void consumer_free(struct consumer *c)
{
	free(c->stats);
	free(c->delivered);
	free(c->threads);
	free(c->procs);
	device_free(&c->dev);
	memset(c, 0, sizeof(*c));
}
