// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Probe resolution against a maps fixture that names the built fixture library. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "probes.h"
#include "resolve.h"
#include "unit.h"

/* A maps text with the fixture library mapped twice (two segments) plus noise. */
static FILE *fixture_maps(const char *lib)
{
	char buf[8192];
	FILE *f;

	snprintf(buf, sizeof(buf),
		 "55d000000000-55d000001000 r--p 00000000 fd:01 11 /usr/bin/job\n"
		 "7f0000000000-7f0000001000 r--p 00000000 fd:01 4242 %s\n"
		 "7f0000001000-7f0000002000 r-xp 00001000 fd:01 4242 %s\n"
		 "7f0000100000-7f0000101000 r-xp 00000000 fd:01 77 /lib/x86_64-linux-gnu/libc.so.6\n"
		 "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n", lib, lib);
	f = fmemopen(NULL, strlen(buf) + 1, "w+");
	if (f) {
		fputs(buf, f);
		rewind(f);
	}
	return f;
}

static const struct rprobe *find(const struct target *t, const char *qualname)
{
	for (int i = 0; i < t->cnt; i++)
		if (!strcmp(t->probes[i].qualname, qualname))
			return &t->probes[i];
	return NULL;
}

TEST(resolve_globs_offsets_and_reasons)
{
	struct probe_table tab = {};
	struct target t;
	char lib[PATH_MAX], err[256], report[8192] = "", why[1024];
	const struct rprobe *p;
	FILE *maps, *rep;

	/* maps hold absolute paths */
	CHECK(realpath(unit_fixture_dir(), lib));
	strncat(lib, "/libfixture.so", sizeof(lib) - strlen(lib) - 1);
	CHECK_EQ_INT(probes_parse_text(&tab,
		"libfixture.so fixture::Widget::scale name=scale\n"
		"libfixture.so fixture::Widget::id\n"
		"libfixture.so fixture_c_*\n"
		"libfixture.so fixture::nothing_here\n"
		"libmissing.so foo\n", "t", err, sizeof(err)), 0);
	CHECK_EQ_INT(target_init(&t, 1234, &tab, 64), 0);
	maps = fixture_maps(lib);
	CHECK(maps);
	/* both overloads of scale, id, the C entry: 4 functions in one library seen once */
	CHECK_EQ_INT(target_scan_maps(&t, maps, NULL), 4);
	CHECK_EQ_INT(t.nlibs, 1);
	p = find(&t, "fixture::Widget::id");
	CHECK(p);
	if (p) {
		CHECK_STR(p->name, "id");
		CHECK_EQ_INT(p->endbr, FIXTURE_ENDBR);
		/* the probe goes past endbr64, where [rsp] still holds the return address */
		CHECK_EQ_INT(p->attach_off, p->sym_off + (FIXTURE_ENDBR ? 4 : 0));
	}
	/* both overloads, at different addresses, named by the spec */
	CHECK_EQ_INT(t.spec_hits[0], 2);
	p = find(&t, "fixture::Widget::scale");
	CHECK(p && !strcmp(p->name, "scale"));
	p = find(&t, "fixture_c_entry");
	CHECK(p && !strcmp(p->name, "fixture_c_entry"));
	/* a second scan of the same maps adds nothing: libraries are known by dev+inode */
	rewind(maps);
	CHECK_EQ_INT(target_scan_maps(&t, maps, NULL), 0);
	fclose(maps);

	rep = fmemopen(report, sizeof(report) - 1, "w");
	target_report(&t, rep);
	fclose(rep);
	CHECK(strstr(report, "NOT RESOLVED: no function matching 'fixture::nothing_here'"));
	CHECK(strstr(report, "NOT RESOLVED: no mapped library matches 'libmissing.so'"));
	/* user lines (all of them here): what was searched, and what was probably meant */
	CHECK(!target_spec_missing(&t, 0));
	CHECK(target_spec_missing(&t, 3));
	CHECK(target_spec_missing(&t, 4));
	target_why_missing(&t, 3, why, sizeof(why));
	CHECK(strstr(why, "no function matching 'fixture::nothing_here' in libfixture.so ("));
	target_why_missing(&t, 4, why, sizeof(why));
	CHECK(strstr(why, "no mapped library matches 'libmissing.so' (mapped: job, "
		     "libfixture.so, libc.so.6)"));
	/* the built-in table's lines (before user_from) may match nothing */
	t.user_from = 4;
	CHECK(!target_spec_missing(&t, 3));
	CHECK((strstr(report, "(after endbr64)") != NULL) == FIXTURE_ENDBR);
	target_free(&t);
	probes_free(&tab);
}

TEST(resolve_limits_and_unreadable)
{
	struct probe_table tab = {};
	struct target t;
	char lib[PATH_MAX], err[256];
	FILE *maps;

	CHECK(realpath(unit_fixture_dir(), lib));
	strncat(lib, "/libfixture.so", sizeof(lib) - strlen(lib) - 1);
	CHECK_EQ_INT(probes_parse_text(&tab, "libfixture.so fixture*\n", "t", err, sizeof(err)), 0);
	/* more matching functions than allowed probes: an error, not a silent cut */
	CHECK_EQ_INT(target_init(&t, 1, &tab, 2), 0);
	maps = fixture_maps(lib);
	CHECK_EQ_INT(target_scan_maps(&t, maps, NULL), -E2BIG);
	fclose(maps);
	target_free(&t);

	/* a mapped library that cannot be read is recorded with its error, not fatal */
	CHECK_EQ_INT(target_init(&t, 1, &tab, 64), 0);
	maps = fixture_maps("/nonexistent/libfixture.so");
	CHECK_EQ_INT(target_scan_maps(&t, maps, NULL), 0);
	fclose(maps);
	CHECK_EQ_INT(t.nlibs, 1);
	CHECK_EQ_INT(t.libs[0].err, -ENOENT);
	target_free(&t);
	probes_free(&tab);
}
