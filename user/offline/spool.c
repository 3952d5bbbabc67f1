// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * External merge sort of fixed-size records: a full buffer is sorted and written as a run; the
 * runs are merged through a heap, each read back in a slice of the same memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "offline/spool.h"

struct run {
	uint64_t off, left;	/* file offset of the next unread record, records left */
	char *buf;
	size_t n, i;		/* records in buf, the next one */
};

struct spool {
	size_t rec, mem, cap;
	int (*cmp)(const void *, const void *);
	char *buf;
	size_t n, i;		/* records in buf; the next to give (all in memory) */
	uint64_t count, file_end;
	int fd, err;
	bool given;		/* spool_next gave the heap's top: move past it first */
	struct run *runs;
	size_t nruns, runs_cap, slice;
	size_t *heap, nheap;	/* run indices, the smallest head first */
};

struct spool *spool_new(size_t rec, int (*cmp)(const void *, const void *), size_t mem)
{
	struct spool *sp = calloc(1, sizeof(*sp));

	if (!sp)
		return NULL;
	sp->rec = rec;
	sp->cmp = cmp;
	sp->mem = mem;
	sp->cap = mem / rec ? mem / rec : 1;
	sp->fd = -1;
	return sp;
}

static int tmp_open(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/spyre-spool.XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(path);
	return fd;
}

