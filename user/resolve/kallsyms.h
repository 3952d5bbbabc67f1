/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel functions by name in /proc/kallsyms ("ADDR TYPE NAME [MODULE]"): whether each is there
 * as a text symbol, and which module holds it. Kernel probes (kprobes, fentry) can be attached
 * only to a function that is listed: a static one may have been inlined.
 */
#ifndef SPYRE_KALLSYMS_H
#define SPYRE_KALLSYMS_H

#include <stdbool.h>

/* A function's or a module's name, its NUL included */
#define KSYM_NAME_MAX	64

/*
 * Which of @names are text symbols ('t' or 'T') in the kallsyms-format file @path: @present[i]
 * is set, and @module[i] gets the module that holds it ("" for vmlinux). A clone
 * (name.isra.0) is not its function. When every name holds @hint, a line without it is passed
 * over unparsed (the file has ~100k lines); NULL: every line is parsed. Returns how many were
 * found, or -errno when @path cannot be opened.
 */
int kallsyms_find(const char *path, const char *hint, char names[][KSYM_NAME_MAX], int n,
		  bool *present, char module[][KSYM_NAME_MAX]);

#endif
