// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Probe resolution against a maps fixture that names the built fixture library. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "common/intset.h"
#include "resolve/probes.h"
#include "report/listing.h"
#include "resolve/resolve.h"
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

/* The next probe after @p of @qualname (overloads share one) */
static const struct rprobe *find_after(const struct target *t, const struct rprobe *p,
				       const char *qualname)
{
	for (int i = p - t->probes + 1; i < t->cnt; i++)
		if (!strcmp(t->probes[i].qualname, qualname))
			return &t->probes[i];
	return NULL;
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
		/* no name=: the qualified name (the last component alone, "id", was ambiguous) */
		CHECK_STR(p->name, "fixture::Widget::id");
		CHECK_EQ_INT(p->endbr, FIXTURE_ENDBR);
		/* the probe goes past endbr64, where [rsp] still holds the return address */
		CHECK_EQ_INT(p->attach_off, p->sym_off + (FIXTURE_ENDBR ? 4 : 0));
	}
	/* both overloads, at different addresses, named by the spec and told apart by their
	 * parameters: neither passes for the only one */
	CHECK_EQ_INT(t.spec_hits[0], 2);
	p = find(&t, "fixture::Widget::scale");
	CHECK(p && (!strcmp(p->name, "scale(int)") || !strcmp(p->name, "scale(double)")));
	CHECK(p && p->shared_name && !strcmp(p->shared_name, "scale"));
	p = p ? find_after(&t, p, "fixture::Widget::scale") : NULL;
	CHECK(p && (!strcmp(p->name, "scale(int)") || !strcmp(p->name, "scale(double)")));
	CHECK(p && p->shared_name && !strcmp(p->shared_name, "scale"));
	CHECK(p && strcmp(p->name, find(&t, "fixture::Widget::scale")->name));
	p = find(&t, "fixture_c_entry");
	CHECK(p && !strcmp(p->name, "fixture_c_entry"));
	/* a second scan of the same maps adds nothing: libraries are known by dev+inode */
	rewind(maps);
	CHECK_EQ_INT(target_scan_maps(&t, maps, NULL), 0);
	fclose(maps);

	rep = fmemopen(report, sizeof(report) - 1, "w");
	listing_probes(&t, NULL, true, NULL, rep);
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
	/* the files, by basename (their DT_SONAMEs are offered as near misses, not listed) */
	CHECK(strstr(why, "no mapped library matches 'libmissing.so' (mapped: job, "
		     "libfixture.so, libc.so.6)"));
	/* the built-in table's lines (before user_from) may match nothing */
	t.user_from = 4;
	CHECK(!target_spec_missing(&t, 3));
	CHECK((strstr(report, "(after endbr64)") != NULL) == FIXTURE_ENDBR);
	/* by default one line a probe; a glob keeps the names (or functions) it matches */
	t.user_from = 0;
	rep = fmemopen(report, sizeof(report) - 1, "w");
	listing_probes(&t, NULL, false, "scale*", rep);
	fclose(rep);
	CHECK(strstr(report, "\nscale(int) ") && strstr(report, "\nscale(double) "));
	CHECK(strstr(report, "libfixture.so+0x"));
	CHECK(!strstr(report, "fixture::Widget::id") && !strstr(report, "returns:"));
	rep = fmemopen(report, sizeof(report) - 1, "w");
	listing_probes(&t, NULL, false, NULL, rep);
	fclose(rep);
	CHECK(strstr(report, "fixture::Widget::id") && strstr(report, "fixture_c_entry"));
	CHECK(strstr(report, "t:5: libmissing.so foo: NOT RESOLVED: no mapped library matches"));
	target_free(&t);
	probes_free(&tab);
}

