// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/output.h"
#include "output/rotate.h"
#include "unit.h"

/* 2023-11-14T22:13:20Z */
#define T0 ((time_t)1700000000)

/* Basename; "" for a path never filled in (a failed call must not crash the test). */
static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* The basename of @path is @want (a bounded message: paths are PATH_MAX buffers). */
static void check_name(const char *path, const char *want, int line)
{
	char m[320];

	if (strcmp(base(path), want)) {
		snprintf(m, sizeof(m), "name \"%.120s\" != \"%.120s\"", base(path), want);
		unit_fail(__FILE__, line, m);
	}
}
#define CHECK_NAME(path, want) check_name(path, want, __LINE__)

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *f)
{
	return remove(p);
}

static void rm_rf(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void tmpdir(char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/spyre-rotate-XXXXXX");
	if (!mkdtemp(buf))
		unit_fail(__FILE__, __LINE__, "mkdtemp");
}

static void put_file(const char *dir, const char *name, size_t size)
{
	char path[PATH_MAX], *data = calloc(1, size + 1);
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK_EQ_INT(write(fd, data, size), size);
		close(fd);
	}
	free(data);
}

static bool exists(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !lstat(path, &st);
}

/*
 * Create the next window's file the way fleet mode does (rotate_next_path_at, then
 * output_open), then make it @size bytes long (gzip would not keep a size); its basename into
 * @name.
 */
static void window_file(struct rotate *r, time_t t, size_t size, char *name, size_t len)
{
	char path[PATH_MAX] = "";
	struct output o;

	CHECK_EQ_INT(rotate_next_path_at(r, t, path, sizeof(path)), 0);
	CHECK_EQ_INT(output_open(&o, path, false), 0);
	output_close(&o);
	CHECK(!truncate(path, (off_t)size));
	snprintf(name, len, "%s", base(path));
}

