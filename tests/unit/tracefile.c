// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A trace file read whole into memory, plain or gzip: `merge` parses both its inputs as one
 * buffer each (check and recover read a stream: tracestream.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "tracefile.h"
#include "common/util.h"

/* Make room for at least one more byte (plus the NUL), never past the size limit. */
static int grow(char **buf, size_t *cap, size_t len)
{
	size_t ncap;
	char *nb;

	if (len < *cap)
		return 0;
	if (*cap > TRACE_FILE_MAX_BYTES)
		return -EFBIG;
	ncap = *cap * 2;
	if (ncap > TRACE_FILE_MAX_BYTES + 1)
		ncap = TRACE_FILE_MAX_BYTES + 1;
	nb = realloc(*buf, ncap + 1);
	if (!nb)
		return -ENOMEM;
	*buf = nb;
	*cap = ncap;
	return 0;
}

static int read_plain(int fd, struct trace_file *tf)
{
	size_t cap = 1 << 16, len = 0;
	struct stat st;
	char *buf;
	ssize_t n;
	int err;

	if (!fstat(fd, &st) && S_ISREG(st.st_mode)) {
		if ((unsigned long long)st.st_size > TRACE_FILE_MAX_BYTES)
			return -EFBIG;
		/* one spare byte so that reaching EOF needs no realloc */
		if ((size_t)st.st_size + 1 > cap)
			cap = (size_t)st.st_size + 1;
	}
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		err = grow(&buf, &cap, len);
		if (err)
			goto fail;
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > TRACE_FILE_MAX_BYTES) {
			err = -EFBIG;
			goto fail;
		}
	}
	buf[len] = '\0';
	tf->data = buf;
	tf->len = len;
	return 0;
fail:
	free(buf);
	return err;
}

/* Takes @fd. A truncated or corrupt stream is not an error: tf->cut says so. */
static int read_gzip(int fd, struct trace_file *tf)
{
	size_t cap = 1 << 20, len = 0;
	char *buf = NULL;
	int err = 0, zerr;
	gzFile gz;
	int n;

	gz = gzdopen(fd, "rb");
	if (!gz) {
		close(fd);
		return -ENOMEM;
	}
	gzbuffer(gz, 1 << 20);
	buf = malloc(cap + 1);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		size_t room;

		err = grow(&buf, &cap, len);
		if (err)
			goto out;
		room = cap - len;
		if (room > (1u << 30))
			room = 1u << 30;
		n = gzread(gz, buf + len, (unsigned int)room);
		if (n > 0) {
			len += (size_t)n;
			if (len > TRACE_FILE_MAX_BYTES) {
				err = -EFBIG;
				goto out;
			}
			continue;
		}
		gzerror(gz, &zerr);
		if (zerr == Z_OK)
			break;
		if (zerr == Z_BUF_ERROR || zerr == Z_DATA_ERROR) {
			/* everything that inflated before the cut is in buf */
			tf->cut = true;
			break;
		}
		err = zerr == Z_ERRNO && errno ? -errno : -EIO;
		goto out;
	}
	buf[len] = '\0';
	tf->data = buf;
	tf->len = len;
	buf = NULL;
out:
	free(buf);
	gzclose_r(gz);
	return err;
}

int trace_file_read(const char *path, struct trace_file *tf, char *err, size_t errlen)
{
	unsigned char magic[2];
	ssize_t n;
	int fd, ret;

	memset(tf, 0, sizeof(*tf));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errf(err, errlen, -errno, "%s", strerror(errno));
	do
		n = pread(fd, magic, sizeof(magic), 0);
	while (n < 0 && errno == EINTR);
	if (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
		tf->gzip = true;
		ret = read_gzip(fd, tf);
	} else {
		/* pread fails on pipes: read_plain then reads from the start anyway */
		ret = read_plain(fd, tf);
		close(fd);
	}
	if (ret == -EFBIG)
		return errf(err, errlen, ret, "larger than %llu GiB%s; refusing to load it",
			    TRACE_FILE_MAX_BYTES >> 30, tf->gzip ? " uncompressed" : "");
	if (ret)
		return errf(err, errlen, ret, "%s", strerror(-ret));
	return 0;
}

void trace_file_free(struct trace_file *tf)
{
	free(tf->data);
	memset(tf, 0, sizeof(*tf));
}

