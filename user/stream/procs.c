// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The consumer's processes and threads (procs.h): an open-addressing table of threads, a list of
 * processes with what /proc says of them once (cmdline, container, rank), their names in the
 * trace, the exits seen.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/array.h"
#include "stream/procs.h"
#include "stream/ustack.h"

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

struct thread_info *thread_slot(struct consumer *c, uint32_t tid)
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

struct process_info *see_process(struct consumer *c, uint32_t pid, const char *comm)
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

void see_thread(struct consumer *c, uint32_t pid, uint32_t tid)
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

int on_thread_event(struct consumer *c, const struct spyre_event *e)
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

int on_exit_event(struct consumer *c, const struct spyre_event *e)
{
	if (array_reserve(&c->exits, &c->capexits, (size_t)c->nexits + 1, sizeof(*c->exits), 4))
		return -ENOMEM;
	c->exits[c->nexits++] = (struct proc_exit){ .pid = e->tgid,
						    .code = (int)e->exit.code };
	return 0;
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

void call_dist(struct consumer *c, const struct probe_spec *s, const struct spyre_event *e)
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

/* Was process @pid seen to exit (SPYRE_EV_EXIT)? */
static bool exited(const struct consumer *c, uint32_t pid)
{
	for (int i = 0; i < c->nexits; i++)
		if (c->exits[i].pid == pid)
			return true;
	return false;
}

void names_refresh(struct consumer *c, uint64_t now)
{
	char comm[16];

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

void names_again(struct consumer *c)
{
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