static int write_all(int fd, const char *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

static int idx_cmp(const void *a, const void *b, void *arg)
{
	const struct spool *sp = arg;

	return sp->cmp(sp->buf + (size_t)*(const uint32_t *)a * sp->rec,
		       sp->buf + (size_t)*(const uint32_t *)b * sp->rec);
}

/*
 * Sort the buffer: qsort of 4-byte indices, then one copy of each record into place. qsort
 * of the 48-byte records themselves spent a third of check's time moving them (perf, a
 * 97 MB trace of the mock job).
 */
static int sort_buf(struct spool *sp)
{
	uint32_t *idx;
	char *nb;

	if (sp->n < 2)
		return 0;
	idx = malloc(sp->n * sizeof(*idx));
	nb = malloc(sp->n * sp->rec);
	if (!idx || !nb) {
		free(idx);
		free(nb);
		/* in place then, slower */
		qsort(sp->buf, sp->n, sp->rec, sp->cmp);
		return 0;
	}
	for (size_t i = 0; i < sp->n; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, sp->n, sizeof(*idx), idx_cmp, sp);
	for (size_t i = 0; i < sp->n; i++)
		memcpy(nb + i * sp->rec, sp->buf + (size_t)idx[i] * sp->rec, sp->rec);
	free(idx);
	free(sp->buf);
	sp->buf = nb;
	return 0;
}

/* The buffer, sorted, as one more run. */
static int spill(struct spool *sp)
{
	struct run *r;
	int err;

	if (sp->fd < 0) {
		sp->fd = tmp_open();
		if (sp->fd < 0)
			return sp->fd;
	}
	if (sp->nruns == sp->runs_cap) {
		size_t ncap = sp->runs_cap ? sp->runs_cap * 2 : 16;

		r = realloc(sp->runs, ncap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		sp->runs = r;
		sp->runs_cap = ncap;
	}
	sort_buf(sp);
	err = write_all(sp->fd, sp->buf, sp->n * sp->rec, sp->file_end);
	if (err)
		return err;
	sp->runs[sp->nruns++] = (struct run){ .off = sp->file_end, .left = sp->n };
	sp->file_end += (uint64_t)sp->n * sp->rec;
	sp->n = 0;
	return 0;
}

int spool_add(struct spool *sp, const void *rec)
{
	if (sp->err)
		return sp->err;
	if (!sp->buf) {
		/* grown as records come, so that a small trace costs little */
		sp->buf = malloc(sp->rec * (sp->cap < 1024 ? sp->cap : 1024));
		if (!sp->buf)
			return sp->err = -ENOMEM;
		sp->i = sp->cap < 1024 ? sp->cap : 1024;	/* allocated records until sorted */
	}
	if (sp->n == sp->i && sp->i < sp->cap) {
		size_t ncap = sp->i * 2 < sp->cap ? sp->i * 2 : sp->cap;
		char *nb = realloc(sp->buf, ncap * sp->rec);

		if (!nb)
			return sp->err = -ENOMEM;
		sp->buf = nb;
		sp->i = ncap;
	}
	if (sp->n == sp->cap) {
		int err = spill(sp);

		if (err)
			return sp->err = err;
	}
	memcpy(sp->buf + sp->n * sp->rec, rec, sp->rec);
	sp->n++;
	sp->count++;
	return 0;
}

/* Refill run @r's slice: false when it has no records left or on an error. */
static bool run_fill(struct spool *sp, struct run *r)
{
	size_t want = r->left < sp->slice ? (size_t)r->left : sp->slice, got = 0;

	while (got < want * sp->rec) {
		ssize_t n = pread(sp->fd, r->buf + got, want * sp->rec - got,
				  (off_t)(r->off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			sp->err = n < 0 ? -errno : -EIO;
			return false;
		}
		got += (size_t)n;
	}
	r->off += got;
	r->left -= want;
	r->n = want;
	r->i = 0;
	return want > 0;
}

static const void *run_head(const struct spool *sp, size_t k)
{
	const struct run *r = &sp->runs[k];

	return r->buf + r->i * sp->rec;
}

static void sift_down(struct spool *sp, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i, t;

		if (l < sp->nheap && sp->cmp(run_head(sp, sp->heap[l]), run_head(sp, sp->heap[m])) < 0)
			m = l;
		if (l + 1 < sp->nheap &&
		    sp->cmp(run_head(sp, sp->heap[l + 1]), run_head(sp, sp->heap[m])) < 0)
			m = l + 1;
		if (m == i)
			return;
		t = sp->heap[i];
		sp->heap[i] = sp->heap[m];
		sp->heap[m] = t;
		i = m;
	}
}

int spool_sort(struct spool *sp)
{
	int err;

	if (sp->err)
		return sp->err;
	if (!sp->nruns) {
		sort_buf(sp);
		sp->i = 0;
		return 0;
	}
	if (sp->n) {
		err = spill(sp);
		if (err)
			return sp->err = err;
	}
	free(sp->buf);
	sp->buf = NULL;
	/* the memory of the buffer, shared by the runs' read slices */
	sp->slice = sp->cap / sp->nruns ? sp->cap / sp->nruns : 1;
	sp->heap = malloc(sp->nruns * sizeof(*sp->heap));
	if (!sp->heap)
		return sp->err = -ENOMEM;
	for (size_t k = 0; k < sp->nruns; k++) {
		sp->runs[k].buf = malloc(sp->slice * sp->rec);
		if (!sp->runs[k].buf)
			return sp->err = -ENOMEM;
		if (!run_fill(sp, &sp->runs[k]))
			return sp->err;
		sp->heap[sp->nheap++] = k;
	}
	for (size_t k = sp->nheap / 2; k-- > 0;)
		sift_down(sp, k);
	return 0;
}

const void *spool_next(struct spool *sp)
{
	struct run *r;
	size_t k;

	if (sp->err)
		return NULL;
	if (!sp->nruns) {
		if (sp->i >= sp->n)
			return NULL;
		return sp->buf + sp->i++ * sp->rec;
	}
	/* the record given last is moved past now, so that it stays valid until this call */
	if (sp->given && sp->nheap) {
		k = sp->heap[0];
		r = &sp->runs[k];
		if (++r->i == r->n && !run_fill(sp, r)) {
			if (sp->err)
				return NULL;
			sp->heap[0] = sp->heap[--sp->nheap];
		}
		if (sp->nheap)
			sift_down(sp, 0);
	}
	sp->given = false;
	if (!sp->nheap)
		return NULL;
	sp->given = true;
	return run_head(sp, sp->heap[0]);
}

int spool_error(const struct spool *sp)
{
	return sp->err;
}

uint64_t spool_count(const struct spool *sp)
{
	return sp->count;
}

size_t spool_runs(const struct spool *sp)
{
	return sp->nruns;
}

void spool_free(struct spool *sp)
{
	if (!sp)
		return;
	for (size_t k = 0; k < sp->nruns; k++)
		free(sp->runs[k].buf);
	free(sp->runs);
	free(sp->heap);
	free(sp->buf);
	if (sp->fd >= 0)
		close(sp->fd);
	free(sp);
}