/* A LIB with '/' is the mapped file's path; `list` without -p finds the runtime by it too. */
TEST(resolve_lib_by_path)
{
	struct probe_table tab = {};
	char lib[PATH_MAX], line[PATH_MAX + 64], err[256], base[64];
	struct target t;
	FILE *maps;

	CHECK(realpath(unit_fixture_dir(), lib));
	strncat(lib, "/libfixture.so", sizeof(lib) - strlen(lib) - 1);
	snprintf(line, sizeof(line), "%s fixture_c_*\n/elsewhere/libfixture.so fixture::*\n", lib);
	CHECK_EQ_INT(probes_parse_text(&tab, line, "t", err, sizeof(err)), 0);
	CHECK_EQ_INT(target_init(&t, 1234, &tab, 64), 0);
	maps = fixture_maps(lib);
	CHECK(maps);
	if (!maps)
		goto out;
	/* the path names the mapped file; another directory's file of that name is not it */
	CHECK_EQ_INT(target_scan_maps(&t, maps, NULL), 1);
	CHECK(find(&t, "fixture_c_entry"));
	CHECK_EQ_INT(t.spec_hits[1], 0);
	rewind(maps);
	CHECK(table_maps_runtime(&tab, maps, base, sizeof(base)));
	CHECK_STR(base, "libfixture.so");
	fclose(maps);
out:
	target_free(&t);
	probes_free(&tab);
	/* the unwinders' lines name what every C++ program maps: not a runtime */
	CHECK_EQ_INT(probes_parse_text(&tab, "libfixture.so* _Unwind_X type=unwind\n", "t", err,
				       sizeof(err)), 0);
	maps = fixture_maps(lib);
	CHECK(maps && !table_maps_runtime(&tab, maps, base, sizeof(base)));
	if (maps)
		fclose(maps);
	probes_free(&tab);
}

/*
 * Two functions never share a name (a fixed name on a glob, templates); one function does,
 * in every file its library is mapped from.
 */
TEST(resolve_names_distinct)
{
	struct probe_table tab = {};
	struct target t;
	char dir[PATH_MAX], lib[PATH_MAX + 32], err[256], buf[3 * PATH_MAX + 512];
	const struct rprobe *p;
	FILE *maps;
	int n = 0;

	CHECK(realpath(unit_fixture_dir(), dir));
	snprintf(lib, sizeof(lib), "%s/libfixture.so", dir);
	CHECK_EQ_INT(probes_parse_text(&tab,
		"libfixture.so fixture::Widget::[is]* name=w\n"
		"libfixture.so fixture::*::operator* name=op_{1}\n"
		"libfixture.so fixture_c_entry\n", "t", err, sizeof(err)), 0);
	CHECK_EQ_INT(target_init(&t, 1, &tab, 64), 0);
	/* the same library a second time, as if from another file (inode, path), and a third
	 * time under the first one's path (another container's copy) */
	snprintf(buf, sizeof(buf),
		 "7f0000000000-7f0000001000 r-xp 00000000 fd:01 4242 %s\n"
		 "7f0000100000-7f0000101000 r-xp 00000000 fd:01 4343 %s/./libfixture.so\n"
		 "7f0000200000-7f0000201000 r-xp 00000000 fd:02 4242 %s\n",
		 lib, dir, lib);
	maps = fmemopen(buf, strlen(buf), "r");
	CHECK(maps);
	/* id, scale x2, three operators, the C entry: 7 in each copy */
	CHECK_EQ_INT(target_scan_maps(&t, maps, NULL), 21);
	fclose(maps);
	CHECK_EQ_INT(t.nlibs, 3);
	/* in one file, every name is its own; across the files, a symbol has one name */
	for (int i = 0; i < t.cnt; i++) {
		for (int j = i + 1; j < t.cnt; j++) {
			const struct rprobe *a = &t.probes[i], *b = &t.probes[j];

			if (a->lib == b->lib && !strcmp(a->name, b->name))
				unit_fail(__FILE__, __LINE__, a->name);
			if (a->lib != b->lib && !strcmp(a->symbol, b->symbol) &&
			    strcmp(a->name, b->name))
				unit_fail(__FILE__, __LINE__, b->name);
		}
		/* ... and its events say which file */
		CHECK(t.probes[i].other_file);
	}
	/*
	 * A fixed name on a glob: the first function resolved keeps it, the others add their
	 * qualified name; overloads of one function their parameters, each (below). A template
	 * that gives several functions one name: the same.
	 */
	for (int i = 0; i < t.cnt; i++) {
		const char *base = !strcmp(t.probes[i].qualname, "fixture_c_entry") ? NULL :
				   strstr(t.probes[i].qualname, "::operator") ? "op_Widget" : "w";

		p = &t.probes[i];
		if (!base || p->lib)
			continue;
		snprintf(buf, sizeof(buf), "%s (%s", base, p->qualname);
		if (strcmp(p->name, base) && strncmp(p->name, buf, strlen(buf)) &&
		    strcmp(p->name, "w(int)") && strcmp(p->name, "w(double)"))
			unit_fail(__FILE__, __LINE__, p->name);
		n += !strcmp(p->name, base);
	}
	CHECK_EQ_INT(n, 2);
	n = 0;
	/* the C function without name=: its name, in every copy, not made distinct */
	for (int i = 0; i < t.cnt; i++) {
		p = &t.probes[i];
		if (strcmp(p->qualname, "fixture_c_entry"))
			continue;
		CHECK_STR(p->name, "fixture_c_entry");
		CHECK(!p->shared_name);
		n++;
	}
	CHECK_EQ_INT(n, 3);
	for (int i = 0; i < t.cnt; i++) {
		p = &t.probes[i];
		/* the overloads of scale under the fixed name: by their parameters, each */
		if (!strcmp(p->qualname, "fixture::Widget::scale") &&
		    strcmp(p->name, "w(int)") && strcmp(p->name, "w(double)"))
			unit_fail(__FILE__, __LINE__, p->name);
	}
	target_free(&t);
	probes_free(&tab);
}

