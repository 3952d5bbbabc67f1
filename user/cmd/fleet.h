/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Fleet mode: every process that maps the runtime (-a), sampled (--sample-every, --rate-cap),
 * in duty-cycle windows (--window/--period) with probes detached between them, one rotated
 * trace file per window (--output-dir) and a Prometheus textfile summary (--prom-file).
 */
#ifndef SPYRE_FLEET_H
#define SPYRE_FLEET_H

#include "cmd/env.h"
#include "resolve/probes.h"

int cmd_fleet(const struct env *env, struct probe_table *table);

#endif
