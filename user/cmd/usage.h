/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The option table rendered (usage.c): the help, the usage lines, the man page's parts. */
#ifndef SPYRE_CMD_USAGE_H
#define SPYRE_CMD_USAGE_H

#include <stdio.h>
#include "cmd/options.h"

/* The help of @cmd's options (CMD_TRACE: all of them), the short usage */
void env_usage_cmd(FILE *f, enum spyre_cmd cmd);
void env_usage(FILE *f);
/* --man PART: one generated part of the man page; 0, or -EINVAL for an unknown PART */
int env_man(FILE *f, const char *part);

#endif
