// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Buffered JSON writer. The tracer formats millions of values per second, so every value is
 * formatted by hand straight into one buffer (no printf, no allocation per value) and the
 * buffer leaves the process only at event boundaries.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "output/jsonw.h"
#include "common/utf8.h"

#define JW_BUFSZ	(256u << 10)
/* Headroom above the threshold so ordinary events never make the buffer grow. */
#define JW_THRESH	(JW_BUFSZ - (32u << 10))
#define JW_MEMSZ	(64u << 10)
#define JW_ZBUFSZ	(64u << 10)

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

struct jw {
	char *buf;
	size_t len;		/* bytes in buf */
	size_t cap;		/* allocated, one byte kept spare for the NUL of jw_mem_data */
	size_t committed;	/* buf[0..committed) holds whole events */
	size_t thresh;
	uint64_t written;	/* bytes already handed to the sink */
	int fd;
	int err;
	bool mem;
	bool gz;
	z_stream zs;
	unsigned char *zbuf;
	/* keyed JSON: one bit per open level, JW_MAX_DEPTH deep */
	int depth;
	uint64_t in_array;	/* the level is an array (else an object or a members level) */
	uint64_t has_member;	/* the level has a member or element already: a comma next */
	bool nl;		/* jw_nl: a line break after the next separator */
};

static const char digits2[] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

static void set_err(struct jw *w, int err)
{
	if (!w->err)
		w->err = err;
}

static struct jw *jw_alloc(size_t cap)
{
	struct jw *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->buf = malloc(cap);
	if (!w->buf) {
		free(w);
		return NULL;
	}
	w->cap = cap;
	w->fd = -1;
	w->thresh = JW_THRESH;
	return w;
}

struct jw *jw_memopen(void)
{
	struct jw *w = jw_alloc(JW_MEMSZ);

	if (w)
		w->mem = true;
	return w;
}

struct jw *jw_fdopen(int fd, int gzip_level)
{
	struct jw *w = jw_alloc(JW_BUFSZ);

	if (!w)
		return NULL;
	w->fd = fd;
	if (gzip_level > 0) {
		if (gzip_level > 9)
			gzip_level = 9;
		w->zbuf = malloc(JW_ZBUFSZ);
		/* windowBits 15 + 16: gzip framing, so the file is a plain .gz */
		if (!w->zbuf || deflateInit2(&w->zs, gzip_level, Z_DEFLATED, 15 + 16, 8,
					     Z_DEFAULT_STRATEGY) != Z_OK) {
			free(w->zbuf);
			free(w->buf);
			free(w);
			return NULL;
		}
		w->gz = true;
	}
	return w;
}

void jw_set_flush_threshold(struct jw *w, size_t bytes)
{
	w->thresh = bytes;
}

const char *jw_mem_data(struct jw *w, size_t *len)
{
	w->buf[w->len] = '\0';
	if (len)
		*len = w->len;
	return w->buf;
}

char *jw_mem_take(struct jw *w, size_t *len)
{
	char *text = NULL;

	if (!w->err) {
		text = w->buf;
		text[w->len] = '\0';
		if (len)
			*len = w->len;
		w->buf = NULL;
	}
	jw_close(w);
	return text;
}

int jw_error(const struct jw *w)
{
	return w->err;
}

uint64_t jw_bytes(const struct jw *w)
{
	return w->written + w->len;
}

static void write_all(struct jw *w, const void *data, size_t n)
{
	const char *p = data;

	while (n) {
		ssize_t r = write(w->fd, p, n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			set_err(w, -errno);
			return;
		}
		if (r == 0) {
			set_err(w, -EIO);
			return;
		}
		p += r;
		n -= (size_t)r;
	}
}

static void deflate_out(struct jw *w, const char *data, size_t n, int flush)
{
	z_stream *zs = &w->zs;

	do {
		/* avail_in is 32 bits wide */
		uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
		int fl = chunk == n ? flush : Z_NO_FLUSH;
		int ret;

		zs->next_in = (Bytef *)data;
		zs->avail_in = chunk;
		do {
			zs->next_out = w->zbuf;
			zs->avail_out = JW_ZBUFSZ;
			ret = deflate(zs, fl);
			if (ret == Z_STREAM_ERROR) {
				set_err(w, -EIO);
				return;
			}
			/* no progress possible: nothing left to do */
			if (ret == Z_BUF_ERROR)
				break;
			write_all(w, w->zbuf, JW_ZBUFSZ - zs->avail_out);
			if (w->err)
				return;
		} while (zs->avail_out == 0 || (fl == Z_FINISH && ret != Z_STREAM_END));
		data += chunk;
		n -= chunk;
	} while (n);
}