/* Another library with a function of the same name: that is another function, named apart. */
TEST(resolve_names_other_library)
{
	struct probe_table tab = {};
	struct target t;
	char lib[PATH_MAX], link[PATH_MAX + 32], err[256], buf[3 * PATH_MAX + 512];
	char want[PATH_MAX + 64];
	char tmp[] = "/tmp/resolve-test-XXXXXX";
	FILE *maps;

	CHECK(realpath(unit_fixture_dir(), lib));
	strncat(lib, "/libfixture.so", sizeof(lib) - strlen(lib) - 1);
	CHECK(mkdtemp(tmp));
	snprintf(link, sizeof(link), "%s/libfixother.so", tmp);
	CHECK_EQ_INT(symlink(lib, link), 0);
	CHECK_EQ_INT(probes_parse_text(&tab, "libfix*.so fixture_c_entry\n", "t", err,
				       sizeof(err)), 0);
	CHECK_EQ_INT(target_init(&t, 1, &tab, 64), 0);
	snprintf(buf, sizeof(buf),
		 "7f0000000000-7f0000001000 r-xp 00000000 fd:01 4242 %s\n"
		 "7f0000100000-7f0000101000 r-xp 00000000 fd:01 4343 %s\n", lib, link);
	maps = fmemopen(buf, strlen(buf), "r");
	CHECK(maps);
	CHECK_EQ_INT(target_scan_maps(&t, maps, NULL), 2);
	fclose(maps);
	CHECK_EQ_INT(t.cnt, 2);
	if (t.cnt == 2) {
		snprintf(want, sizeof(want), "fixture_c_entry (%s)", link);
		CHECK_STR(t.probes[0].name, "fixture_c_entry");
		CHECK(!strcmp(t.probes[1].name, want));
		CHECK_STR(t.probes[1].shared_name, "fixture_c_entry");
		CHECK(!t.probes[0].other_file && !t.probes[1].other_file);
	}
	target_free(&t);
	unlink(link);
	rmdir(tmp);
	probes_free(&tab);
}

