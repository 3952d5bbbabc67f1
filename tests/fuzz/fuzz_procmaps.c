// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * procmaps_parse_buf() on hostile bytes: the path column of /proc/PID/maps is chosen by the
 * traced process. The stream parser, procmaps_parse(), reads the same bytes through fmemopen
 * and must report exactly the same entries.
 */
#include <limits.h>

#include "fuzz.h"
#include "resolve/procmaps.h"

/* Entries are compared through a hash of their fields: no allocation per entry. */
struct seen {
	unsigned long n;
	uint64_t hash;
};

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	/* FNV-1a: order-sensitive, enough to tell two entry sequences apart. */
	while (n--)
		h = (h ^ *b++) * 0x100000001b3ULL;
	return h;
}

static int on_entry(const struct map_entry *e, void *ctx)
{
	struct seen *s = ctx;
	size_t plen, i;

	FUZZ_CHECK(e->start <= e->end);
	FUZZ_CHECK(e->path);
	plen = strlen(e->path);
	FUZZ_CHECK(plen < PATH_MAX);
	FUZZ_CHECK(!memchr(e->path, '\n', plen));
	FUZZ_CHECK(strlen(e->perms) == 4);
	for (i = 0; i < 4; i++)
		FUZZ_CHECK(e->perms[i] == "rwxp"[i] || e->perms[i] == "---s"[i]);
	/* Without the flag, the suffix must not have been left on the path. */
	FUZZ_CHECK(e->deleted || plen < 10 || strcmp(e->path + plen - 10, " (deleted)"));
	FUZZ_CHECK(strlen(path_basename(e->path)) <= plen);

	s->n++;
	s->hash = mix(s->hash, &e->start, sizeof(e->start));
	s->hash = mix(s->hash, &e->end, sizeof(e->end));
	s->hash = mix(s->hash, &e->offset, sizeof(e->offset));
	s->hash = mix(s->hash, &e->inode, sizeof(e->inode));
	s->hash = mix(s->hash, &e->dev_major, sizeof(e->dev_major));
	s->hash = mix(s->hash, &e->dev_minor, sizeof(e->dev_minor));
	s->hash = mix(s->hash, e->perms, 4);
	s->hash = mix(s->hash, &e->deleted, sizeof(e->deleted));
	s->hash = mix(s->hash, e->path, plen + 1);
	return 0;
}

static int stop_first(const struct map_entry *e, void *ctx)
{
	(*(unsigned long *)ctx)++;
	return -7;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen a = { 0, 0xcbf29ce484222325ULL }, b = a;
	unsigned long calls = 0;
	FILE *f;
	int err;

	/* Exact-size heap copy (libFuzzer's buffer already is one): reads past the end trap. */
	err = procmaps_parse_buf((const char *)data, size, on_entry, &a);
	FUZZ_CHECK(err == 0);

	if (size) {
		f = fmemopen((void *)data, size, "r");
		FUZZ_CHECK(f);
		err = procmaps_parse(f, on_entry, &b);
		fclose(f);
		FUZZ_CHECK(err == 0);
		FUZZ_CHECK(a.n == b.n && a.hash == b.hash);
	}

	err = procmaps_parse_buf((const char *)data, size, stop_first, &calls);
	FUZZ_CHECK(a.n ? (err == -7 && calls == 1) : (err == 0 && calls == 0));
	return 0;
}
