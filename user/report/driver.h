/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SPYRE_DRIVER_H
#define SPYRE_DRIVER_H

#include <stdio.h>

struct vfio_tracer;
struct vfio_decoder;
struct jw;

/* Members of spyreStats: "driverPath":"...","driverSpans":N,...[,"driverFunctions":[...]] */
void driver_stats_json(const struct vfio_tracer *v, const struct vfio_decoder *d, struct jw *w);
/* The tier's path and counts, then per ioctl name: count, total, mean. Nothing when off. */
void driver_summary(const struct vfio_tracer *v, const struct vfio_decoder *d, FILE *f);

#endif