TEST(rotate_names_unique_sortable)
{
	char dir[64], sub[128], p[5][PATH_MAX] = { "" };
	struct rotate r;
	struct stat st;
	time_t t;
	uint64_t seq;

	tmpdir(dir, sizeof(dir));
	snprintf(sub, sizeof(sub), "%s/a/b", dir);
	CHECK_EQ_INT(rotate_init(&r, sub, 0, 0, "spyre", false), 0);
	/* created with mode 0700, parents too */
	CHECK(!stat(sub, &st) && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
	CHECK_EQ_INT(rotate_next_path_at(&r, T0, p[0], sizeof(p[0])), 0);
	CHECK_EQ_INT(rotate_next_path_at(&r, T0, p[1], sizeof(p[1])), 0);
	CHECK_EQ_INT(rotate_next_path_at(&r, T0 + 1, p[2], sizeof(p[2])), 0);
	CHECK_EQ_INT(rotate_next_path_at(&r, T0 + 86400 * 400, p[3], sizeof(p[3])), 0);
	CHECK_EQ_INT(rotate_next_path(&r, p[4], sizeof(p[4])), 0);
	CHECK_NAME(p[0], "spyre-20231114T221320Z-000000.json");
	CHECK_NAME(p[1], "spyre-20231114T221320Z-000001.json");
	CHECK_NAME(p[2], "spyre-20231114T221321Z-000002.json");
	CHECK_NAME(p[3], "spyre-20241218T221320Z-000003.json");
	CHECK(!strncmp(p[0], sub, strlen(sub)) && p[0][strlen(sub)] == '/');
	for (int i = 1; i < 5; i++)
		CHECK(strcmp(p[i - 1], p[i]) < 0);
	CHECK(rotate_name_match("spyre", base(p[2]), &t, &seq));
	CHECK_EQ_INT(t, T0 + 1);
	CHECK_EQ_INT(seq, 2);
	/* too small a buffer */
	CHECK_EQ_INT(rotate_next_path_at(&r, T0, p[0], 10), -ENAMETOOLONG);
	rotate_close(&r);

	CHECK_EQ_INT(rotate_init(&r, sub, 0, 0, "node-7_x.y", true), 0);
	CHECK_EQ_INT(rotate_next_path_at(&r, T0, p[0], sizeof(p[0])), 0);
	CHECK_NAME(p[0], "node-7_x.y-20231114T221320Z-000000.json.gz");
	rotate_close(&r);
	rm_rf(dir);
}

TEST(rotate_name_match_strict)
{
	time_t t;
	uint64_t seq;

	CHECK(rotate_name_match("spyre", "spyre-20231114T221320Z-000000.json", &t, &seq));
	CHECK_EQ_INT(t, T0);
	CHECK(rotate_name_match("spyre", "spyre-20231114T221320Z-12345678901.json.gz", NULL, &seq));
	CHECK(seq == 12345678901ull);
	CHECK(!rotate_name_match("spyre", "spyre-20231114T221320Z-000000.json.tmp", NULL, NULL));
	CHECK(!rotate_name_match("spyre", "spyre-20231114T221320Z-.json", NULL, NULL));
	CHECK(!rotate_name_match("spyre", "spyre-20231114T221320Z-00x.json", NULL, NULL));
	CHECK(!rotate_name_match("spyre", "spyre-20231314T221320Z-000000.json", NULL, NULL));
	CHECK(!rotate_name_match("spyre", "spyre-2023111T221320Z-000000.json", NULL, NULL));
	CHECK(!rotate_name_match("spyre", "spyrex-20231114T221320Z-000000.json", NULL, NULL));
	CHECK(!rotate_name_match("spyre", "xspyre-20231114T221320Z-000000.json", NULL, NULL));
	CHECK(!rotate_name_match("spyre", "spyre-20231114T221320Z-000000.json/", NULL, NULL));
	CHECK(!rotate_name_match("spyre", "spyre-", NULL, NULL));
	CHECK(!rotate_name_match("spyre", "spyre", NULL, NULL));
	/* more than 20 digits: not ours (and no overflow) */
	CHECK(!rotate_name_match("spyre", "spyre-20231114T221320Z-123456789012345678901.json",
				 NULL, NULL));
	CHECK(!rotate_name_match("spyre", "spyre-20231114T221320Z-99999999999999999999.json",
				 NULL, NULL));
}

TEST(rotate_bad_args)
{
	char dir[64], file[128];
	struct rotate r;

	tmpdir(dir, sizeof(dir));
	CHECK_EQ_INT(rotate_init(&r, dir, 0, 0, "", false), -EINVAL);
	CHECK_EQ_INT(rotate_init(&r, dir, 0, 0, "../x", false), -EINVAL);
	CHECK_EQ_INT(rotate_init(&r, dir, 0, 0, "a/b", false), -EINVAL);
	CHECK_EQ_INT(rotate_init(&r, dir, 0, 0, ".hidden", false), -EINVAL);
	CHECK_EQ_INT(rotate_init(&r, dir, 0, 0, "a b", false), -EINVAL);
	CHECK_EQ_INT(rotate_init(&r, dir, 0, -1, "spyre", false), -EINVAL);
	put_file(dir, "f", 1);
	snprintf(file, sizeof(file), "%s/f", dir);
	CHECK_EQ_INT(rotate_init(&r, file, 0, 0, "spyre", false), -ENOTDIR);
	snprintf(file, sizeof(file), "%s/f/sub", dir);
	CHECK_EQ_INT(rotate_init(&r, file, 0, 0, "spyre", false), -ENOTDIR);
	/* a failed init leaves nothing to close */
	CHECK_EQ_INT(r.dirfd, -1);
	rotate_close(&r);
	rm_rf(dir);
}

TEST(rotate_seq_continues_after_restart)
{
	char dir[64], p[PATH_MAX] = "";
	struct rotate r;

	tmpdir(dir, sizeof(dir));
	/* a previous run's files, one gzip, one plain */
	put_file(dir, "spyre-20231114T221320Z-000041.json.gz", 1);
	put_file(dir, "spyre-20231114T221320Z-000007.json", 1);
	/* another prefix's numbers do not matter */
	put_file(dir, "other-20231114T221320Z-000900.json", 1);
	CHECK_EQ_INT(rotate_init(&r, dir, 0, 0, "spyre", false), 0);
	CHECK_EQ_INT(r.seq, 42);
	CHECK_EQ_INT(rotate_next_path_at(&r, T0, p, sizeof(p)), 0);
	CHECK_NAME(p, "spyre-20231114T221320Z-000042.json");
	rotate_close(&r);
	rm_rf(dir);
}

TEST(rotate_enforce_count_ours_only)
{
	char dir[64], names[6][128], path[PATH_MAX], outside[128];
	const char *foreign[] = {
		"notes.txt", "spyre.json", "other-20231114T221320Z-000000.json",
		"spyre-20231114T221320Z-000003.json.tmp", ".spyre-20231114T221320Z-000003.json",
	};
	struct rotate r;
	int files;
	uint64_t bytes;

	tmpdir(dir, sizeof(dir));
	snprintf(outside, sizeof(outside), "%s.victim", dir);
	put_file("/", outside + 1, 5000);	/* a file outside the directory */
	for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++)
		put_file(dir, foreign[i], 10);
	/* looks like ours, but a symlink (to a file outside) and a directory: not ours */
	snprintf(path, sizeof(path), "%s/spyre-20000101T000000Z-000000.json", dir);
	CHECK(!symlink(outside, path));
	snprintf(path, sizeof(path), "%s/spyre-20000101T000000Z-000001.json", dir);
	CHECK(!mkdir(path, 0700));

	CHECK_EQ_INT(rotate_init(&r, dir, 0, 3, "spyre", false), 0);
	for (int i = 0; i < 6; i++)
		window_file(&r, T0 + i * 60, 100, names[i], sizeof(names[i]));
	CHECK_EQ_INT(rotate_usage(&r, &files, &bytes), 0);
	CHECK_EQ_INT(files, 6);
	CHECK_EQ_INT(bytes, 600);
	CHECK_EQ_INT(rotate_enforce(&r), 3);
	for (int i = 0; i < 6; i++)
		CHECK_EQ_INT(exists(dir, names[i]), i >= 3);
	for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++)
		CHECK(exists(dir, foreign[i]));
	CHECK(exists(dir, "spyre-20000101T000000Z-000000.json"));
	CHECK(exists(dir, "spyre-20000101T000000Z-000001.json"));
	struct stat st;

	CHECK(!stat(outside, &st) && st.st_size == 5000);
	/* nothing left to do */
	CHECK_EQ_INT(rotate_enforce(&r), 0);
	rotate_close(&r);
	unlink(outside);
	rm_rf(dir);
}

