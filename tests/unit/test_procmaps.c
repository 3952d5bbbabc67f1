// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "resolve/procmaps.h"
#include "unit.h"

#define MAX_ENTS 64

struct saved {
	struct map_entry e;
	char path[PATH_MAX];
};

struct coll {
	struct saved ent[MAX_ENTS];
	int n;
	int stop_after;		/* return 7 from the callback at this entry; 0: never */
};

static int collect_cb(const struct map_entry *e, void *ctx)
{
	struct coll *c = ctx;
	struct saved *s;

	if (c->n >= MAX_ENTS)
		return -E2BIG;
	s = &c->ent[c->n++];
	s->e = *e;
	snprintf(s->path, sizeof(s->path), "%s", e->path);
	s->e.path = s->path;
	if (c->stop_after && c->n == c->stop_after)
		return 7;
	return 0;
}

/* The sample is in the source tree; tests run from the repository root (make unit). */
static FILE *open_sample(void)
{
	char p[PATH_MAX];
	FILE *f = fopen("tests/fixtures/maps-sample.txt", "r");

	if (!f) {
		snprintf(p, sizeof(p), "%s/../../tests/fixtures/maps-sample.txt",
			 unit_fixture_dir());
		f = fopen(p, "r");
	}
	return f;
}

static char *read_all(FILE *f, size_t *len)
{
	char *buf = malloc(1 << 16);

	*len = buf ? fread(buf, 1, 1 << 16, f) : 0;
	return buf;
}

static const struct saved *find(const struct coll *c, unsigned long start)
{
	for (int i = 0; i < c->n; i++)
		if (c->ent[i].e.start == start)
			return &c->ent[i];
	return NULL;
}

static void check_sample(const struct coll *c)
{
	const struct saved *s;

	/* 18 lines: 5 malformed/overlong ones are skipped. */
	CHECK_EQ_INT(c->n, 13);

	s = find(c, 0x7f1a2b100000UL);
	CHECK(s != NULL);
	if (s) {
		CHECK_EQ_INT(s->e.end, 0x7f1a2b400000UL);
		CHECK_STR(s->e.perms, "r-xp");
		CHECK_EQ_INT(s->e.offset, 0x100000);
		CHECK_EQ_INT(s->e.dev_major, 0xfd);
		CHECK_EQ_INT(s->e.dev_minor, 1);
		CHECK_EQ_INT(s->e.inode, 2233445);
		CHECK(!s->e.deleted);
		CHECK_STR(s->e.path, "/opt/spyre/lib/libflex.so");
		CHECK_STR(path_basename(s->e.path), "libflex.so");
	}

	s = find(c, 0x7f1a2c000000UL);
	CHECK(s != NULL);
	if (s) {
		CHECK_EQ_INT(s->e.dev_major, 0x103);
		CHECK_EQ_INT(s->e.dev_minor, 2);
		CHECK_EQ_INT(s->e.offset, 0x1000);
		CHECK_STR(s->e.path, "/home/user/my models/lib dir/libsenlib-dd2.so");
		CHECK_STR(path_basename(s->e.path), "libsenlib-dd2.so");
		CHECK(!s->e.deleted);
	}

	s = find(c, 0x7f1a2d000000UL);
	CHECK(s != NULL);
	if (s) {
		CHECK(s->e.deleted);
		CHECK_STR(s->e.path, "/opt/spyre/old lib/libflex.so");
		CHECK_EQ_INT(s->e.inode, 556677);
		CHECK_EQ_INT(s->e.offset, 0x3000);
	}

	s = find(c, 0x55d0c1b00000UL);
	CHECK(s != NULL);
	if (s) {
		CHECK_STR(s->e.path, "[heap]");
		CHECK_STR(s->e.perms, "rw-p");
		CHECK_EQ_INT(s->e.inode, 0);
	}

	/* Anonymous, one trailing space after the inode. */
	s = find(c, 0x7f1a2e000000UL);
	CHECK(s != NULL);
	if (s) {
		CHECK_STR(s->e.path, "");
		CHECK_STR(s->e.perms, "rw-s");
		CHECK_EQ_INT(s->e.dev_minor, 5);
		CHECK_EQ_INT(s->e.inode, 77);
	}

	/* Anonymous, nothing after the inode. */
	s = find(c, 0x7f1a2f100000UL);
	CHECK(s != NULL);
	if (s) {
		CHECK_STR(s->e.path, "");
		CHECK_STR(s->e.perms, "---p");
	}

	/* The overlong line is skipped whole; the line after it is intact. */
	CHECK(find(c, 0x7f1a2e100000UL) == NULL);
	s = find(c, 0x7f1a2f000000UL);
	CHECK(s != NULL);
	if (s)
		CHECK_STR(s->e.path, "/after/long/line.so");

	s = find(c, 0x7ffd12345000UL);
	CHECK(s != NULL);
	if (s)
		CHECK_STR(s->e.path, "[vdso]");

	s = find(c, 0xffffffffff600000UL);
	CHECK(s != NULL);
	if (s) {
		CHECK_EQ_INT(s->e.end, 0xffffffffff601000UL);
		CHECK_STR(s->e.path, "[vsyscall]");
		CHECK_STR(s->e.perms, "--xp");
	}

	/* Malformed lines: end < start, bad perms, missing inode. */
	CHECK(find(c, 0x7f1a2d800000UL) == NULL);
	CHECK(find(c, 0x7f1a2d900000UL) == NULL);
	CHECK(find(c, 0x7f1a2da00000UL) == NULL);
}

