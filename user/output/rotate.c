// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/array.h"
#include "output/rotate.h"

/* Names skipped because something already sits there: a bound, not a loop forever. */
#define ROTATE_MAX_TRIES	1000
#define SEQ_MAX_DIGITS		20

struct rfile {
	char name[sizeof(((struct rotate *)0)->last)];
	time_t t;
	uint64_t seq;
	uint64_t size;
};

static bool prefix_ok(const char *p)
{
	size_t n = strlen(p);

	if (!n || n >= ROTATE_PREFIX_MAX || p[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* @n decimal digits at @s, or -1. */
static long digits(const char *s, int n)
{
	long v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

bool rotate_name_match(const char *prefix, const char *name, time_t *t, uint64_t *seq)
{
	size_t plen = strlen(prefix);
	long Y, M, D, h, m, s;
	uint64_t v = 0;
	struct tm tm;
	const char *p;
	int nd = 0;

	if (!plen || strncmp(name, prefix, plen) || name[plen] != '-')
		return false;
	p = name + plen + 1;
	/* YYYYmmddTHHMMSSZ- */
	if (strnlen(p, 17) < 17 || p[8] != 'T' || p[15] != 'Z' || p[16] != '-')
		return false;
	Y = digits(p, 4);
	M = digits(p + 4, 2);
	D = digits(p + 6, 2);
	h = digits(p + 9, 2);
	m = digits(p + 11, 2);
	s = digits(p + 13, 2);
	if (Y < 0 || M < 1 || M > 12 || D < 1 || D > 31 || h < 0 || h > 23 || m < 0 || m > 59 ||
	    s < 0 || s > 60)
		return false;
	for (p += 17; *p >= '0' && *p <= '9'; p++, nd++) {
		if (nd == SEQ_MAX_DIGITS || v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (!nd || (strcmp(p, ".json") && strcmp(p, ".json.gz")))
		return false;
	if (t) {
		memset(&tm, 0, sizeof(tm));
		tm.tm_year = (int)Y - 1900;
		tm.tm_mon = (int)M - 1;
		tm.tm_mday = (int)D;
		tm.tm_hour = (int)h;
		tm.tm_min = (int)m;
		tm.tm_sec = (int)s;
		*t = timegm(&tm);
	}
	if (seq)
		*seq = v;
	return true;
}

/* mkdir -p with mode 0700 for what we create; existing components are left as they are. */
static int make_dirs(const char *dir)
{
	char tmp[PATH_MAX];
	size_t n = strlen(dir);
	struct stat st;

	if (!n)
		return -EINVAL;
	if (n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, dir, n + 1);
	for (char *p = tmp + 1; ; p++) {
		if (*p != '/' && *p)
			continue;
		char c = *p;

		*p = 0;
		if (mkdir(tmp, 0700) && errno != EEXIST)
			return -errno;
		if (!c)
			break;
		*p = c;
	}
	if (stat(dir, &st))
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* Our regular files in the directory, unsorted, malloc'd into *@out. */
static int scan(struct rotate *r, struct rfile **out, int *cnt)
{
	struct rfile *v = NULL;
	size_t cap = 0;
	int n = 0, fd, err = 0;
	struct dirent *de;
	struct stat st;
	DIR *d;

	*out = NULL;
	*cnt = 0;
	fd = openat(r->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		err = -errno;
		close(fd);
		return err;
	}
	while ((errno = 0, de = readdir(d))) {
		struct rfile f;

		if (strlen(de->d_name) >= sizeof(f.name) ||
		    !rotate_name_match(r->prefix, de->d_name, &f.t, &f.seq))
			continue;
		/* a symlink, directory or fifo with our name is not ours: never touch it */
		if (fstatat(r->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		strcpy(f.name, de->d_name);
		f.size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
		if (array_reserve(&v, &cap, (size_t)n + 1, sizeof(*v), 64)) {
			err = -ENOMEM;
			goto out;
		}
		v[n++] = f;
	}
	if (errno)
		err = -errno;
out:
	closedir(d);
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*cnt = n;
	return 0;
}

static int by_age(const void *a, const void *b)
{
	const struct rfile *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return strcmp(x->name, y->name);
}

int rotate_init(struct rotate *r, const char *dir, uint64_t max_bytes, int max_files,
		const char *prefix, bool gzip)
{
	struct rfile *files;
	int n, err;

	memset(r, 0, sizeof(*r));
	r->dirfd = -1;
	if (!dir || !prefix || !prefix_ok(prefix) || max_files < 0)
		return -EINVAL;
	/* room for "/" + the longest name we produce */
	if (strlen(dir) + 1 + sizeof(r->last) > sizeof(r->dir))
		return -ENAMETOOLONG;
	strcpy(r->dir, dir);
	strcpy(r->prefix, prefix);
	r->max_bytes = max_bytes;
	r->max_files = max_files;
	r->gzip = gzip;
	err = make_dirs(dir);
	if (err)
		return err;
	r->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r->dirfd < 0)
		return -errno;
	err = scan(r, &files, &n);
	if (err)
		goto fail;
	/* continue after the previous run: a restart within the same second keeps names unique */
	for (int i = 0; i < n; i++)
		if (files[i].seq >= r->seq)
			r->seq = files[i].seq + 1;
	free(files);
	return 0;
fail:
	close(r->dirfd);
	r->dirfd = -1;
	return err;
}

void rotate_close(struct rotate *r)
{
	if (r->dirfd >= 0)
		close(r->dirfd);
	r->dirfd = -1;
}

static int format_name(struct rotate *r, time_t t, char *name, size_t len)
{
	struct tm tm;
	int n;

	if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
		return -EINVAL;
	n = snprintf(name, len, "%s-%04d%02d%02dT%02d%02d%02dZ-%06llu.json%s", r->prefix,
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		     tm.tm_sec, (unsigned long long)r->seq, r->gzip ? ".gz" : "");
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	r->seq++;
	return 0;
}

static int join(const struct rotate *r, const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", r->dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int rotate_next_path_at(struct rotate *r, time_t t, char *buf, size_t len)
{
	char name[sizeof(r->last)];
	struct stat st;
	int err;

	if (r->dirfd < 0)
		return -EBADF;
	for (int i = 0; i < ROTATE_MAX_TRIES; i++) {
		err = format_name(r, t, name, sizeof(name));
		if (err)
			return err;
		if (!fstatat(r->dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
			continue;	/* taken (maybe a planted symlink): next sequence number */
		if (errno != ENOENT)
			return -errno;
		err = join(r, name, buf, len);
		if (err)
			return err;
		strcpy(r->last, name);
		return 0;
	}
	return -EEXIST;
}

int rotate_next_path(struct rotate *r, char *buf, size_t len)
{
	return rotate_next_path_at(r, time(NULL), buf, len);
}

int rotate_usage(struct rotate *r, int *files, uint64_t *bytes)
{
	struct rfile *v;
	uint64_t total = 0;
	int n, err;

	if (r->dirfd < 0)
		return -EBADF;
	err = scan(r, &v, &n);
	if (err)
		return err;
	for (int i = 0; i < n; i++)
		total += v[i].size;
	free(v);
	if (files)
		*files = n;
	if (bytes)
		*bytes = total;
	return 0;
}

int rotate_enforce(struct rotate *r)
{
	uint64_t total = 0;
	struct rfile *v;
	int n, left, deleted = 0, err;

	if (r->dirfd < 0)
		return -EBADF;
	err = scan(r, &v, &n);
	if (err)
		return err;
	if (n)	/* qsort wants an array, and an empty directory has none */
		qsort(v, n, sizeof(*v), by_age);
	for (int i = 0; i < n; i++)
		total += v[i].size;
	left = n;
	/* v[n - 1] is the newest: never a candidate */
	for (int i = 0; i < n - 1; i++) {
		bool too_many = r->max_files > 0 && left > r->max_files;
		bool too_big = r->max_bytes > 0 && total > r->max_bytes;

		if (!too_many && !too_big)
			break;
		if (!strcmp(v[i].name, r->last))
			continue;	/* being written (the clock went back) */
		if (unlinkat(r->dirfd, v[i].name, 0) && errno != ENOENT)
			continue;	/* cannot delete it: try the next oldest */
		total -= v[i].size;
		left--;
		deleted++;
	}
	free(v);
	return deleted;
}
