// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `recover` closes a trace whose writer died: the partial tail after the last whole event goes,
 * the document is closed, and the result is proven to parse before it is written to a copy.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/exitcodes.h"
#include "offline/jsonparse.h"
#include "common/util.h"
#include "common/log.h"
#include "offline/recover.h"
#include "common/strutil.h"
#include "offline/tracefile.h"

#define RECOVER_HEAD	(1u << 20)

static bool is_ws(char ch)
{
	return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t';
}

static size_t skip_ws(const char *b, size_t len, size_t p)
{
	while (p < len && is_ws(b[p]))
		p++;
	return p;
}

/* Offset just after the '[' of "traceEvents":[ in the head of the file, 0 if none. */
static size_t array_start(const char *b, size_t len)
{
	static const char key[] = "\"traceEvents\"";
	size_t head = len < RECOVER_HEAD ? len : RECOVER_HEAD, p = 0;
	const char *k;

	while (p < head && (k = memmem(b + p, head - p, key, sizeof(key) - 1))) {
		p = (size_t)(k - b) + sizeof(key) - 1;
		p = skip_ws(b, len, p);
		if (p >= len || b[p] != ':')
			continue;
		p = skip_ws(b, len, p + 1);
		if (p < len && b[p] == '[')
			return p + 1;
	}
	return 0;
}

/*
 * The writer puts one event on a line and flushes only after whole events, so the last
 * complete event is found from the end, line by line: the first line (after trimming the
 * separating comma on either side) that parses as an object. Returns the offset just after its
 * closing brace, @a if no line after @a qualifies; *@start is where its line begins and *@flow_s
 * says whether it is a flow start.
 */
static size_t last_event_line(const char *b, size_t len, size_t a, size_t *start, bool *flow_s)
{
	size_t pos = len;

	*flow_s = false;
	while (pos > a) {
		const char *nl = memrchr(b + a, '\n', pos - a);
		size_t s = nl ? (size_t)(nl - b) + 1 : a, e = pos;

		while (e > s && is_ws(b[e - 1]))
			e--;
		if (e > s && b[e - 1] == ',')
			e--;
		while (e > s && is_ws(b[e - 1]))
			e--;
		s = skip_ws(b, e, s);
		if (s < e && b[s] == ',')
			s = skip_ws(b, e, s + 1);
		if (e - s >= 2 && b[s] == '{' && b[e - 1] == '}') {
			struct jv *v = jv_parse(b + s, e - s, NULL, 0);
			bool ok = v && v->type == JV_OBJECT;
			const char *ph = ok ? jv_str(jv_get(v, "ph")) : NULL;

			*flow_s = ph && !strcmp(ph, "s");
			jv_free(v);
			*start = nl ? (size_t)(nl - b) : a;
			if (ok)
				return e;
		}
		if (!nl)
			break;
		pos = (size_t)(nl - b);
	}
	return a;
}

/*
 * For traces not written one event a line (pretty-printed by other tools): walk the array's
 * elements by bracket matching and return the end of the last complete one.
 */
static size_t last_event_scan(const char *b, size_t len, size_t a)
{
	size_t p = a, keep = a, q;

	for (;;) {
		bool in_str = false;
		long depth = 0;

		p = skip_ws(b, len, p);
		if (p >= len || b[p] != '{')
			return keep;
		for (q = p; q < len; q++) {
			char ch = b[q];

			if (in_str) {
				if (ch == '\\')
					q++;
				else if (ch == '"')
					in_str = false;
			} else if (ch == '"') {
				in_str = true;
			} else if (ch == '{' || ch == '[') {
				depth++;
			} else if ((ch == '}' || ch == ']') && --depth == 0) {
				break;
			}
		}
		if (q >= len)
			return keep;
		keep = q + 1;
		p = skip_ws(b, len, keep);
		if (p >= len || b[p] != ',')
			return keep;
		p++;
	}
}

int recover_buffer(char **bufp, size_t *lenp, struct recover_info *ri, char *err, size_t errlen)
{
	static const char tail[] = "\n],\"spyreRecovered\":true}\n";
	size_t len = *lenp, a, keep, t, start = 0;
	char *buf = *bufp, *nb;
	bool flow_s = false;
	char perr[128];
	struct jv *doc;

	memset(ri, 0, sizeof(*ri));
	a = array_start(buf, len);
	if (!a)
		return errf(err, errlen, -EINVAL, "not a Chrome trace: no \"traceEvents\":[ in its "
			    "first MiB");
	keep = last_event_line(buf, len, a, &start, &flow_s);
	/*
	 * An arrow is written as its start then its finish, after both slices it binds to: a cut
	 * between the two leaves a start with no finish, which goes with the cut tail.
	 */
	while (keep > a && flow_s)
		keep = last_event_line(buf, start, a, &start, &flow_s);
	if (keep == a)
		keep = last_event_scan(buf, len, a);

	/*
	 * A complete trace ends in '}' after the array; a cut one ends inside the array, often
	 * right after an event's '}', so only a '}' past the last event is worth a full parse.
	 */
	t = len;
	while (t > 0 && is_ws(buf[t - 1]))
		t--;
	if (keep < t && buf[t - 1] == '}') {
		doc = jv_parse(buf, len, NULL, 0);
		if (doc) {
			ri->kept_events = jv_len(jv_get(doc, "traceEvents"));
			jv_free(doc);
			return RECOVER_COMPLETE;
		}
	}

	nb = realloc(buf, keep + sizeof(tail));
	if (!nb)
		return errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	memcpy(nb + keep, tail, sizeof(tail));
	*bufp = nb;
	*lenp = keep + sizeof(tail) - 1;
	ri->dropped_bytes = len - keep;
	doc = jv_parse(nb, *lenp, perr, sizeof(perr));
	if (!doc)
		return errf(err, errlen, -EBADMSG, "still not valid JSON after dropping the cut "
			    "tail: %s", perr);
	ri->kept_events = jv_len(jv_get(doc, "traceEvents"));
	jv_free(doc);
	return RECOVER_REPAIRED;
}

