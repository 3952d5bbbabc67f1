// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * /proc/PID/maps parser. The path column is chosen by the traced process, so lines are read
 * into a fixed-size buffer: a line that does not fit (its path would be >= PATH_MAX) is skipped
 * whole instead of being cut into a different, wrong path.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "resolve/procmaps.h"

/* Room for the fixed columns plus the kernel's padding, the path and " (deleted)". */
#define MAPS_LINE_MAX	(PATH_MAX + 512)

static const char deleted_sfx[] = " (deleted)";

/* Parse hex digits at *p up to the first non-digit; false on no digits or overflow. */
static bool parse_hex(const char **p, const char *end, unsigned long *out)
{
	const char *s = *p;
	unsigned long v = 0;
	int d;

	for (; s < end; s++) {
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (v > (ULONG_MAX >> 4))
			return false;
		v = (v << 4) | (unsigned long)d;
	}
	if (s == *p)
		return false;
	*p = s;
	*out = v;
	return true;
}

static bool parse_dec(const char **p, const char *end, unsigned long *out)
{
	const char *s = *p;
	unsigned long v = 0, d;

	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		d = (unsigned long)(*s - '0');
		if (v > (ULONG_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (s == *p)
		return false;
	*p = s;
	*out = v;
	return true;
}

static bool expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return false;
	(*p)++;
	return true;
}

/*
 * Parse one line (without its '\n') held in a writable buffer of at least len + 1 bytes; the
 * path is NUL-terminated in place. Returns false for a malformed line.
 */
static bool parse_line(char *line, size_t len, struct map_entry *e)
{
	const char *p = line, *end = line + len;
	unsigned long maj, min;
	size_t plen, slen = sizeof(deleted_sfx) - 1;
	char *path;
	int i;

	/* An embedded NUL would silently shorten the path the callback sees. */
	if (memchr(line, '\0', len))
		return false;

	memset(e, 0, sizeof(*e));
	if (!parse_hex(&p, end, &e->start) || !expect(&p, end, '-') ||
	    !parse_hex(&p, end, &e->end) || !expect(&p, end, ' '))
		return false;
	if (e->start > e->end)
		return false;

	if (end - p < 4)
		return false;
	for (i = 0; i < 4; i++) {
		if (p[i] != "rwxp"[i] && p[i] != "---s"[i])
			return false;
		e->perms[i] = p[i];
	}
	e->perms[4] = '\0';
	p += 4;

	if (!expect(&p, end, ' ') || !parse_hex(&p, end, &e->offset) || !expect(&p, end, ' ') ||
	    !parse_hex(&p, end, &maj) || !expect(&p, end, ':') || !parse_hex(&p, end, &min) ||
	    !expect(&p, end, ' ') || !parse_dec(&p, end, &e->inode))
		return false;
	if (maj > UINT_MAX || min > UINT_MAX)
		return false;
	e->dev_major = (unsigned int)maj;
	e->dev_minor = (unsigned int)min;

	/* Anonymous mappings end right after the inode (older kernels add one trailing space). */
	if (p < end && *p != ' ')
		return false;
	while (p < end && *p == ' ')
		p++;

	path = line + (p - line);
	plen = (size_t)(end - p);
	if (plen >= slen && !memcmp(path + plen - slen, deleted_sfx, slen)) {
		e->deleted = true;
		plen -= slen;
	}
	if (plen >= PATH_MAX)
		return false;
	path[plen] = '\0';
	e->path = path;
	return true;
}

int procmaps_parse_buf(const char *buf, size_t len, procmaps_cb cb, void *ctx)
{
	char line[MAPS_LINE_MAX + 1];
	const char *p, *end, *nl;
	struct map_entry e;
	size_t llen;
	int err;

	if (!len)
		return 0;
	if (!buf)
		return -EINVAL;
	p = buf;
	end = buf + len;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		llen = (size_t)((nl ? nl : end) - p);
		if (llen <= MAPS_LINE_MAX) {
			memcpy(line, p, llen);
			if (parse_line(line, llen, &e)) {
				err = cb(&e, ctx);
				if (err)
					return err;
			}
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	return 0;
}

int procmaps_parse(FILE *f, procmaps_cb cb, void *ctx)
{
	char line[MAPS_LINE_MAX + 1];
	struct map_entry e;
	bool too_long = false;
	size_t len = 0;
	int c, err;

	if (!f)
		return -EINVAL;
	errno = 0;

	/* getc rather than fgets/getline: bounded memory, and NUL bytes cannot hide line ends. */
	for (;;) {
		c = getc_unlocked(f);
		if (c != EOF && c != '\n') {
			if (len < MAPS_LINE_MAX)
				line[len++] = (char)c;
			else
				too_long = true;
			continue;
		}
		if (!too_long && (len || c == '\n') && parse_line(line, len, &e)) {
			err = cb(&e, ctx);
			if (err)
				return err;
		}
		if (c == EOF)
			break;
		len = 0;
		too_long = false;
	}
	if (ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}

int procmaps_parse_whole(FILE *f, procmaps_cb cb, void *ctx)
{
	int err = procmaps_parse(f, cb, ctx);

	if (err)
		return err;
	/* the same open file: the same address space (a later open could be another process's) */
	if (fseek(f, 0, SEEK_SET) || getc_unlocked(f) == EOF)
		return -ESRCH;
	return 0;
}

const char *path_basename(const char *path)
{
	const char *slash;

	if (!path)
		return "";
	slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}
