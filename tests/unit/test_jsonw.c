// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "output/jsonw.h"
#include "unit.h"

/* Close a memory writer and return what it held (static storage, next call overwrites). */
static const char *take(struct jw *w)
{
	static char out[4096];
	size_t len;
	const char *d = jw_mem_data(w, &len);

	if (len >= sizeof(out))
		len = sizeof(out) - 1;
	memcpy(out, d, len);
	out[len] = '\0';
	CHECK_EQ_INT(jw_close(w), 0);
	return out;
}

static const char *u64s(uint64_t v)
{
	struct jw *w = jw_memopen();

	jw_u64(w, v);
	return take(w);
}

static const char *i64s(int64_t v)
{
	struct jw *w = jw_memopen();

	jw_i64(w, v);
	return take(w);
}

static const char *uss(uint64_t v)
{
	struct jw *w = jw_memopen();

	char *p = jw_reserve(w, JW_FMT_MAX);

	if (p)
		jw_advance(w, jw_fmt_us(p, v));
	return take(w);
}

static const char *usss(int64_t v)
{
	struct jw *w = jw_memopen();

	jw_us_signed(w, v);
	return take(w);
}

static const char *dbls(double v, int dec)
{
	struct jw *w = jw_memopen();

	jw_dbl(w, v, dec);
	return take(w);
}

static const char *strs(const char *s)
{
	struct jw *w = jw_memopen();

	jw_str(w, s);
	return take(w);
}

TEST(jsonw_integers)
{
	CHECK_STR(u64s(0), "0");
	CHECK_STR(u64s(7), "7");
	CHECK_STR(u64s(10), "10");
	CHECK_STR(u64s(99), "99");
	CHECK_STR(u64s(100), "100");
	CHECK_STR(u64s(1234567890123ull), "1234567890123");
	CHECK_STR(u64s(UINT64_MAX), "18446744073709551615");
	CHECK_STR(i64s(0), "0");
	CHECK_STR(i64s(-1), "-1");
	CHECK_STR(i64s(INT64_MAX), "9223372036854775807");
	CHECK_STR(i64s(INT64_MIN), "-9223372036854775808");
}

TEST(jsonw_hex)
{
	struct jw *w = jw_memopen();

	jw_hex(w, 0x1f);
	jw_raw(w, ",", 1);
	jw_hex(w, 0);
	jw_raw(w, ",", 1);
	jw_hex(w, UINT64_MAX);
	CHECK_STR(take(w), "\"0x1f\",\"0x0\",\"0xffffffffffffffff\"");
}

TEST(jsonw_us)
{
	CHECK_STR(uss(1234567), "1234.567");
	CHECK_STR(uss(5), "0.005");
	CHECK_STR(uss(0), "0.000");
	CHECK_STR(uss(50), "0.050");
	CHECK_STR(uss(999), "0.999");
	CHECK_STR(uss(1000), "1.000");
	CHECK_STR(uss(UINT64_MAX), "18446744073709551.615");
	CHECK_STR(usss(-1500), "-1.500");
	CHECK_STR(usss(-5), "-0.005");
	CHECK_STR(usss(1500), "1.500");
	CHECK_STR(usss(INT64_MIN), "-9223372036854775.808");
}

TEST(jsonw_dbl)
{
	CHECK_STR(dbls(12.5, 3), "12.5");
	CHECK_STR(dbls(1.0, 3), "1");
	CHECK_STR(dbls(0.0, 3), "0");
	CHECK_STR(dbls(-0.25, 2), "-0.25");
	CHECK_STR(dbls(2.0 / 3.0, 3), "0.667");
	CHECK_STR(dbls(0.0004, 3), "0");
	CHECK_STR(dbls(-0.0004, 3), "0");
	CHECK_STR(dbls(1.05, 0), "1");
	CHECK_STR(dbls(NAN, 3), "0");
	CHECK_STR(dbls(INFINITY, 3), "0");
	CHECK_STR(dbls(123456.789, 3), "123456.789");
	/* far beyond integer scaling: still a JSON number that reads back */
	CHECK(strtod(dbls(1e300, 3), NULL) == 1e300);
}