TEST(procmaps_sample_file)
{
	static struct coll c;
	FILE *f = open_sample();

	CHECK(f != NULL);
	if (!f)
		return;
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(procmaps_parse(f, collect_cb, &c), 0);
	fclose(f);
	check_sample(&c);
}

TEST(procmaps_sample_buf)
{
	static struct coll c;
	FILE *f = open_sample();
	size_t len;
	char *buf;

	CHECK(f != NULL);
	if (!f)
		return;
	buf = read_all(f, &len);
	fclose(f);
	CHECK(buf && len > 5000);
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(procmaps_parse_buf(buf, len, collect_cb, &c), 0);
	check_sample(&c);

	/* Stop value from the callback is passed through. */
	memset(&c, 0, sizeof(c));
	c.stop_after = 2;
	CHECK_EQ_INT(procmaps_parse_buf(buf, len, collect_cb, &c), 7);
	CHECK_EQ_INT(c.n, 2);
	free(buf);
}

TEST(procmaps_stop_file)
{
	static struct coll c;
	FILE *f = open_sample();

	CHECK(f != NULL);
	if (!f)
		return;
	memset(&c, 0, sizeof(c));
	c.stop_after = 3;
	CHECK_EQ_INT(procmaps_parse(f, collect_cb, &c), 7);
	CHECK_EQ_INT(c.n, 3);
	fclose(f);
}

/* One line whose path has exactly @plen characters, plus a second, short line. */
static char *path_line(size_t plen, bool deleted, size_t *len)
{
	const char *head = "1000-2000 r-xp 00000000 08:01 5 /";
	const char *tail = "\n3000-4000 r--p 00001000 08:01 6 /x\n";
	size_t hl = strlen(head), tl = strlen(tail), dl = deleted ? 10 : 0;
	char *b = malloc(hl + plen + dl + tl + 1);

	if (!b)
		return NULL;
	memcpy(b, head, hl);
	memset(b + hl, 'a', plen - 1);
	memcpy(b + hl + plen - 1, " (deleted)", dl);
	memcpy(b + hl + plen - 1 + dl, tail, tl + 1);
	*len = hl + plen - 1 + dl + tl;
	return b;
}

static void check_path_len(size_t plen, bool deleted, bool accepted)
{
	static struct coll c;
	size_t len;
	char *b = path_line(plen, deleted, &len);
	FILE *f;

	CHECK(b != NULL);
	if (!b)
		return;
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(procmaps_parse_buf(b, len, collect_cb, &c), 0);
	CHECK_EQ_INT(c.n, accepted ? 2 : 1);
	if (accepted && c.n == 2) {
		CHECK_EQ_INT(strlen(c.ent[0].path), plen);
		CHECK(c.ent[0].e.deleted == deleted);
	}
	CHECK_STR(c.ent[c.n - 1].path, "/x");

	f = fmemopen(b, len, "r");
	CHECK(f != NULL);
	if (f) {
		memset(&c, 0, sizeof(c));
		CHECK_EQ_INT(procmaps_parse(f, collect_cb, &c), 0);
		CHECK_EQ_INT(c.n, accepted ? 2 : 1);
		if (accepted && c.n == 2)
			CHECK_EQ_INT(strlen(c.ent[0].path), plen);
		CHECK_STR(c.ent[c.n - 1].path, "/x");
		fclose(f);
	}
	free(b);
}

TEST(procmaps_path_max_boundary)
{
	check_path_len(PATH_MAX - 1, false, true);
	check_path_len(PATH_MAX - 1, true, true);
	check_path_len(PATH_MAX, false, false);
	check_path_len(PATH_MAX, true, false);
	check_path_len(3 * PATH_MAX, false, false);
}

