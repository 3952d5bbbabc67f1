// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A trace read as a stream: the top level's structure (object, members, the traceEvents array,
 * commas) is walked here byte by byte; each value inside it is only delimited here (brackets
 * and strings) and then parsed whole by the strict parser, so that what is accepted is exactly
 * what jv_parse() accepts of the whole document, in memory of one event at a time.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "offline/jsonparse.h"
#include "offline/tracestream.h"
#include "common/strutil.h"
#include "common/util.h"

/* Read size: 1 MiB a read() or gzread() */
#define TS_CHUNK	(1u << 20)

enum ts_state {
	TS_START,		/* before the top level */
	TS_KEY_FIRST,		/* after '{' */
	TS_KEY,			/* after ',' in the object */
	TS_OBJ_AFTER,		/* after a member */
	TS_ARR_FIRST,		/* after the events' '[' */
	TS_ELEM,		/* after ',' in the events */
	TS_ARR_AFTER,		/* after an event */
	TS_END,			/* after the top level */
	TS_DONE,
	TS_ERR,
};

struct tstream {
	int fd;
	gzFile gz;
	const char *mem;
	size_t mem_len, mem_pos, chunk;
	bool gzip, gz_cut, eof, cut, bare, events_seen, events_key;

	char *buf;
	size_t cap, pos, end;		/* buf[pos, end) is read and not consumed */
	uint64_t base;			/* input offset of buf[0] */
	uint64_t line, lstart;		/* line of buf[pos] (1-based), offset of its start */

	enum ts_state st;
	struct jv_keep *keep;
	char *head;			/* the document without its events, as text */
	size_t hlen, hcap, hmembers;
	size_t events_at;		/* offset of the events' "[]" in head, 0 before */
	struct jv *head_doc;
	size_t raw_off, raw_len;	/* the last event's text: buf[raw_off, +raw_len) */
};

static struct tstream *ts_new(size_t cap)
{
	struct tstream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->fd = -1;
	s->line = 1;
	s->chunk = TS_CHUNK;
	s->cap = cap;
	s->buf = malloc(s->cap);
	if (!s->buf) {
		free(s);
		return NULL;
	}
	return s;
}

struct tstream *tstream_open(const char *path, char *err, size_t errlen)
{
	unsigned char magic[2];
	struct tstream *s;
	ssize_t n;
	int e;

	s = ts_new(TS_CHUNK);
	if (!s) {
		errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
		errno = ENOMEM;
		return NULL;
	}
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0)
		goto fail;
	do
		n = pread(s->fd, magic, sizeof(magic), 0);
	while (n < 0 && errno == EINTR);
	posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	if (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
		s->gzip = true;
		s->gz = gzdopen(s->fd, "rb");
		if (!s->gz) {
			errno = ENOMEM;
			goto fail;
		}
		s->fd = -1;
		gzbuffer(s->gz, TS_CHUNK);
	}
	return s;
fail:
	e = errno;
	errf(err, errlen, -e, "%s", strerror(e));
	tstream_close(s);
	errno = e;
	return NULL;
}

struct tstream *tstream_open_mem(const char *data, size_t len, size_t chunk)
{
	struct tstream *s = ts_new(chunk && chunk < 4096 ? 4096 : TS_CHUNK);

	if (!s)
		return NULL;
	s->mem = data ? data : "";
	s->mem_len = data ? len : 0;
	s->chunk = chunk ? chunk : 1;
	return s;
}

void tstream_close(struct tstream *s)
{
	if (!s)
		return;
	if (s->gz)
		gzclose_r(s->gz);
	if (s->fd >= 0)
		close(s->fd);
	jv_keep_free(&s->keep);
	jv_free(s->head_doc);
	free(s->head);
	free(s->buf);
	free(s);
}

