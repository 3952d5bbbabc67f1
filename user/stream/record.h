/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A call record's values, as a probe line names them (key=, ptr=, argN=LABEL, ...). */
#ifndef SPYRE_RECORD_H
#define SPYRE_RECORD_H

#include <stdint.h>
#include "resolve/probes.h"
#include "stream/spyre_event_user.h"

/*
 * The value of @src (PROBE_VAL_*: 1..6 an argument, PROBE_VAL_RET, a dereference
 * PROBE_VAL_DEREF + i), else 0.
 */
static inline uint64_t record_value(const struct spyre_event *e, int src)
{
	if (src >= 1 && src <= SPYRE_MAX_ARGS)
		return e->call.args[src - 1];
	if (src == PROBE_VAL_RET)
		return e->call.ret;
	if (src >= PROBE_VAL_DEREF && src < PROBE_VAL_DEREF + SPYRE_MAX_DEREFS)
		return e->call.deref[src - PROBE_VAL_DEREF];
	return 0;
}

#endif
