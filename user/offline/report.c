// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report: each file read once as a stream (tracestream.h), its events summed (reportcalc.c),
 * then rendered (reportout.c) as text or as one member of the --json document; a directory
 * is its trace files in name order.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/exitcodes.h"
#include "common/log.h"
#include "common/strutil.h"
#include "offline/report.h"
#include "offline/reportcalc.h"
#include "offline/reportout.h"
#include "offline/tracestream.h"
#include "output/jsonw.h"

/* One file: read, summed, rendered. 0, or -errno with a message said. */
static int report_one(const char *path, FILE *out, struct jw *w, bool by_thread)
{
	struct rep r;
	struct tstream *ts;
	const struct jv *ev;
	struct health h;
	char err[256];
	int rc, ret = 0;

	ts = tstream_open(path, err, sizeof(err));
	if (!ts) {
		pr_err("%s: %s", path, err);
		return -EIO;
	}
	ret = rep_init(&r, by_thread);
	if (ret)
		goto out;
	while ((rc = tstream_next(ts, &ev, err, sizeof(err))) == 1) {
		r.events++;
		ret = rep_take_event(&r, ev);
		if (ret)
			break;
	}
	if (rc < 0) {
		pr_err("%s: not a whole trace: %s%s", path, err, tstream_cut(ts) ?
		       " (cut short: `spyre-bpftrace recover` closes it)" : "");
		ret = -EINVAL;
		goto out;
	}
	if (!ret)
		ret = rep_compute(&r);
	if (ret) {
		pr_err("%s: %s", path, strerror(-ret));
		goto out;
	}
	rep_health_of(tstream_head(ts), &h);
	if (w) {
		json_report(w, path, &r, tstream_head(ts), &h);
		goto out;
	}
	text_report(out, path, &r, tstream_head(ts), &h);
out:
	tstream_close(ts);
	rep_free(&r);
	return ret;
}

int report_files(char *const *paths, int n, bool json, bool by_thread, FILE *out)
{
	struct jw *w = json ? jw_memopen() : NULL;
	int bad = 0, files = 0;
	struct stat st;
	char p[4096];

	if (json) {
		if (!w)
			return EXIT_ERROR;
		jw_obj_begin(w);
		jw_key(w, "files");
		jw_arr_begin(w);
		jw_nl(w);
	}
	for (int i = 0; i < n; i++) {
		struct dirent **ents;
		int k;

		if (stat(paths[i], &st) || !S_ISDIR(st.st_mode)) {
			if (files++ && !w)
				fputc('\n', out);
			bad += !!report_one(paths[i], out, w, by_thread);
			continue;
		}
		k = trace_dir_scan(paths[i], &ents);
		if (k <= 0) {
			pr_err("%s: %s", paths[i], k ? strerror(-k) :
			       "no trace files (*.json, *.json.gz) in the directory");
			bad++;
			continue;
		}
		for (int j = 0; j < k; j++) {
			snprintf(p, sizeof(p), "%s%s%s", paths[i],
				 str_ends_with(paths[i], "/") ? "" : "/", ents[j]->d_name);
			if (files++ && !w)
				fputc('\n', out);
			bad += !!report_one(p, out, w, by_thread);
			free(ents[j]);
		}
		free(ents);
	}
	if (w) {
		char *text;
		size_t len;

		jw_arr_end(w);
		jw_obj_end(w);
		text = jw_mem_take(w, &len);
		if (!text)
			return EXIT_ERROR;
		fprintf(out, "%s\n", text);
		free(text);
	}
	return bad ? EXIT_ERROR : EXIT_OK;
}

int cmd_report(char *const *paths, int n, bool json, bool by_thread)
{
	return report_files(paths, n, json, by_thread, stdout);
}