/* Up to @room bytes of input into @dst: the count, 0 at the end, -errno. */
static ssize_t src_read(struct tstream *s, char *dst, size_t room)
{
	ssize_t n;
	int zerr;

	if (room > s->chunk)
		room = s->chunk;
	if (s->mem) {
		n = (ssize_t)(s->mem_len - s->mem_pos < room ? s->mem_len - s->mem_pos : room);
		memcpy(dst, s->mem + s->mem_pos, (size_t)n);
		s->mem_pos += (size_t)n;
		return n;
	}
	if (s->gz) {
		n = gzread(s->gz, dst, (unsigned int)room);
		if (n > 0)
			return n;
		/* the end, or an error: a stream cut short ends in one after what inflated */
		gzerror(s->gz, &zerr);
		if (zerr == Z_OK)
			return 0;
		if (zerr == Z_BUF_ERROR || zerr == Z_DATA_ERROR) {
			/* what inflated before the cut was returned by the earlier reads */
			s->gz_cut = true;
			return 0;
		}
		return zerr == Z_ERRNO && errno ? -errno : -EIO;
	}
	do
		n = read(s->fd, dst, room);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/*
 * More input after buf[end]: the unconsumed bytes move to the front first (buf[pos] becomes
 * buf[0], so offsets from pos stay valid), the buffer doubles when full. 1 read, 0 at the end,
 * -EFBIG past TSTREAM_MAX_VALUE unconsumed, -errno.
 */
static int fill(struct tstream *s)
{
	ssize_t n;

	if (s->eof)
		return 0;
	if (s->pos) {
		memmove(s->buf, s->buf + s->pos, s->end - s->pos);
		s->base += s->pos;
		s->end -= s->pos;
		s->pos = 0;
	}
	if (s->end == s->cap) {
		size_t ncap = s->cap * 2;
		char *nb;

		if (s->end >= TSTREAM_MAX_VALUE)
			return -EFBIG;
		nb = realloc(s->buf, ncap);
		if (!nb)
			return -ENOMEM;
		s->buf = nb;
		s->cap = ncap;
	}
	n = src_read(s, s->buf + s->end, s->cap - s->end);
	if (n < 0)
		return (int)n;
	if (!n) {
		s->eof = true;
		return 0;
	}
	s->end += (size_t)n;
	return 1;
}

static int ts_fail(struct tstream *s, uint64_t line, uint64_t col, char *err, size_t errlen,
		   const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int ts_fail(struct tstream *s, uint64_t line, uint64_t col, char *err, size_t errlen,
		   const char *fmt, ...)
{
	va_list ap;
	int n;

	s->st = TS_ERR;
	if (!err || !errlen)
		return -1;
	n = snprintf(err, errlen, "%llu:%llu: ", (unsigned long long)line,
		     (unsigned long long)col);
	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Line and column (1-based, bytes) of buf[pos + off]. */
static void where(const struct tstream *s, size_t off, uint64_t *line, uint64_t *col)
{
	uint64_t l = s->line, ls = s->lstart;
	const char *p = s->buf + s->pos, *e = p + off, *nl;

	while ((nl = memchr(p, '\n', (size_t)(e - p)))) {
		l++;
		ls = s->base + (uint64_t)(nl - s->buf) + 1;
		p = nl + 1;
	}
	*line = l;
	*col = s->base + s->pos + off - ls + 1;
}

static int fail_at(struct tstream *s, size_t off, char *err, size_t errlen, const char *msg)
{
	uint64_t line, col;

	where(s, off, &line, &col);
	return ts_fail(s, line, col, err, errlen, "%s", msg);
}

/* An error of reading, not of the text. */
static int fail_io(struct tstream *s, int e, char *err, size_t errlen)
{
	if (e == -EFBIG)
		return fail_at(s, 0, err, errlen, "a value larger than 256 MiB: not a trace's");
	s->st = TS_ERR;
	snprintf(err, errlen, "%s", strerror(-e));
	return -1;
}

/* The input ended inside the document. */
static int fail_cut(struct tstream *s, char *err, size_t errlen, const char *what)
{
	s->cut = true;
	return fail_at(s, s->end - s->pos, err, errlen, what);
}

static int fail_char(struct tstream *s, char *err, size_t errlen, const char *what)
{
	unsigned char c = (unsigned char)s->buf[s->pos];
	char msg[80];

	if (c > 0x20 && c < 0x7f)
		snprintf(msg, sizeof(msg), "unexpected '%c'%s", c, what);
	else
		snprintf(msg, sizeof(msg), "unexpected byte 0x%02x%s", c, what);
	return fail_at(s, 0, err, errlen, msg);
}

static void consume(struct tstream *s, size_t n)
{
	const char *p = s->buf + s->pos, *e = p + n, *nl;

	while ((nl = memchr(p, '\n', (size_t)(e - p)))) {
		s->line++;
		s->lstart = s->base + (uint64_t)(nl - s->buf) + 1;
		p = nl + 1;
	}
	s->pos += n;
}

/* Skip whitespace: 1 on a byte, 0 at the end of the input, -1 on an error of reading. */
static int skip_ws(struct tstream *s, char *err, size_t errlen)
{
	int r;

	for (;;) {
		while (s->pos < s->end) {
			char c = s->buf[s->pos];

			if (c == '\n') {
				s->line++;
				s->lstart = s->base + s->pos + 1;
			} else if (c != ' ' && c != '\t' && c != '\r') {
				return 1;
			}
			s->pos++;
		}
		r = fill(s);
		if (r <= 0)
			return r ? fail_io(s, r, err, errlen) : 0;
	}
}

/*
 * The length of the value at buf[pos] (not whitespace), reading more input as needed: strings
 * and brackets delimit it; a scalar runs to a delimiter, which is included (value_at). What is inside is not judged here (the
 * parser does), except the nesting: @depth containers enclose it, and past JV_MAX_DEPTH in all
 * the document is refused as jv_parse refuses it. A bracket that does not close the one open
 * ends the value there, for the parser to name. 0, or -1 with the message.
 */
static int value_len(struct tstream *s, int depth, size_t *len, char *err, size_t errlen)
{
	unsigned char open[JV_MAX_DEPTH + 1];
	bool in_str = false, esc = false, scalar;
	size_t i = 0;
	int d = 0, r;
	char c = s->buf[s->pos];

	scalar = c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n';
	if (!scalar && c != '{' && c != '[' && c != '"') {
		*len = 1;	/* a byte no value starts with: the parser says which */
		return 0;
	}
	for (;;) {
		const char *b = s->buf + s->pos;
		size_t n = s->end - s->pos;

		while (i < n) {
			c = b[i];
			if (in_str) {
				/*
				 * the bulk of a trace: string bytes up to the next quote or escape,
				 * found by memchr (a byte loop here was 17 % of `report`'s time)
				 */
				if (!esc) {
					const char *q = memchr(b + i, '"', n - i);
					size_t e = q ? (size_t)(q - b) : n;
					const char *bs = memchr(b + i, '\\', e - i);

					i = bs ? (size_t)(bs - b) : e;
					if (i == n)
						break;
					c = b[i];
				}
				i++;
				if (esc)
					esc = false;
				else if (c == '\\')
					esc = true;
				else if ((in_str = false), !d)
					goto done;
				continue;
			}
			if (scalar) {
				/* with the byte after it: see value_at */
				if (c == ',' || c == ']' || c == '}' || c == ' ' || c == '\n' ||
				    c == '\t' || c == '\r' || c == '"' || c == '{' || c == '[') {
					i++;
					goto done;
				}
				i++;
				continue;
			}
			i++;
			switch (c) {
			case '"':
				in_str = true;
				break;
			case '{':
			case '[':
				if (depth + d >= JV_MAX_DEPTH)
					return fail_at(s, i - 1, err, errlen, "nesting too deep");
				open[d++] = (unsigned char)c;
				break;
			case '}':
			case ']':
				if (open[--d] != (c == '}' ? '{' : '['))
					goto done;
				if (!d)
					goto done;
				break;
			}
		}
		r = fill(s);
		if (r < 0)
			return fail_io(s, r, err, errlen);
		if (!r) {
			if (scalar)
				goto done;
			return fail_cut(s, err, errlen, in_str ? "unexpected end of input in a "
					"string" : "unexpected end of input in a value");
		}
	}
done:
	*len = i;
	return 0;
}

/* Parse the value buf[pos, +len) strictly; a parser's error is placed in the whole input. */
static const struct jv *parse_at(struct tstream *s, size_t len, char *err, size_t errlen)
{
	unsigned long vl, vc;
	uint64_t line, col;
	const struct jv *v;
	char perr[160];
	int msg = 0;

	v = jv_parse_keep(&s->keep, s->buf + s->pos, len, perr, sizeof(perr));
	if (v)
		return v;
	where(s, 0, &line, &col);
	if (sscanf(perr, "%lu:%lu: %n", &vl, &vc, &msg) == 2 && msg) {
		if (vl == 1)
			col += vc - 1;
		else
			col = vc;
		line += vl - 1;
	}
	ts_fail(s, line, col, err, errlen, "%s", perr + msg);
	return NULL;
}

/*
 * The value at buf[pos], parsed, and the bytes it took (*@used). A scalar is parsed with the
 * byte after it, so that the parser fails where and as it does in the whole document; "trailing
 * characters" there is the scalar's end, and what follows is the caller's to judge.
 */
static const struct jv *value_at(struct tstream *s, int depth, size_t *used, char *err,
				 size_t errlen)
{
	unsigned long vl, vc;
	const struct jv *v;
	char c = s->buf[s->pos], perr[160];
	bool scalar = c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n';
	size_t len;

	if (value_len(s, depth, &len, err, errlen))
		return NULL;
	*used = len;
	if (!scalar)
		return parse_at(s, len, err, errlen);
	v = jv_parse_keep(&s->keep, s->buf + s->pos, len, perr, sizeof(perr));
	if (v)
		return v;
	if (sscanf(perr, "%lu:%lu: ", &vl, &vc) == 2 && vl == 1 && vc > 1 && vc - 1 < len &&
	    strstr(perr, ": trailing characters after the document")) {
		*used = vc - 1;
		return parse_at(s, *used, err, errlen);
	}
	return parse_at(s, len, err, errlen);
}

static int head_put(struct tstream *s, const char *p, size_t n, char *err, size_t errlen)
{
	if (s->hcap - s->hlen < n) {
		size_t ncap = s->hcap ? s->hcap : 4096;
		char *nh;

		while (ncap - s->hlen < n)
			ncap *= 2;
		if (ncap > TSTREAM_MAX_VALUE)
			return fail_at(s, 0, err, errlen, "the members besides traceEvents pass "
				       "256 MiB: not a trace's");
		nh = realloc(s->head, ncap);
		if (!nh)
			return fail_io(s, -ENOMEM, err, errlen);
		s->head = nh;
		s->hcap = ncap;
	}
	memcpy(s->head + s->hlen, p, n);
	s->hlen += n;
	return 0;
}

/* A member besides the events: its name's text (@key, @klen) and value, into the head. */
static int head_member(struct tstream *s, const char *key, size_t klen, const char *val,
		       size_t vlen, char *err, size_t errlen)
{
	if ((s->hmembers++ && head_put(s, ",", 1, err, errlen)) ||
	    head_put(s, key, klen, err, errlen) || head_put(s, ":", 1, err, errlen))
		return -1;
	return head_put(s, val, vlen, err, errlen);
}

/* After '{' or ',': a member. Its value is the events' array, or it goes to the head. */
static int member(struct tstream *s, char *err, size_t errlen)
{
	char *key = NULL;
	const struct jv *k;
	size_t klen, vlen;
	bool events;
	int r;

	if (s->buf[s->pos] != '"')
		return fail_char(s, err, errlen, ", expected a member name");
	if (value_len(s, 1, &klen, err, errlen))
		return -1;
	k = parse_at(s, klen, err, errlen);
	if (!k)
		return -1;
	/* the first member of the name is the events (jv_get's), whatever its value */
	events = !s->events_key && k->str.len == 11 && !memcmp(k->str.s, "traceEvents", 11);
	s->events_key |= events;
	/* the name's text as written, for the head (the buffer may move) */
	key = malloc(klen);
	if (!key)
		return fail_io(s, -ENOMEM, err, errlen);
	memcpy(key, s->buf + s->pos, klen);
	consume(s, klen);
	r = skip_ws(s, err, errlen);
	if (r <= 0)
		goto eof;
	if (s->buf[s->pos] != ':') {
		fail_char(s, err, errlen, ", expected ':'");
		goto fail;
	}
	consume(s, 1);
	r = skip_ws(s, err, errlen);
	if (r <= 0)
		goto eof;
	if (events && s->buf[s->pos] == '[') {
		s->events_seen = true;
		consume(s, 1);
		s->st = TS_ARR_FIRST;
		r = head_member(s, key, klen, "[]", 2, err, errlen);
		s->events_at = s->hlen - 2;
		free(key);
		return r;
	}
	if (!value_at(s, 1, &vlen, err, errlen) ||
	    head_member(s, key, klen, s->buf + s->pos, vlen, err, errlen))
		goto fail;
	consume(s, vlen);
	s->st = TS_OBJ_AFTER;
	free(key);
	return 0;
eof:
	if (!r)
		fail_cut(s, err, errlen, "unexpected end of input in object");
fail:
	free(key);
	return -1;
}

/* The top level is over: only whitespace may follow; the head is parsed. */
static int finish(struct tstream *s, char *err, size_t errlen)
{
	char perr[160];
	int r = skip_ws(s, err, errlen);

	if (r < 0)
		return -1;
	if (r)
		return fail_at(s, 0, err, errlen, "trailing characters after the document");
	s->head_doc = jv_parse(s->head, s->hlen, perr, sizeof(perr));
	if (!s->head_doc) {	/* its parts each parsed: only memory can fail */
		s->st = TS_ERR;
		snprintf(err, errlen, "%s", perr);
		return -1;
	}
	s->st = TS_DONE;
	return 0;
}

int tstream_next(struct tstream *s, const struct jv **ev, char *err, size_t errlen)
{
	size_t len;
	int r;

	if (err && errlen)
		err[0] = '\0';
	*ev = NULL;
	for (;;) {
		switch (s->st) {
		case TS_DONE:
			return 0;
		case TS_ERR:
			return -1;
		case TS_START:
			r = skip_ws(s, err, errlen);
			if (r < 0)
				return -1;
			if (!r)
				return fail_at(s, 0, err, errlen, "unexpected end of input");
			if (s->buf[s->pos] == '{') {
				consume(s, 1);
				if (head_put(s, "{", 1, err, errlen))
					return -1;
				s->st = TS_KEY_FIRST;
			} else if (s->buf[s->pos] == '[') {
				consume(s, 1);
				s->bare = true;
				s->events_seen = true;
				if (head_put(s, "[]", 2, err, errlen))
					return -1;
				s->st = TS_ARR_FIRST;
			} else {
				if (!value_at(s, 0, &len, err, errlen) ||
				    head_put(s, s->buf + s->pos, len, err, errlen))
					return -1;
				consume(s, len);
				s->st = TS_END;
			}
			break;
		case TS_KEY_FIRST:
		case TS_KEY:
			r = skip_ws(s, err, errlen);
			if (r <= 0)
				return r ? -1 : fail_cut(s, err, errlen,
							 "unexpected end of input in object");
			if (s->st == TS_KEY_FIRST && s->buf[s->pos] == '}') {
				consume(s, 1);
				if (head_put(s, "}", 1, err, errlen))
					return -1;
				s->st = TS_END;
				break;
			}
			if (member(s, err, errlen))
				return -1;
			break;
		case TS_OBJ_AFTER:
			r = skip_ws(s, err, errlen);
			if (r <= 0)
				return r ? -1 : fail_cut(s, err, errlen,
							 "unexpected end of input in object");
			if (s->buf[s->pos] == ',') {
				s->st = TS_KEY;
			} else if (s->buf[s->pos] == '}') {
				if (head_put(s, "}", 1, err, errlen))
					return -1;
				s->st = TS_END;
			} else {
				return fail_char(s, err, errlen, ", expected ',' or '}'");
			}
			consume(s, 1);
			break;
		case TS_ARR_FIRST:
		case TS_ELEM:
			r = skip_ws(s, err, errlen);
			if (r <= 0)
				return r ? -1 : fail_cut(s, err, errlen,
							 "unexpected end of input in array");
			if (s->st == TS_ARR_FIRST && s->buf[s->pos] == ']') {
				consume(s, 1);
				s->st = s->bare ? TS_END : TS_OBJ_AFTER;
				break;
			}
			*ev = value_at(s, s->bare ? 1 : 2, &len, err, errlen);
			if (!*ev)
				return -1;
			s->raw_off = s->pos;
			s->raw_len = len;
			consume(s, len);
			s->st = TS_ARR_AFTER;
			return 1;
		case TS_ARR_AFTER:
			r = skip_ws(s, err, errlen);
			if (r <= 0)
				return r ? -1 : fail_cut(s, err, errlen,
							 "unexpected end of input in array");
			if (s->buf[s->pos] == ',')
				s->st = TS_ELEM;
			else if (s->buf[s->pos] == ']')
				s->st = s->bare ? TS_END : TS_OBJ_AFTER;
			else
				return fail_char(s, err, errlen, ", expected ',' or ']'");
			consume(s, 1);
			break;
		case TS_END:
			return finish(s, err, errlen) ? -1 : 0;
		}
	}
}

const struct jv *tstream_head(const struct tstream *s)
{
	return s->head_doc;
}

const char *tstream_head_text(const struct tstream *s, size_t *len, size_t *events_at)
{
	*len = s->hlen;
	*events_at = s->events_at;
	return s->head;
}

bool tstream_in_events(const struct tstream *s)
{
	return s->events_seen;
}

uint64_t tstream_raw_end(const struct tstream *s)
{
	return s->base + s->raw_off + s->raw_len;
}

const char *tstream_raw(const struct tstream *s, size_t *len)
{
	*len = s->raw_len;
	return s->buf + s->raw_off;
}

bool tstream_cut(const struct tstream *s)
{
	return s->cut;
}

bool tstream_gzip(const struct tstream *s)
{
	return s->gzip;
}

bool tstream_gzip_cut(const struct tstream *s)
{
	return s->gz_cut;
}

uint64_t tstream_bytes(const struct tstream *s)
{
	return s->base + s->end;
}

static int trace_entry(const struct dirent *d)
{
	return d->d_name[0] != '.' &&
	       (str_ends_with(d->d_name, ".json") || str_ends_with(d->d_name, ".json.gz"));
}

int trace_dir_scan(const char *dir, struct dirent ***ents)
{
	int n = scandir(dir, ents, trace_entry, alphasort);

	return n < 0 ? -errno : n;
}

bool trace_device_cat(const char *cat)
{
	return cat && (!strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") ||
		       !strcmp(cat, "gpu_memset"));
}