/* Hand buf[0..n) to the sink and keep the rest. After an error the data is dropped. */
static void emit(struct jw *w, size_t n, int flush)
{
	if (w->mem)
		return;
	if (!w->err) {
		if (w->gz && (n || flush != Z_NO_FLUSH))
			deflate_out(w, w->buf, n, flush);
		else if (n)
			write_all(w, w->buf, n);
	}
	w->written += n;
	memmove(w->buf, w->buf + n, w->len - n);
	w->len -= n;
	w->committed = w->committed > n ? w->committed - n : 0;
}

/* Slow path of reserve(): grow so that @n more bytes (plus the spare NUL) fit. */
static char *grow(struct jw *w, size_t n)
{
	size_t cap = w->cap;
	char *nb;

	if (w->len + n + 1 < w->len) {
		set_err(w, -ENOMEM);
		return NULL;
	}
	while (cap < w->len + n + 1) {
		if (cap > SIZE_MAX / 2) {
			cap = w->len + n + 1;
			break;
		}
		cap *= 2;
	}
	nb = realloc(w->buf, cap);
	if (!nb) {
		set_err(w, -ENOMEM);
		return NULL;
	}
	w->buf = nb;
	w->cap = cap;
	return w->buf + w->len;
}

/* Room for @n bytes at the end of the buffer; NULL (error recorded) when memory runs out. */
static inline char *reserve(struct jw *w, size_t n)
{
	if (likely(w->cap - w->len > n))
		return w->buf + w->len;
	return grow(w, n);
}

void jw_raw(struct jw *w, const char *s, size_t n)
{
	char *p = reserve(w, n);

	if (!p)
		return;
	memcpy(p, s, n);
	w->len += n;
}

/* Decimal digits of @v written backwards ending at @end; returns the first digit. */
static inline char *fmt_u64_rev(char *end, uint64_t v)
{
	char *p = end;

	while (v >= 100) {
		unsigned int d = (unsigned int)(v % 100) * 2;

		v /= 100;
		p -= 2;
		p[0] = digits2[d];
		p[1] = digits2[d + 1];
	}
	if (v >= 10) {
		p -= 2;
		p[0] = digits2[v * 2];
		p[1] = digits2[v * 2 + 1];
	} else {
		*--p = (char)('0' + v);
	}
	return p;
}

static inline unsigned int n_digits(uint64_t v)
{
	unsigned int n = 1;

	while (v >= 10000) {
		v /= 10000;
		n += 4;
	}
	if (v >= 100) {
		v /= 100;
		n += 2;
	}
	return n + (v >= 10);
}

/*
 * The jw_fmt_* write forward from @p (at most JW_FMT_MAX bytes) and return the end: every
 * number is formatted in place, not in a temporary copied afterwards (short copies of variable
 * length were ~20 % of the consumer's time).
 */
char *jw_fmt_u64(char *p, uint64_t v)
{
	char *end = p + n_digits(v);

	fmt_u64_rev(end, v);
	return end;
}

char *jw_fmt_i64(char *p, int64_t v)
{
	/* negate in unsigned arithmetic: -INT64_MIN does not fit an int64_t */
	if (v < 0) {
		*p++ = '-';
		return jw_fmt_u64(p, -(uint64_t)v);
	}
	return jw_fmt_u64(p, (uint64_t)v);
}

char *jw_fmt_hex(char *p, uint64_t v)
{
	static const char hexd[] = "0123456789abcdef";
	unsigned int n = 1;
	char *end;

	while (n < 16 && (v >> (4 * n)))
		n++;
	p[0] = '"';
	p[1] = '0';
	p[2] = 'x';
	end = p + 3 + n;
	for (char *q = end; q > p + 3; v >>= 4)
		*--q = hexd[v & 15];
	*end = '"';
	return end + 1;
}

char *jw_fmt_us(char *p, uint64_t ns)
{
	unsigned int frac = (unsigned int)(ns % 1000);

	p = jw_fmt_u64(p, ns / 1000);
	p[0] = '.';
	p[1] = digits2[(frac / 10) * 2];
	p[2] = digits2[(frac / 10) * 2 + 1];
	p[3] = (char)('0' + frac % 10);
	return p + 4;
}

char *jw_fmt_us_signed(char *p, int64_t ns)
{
	if (ns < 0) {
		*p++ = '-';
		return jw_fmt_us(p, -(uint64_t)ns);
	}
	return jw_fmt_us(p, (uint64_t)ns);
}

char *jw_reserve(struct jw *w, size_t n)
{
	return reserve(w, n);
}

void jw_advance(struct jw *w, const char *end)
{
	w->len = (size_t)(end - w->buf);
}