TEST(procmaps_edge_input)
{
	static struct coll c;
	/* Last line without '\n'; an embedded NUL line is dropped; hex overflow is malformed. */
	const char in[] = "10-20 r--p 0 0:0 1 /a\n"
			  "30-40 r--p 0 0:0 1 /b\0c\n"
			  "1ffffffffffffffff-2 r--p 0 0:0 1 /o\n"
			  "50-60 r--p 0 0:0 99999999999999999999999 /d\n"
			  "\n"
			  "70-80 r--p 1f 0:0 2 /e";

	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(procmaps_parse_buf(in, sizeof(in) - 1, collect_cb, &c), 0);
	CHECK_EQ_INT(c.n, 2);
	CHECK(!strcmp(c.ent[0].path, "/a"));
	CHECK(!strcmp(c.ent[1].path, "/e"));
	CHECK_EQ_INT(c.ent[1].e.offset, 0x1f);
	CHECK_EQ_INT(procmaps_parse_buf("", 0, collect_cb, &c), 0);
	CHECK_EQ_INT(procmaps_parse_buf(NULL, 0, collect_cb, &c), 0);
	CHECK_EQ_INT(procmaps_parse(NULL, collect_cb, &c), -EINVAL);
}

/* Padding alone overflows the line buffer: skipped, not cut into an anonymous mapping. */
TEST(procmaps_overlong_padding)
{
	static struct coll c;
	static char in[8192];
	size_t len;
	FILE *f;

	len = (size_t)snprintf(in, sizeof(in), "5000-6000 r-xp 00000000 08:01 7%*s/padded.so\n"
			       "7000-8000 r--p 00000000 08:01 8 /ok.so\n", 5000, "");
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(procmaps_parse_buf(in, len, collect_cb, &c), 0);
	CHECK_EQ_INT(c.n, 1);
	CHECK_EQ_INT(c.ent[0].e.start, 0x7000);

	f = fmemopen(in, len, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(procmaps_parse(f, collect_cb, &c), 0);
	fclose(f);
	CHECK_EQ_INT(c.n, 1);
	CHECK_EQ_INT(c.ent[0].e.start, 0x7000);
}

TEST(procmaps_basename)
{
	CHECK_STR(path_basename("/usr/lib/libflex.so"), "libflex.so");
	CHECK_STR(path_basename("libflex.so"), "libflex.so");
	CHECK_STR(path_basename("[heap]"), "[heap]");
	CHECK_STR(path_basename(""), "");
	CHECK_STR(path_basename("/dir/"), "");
}

struct self_ctx {
	int libc_exec;
	int total;
};

static int self_cb(const struct map_entry *e, void *ctx)
{
	struct self_ctx *s = ctx;

	s->total++;
	if (!strncmp(path_basename(e->path), "libc.so", 7) && e->perms[2] == 'x' &&
	    e->path[0] == '/' && e->inode && e->end > e->start)
		s->libc_exec++;
	return 0;
}

TEST(procmaps_self)
{
	struct self_ctx s = { 0 };
	FILE *f = fopen("/proc/self/maps", "r");

	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ_INT(procmaps_parse(f, self_cb, &s), 0);
	fclose(f);
	CHECK_EQ_INT(s.libc_exec, 1);
	CHECK(s.total > 5);
}

/*
 * A child whose mappings fill several of stdio's 1 KiB reads (64 anonymous ones that cannot
 * merge: every other one without access), held until killed.
 */
static pid_t mapped_child(void)
{
	int fds[2];
	char c = 0;
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 64; i++)
			mmap(NULL, 4096, i % 2 ? PROT_NONE : PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0);
		if (write(fds[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (pid > 0 && read(fds[0], &c, 1) != 1)
		pid = -1;
	close(fds[0]);
	return pid;
}

struct cut_ctx {
	pid_t kill_at_first;	/* the process to end at the first line (0: none) */
	int n;
};

static int cut_cb(const struct map_entry *e, void *ctx)
{
	struct cut_ctx *c = ctx;
	siginfo_t si;

	(void)e;
	if (!c->n++ && c->kill_at_first > 0) {
		kill(c->kill_at_first, SIGKILL);
		/* exited (its address space gone), not yet reaped */
		waitid(P_PID, (id_t)c->kill_at_first, &si, WEXITED | WNOWAIT);
	}
	return 0;
}

/*
 * The ustack step's flake in the 6.12 guest (a library's frames unnamed): a process that exits
 * while its mappings are read shows the first read's lines and then none, which looked whole.
 * procmaps_parse_whole says so; the same read of a live process is whole.
 */
TEST(procmaps_whole_or_cut_by_exit)
{
	struct cut_ctx live = { 0 }, dying = { 0 };
	char path[64];
	pid_t pid = mapped_child();
	FILE *f;

	CHECK(pid > 0);
	if (pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	CHECK(f != NULL);
	if (f) {
		CHECK_EQ_INT(procmaps_parse_whole(f, cut_cb, &live), 0);
		fclose(f);
	}
	CHECK(live.n > 64);
	f = fopen(path, "r");
	CHECK(f != NULL);
	if (f) {
		dying.kill_at_first = pid;
		/* procmaps_parse alone takes the cut view for a whole one */
		CHECK_EQ_INT(procmaps_parse_whole(f, cut_cb, &dying), -ESRCH);
		fclose(f);
	}
	CHECK(dying.n >= 1 && dying.n < live.n);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}
