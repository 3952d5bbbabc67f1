// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "output/output.h"

/* True when @path names a gzip output. */
static bool output_is_gzip(const char *path)
{
	size_t n = strlen(path);

	return n > 3 && !strcmp(path + n - 3, ".gz");
}

/* Hand the file to the user who ran sudo, so they can open it without root. */
static void chown_to_sudo_user(int fd)
{
	const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");
	char *end;
	long uid, gid;

	if (!u || !g || geteuid() != 0)
		return;
	uid = strtol(u, &end, 10);
	if (*end || uid < 0)
		return;
	gid = strtol(g, &end, 10);
	if (*end || gid < 0)
		return;
	if (fchown(fd, uid, gid)) {
		/* not fatal: the trace is still there, owned by root */
	}
}

int output_exists_err(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return -EEXIST;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (S_ISLNK(st.st_mode))
		return -ELOOP;
	return -EEXIST;
}

const char *output_err_hint(int err)
{
	switch (err) {
	case -EEXIST:
		return " (--force replaces it; or -o another name)";
	case -EISDIR:
		return " (-o names the file to write, not its directory)";
	case -ELOOP:
		return " (a symbolic link: never followed, nor replaced)";
	}
	return "";
}

int output_open(struct output *o, const char *path, bool force)
{
	const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	struct stat st;
	int fd;

	memset(o, 0, sizeof(*o));
	fd = open(path, flags, 0600);
	if (fd < 0 && errno == EEXIST && force) {
		/* replace only a regular file; lstat so a symlink is refused, not followed */
		if (lstat(path, &st))
			return -errno;
		if (!S_ISREG(st.st_mode))
			return output_exists_err(path);
		if (unlink(path))
			return -errno;
		fd = open(path, flags, 0600);
	}
	if (fd < 0)
		return errno == EEXIST ? output_exists_err(path) : -errno;
	chown_to_sudo_user(fd);
	o->gzip = output_is_gzip(path);
	/* level 1: the consumer must keep up with millions of events/s */
	o->jw = jw_fdopen(fd, o->gzip ? 1 : 0);
	if (!o->jw) {
		close(fd);
		return -ENOMEM;
	}
	return 0;
}

void output_close(struct output *o)
{
	if (o->jw)
		jw_close(o->jw);
	o->jw = NULL;
}

int output_tagged_name(const char *path, const char *tag, char *out, size_t len)
{
	const char *base = strrchr(path, '/'), *ext;
	size_t stem;
	int n;

	base = base ? base + 1 : path;
	/* the first dot after the name's first character: "t.json.gz" keeps ".json.gz" */
	ext = *base ? strchr(base + 1, '.') : NULL;
	stem = ext ? (size_t)(ext - path) : strlen(path);
	n = snprintf(out, len, "%.*s.%s%s", (int)stem, path, tag, ext ? ext : "");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int output_part_name(const char *path, unsigned int part, char *out, size_t len)
{
	char tag[16];

	snprintf(tag, sizeof(tag), "%03u", part);
	return output_tagged_name(path, tag, out, len);
}