void jw_u64(struct jw *w, uint64_t v)
{
	char *p = reserve(w, JW_FMT_MAX);

	if (p)
		jw_advance(w, jw_fmt_u64(p, v));
}

void jw_i64(struct jw *w, int64_t v)
{
	char *p = reserve(w, JW_FMT_MAX);

	if (p)
		jw_advance(w, jw_fmt_i64(p, v));
}

void jw_hex(struct jw *w, uint64_t v)
{
	char *p = reserve(w, JW_FMT_MAX);

	if (p)
		jw_advance(w, jw_fmt_hex(p, v));
}

void jw_us_signed(struct jw *w, int64_t ns)
{
	char *p = reserve(w, JW_FMT_MAX);

	if (p)
		jw_advance(w, jw_fmt_us_signed(p, ns));
}

void jw_dbl(struct jw *w, double v, int decimals)
{
	static const double pow10[] = { 1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9 };
	char tmp[48], *end = tmp + sizeof(tmp), *s;
	uint64_t scaled, ip, fp;
	bool neg = false;
	double x;
	size_t n;
	char *p;
	int i;

	if (!isfinite(v))
		v = 0;
	if (decimals < 0)
		decimals = 0;
	if (decimals > 9)
		decimals = 9;
	if (v < 0) {
		neg = true;
		v = -v;
	}
	x = v * pow10[decimals] + 0.5;
	if (x >= 9.0e18) {
		/* beyond exact integer scaling: rare enough for printf */
		char big[40];
		int k = snprintf(big, sizeof(big), "%s%.17g", neg ? "-" : "", v);

		jw_raw(w, big, (size_t)k);
		return;
	}
	scaled = (uint64_t)x;
	ip = scaled / (uint64_t)pow10[decimals];
	fp = scaled % (uint64_t)pow10[decimals];
	s = end;
	if (fp) {
		/* drop trailing zeros: keep events short */
		while (fp % 10 == 0) {
			fp /= 10;
			decimals--;
		}
		for (i = 0; i < decimals; i++) {
			*--s = (char)('0' + fp % 10);
			fp /= 10;
		}
		*--s = '.';
	}
	s = fmt_u64_rev(s, ip);
	if (neg && scaled)
		*--s = '-';
	n = (size_t)(end - s);
	p = reserve(w, n);
	if (!p)
		return;
	memcpy(p, s, n);
	w->len += n;
}

/* Bytes that pass through a JSON string unchanged: printable ASCII except " and \. */
static const unsigned char plain[256] = {
	[0x20 ... 0x21] = 1,	/* 0x22 is " */
	[0x23 ... 0x5b] = 1,	/* 0x5c is \ */
	[0x5d ... 0x7f] = 1,
};

static void put_str(struct jw *w, const unsigned char *p, const unsigned char *end)
{
	static const char hexd[] = "0123456789abcdef";
	char *o;

	o = reserve(w, 1);
	if (!o)
		return;
	*o = '"';
	w->len++;
	while (p < end) {
		const unsigned char *run = p;
		unsigned char c;
		size_t n;

		while (p < end && plain[*p])
			p++;
		if (p > run)
			jw_raw(w, (const char *)run, (size_t)(p - run));
		if (p == end)
			break;
		o = reserve(w, 6);
		if (!o)
			return;
		c = *p;
		if (c < 0x80) {
			char e = 0;

			switch (c) {
			case '"': e = '"'; break;
			case '\\': e = '\\'; break;
			case '\n': e = 'n'; break;
			case '\r': e = 'r'; break;
			case '\t': e = 't'; break;
			case '\b': e = 'b'; break;
			case '\f': e = 'f'; break;
			}
			if (e) {
				o[0] = '\\';
				o[1] = e;
				w->len += 2;
			} else {
				memcpy(o, "\\u00", 4);
				o[4] = hexd[c >> 4];
				o[5] = hexd[c & 15];
				w->len += 6;
			}
			p++;
			continue;
		}
		n = utf8_seq_len(p, (size_t)(end - p));
		if (n) {
			memcpy(o, p, n);
			w->len += n;
			p += n;
		} else {
			/* one U+FFFD per bad byte: the output must stay valid UTF-8 */
			memcpy(o, "\xef\xbf\xbd", 3);
			w->len += 3;
			p++;
		}
	}
	o = reserve(w, 1);
	if (!o)
		return;
	*o = '"';
	w->len++;
}

void jw_str(struct jw *w, const char *s)
{
	if (!s)
		s = "";
	put_str(w, (const unsigned char *)s, (const unsigned char *)s + strlen(s));
}