TEST(jsonw_escapes)
{
	char ctl[] = { 'a', 0x01, 0x1f, 'b', 0 };
	char bad[] = { 'x', (char)0xff, 'y', (char)0xc3, 0 };	/* 0xc3 truncated at the end */
	char surr[] = { (char)0xed, (char)0xa0, (char)0x80, 0 };	/* surrogate: invalid */
	char overlong[] = { (char)0xc0, (char)0xaf, 0 };

	CHECK_STR(strs("plain"), "\"plain\"");
	CHECK_STR(strs(""), "\"\"");
	CHECK_STR(strs(NULL), "\"\"");
	CHECK_STR(strs("a\"b\\c"), "\"a\\\"b\\\\c\"");
	CHECK_STR(strs("l1\nl2\r\t\b\f"), "\"l1\\nl2\\r\\t\\b\\f\"");
	CHECK_STR(strs(ctl), "\"a\\u0001\\u001fb\"");
	CHECK_STR(strs("/ and \x7f"), "\"/ and \x7f\"");
	CHECK_STR(strs(bad), "\"x\xef\xbf\xbdy\xef\xbf\xbd\"");
	CHECK_STR(strs(surr), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	CHECK_STR(strs(overlong), "\"\xef\xbf\xbd\xef\xbf\xbd\"");
	/* valid 2, 3 and 4 byte sequences pass through */
	CHECK_STR(strs("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
		  "\"\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
}

TEST(jsonw_strn)
{
	char comm[4] = { 'a', 'b', 'c', 'd' };	/* no NUL */
	char shorter[8] = "xy";
	char cut[3] = { 'o', (char)0xe2, (char)0x82 };	/* € cut by the field size */
	struct jw *w = jw_memopen();

	jw_strn(w, comm, sizeof(comm));
	jw_strn(w, shorter, sizeof(shorter));
	jw_strn(w, cut, sizeof(cut));
	jw_strn(w, NULL, 5);
	CHECK_STR(take(w), "\"abcd\"\"xy\"\"o\xef\xbf\xbd\xef\xbf\xbd\"\"\"");
}

TEST(jsonw_grows)
{
	size_t n = 300000, len;
	char *big = malloc(n + 1);
	struct jw *w = jw_memopen();
	const char *d;

	memset(big, 'q', n);
	big[n] = '\0';
	big[n / 2] = '\n';
	jw_str(w, big);
	d = jw_mem_data(w, &len);
	CHECK_EQ_INT(len, n + 3);
	CHECK(d[0] == '"' && d[len - 1] == '"' && d[len] == '\0');
	CHECK(d[n / 2 + 1] == '\\' && d[n / 2 + 2] == 'n');
	CHECK_EQ_INT(jw_bytes(w), n + 3);
	CHECK_EQ_INT(jw_close(w), 0);
	free(big);
}

/* A deterministic mix of events of varied size, some bigger than a tiny threshold. */
static void produce(struct jw *w)
{
	char name[64];
	int i, j;

	jw_lit(w, "{\"traceEvents\":[");
	jw_commit(w);
	for (i = 0; i < 2000; i++) {
		if (i)
			jw_raw(w, ",\n", 2);
		jw_lit(w, "{\"i\":");
		jw_i64(w, (int64_t)i * 7919 - 5000000);
		jw_lit(w, ",\"ts\":");
		jw_us_signed(w, (int64_t)i * 1234567);
		snprintf(name, sizeof(name), "ev\"%d\\", i);
		jw_lit(w, ",\"name\":");
		jw_str(w, name);
		if (i % 97 == 0) {
			jw_lit(w, ",\"pad\":\"");
			for (j = 0; j < 300; j++)
				jw_raw(w, "0123456789", 10);
			jw_raw(w, "\"", 1);
		}
		jw_raw(w, "}", 1);
		jw_commit(w);
	}
	jw_lit(w, "]}\n");
	jw_commit(w);
}

static char *read_file(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf && read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	if (buf) {
		buf[st.st_size] = '\0';
		*len = (size_t)st.st_size;
	}
	return buf;
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : st.st_size;
}

TEST(jsonw_file_matches_memory)
{
	char path[] = "/tmp/jsonw-test-XXXXXX";
	struct jw *m = jw_memopen(), *f;
	const char *mdata;
	size_t mlen, flen = 0;
	char *fdata;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	f = jw_fdopen(fd, 0);
	jw_set_flush_threshold(f, 100);
	produce(m);
	produce(f);
	mdata = jw_mem_data(m, &mlen);
	CHECK_EQ_INT(jw_bytes(f), mlen);
	CHECK_EQ_INT(jw_close(f), 0);
	fdata = read_file(path, &flen);
	CHECK(fdata != NULL);
	CHECK_EQ_INT(flen, mlen);
	CHECK(fdata && flen == mlen && !memcmp(fdata, mdata, mlen));
	free(fdata);
	jw_close(m);
	unlink(path);
}

TEST(jsonw_writes_only_at_commit)
{
	char path[] = "/tmp/jsonw-test-XXXXXX";
	int fd = mkstemp(path);
	struct jw *w;

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	w = jw_fdopen(fd, 0);
	jw_set_flush_threshold(w, 0);
	jw_lit(w, "{\"a\":1}");
	CHECK_EQ_INT(file_size(path), 0);	/* not committed: still buffered */
	jw_commit(w);
	CHECK_EQ_INT(file_size(path), 7);
	jw_lit(w, ",{\"b\":");
	jw_u64(w, 2);
	CHECK_EQ_INT(file_size(path), 7);	/* half an event never reaches the file */
	CHECK_EQ_INT(jw_error(w), 0);
	CHECK_EQ_INT(file_size(path), 7);
	jw_raw(w, "}", 1);
	jw_commit(w);
	CHECK_EQ_INT(file_size(path), 15);
	CHECK_EQ_INT(jw_close(w), 0);
	unlink(path);

	/* default threshold: small events stay buffered until the buffer fills or the close */
	strcpy(path, "/tmp/jsonw-test-XXXXXX");
	fd = mkstemp(path);
	w = jw_fdopen(fd, 0);
	jw_lit(w, "{\"c\":3}");
	jw_commit(w);
	jw_lit(w, "{\"d\"");
	CHECK_EQ_INT(file_size(path), 0);
	CHECK_EQ_INT(jw_error(w), 0);
	CHECK_EQ_INT(jw_close(w), 0);
	CHECK_EQ_INT(file_size(path), 11);	/* close writes whatever is left */
	unlink(path);
}

TEST(jsonw_gzip_roundtrip)
{
	char path[] = "/tmp/jsonw-test-XXXXXX";
	struct jw *m = jw_memopen(), *f;
	const char *mdata;
	size_t mlen, total = 0, clen = 0;
	char *out, *raw;
	gzFile gz;
	int fd = mkstemp(path), n;

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	f = jw_fdopen(fd, 6);
	CHECK(f != NULL);
	jw_set_flush_threshold(f, 1000);
	produce(m);
	produce(f);
	/* a sync flush in the middle (threshold 0) must not break the stream */
	jw_set_flush_threshold(f, 0);
	jw_lit(f, " ");
	jw_commit(f);
	CHECK_EQ_INT(jw_error(f), 0);
	jw_set_flush_threshold(f, 1000);
	jw_lit(m, " ");
	jw_commit(m);
	produce(f);
	produce(m);
	mdata = jw_mem_data(m, &mlen);
	CHECK_EQ_INT(jw_close(f), 0);

	raw = read_file(path, &clen);
	CHECK(raw && clen > 18 && (unsigned char)raw[0] == 0x1f && (unsigned char)raw[1] == 0x8b);
	CHECK(clen < mlen / 3);	/* it did compress */
	free(raw);

	out = malloc(mlen + 16);
	gz = gzopen(path, "rb");
	CHECK(gz != NULL);
	while (gz && (n = gzread(gz, out + total, (unsigned int)(mlen + 16 - total))) > 0)
		total += (size_t)n;
	if (gz) {
		int zerr;

		gzerror(gz, &zerr);
		CHECK_EQ_INT(zerr, Z_OK);
		gzclose(gz);
	}
	CHECK_EQ_INT(total, mlen);
	CHECK(total == mlen && !memcmp(out, mdata, mlen));
	free(out);
	jw_close(m);
	unlink(path);
}

TEST(jsonw_enospc)
{
	int level;

	for (level = 0; level <= 1; level++) {
		int fd = open("/dev/full", O_WRONLY);
		struct jw *w;

		CHECK(fd >= 0);
		if (fd < 0)
			return;
		w = jw_fdopen(fd, level);
		jw_set_flush_threshold(w, 10);
		produce(w);
		CHECK_EQ_INT(jw_error(w), -ENOSPC);
		/* keeps accepting (and dropping) output after the error */
		produce(w);
		CHECK_EQ_INT(jw_error(w), -ENOSPC);
		CHECK_EQ_INT(jw_close(w), -ENOSPC);
	}
	{
		/* small output: the error surfaces at close */
		struct jw *w = jw_fdopen(open("/dev/full", O_WRONLY), 0);

		jw_lit(w, "{}");
		jw_commit(w);
		CHECK_EQ_INT(jw_error(w), 0);
		CHECK_EQ_INT(jw_close(w), -ENOSPC);
	}
}

TEST(jsonw_mem_take)
{
	struct jw *w = jw_memopen();
	char big[5000];
	size_t len = 0;
	char *text;

	CHECK(w != NULL);
	if (!w)
		return;
	jw_lit(w, "a ");
	jw_u64(w, 42);
	/* past the first buffer: the text taken is the grown one */
	memset(big, 'x', sizeof(big));
	for (int i = 0; i < 20; i++)
		jw_raw(w, big, sizeof(big));
	text = jw_mem_take(w, &len);
	CHECK(text != NULL);
	if (!text)
		return;
	CHECK_EQ_INT(len, 4 + 20 * sizeof(big));
	CHECK(!strncmp(text, "a 42xxx", 7));
	CHECK_EQ_INT(text[len], '\0');
	free(text);
}

TEST(jsonw_keyed_objects_track_commas)
{
	struct jw *w = jw_memopen();

	jw_obj_begin(w);
	jw_kv_u64(w, "a", 1);
	jw_kv_str(w, "b", "x\"y");
	jw_key(w, "o");
	jw_obj_begin(w);
	jw_obj_end(w);
	jw_key(w, "l");
	jw_arr_begin(w);
	for (int i = 0; i < 3; i++) {
		jw_elem(w);
		jw_u64(w, i);
	}
	jw_arr_end(w);
	jw_key(w, "objs");
	jw_arr_begin(w);
	for (int i = 0; i < 2; i++) {
		jw_obj_begin(w);
		jw_kv_i64(w, "i", -i);
		jw_kv_bool(w, "t", i);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_kv_hex(w, "h", 255);
	jw_kv_dbl(w, "d", 2.50, 3);
	jw_kv_null(w, "n");
	jw_obj_end(w);
	CHECK_EQ_INT(jw_error(w), 0);
	CHECK_STR(take(w), "{\"a\":1,\"b\":\"x\\\"y\",\"o\":{},\"l\":[0,1,2],"
		  "\"objs\":[{\"i\":0,\"t\":false},{\"i\":-1,\"t\":true}],\"h\":\"0xff\",\"d\":2.5,"
		  "\"n\":null}");
}

TEST(jsonw_keyed_members_and_line_breaks)
{
	struct jw *w = jw_memopen();

	/* members of an object opened elsewhere: the first takes no comma, or one if told */
	jw_members_begin(w, true);
	jw_key(w, "list");
	jw_arr_begin(w);
	for (int i = 0; i < 2; i++) {
		jw_nl(w);
		jw_obj_begin(w);
		jw_kv_u64(w, "k", i);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_nl(w);
	jw_kv_u64(w, "after", 7);
	jw_members_end(w);
	CHECK_EQ_INT(jw_error(w), 0);
	CHECK_STR(take(w), "\"list\":[\n{\"k\":0},\n{\"k\":1}],\n\"after\":7");

	w = jw_memopen();
	jw_members_begin(w, false);
	jw_kv_u64(w, "x", 1);
	jw_members_end(w);
	CHECK_STR(take(w), ",\"x\":1");
}

TEST(jsonw_keyed_errors)
{
	struct jw *w = jw_memopen();

	jw_obj_end(w);		/* an end without its begin */
	CHECK_EQ_INT(jw_error(w), -EINVAL);
	jw_close(w);
	w = jw_memopen();
	for (int i = 0; i <= JW_MAX_DEPTH; i++)
		jw_arr_begin(w);
	CHECK_EQ_INT(jw_error(w), -E2BIG);
	jw_close(w);
}
