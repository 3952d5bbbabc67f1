// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `check` validates a trace against the layout rules Perfetto and aiu-trace-analyzer depend
 * on. The trace is read as a stream (tracestream.h), one event at a time: the rules of one
 * event are judged then, and what the cross-event rules (overlap, flows, metadata) need of it
 * is kept in small fixed records, sorted in bounded memory (spool.h, spilling to a temporary
 * file past CHECK_SPOOL_MEM each), so that a trace of any size is O(n log n) in time and bounded
 * in memory.
 *
 * checkevent.c judges each event and keeps its records, checkcross.c the rules across events,
 * checkctx.c the state between them (problem lines, names, the records' spools). Here: a
 * document or a file checked, and the command (several files, directories, --json).
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/exitcodes.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/util.h"
#include "offline/check.h"
#include "offline/checkctx.h"
#include "offline/checkcross.h"
#include "offline/checkevent.h"
#include "offline/jsonparse.h"
#include "offline/tracestream.h"
#include "output/jsonw.h"

/* --- the document ----------------------------------------------------------------------------- */

long check_doc(const struct jv *root, const char *label, FILE *out, struct check_result *res)
{
	const struct jv *events, *ev;
	struct ctx c;
	size_t i = 0;
	int err;

	err = ck_init(&c, label, out, res);
	if (!err) {
		events = check_members(&c, root);
		jv_foreach(ev, events)
			check_element(&c, i++, ev);
		err = check_cross(&c);
	}
	ck_fini(&c);
	return err ? err : (long)res->problems;
}

/* What became of one file. */
struct check_outcome {
	struct check_result res;
	int rc;
	char err[320];		/* why it could not be checked */
	bool cut;		/* cut short: recover can close it */
	uint64_t bytes;		/* read, decompressed */
	double secs;
};

/*
 * Check @path as a stream: problem lines to @out, and the summary line when @summary; errors
 * to stderr and into @o. Returns the exit code.
 */
static int check_one(const char *path, FILE *out, bool summary, struct check_outcome *o)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	const struct jv *ev;
	struct tstream *s;
	struct ctx c;
	size_t idx = 0;
	char err[256];
	int r, e;

	memset(o, 0, sizeof(*o));
	s = tstream_open(path, err, sizeof(err));
	if (!s) {
		snprintf(o->err, sizeof(o->err), "%s", err);
		pr_err("%s: %s", path, err);
		return o->rc = EXIT_ERROR;
	}
	e = ck_init(&c, path, out, &o->res);
	while (!e && (r = tstream_next(s, &ev, err, sizeof(err))) > 0)
		check_element(&c, idx++, ev);
	o->bytes = tstream_bytes(s);
	if (e) {
		snprintf(o->err, sizeof(o->err), "%s", strerror(-e));
	} else if (r < 0) {
		o->cut = tstream_cut(s) || tstream_gzip_cut(s);
		snprintf(o->err, sizeof(o->err), "not valid JSON: %s", err);
		pr_err("%s: %s%s", path, o->err, o->cut ? " (cut short: `spyre-bpftrace recover "
		       "FILE` closes it)" : "");
	} else {
		if (tstream_gzip_cut(s))
			/* not pr_warn: check names the file first, its "warning: " after the path */
			pr_err("%s: warning: the gzip stream is cut short or corrupt after the end "
			       "of the JSON", path);
		check_members(&c, tstream_head(s));
		e = check_cross(&c);
		if (e)
			snprintf(o->err, sizeof(o->err), "the rules across events: %s (their "
				 "records spill to $TMPDIR, else /tmp)", strerror(-e));
	}
	tstream_close(s);
	ck_fini(&c);
	o->secs = (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
	if (e)
		pr_err("%s: %s", path, o->err);
	if (o->err[0])
		return o->rc = EXIT_ERROR;
	pr_debug("%s: %.1f MB in %.2f s, %.0f MB/s", path, (double)o->bytes / 1e6, o->secs,
		 o->secs > 0 ? (double)o->bytes / 1e6 / o->secs : 0.0);
	if (summary)
		fprintf(out, "check: %s: %zu events, %zu problems\n", path, o->res.events,
			o->res.problems);
	return o->rc = o->res.problems ? EXIT_CHECK : EXIT_OK;
}

int check_file(const char *path, FILE *out)
{
	struct check_outcome o;

	return check_one(path, out, true, &o);
}

/* --- several files, directories, --json ------------------------------------------------------ */

/* The line of a problem without its "check: FILE: " prefix, as JSON strings. */
static void json_lines(struct jw *w, const char *path, char *text)
{
	size_t plen = strlen(path);
	char *line, *save = NULL;

	jw_key(w, "lines");
	jw_arr_begin(w);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "check: ", 7) && !strncmp(line + 7, path, plen) &&
		    !strncmp(line + 7 + plen, ": ", 2))
			line += 9 + plen;
		jw_elem(w);
		jw_str(w, line);
	}
	jw_arr_end(w);
}