void jw_strn(struct jw *w, const char *s, size_t n)
{
	if (!s)
		n = 0;
	else
		n = strnlen(s, n);
	put_str(w, (const unsigned char *)s, (const unsigned char *)s + n);
}

void jw_commit(struct jw *w)
{
	w->committed = w->len;
	/* threshold 0 (tests): a sync flush, so what is on disk decompresses to every event */
	if (!w->mem && w->len >= w->thresh)
		emit(w, w->len, w->thresh ? Z_NO_FLUSH : Z_SYNC_FLUSH);
}

void jw_flush(struct jw *w)
{
	if (!w->mem && w->committed)
		emit(w, w->committed, w->gz ? Z_SYNC_FLUSH : Z_NO_FLUSH);
}

int jw_close(struct jw *w)
{
	int err;

	if (!w)
		return -EINVAL;
	if (!w->mem) {
		emit(w, w->len, Z_FINISH);
		if (w->gz)
			deflateEnd(&w->zs);
		if (w->fd >= 0 && close(w->fd) && errno != EINTR)
			set_err(w, -errno);
	}
	err = w->err;
	free(w->zbuf);
	free(w->buf);
	free(w);
	return err;
}

/* --- keyed JSON ---------------------------------------------------------------------------- */

static void push_level(struct jw *w, bool array)
{
	uint64_t bit;

	if (w->depth >= JW_MAX_DEPTH) {
		set_err(w, -E2BIG);
		return;
	}
	bit = 1ull << w->depth++;
	w->in_array = array ? w->in_array | bit : w->in_array & ~bit;
	w->has_member &= ~bit;
}

static void pop_level(struct jw *w)
{
	if (w->depth <= 0) {
		set_err(w, -EINVAL);	/* an end without its begin */
		return;
	}
	w->depth--;
	w->nl = false;
}

/* Before a member or an element of the innermost level: its comma, and jw_nl's line break. */
static void separate(struct jw *w)
{
	uint64_t bit;

	if (w->depth <= 0) {
		w->nl = false;
		return;
	}
	bit = 1ull << (w->depth - 1);
	if (w->has_member & bit)
		jw_raw(w, ",", 1);
	w->has_member |= bit;
	if (w->nl)
		jw_raw(w, "\n", 1);
	w->nl = false;
}

/* A value opens here: in an array it is an element (separated); after jw_key, not. */
static void value_start(struct jw *w)
{
	if (w->depth > 0 && (w->in_array & (1ull << (w->depth - 1))))
		separate(w);
}

void jw_members_begin(struct jw *w, bool first)
{
	push_level(w, false);
	if (!first && w->depth > 0)
		w->has_member |= 1ull << (w->depth - 1);
}

void jw_members_end(struct jw *w)
{
	pop_level(w);
}

void jw_obj_begin(struct jw *w)
{
	value_start(w);
	jw_raw(w, "{", 1);
	push_level(w, false);
}

void jw_obj_end(struct jw *w)
{
	pop_level(w);
	jw_raw(w, "}", 1);
}

void jw_arr_begin(struct jw *w)
{
	value_start(w);
	jw_raw(w, "[", 1);
	push_level(w, true);
}

void jw_arr_end(struct jw *w)
{
	pop_level(w);
	jw_raw(w, "]", 1);
}

void jw_nl(struct jw *w)
{
	w->nl = true;
}

void jw_key(struct jw *w, const char *key)
{
	separate(w);
	jw_str(w, key);
	jw_raw(w, ":", 1);
}

void jw_elem(struct jw *w)
{
	separate(w);
}

void jw_kv_str(struct jw *w, const char *key, const char *v)
{
	jw_key(w, key);
	jw_str(w, v);
}

void jw_kv_u64(struct jw *w, const char *key, uint64_t v)
{
	jw_key(w, key);
	jw_u64(w, v);
}

void jw_kv_i64(struct jw *w, const char *key, int64_t v)
{
	jw_key(w, key);
	jw_i64(w, v);
}

void jw_kv_hex(struct jw *w, const char *key, uint64_t v)
{
	jw_key(w, key);
	jw_hex(w, v);
}

void jw_kv_bool(struct jw *w, const char *key, bool v)
{
	jw_key(w, key);
	jw_lit(w, v ? "true" : "false");
}

void jw_kv_dbl(struct jw *w, const char *key, double v, int decimals)
{
	jw_key(w, key);
	jw_dbl(w, v, decimals);
}

void jw_kv_null(struct jw *w, const char *key)
{
	jw_key(w, key);
	jw_lit(w, "null");
}

void jw_kv_us(struct jw *w, const char *key, int64_t ns)
{
	jw_key(w, key);
	jw_us_signed(w, ns);
}
