/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A call's records (the consumer's, stream/consumer_state.h): its statistics and triggers, its
 * event with its probe's args, its string and stacks, its track, and what it tells the memory
 * ledger and the device timeline.
 */
#ifndef SPYRE_CALLS_H
#define SPYRE_CALLS_H

#include "stream/consumer_state.h"

/*
 * A call's record (SPYRE_EV_SPAN, SPYRE_EV_INSTANT): its statistics, its event, and what it
 * tells the memory ledger and the device timeline.
 */
int on_call(struct consumer *c, const struct spyre_event *e);
/*
 * A call left by an exception, a longjmp or a cancel (SPYRE_EV_UNWOUND), or still open at the
 * end (SPYRE_EV_NORETURN): an event of its own, nothing else (calls.c says why).
 */
int on_unwound(struct consumer *c, const struct spyre_event *e);
/* A str= call's string (SPYRE_EV_STR): the call's own record follows it (bpf/spyre.bpf.c). */
int on_str(struct consumer *c, const struct spyre_event *e);

#endif