static void json_outcome(struct jw *w, const char *path, const struct check_outcome *o,
			 char *lines)
{
	jw_obj_begin(w);
	jw_kv_str(w, "file", path);
	if (o->err[0]) {
		jw_kv_str(w, "error", o->err);
		jw_kv_bool(w, "cut", o->cut);
	} else {
		jw_kv_u64(w, "events", o->res.events);
		jw_kv_u64(w, "problems", o->res.problems);
		jw_key(w, "byKind");
		jw_obj_begin(w);
		for (int k = 0; k < CK_NKINDS; k++)
			if (o->res.by_kind[k])
				jw_kv_u64(w, check_kind_name(k), o->res.by_kind[k]);
		jw_obj_end(w);
	}
	json_lines(w, path, lines ? lines : (char[]){ "" });
	jw_obj_end(w);
	jw_nl(w);
}

struct check_totals {
	size_t files, events, problems, bad_files, unreadable;
	struct jw *w;
	FILE *out;
};

static void check_path(struct check_totals *t, const char *path)
{
	struct check_outcome o;
	char *lines = NULL;
	size_t len = 0;
	FILE *mem = NULL;

	if (t->w)
		mem = open_memstream(&lines, &len);
	check_one(path, mem ? mem : t->out, !t->w, &o);
	if (mem)
		fclose(mem);
	t->files++;
	t->events += o.res.events;
	t->problems += o.res.problems;
	t->bad_files += !o.err[0] && o.res.problems;
	t->unreadable += !!o.err[0];
	if (t->w)
		json_outcome(t->w, path, &o, lines);
	free(lines);
}

/* Every trace file (*.json, *.json.gz) of directory @dir, in name order. */
static void check_dir(struct check_totals *t, const char *dir)
{
	struct dirent **ents;
	char p[4096];
	int n;

	n = trace_dir_scan(dir, &ents);
	if (n < 0) {
		pr_err("%s: %s", dir, strerror(-n));
		t->unreadable++;
		return;
	}
	if (!n) {
		pr_err("%s: no trace files (*.json, *.json.gz) in the directory", dir);
		t->unreadable++;
	}
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s%s%s", dir, str_ends_with(dir, "/") ? "" : "/",
			 ents[i]->d_name);
		check_path(t, p);
		free(ents[i]);
	}
	free(ents);
}

int check_files(char *const *paths, int n, bool json, FILE *out)
{
	struct check_totals t = { .out = out };
	struct stat st;
	char *text;
	size_t len;

	if (json) {
		t.w = jw_memopen();
		if (!t.w)
			return EXIT_ERROR;
		jw_obj_begin(t.w);
		jw_key(t.w, "files");
		jw_arr_begin(t.w);
		jw_nl(t.w);
	}
	for (int i = 0; i < n; i++) {
		if (!stat(paths[i], &st) && S_ISDIR(st.st_mode))
			check_dir(&t, paths[i]);
		else
			check_path(&t, paths[i]);
	}
	if (json) {
		jw_arr_end(t.w);
		jw_key(t.w, "totals");
		jw_obj_begin(t.w);
		jw_kv_u64(t.w, "files", t.files);
		jw_kv_u64(t.w, "events", t.events);
		jw_kv_u64(t.w, "problems", t.problems);
		jw_kv_u64(t.w, "unreadable", t.unreadable);
		jw_obj_end(t.w);
		jw_obj_end(t.w);
		text = jw_mem_take(t.w, &len);
		if (!text)
			return EXIT_ERROR;
		fprintf(out, "%s\n", text);
		free(text);
	} else if (t.files > 1 || n > 1) {
		fprintf(out, "check: %zu files, %zu events, %zu problems (%zu files with problems, "
			"%zu unreadable)\n", t.files, t.events, t.problems, t.bad_files,
			t.unreadable);
	}
	if (t.unreadable)
		return EXIT_ERROR;
	return t.problems ? EXIT_CHECK : EXIT_OK;
}

int cmd_check(char *const *paths, int n, bool json)
{
	return check_files(paths, n, json, stdout);
}