TEST(rotate_enforce_size_keeps_newest)
{
	char dir[64], names[5][128];
	struct rotate r;
	uint64_t bytes;
	int files;

	tmpdir(dir, sizeof(dir));
	/* files of a "previous run", older than anything this one writes */
	put_file(dir, "spyre-20200101T000000Z-000000.json", 100);
	put_file(dir, "spyre-20200101T000000Z-000001.json.gz", 100);
	CHECK_EQ_INT(rotate_init(&r, dir, 250, 0, "spyre", true), 0);
	for (int i = 0; i < 3; i++)
		window_file(&r, T0 + i, 100, names[i], sizeof(names[i]));
	CHECK_EQ_INT(rotate_enforce(&r), 3);
	CHECK(!exists(dir, "spyre-20200101T000000Z-000000.json"));
	CHECK(!exists(dir, "spyre-20200101T000000Z-000001.json.gz"));
	CHECK(!exists(dir, names[0]));
	CHECK(exists(dir, names[1]) && exists(dir, names[2]));
	CHECK_EQ_INT(rotate_usage(&r, &files, &bytes), 0);
	CHECK_EQ_INT(files, 2);
	CHECK_EQ_INT(bytes, 200);

	/* one window bigger than the whole budget: kept, everything older goes */
	window_file(&r, T0 + 10, 1000, names[3], sizeof(names[3]));
	CHECK_EQ_INT(rotate_enforce(&r), 2);
	CHECK(exists(dir, names[3]));
	CHECK_EQ_INT(rotate_usage(&r, &files, &bytes), 0);
	CHECK_EQ_INT(files, 1);
	CHECK_EQ_INT(bytes, 1000);

	/* the clock went back: the file just handed out is not the newest by name, still kept */
	window_file(&r, T0 - 3600, 10, names[4], sizeof(names[4]));
	CHECK_EQ_INT(rotate_enforce(&r), 0);
	CHECK(exists(dir, names[3]) && exists(dir, names[4]));
	rotate_close(&r);
	rm_rf(dir);
}

