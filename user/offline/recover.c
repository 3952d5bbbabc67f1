// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `recover` closes a trace whose writer died: the trace is read as a stream and copied event by
 * event to a copy; the partial tail after the last whole event goes and the document is closed.
 * Memory is bounded by the largest event, whatever the trace's size.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/exitcodes.h"
#include "offline/jsonparse.h"
#include "common/util.h"
#include "common/log.h"
#include "offline/recover.h"
#include "common/strutil.h"
#include "offline/tracestream.h"
#include "output/output.h"

/* Flow starts held back at once (bytes): past it they are written, and kept at a cut */
#define RECOVER_HOLD_MAX	(64u << 20)

struct held {
	char *buf;
	size_t len, cap, n;
};

static int hold(struct held *h, const char *p, size_t n)
{
	if (h->cap - h->len < n + 2) {
		size_t nc = h->cap ? h->cap : 4096;
		char *nb;

		while (nc - h->len < n + 2)
			nc *= 2;
		nb = realloc(h->buf, nc);
		if (!nb)
			return -ENOMEM;
		h->buf = nb;
		h->cap = nc;
	}
	memcpy(h->buf + h->len, ",\n", 2);
	memcpy(h->buf + h->len + 2, p, n);
	h->len += n + 2;
	h->n++;
	return 0;
}

/*
 * Copy the trace of @s into @w event by event, and close it where the input ends. The writer
 * writes whole events and flushes only after them, so a cut (the input ends inside the
 * document) loses at most the event being written; a text error elsewhere is not a cut and is
 * refused (-EBADMSG). The header is the members read before the events, each parsed; each event
 * was parsed too, so the result parses. RECOVER_COMPLETE when the document was whole (then @w
 * holds all of it, for a gzip stream cut after the end of the JSON), RECOVER_REPAIRED, -EINVAL
 * (no events' array before the cut), -EBADMSG, -ENOMEM.
 */
static int recover_stream(struct tstream *s, struct jw *w, struct recover_info *ri, char *err,
			  size_t errlen)
{
	static const char tail[] = "\n],\"spyreRecovered\":true}\n";
	struct held held = {};
	uint64_t kept_end = 0;
	const struct jv *ev;
	bool header = false;
	const char *head, *raw;
	size_t hlen, at, len;
	char perr[200];
	int r, ret;

	memset(ri, 0, sizeof(*ri));
	while ((r = tstream_next(s, &ev, perr, sizeof(perr))) > 0) {
		const char *ph = jv_get_str(ev, "ph");

		if (!header) {
			head = tstream_head_text(s, &hlen, &at);
			jw_raw(w, head, at + 1);
			header = true;
		}
		raw = tstream_raw(s, &len);
		/*
		 * An arrow is written as its start then its finish, after both slices it binds
		 * to: a cut between the two leaves a start with no finish, which goes with the
		 * cut tail. Starts wait for the next other event.
		 */
		if (ph && !strcmp(ph, "s") && held.len + len < RECOVER_HOLD_MAX) {
			if (hold(&held, raw, len)) {
				ret = errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
				goto out;
			}
			continue;
		}
		if (held.len) {
			/* the first event's comma is not written */
			size_t skip = ri->kept_events ? 0 : 2;

			jw_raw(w, held.buf + skip, held.len - skip);
			ri->kept_events += held.n;
			held.len = held.n = 0;
		}
		if (ri->kept_events)
			jw_raw(w, ",\n", 2);
		else
			jw_raw(w, "\n", 1);
		jw_raw(w, raw, len);
		jw_commit(w);
		ri->kept_events++;
		kept_end = tstream_raw_end(s);
	}
	if (!r && !tstream_in_events(s)) {
		ret = errf(err, errlen, -EINVAL, "not a trace: no \"traceEvents\" array");
		goto out;
	}
	if (!r) {
		/* whole: the rest of the header after the events */
		head = tstream_head_text(s, &hlen, &at);
		if (!header)
			jw_raw(w, head, at + 1);
		if (held.len) {
			size_t skip = ri->kept_events ? 0 : 2;

			jw_raw(w, held.buf + skip, held.len - skip);
			ri->kept_events += held.n;
		}
		if (tstream_in_events(s)) {
			jw_raw(w, "\n", 1);
			jw_raw(w, head + at + 1, hlen - at - 1);
		}
		jw_raw(w, "\n", 1);
		ret = RECOVER_COMPLETE;
		goto out;
	}
	if (!tstream_cut(s) && !tstream_gzip_cut(s)) {
		ret = errf(err, errlen, -EBADMSG, "not valid JSON at %s; not a cut either (recover "
			   "closes a trace whose writer died)", perr);
		goto out;
	}
	if (!tstream_in_events(s)) {
		ret = errf(err, errlen, -EINVAL, "not a trace cut short: the input ends (%s) "
			   "before a \"traceEvents\" array", perr);
		goto out;
	}
	if (!header) {
		head = tstream_head_text(s, &hlen, &at);
		jw_raw(w, head, at + 1);
	}
	if (tstream_head(s) == NULL && head[0] == '[')
		jw_raw(w, "\n]\n", 3);	/* a bare array */
	else
		jw_raw(w, tail, sizeof(tail) - 1);
	ri->dropped_bytes = tstream_bytes(s) - kept_end;
	ret = RECOVER_REPAIRED;
out:
	free(held.buf);
	return ret;
}