int recover_out_path(const char *in, bool gzip, char *out, size_t outlen)
{
	size_t n = strlen(in), base = n;
	int w;

	if (str_ends_with(in, ".json.gz"))
		base = n - 8;
	else if (gzip && str_ends_with(in, ".gz"))
		base = n - 3;
	else if (str_ends_with(in, ".json"))
		base = n - 5;
	if (base > INT_MAX)
		return -ENAMETOOLONG;
	w = snprintf(out, outlen, "%.*s.recovered.json%s", (int)base, in, gzip ? ".gz" : "");
	if (w < 0 || (size_t)w >= outlen)
		return -ENAMETOOLONG;
	return 0;
}

/* Takes @fd. */
static int write_out(int fd, const char *data, size_t len, bool gzip)
{
	gzFile gz;
	int err = 0;

	if (!gzip) {
		while (len) {
			ssize_t n = write(fd, data, len);

			if (n < 0) {
				if (errno == EINTR)
					continue;
				err = -errno;
				break;
			}
			data += n;
			len -= (size_t)n;
		}
		if (close(fd) && !err)
			err = -errno;
		return err;
	}
	gz = gzdopen(fd, "wb6");
	if (!gz) {
		close(fd);
		return -ENOMEM;
	}
	/* zlib reports write failures through errno only */
	errno = 0;
	while (len && !err) {
		unsigned int chunk = len > (1u << 30) ? 1u << 30 : (unsigned int)len;

		if (gzwrite(gz, data, chunk) != (int)chunk)
			err = errno ? -errno : -EIO;
		data += chunk;
		len -= chunk;
	}
	if (gzclose_w(gz) != Z_OK && !err)
		err = errno ? -errno : -EIO;
	return err;
}

int recover_file(const char *path, FILE *out, char *outpath, size_t outpath_len)
{
	struct recover_info ri;
	struct trace_file tf;
	char err[256], op[PATH_MAX];
	int ret, rc = EXIT_OK, fd;

	if (outpath_len)
		outpath[0] = '\0';
	if (trace_file_read(path, &tf, err, sizeof(err))) {
		pr_err("%s: %s", path, err);
		return EXIT_ERROR;
	}
	if (tf.cut)
		fprintf(out, "recover: %s: the gzip stream ends early; %zu bytes decompressed\n",
			path, tf.len);
	ret = recover_buffer(&tf.data, &tf.len, &ri, err, sizeof(err));
	if (ret == RECOVER_COMPLETE && !tf.cut) {
		fprintf(out, "recover: %s: the trace is complete (%zu events), nothing to do\n",
			path, ri.kept_events);
		goto out;
	}
	if (ret < 0) {
		pr_err("%s: %s", path, err);
		rc = EXIT_ERROR;
		goto out;
	}
	/* RECOVER_COMPLETE with a cut gzip stream: the JSON is whole, rewrite a sound .gz */
	if (recover_out_path(path, tf.gzip, op, sizeof(op))) {
		pr_err("%s: output name too long", path);
		rc = EXIT_OUTPUT;
		goto out;
	}
	fd = open(op, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		pr_err("%s: %s%s", op, strerror(errno),
		       errno == EEXIST ? " (refusing to overwrite it)" : "");
		rc = EXIT_OUTPUT;
		goto out;
	}
	ret = write_out(fd, tf.data, tf.len, tf.gzip);
	if (ret) {
		pr_err("%s: %s", op, strerror(-ret));
		unlink(op);
		rc = EXIT_OUTPUT;
		goto out;
	}
	if (outpath_len)
		snprintf(outpath, outpath_len, "%s", op);
	fprintf(out, "recover: wrote %s (%zu events kept, %zu bytes dropped)\n", op,
		ri.kept_events, ri.dropped_bytes);
out:
	trace_file_free(&tf);
	return rc;
}

int cmd_recover(const char *path)
{
	return recover_file(path, stdout, NULL, 0);
}
