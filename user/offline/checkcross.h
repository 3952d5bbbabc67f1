/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The rules across events; only check.c includes this. */
#ifndef SPYRE_CHECKCROSS_H
#define SPYRE_CHECKCROSS_H

struct ctx;

/* The cross-event rules, once every event was read; then the count of lines not printed. */
int check_cross(struct ctx *c);

#endif