TEST(rotate_planted_symlink_not_followed)
{
	char dir[64], victim[128], planted[PATH_MAX], p[PATH_MAX] = "", target[PATH_MAX];
	struct output o;
	struct rotate r;
	struct stat st;

	tmpdir(dir, sizeof(dir));
	snprintf(victim, sizeof(victim), "%s.victim", dir);
	put_file("/", victim + 1, 7);
	CHECK_EQ_INT(rotate_init(&r, dir, 0, 1, "spyre", false), 0);

	/* the name the next window would get is a symlink: skipped, not followed */
	snprintf(planted, sizeof(planted), "%s/spyre-20231114T221320Z-000000.json", dir);
	CHECK(!symlink(victim, planted));
	CHECK_EQ_INT(rotate_next_path_at(&r, T0, p, sizeof(p)), 0);
	CHECK_NAME(p, "spyre-20231114T221320Z-000001.json");
	CHECK_EQ_INT(output_open(&o, p, false), 0);
	output_close(&o);

	/* planted between rotate_next_path and output_open: refused */
	CHECK_EQ_INT(rotate_next_path_at(&r, T0, p, sizeof(p)), 0);
	CHECK(!symlink(victim, p));
	CHECK_EQ_INT(output_open(&o, p, false), -ELOOP);

	/* a planted name is skipped, the file after it created new: regular, mode 0600 */
	snprintf(planted, sizeof(planted), "%s/spyre-20231114T221320Z-000003.json", dir);
	CHECK(!symlink(victim, planted));
	CHECK_EQ_INT(rotate_next_path_at(&r, T0, p, sizeof(p)), 0);
	CHECK_NAME(p, "spyre-20231114T221320Z-000004.json");
	CHECK_EQ_INT(output_open(&o, p, false), 0);
	if (o.jw) {
		jw_lit(o.jw, "x");
		jw_commit(o.jw);
	}
	output_close(&o);
	CHECK(!lstat(p, &st) && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600);
	CHECK_EQ_INT(st.st_size, 1);

	/* max_files = 1: our two regular files -> one; the symlinks stay, the victim intact */
	CHECK_EQ_INT(rotate_enforce(&r), 1);
	CHECK(!exists(dir, "spyre-20231114T221320Z-000001.json"));
	CHECK(exists(dir, "spyre-20231114T221320Z-000004.json"));
	CHECK(!lstat(planted, &st) && S_ISLNK(st.st_mode));
	CHECK(readlink(planted, target, sizeof(target)) > 0);
	CHECK(!lstat(p, &st) && S_ISREG(st.st_mode));
	CHECK(!stat(victim, &st) && st.st_size == 7);
	rotate_close(&r);
	unlink(victim);
	rm_rf(dir);
}

/* --switch-output's files: the number before the extensions a viewer keys on, sorting in order */
TEST(output_part_name_numbers_before_the_extensions)
{
	char b[64];

	CHECK_EQ_INT(output_part_name("t.json", 0, b, sizeof(b)), 0);
	CHECK_STR(b, "t.000.json");
	CHECK_EQ_INT(output_part_name("/a.b/t.json.gz", 12, b, sizeof(b)), 0);
	CHECK_STR(b, "/a.b/t.012.json.gz");
	CHECK_EQ_INT(output_part_name("dir/trace", 1234, b, sizeof(b)), 0);
	CHECK_STR(b, "dir/trace.1234");
	CHECK_EQ_INT(output_part_name(".hidden", 1, b, sizeof(b)), 0);
	CHECK_STR(b, ".hidden.001");
	CHECK_EQ_INT(output_part_name("t.json", 1, b, 8), -ENAMETOOLONG);
}
