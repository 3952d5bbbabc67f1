// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Finding a process's interpreter (resolve/pyrt.c) from a made-up /proc: its maps name files
 * through the process's root (a link to /), the interpreters being this machine's python3.11
 * under other names. No process behind it: Py_Version cannot be read, the file's name gives
 * the version.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "unit.h"
#include "resolve/pyrt.h"

#define REAL_PY "/usr/bin/python3.11"
#define FAKE_PID 424242

/* A made-up procfs in @dir: FAKE_PID's root links to /, its maps are @maps. */
static void fake_proc(const char *dir, const char *maps)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%d", dir, FAKE_PID);
	mkdir(dir, 0755);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%d/root", dir, FAKE_PID);
	unlink(p);
	CHECK(!symlink("/", p));
	snprintf(p, sizeof(p), "%s/%d/maps", dir, FAKE_PID);
	f = fopen(p, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(maps, f);
		fclose(f);
	}
}

TEST(pyrt_offsets_table)
{
	CHECK(py_offsets_for(3, 11) != NULL);
	CHECK(py_offsets_for(3, 12) != NULL);
	CHECK(py_offsets_for(3, 13) != NULL && py_offsets_for(3, 13)->no_cframe);
	CHECK(py_offsets_for(3, 10) == NULL);
	CHECK(py_offsets_for(3, 14) == NULL);
	CHECK(py_offsets_for(2, 7) == NULL);
	/* the BPF walk reads a 72-byte window of each frame: every field it takes is in it */
	for (unsigned int m = 11; m <= 13; m++) {
		const struct py_offsets *o = py_offsets_for(3, m);

		CHECK(o->f_code < 72 && o->f_previous < 72 && o->f_prev_instr < 72 &&
		      o->f_owner < 72);
	}
}

TEST(pyrt_find_candidates)
{
	char dir[] = "/tmp/unit-pyrt-XXXXXX", maps[1024], why[256], link[200];
	struct py_proc a, b;
	int err;

	if (access(REAL_PY, R_OK))
		return;	/* no Debian python3.11 here: nothing to read */
	CHECK(mkdtemp(dir) != NULL);
	/* not Python */
	fake_proc(dir, "00400000-00401000 r-xp 00000000 08:01 1 /usr/lib/libfoo.so\n");
	CHECK_EQ_INT(pyrt_find(FAKE_PID, dir, &a, why, sizeof(why)), -ENOENT);
	CHECK(strstr(why, "no python3* or libpython3* mapped") != NULL);
	/* the interpreter at two bases: _PyRuntime moves with it */
	snprintf(maps, sizeof(maps), "00400000-00500000 r--p 00000000 08:01 1 %s\n", REAL_PY);
	fake_proc(dir, maps);
	CHECK_EQ_INT(pyrt_find(FAKE_PID, dir, &a, why, sizeof(why)), 0);
	CHECK_EQ_INT(a.major, 3);
	CHECK_EQ_INT(a.minor, 11);
	CHECK(a.off == py_offsets_for(3, 11));
	CHECK_STR(a.path, REAL_PY);
	snprintf(maps, sizeof(maps), "01400000-01500000 r--p 00000000 08:01 1 %s\n", REAL_PY);
	fake_proc(dir, maps);
	CHECK_EQ_INT(pyrt_find(FAKE_PID, dir, &b, why, sizeof(why)), 0);
	CHECK(b.runtime - a.runtime == 0x1000000);
	/*
	 * a first candidate that exports nothing (a python binary with a shared libpython), then
	 * the one that does, named like a libpython of another version: its name says 3.10
	 */
	snprintf(link, sizeof(link), "%s/libpython3.10.so.1.0", dir);
	CHECK(!symlink(REAL_PY, link));
	snprintf(maps, sizeof(maps),
		 "00400000-00401000 r--p 00000000 08:01 1 /usr/bin/python3-config\n"
		 "7f0000000000-7f0000100000 r--p 00000000 08:01 2 %s\n", link);
	fake_proc(dir, maps);
	err = pyrt_find(FAKE_PID, dir, &b, why, sizeof(why));
	CHECK_EQ_INT(err, 0);
	CHECK_STR(b.path, link);
	CHECK_EQ_INT(b.minor, 10);
	CHECK(b.off == NULL);	/* not supported: said by the session, no stacks */
	/* nothing that exports _PyRuntime */
	fake_proc(dir, "00400000-00401000 r--p 00000000 08:01 1 /usr/bin/python3-config\n");
	CHECK_EQ_INT(pyrt_find(FAKE_PID, dir, &b, why, sizeof(why)), -ENOENT);
	CHECK(strstr(why, "exports no _PyRuntime") != NULL);
	unlink(link);
	snprintf(link, sizeof(link), "%s/%d/maps", dir, FAKE_PID);
	unlink(link);
	snprintf(link, sizeof(link), "%s/%d/root", dir, FAKE_PID);
	unlink(link);
	snprintf(link, sizeof(link), "%s/%d", dir, FAKE_PID);
	rmdir(link);
	rmdir(dir);
}