TEST(resolve_aliases_one_probe)
{
	char dir[PATH_MAX], lib[PATH_MAX + 16], err[256];
	struct probe_table tab = {};
	struct target t;
	FILE *maps;

	/* the C1 and C2 constructors share an address: one probe, whose uprobe would fire once */
	CHECK_EQ_INT(probes_parse_text(&tab, "libfixture.so fixture::Widget::Widget\n"
				       "libfixture.so fixture::Widget::*\n", "t", err,
				       sizeof(err)), 0);
	CHECK_EQ_INT(target_init(&t, 1, &tab, 64), 0);
	CHECK(realpath(unit_fixture_dir(), dir));
	snprintf(lib, sizeof(lib), "%s/libfixture.so", dir);
	maps = fixture_maps(lib);
	CHECK(target_scan_maps(&t, maps, NULL) > 1);
	fclose(maps);
	CHECK_EQ_INT(t.spec_hits[0], 1);
	for (int i = 0; i < t.cnt; i++)
		for (int j = 0; j < i; j++)
			CHECK(t.probes[i].sym_off != t.probes[j].sym_off);
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

/*
 * A library glob matches the file's basename, its DT_SONAME and, in launch mode, the name it
 * was asked for by: libstdc++.so.6 is the file libstdc++.so.6.0.30.
 */
TEST(resolve_lib_glob_matches_soname_and_alias)
{
	struct probe_table tab = {};
	struct target t;
	char lib[PATH_MAX], link[PATH_MAX + 32], err[256], why[2048], report[8192] = "";
	char tmp[] = "/tmp/resolve-test-XXXXXX";
	FILE *maps, *rep;

	CHECK(realpath(unit_fixture_dir(), lib));
	strncat(lib, "/libfixture.so", sizeof(lib) - strlen(lib) - 1);
	CHECK_EQ_INT(probes_parse_text(&tab,
		"libfixture.so.1 fixture_c_entry\n"
		"libfixture.so.2 fixture_c_entry\n"
		"fixlink fixture::Widget::id\n", "t", err, sizeof(err)), 0);
	CHECK_EQ_INT(target_init(&t, 1, &tab, 64), 0);
	maps = fixture_maps(lib);
	CHECK(maps);
	/* mapped as libfixture.so: the SONAME line resolves, the alias line cannot */
	CHECK_EQ_INT(target_scan_maps(&t, maps, NULL), 1);
	fclose(maps);
	CHECK_EQ_INT(t.nlibs, 1);
	CHECK_EQ_INT(t.spec_hits[0], 1);
	CHECK_STR(t.libs[0].soname, "libfixture.so.1");
	CHECK(!t.libs[0].alias);
	CHECK(target_lib_matches(&t, 0, 0) && !target_lib_matches(&t, 1, 0));
	/* a near miss of a SONAME is offered */
	CHECK(target_spec_missing(&t, 1));
	target_why_missing(&t, 1, why, sizeof(why));
	CHECK(strstr(why, "no mapped library matches 'libfixture.so.2'"));
	CHECK(strstr(why, "near misses: libfixture.so.1"));
	rep = fmemopen(report, sizeof(report) - 1, "w");
	listing_probes(&t, NULL, true, NULL, rep);
	fclose(rep);
	CHECK(strstr(report, "resolved: 1 function in libfixture.so\n"));
	CHECK(strstr(report, "(soname libfixture.so.1): 1 probe\n"));
	target_free(&t);

	/* launch mode: by a symbolic link's name; the library is its real file */
	CHECK(mkdtemp(tmp));
	snprintf(link, sizeof(link), "%s/fixlink", tmp);
	CHECK_EQ_INT(symlink(lib, link), 0);
	CHECK_EQ_INT(target_init(&t, 1, &tab, 64), 0);
	CHECK_EQ_INT(target_add_lib(&t, link, NULL), 2);
	CHECK_EQ_INT(t.nlibs, 1);
	CHECK_STR(t.libs[0].path, lib);
	CHECK_STR(t.libs[0].alias, "fixlink");
	CHECK_EQ_INT(t.spec_hits[0], 1);
	CHECK_EQ_INT(t.spec_hits[2], 1);
	/* the same file again (the maps, later): known by its inode */
	CHECK_EQ_INT(target_add_lib(&t, lib, "libfixture.so.1"), 0);
	CHECK_EQ_INT(target_add_lib(&t, "/nonexistent/libx.so", NULL), -ENOENT);
	target_free(&t);
	unlink(link);
	rmdir(tmp);
	probes_free(&tab);
}

/*
 * The start-up self-test found return sites broken (retcheck.h): the span probes resolved
 * before record entries only, with its reason, so do those resolved after; instants stay.
 */
TEST(resolve_sites_off)
{
	static const char why[] = "return sites off: test";
	struct probe_table tab = {};
	char lib[PATH_MAX], err[256];
	const struct rprobe *span, *inst;
	struct target t;
	FILE *maps;

	CHECK(realpath(unit_fixture_dir(), lib));
	strncat(lib, "/libfixture.so", sizeof(lib) - strlen(lib) - 1);
	CHECK_EQ_INT(probes_parse_text(&tab, "libfixture.so fixture::Widget::id\n"
				       "libfixture.so fixture_c_entry type=instant\n", "t", err,
				       sizeof(err)), 0);
	for (int before = 1; before >= 0; before--) {
		CHECK_EQ_INT(target_init(&t, 1, &tab, 64), 0);
		if (!before)
			CHECK_EQ_INT(target_sites_off(&t, why), 0);
		maps = fixture_maps(lib);
		CHECK_EQ_INT(target_scan_maps(&t, maps, NULL), 2);
		fclose(maps);
		span = find(&t, "fixture::Widget::id");
		inst = find(&t, "fixture_c_entry");
		CHECK(span && inst);
		if (!span || !inst) {
			target_free(&t);
			break;
		}
		if (before) {
			CHECK_EQ_INT(span->ret, RET_SITES);
			CHECK(span->sites.n > 0);
			CHECK_EQ_INT(t.entry_only, 0);
			CHECK_EQ_INT(target_sites_off(&t, why), 1);
		}
		CHECK_EQ_INT(span->ret, RET_NONE);
		CHECK_EQ_INT(span->sites.n, 0);
		CHECK(span->sites.why && strstr(span->sites.why, "self-test"));
		CHECK(t.sites_off == why);
		CHECK_EQ_INT(t.entry_only, 1);
		CHECK(inst->sites.why == NULL);
		target_free(&t);
	}
	probes_free(&tab);
}

/* A fake /proc: PID/maps from @maps, PID/map_files/RANGE a link to @lib for each range. */
static void fake_proc(const char *root, int pid, const char *maps, const char *lib)
{
	char path[PATH_MAX], range[64];
	const char *l = maps;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d", root, pid);
	CHECK_EQ_INT(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%d/map_files", root, pid);
	CHECK_EQ_INT(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%d/maps", root, pid);
	f = fopen(path, "w");
	CHECK(f);
	if (!f)
		return;
	fputs(maps, f);
	fclose(f);
	for (; l && sscanf(l, "%63[0-9a-f-]", range) == 1;
	     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		snprintf(path, sizeof(path), "%s/%d/map_files/%s", root, pid, range);
		CHECK_EQ_INT(symlink(lib, path), 0);
	}
}

TEST(resolve_scan_procs_tells_the_jobs_with_the_runtime)
{
	char root[] = "/tmp/spyre-unit-procXXXXXX", lib[PATH_MAX], maps[1024], err[256];
	struct probe_table tab = {};
	struct intset seen = {}, jobs = {};
	struct target t;

	CHECK(realpath(unit_fixture_dir(), lib));
	strncat(lib, "/libfixture.so", sizeof(lib) - strlen(lib) - 1);
	CHECK(mkdtemp(root));
	/* a span line names libfixture.so; the unwinder's names libc (every C++ program maps it) */
	CHECK_EQ_INT(probes_parse_text(&tab,
		"libfixture.so fixture_c_* type=span\n"
		"libc.so.6 malloc type=unwind\n", "t", err, sizeof(err)), 0);
	CHECK_EQ_INT(target_init(&t, -1, &tab, 64), 0);
	snprintf(maps, sizeof(maps),
		 "7f0000000000-7f0000001000 r--p 00000000 fd:01 4242 %s\n"
		 "7f0000001000-7f0000002000 r-xp 00001000 fd:01 4242 %s\n", lib, lib);
	fake_proc(root, 100, maps, lib);	/* a job */
	fake_proc(root, 101, "7f0000100000-7f0000101000 r-xp 00000000 fd:01 77 "
		  "/lib/x86_64-linux-gnu/libc.so.6\n", "/lib/x86_64-linux-gnu/libc.so.6");
	CHECK(target_scan_procs(&t, &seen, &jobs, true, root) > 0);
	CHECK_EQ_INT(seen.n, 2);
	/* only the process with the runtime is a job */
	CHECK_EQ_INT(jobs.n, 1);
	CHECK(intset_has(&jobs, 100) && !intset_has(&jobs, 101));
	intset_free(&seen);
	intset_free(&jobs);
	target_free(&t);
	probes_free(&tab);
	{
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
		CHECK_EQ_INT(system(cmd), 0);
	}
}
