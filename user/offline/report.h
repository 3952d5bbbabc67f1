/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `report`: what a saved trace says, without a browser (as `nsys stats` and `perf report
 * --stdio` do): the host calls by function, the device's kernels, its busy time by device
 * and stream, the copies by direction, and the trace's health (what was lost, sampled or
 * left out by the budget). Each file is read once as a stream (tracestream.h); exact p50/p99
 * come from the durations sorted in bounded memory (spool.h), so a trace of any size.
 */
#ifndef SPYRE_REPORT_H
#define SPYRE_REPORT_H

#include <stdbool.h>
#include <stdio.h>

/*
 * Report each of @paths (a directory: its *.json and *.json.gz) to @out, as text or one JSON
 * document; @by_thread: a host row per function and thread. Returns an exit code: 0,
 * EXIT_ERROR when a file could not be read.
 */
int report_files(char *const *paths, int n, bool json, bool by_thread, FILE *out);
int cmd_report(char *const *paths, int n, bool json, bool by_thread);

#endif
