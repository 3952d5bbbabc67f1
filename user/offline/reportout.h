/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* report's renderings of one file (reportcalc.h): only the report files include this. */
#ifndef SPYRE_REPORTOUT_H
#define SPYRE_REPORTOUT_H

#include <stdio.h>

struct health;
struct jv;
struct jw;
struct rep;

/* @path's tables to @out; @head: the trace's members before its events (ranks, memory) */
void text_report(FILE *out, const char *path, struct rep *r, const struct jv *head,
		 const struct health *h);
/* ... and as an object of the --json document's "files" */
void json_report(struct jw *w, const char *path, struct rep *r, const struct jv *head,
		 const struct health *h);

#endif