int recover_buffer(char **bufp, size_t *lenp, struct recover_info *ri, char *err, size_t errlen)
{
	struct tstream *s = tstream_open_mem(*bufp, *lenp, 0);
	struct jw *w = jw_memopen();
	char *out;
	size_t len;
	int ret;

	if (!s || !w) {
		tstream_close(s);
		free(jw_mem_take(w, NULL));
		return errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
	}
	ret = recover_stream(s, w, ri, err, errlen);
	tstream_close(s);
	out = jw_mem_take(w, &len);
	if (ret == RECOVER_REPAIRED) {
		if (!out)
			return errf(err, errlen, -ENOMEM, "%s", strerror(ENOMEM));
		free(*bufp);
		*bufp = out;
		*lenp = len;
		return ret;
	}
	free(out);
	return ret;
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

int recover_file(const char *path, const char *opath, bool force, FILE *out, char *outpath,
		 size_t outpath_len)
{
	char err[320], op[PATH_MAX], tmp[PATH_MAX + 16];
	struct recover_info ri;
	struct tstream *s;
	struct stat st;
	int ret, rc = EXIT_OK, fd, werr;
	struct jw *w;

	if (outpath_len)
		outpath[0] = '\0';
	s = tstream_open(path, err, sizeof(err));
	if (!s) {
		pr_err("%s: %s", path, err);
		return EXIT_ERROR;
	}
	if (opath) {
		snprintf(op, sizeof(op), "%s", opath);
	} else if (stat(path, &st) || !S_ISREG(st.st_mode) || !strncmp(path, "/dev/", 5) ||
		   !strncmp(path, "/proc/", 6)) {
		/* /dev/stdin.recovered.json would land in /dev, even for stdin from a file */
		pr_err("%s is not a trace file's name (a pipe?): give -o OUT for the copy", path);
		rc = EXIT_USAGE;
		goto out;
	} else if (recover_out_path(path, tstream_gzip(s), op, sizeof(op))) {
		pr_err("%s: output name too long", path);
		rc = EXIT_OUTPUT;
		goto out;
	}
	/* written beside it, then linked to its name: no half copy under the name, ever */
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", op);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		pr_err("cannot create %s: %s", tmp, strerror(errno));
		rc = EXIT_OUTPUT;
		goto out;
	}
	w = jw_fdopen(fd, str_ends_with(op, ".gz") ? 6 : 0);
	if (!w) {
		close(fd);
		unlink(tmp);
		pr_err("%s", strerror(ENOMEM));
		rc = EXIT_ERROR;
		goto out;
	}
	ret = recover_stream(s, w, &ri, err, sizeof(err));
	werr = jw_close(w);
	if (ret == RECOVER_COMPLETE && !tstream_gzip_cut(s)) {
		unlink(tmp);
		fprintf(out, "recover: %s: the trace is complete (%zu events), nothing to do\n",
			path, ri.kept_events);
		goto out;
	}
	if (ret < 0 || werr) {
		unlink(tmp);
		if (ret < 0)
			pr_err("%s: %s", path, err);
		else
			pr_err("writing %s: %s", op, strerror(-werr));
		rc = ret < 0 ? EXIT_ERROR : EXIT_OUTPUT;
		goto out;
	}
	if (tstream_gzip_cut(s))
		fprintf(out, "recover: %s: the gzip stream ends early; %llu bytes decompressed\n",
			path, (unsigned long long)tstream_bytes(s));
	/* RECOVER_COMPLETE with a cut gzip stream: the JSON is whole, rewritten as sound gzip */
	ret = 0;
	if (link(tmp, op)) {
		ret = errno == EEXIST ? output_exists_err(op) : -errno;
		if (ret == -EEXIST && force)
			ret = rename(tmp, op) ? -errno : 0;
	}
	unlink(tmp);
	if (ret) {
		pr_err("cannot create %s: %s%s", op, strerror(-ret), output_err_hint(ret));
		rc = EXIT_OUTPUT;
		goto out;
	}
	if (outpath_len)
		snprintf(outpath, outpath_len, "%s", op);
	fprintf(out, "recover: wrote %s (%zu events kept, %zu bytes dropped)\n", op,
		ri.kept_events, ri.dropped_bytes);
out:
	tstream_close(s);
	return rc;
}

int cmd_recover(const char *path, const char *opath, bool force)
{
	return recover_file(path, opath, force, stdout, NULL, 0);
}
