/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The stacks of a call (the consumer's, stream/consumer_state.h): its Python stack
 * (SPYRE_EV_PYSTACK, --python, py=1) and its native stack's id (SPYRE_EV_USTACK, --ustack,
 * stack=1) come in records right before the call's own, kept until it comes, named then as its
 * event's args while its process lives.
 */
#ifndef SPYRE_STACKS_H
#define SPYRE_STACKS_H

#include <stdint.h>
#include "stream/consumer_state.h"

/* A call's stacks' args at most: python, pystack, ustack. */
#define STACK_ARGS_MAX 3

/* A part of the Python stack of the call record that follows (bpf/spyre_emit.bpf.h emit_span). */
int on_pystack(struct consumer *c, const struct spyre_event *e);
/* A stack=1 call's native stack id (SPYRE_EV_USTACK): the call's own record follows it. */
int on_ustack(struct consumer *c, const struct spyre_event *e);
/* The innermost Python frame word of call record @e (its stack came before it), else 0. */
uint64_t innermost_py(const struct consumer *c, const struct spyre_event *e);
/*
 * The native stack id of call record @e (its SPYRE_EV_USTACK came before it), else -1, and its
 * return address into *@caller.
 */
int64_t call_ustack(const struct consumer *c, const struct spyre_event *e, uint64_t *caller);
/*
 * The stacks of call record @e as its event's args at @args (STACK_ARGS_MAX at most): "python"
 * and "pystack", "ustack"; how many. Both records are used up; the names stay valid until the
 * next call's (a span's Python frames go to the consumer's pyspans too).
 */
int stack_args(struct consumer *c, const struct spyre_event *e, struct trace_arg *args);

#endif
