// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The stacks of a call (stacks.h): its records kept until the call's, then named. */
#include <stdlib.h>
#include "stream/stacks.h"
#include "stream/pyspans.h"
#include "stream/pystack.h"
#include "stream/ustack.h"

int on_pystack(struct consumer *c, const struct spyre_event *e)
{
	uint32_t base = e->py.part * SPYRE_PY_PER_REC;

	if (e->py.part == 0 || c->pyrec.tid != e->tid || c->pyrec.ts != e->ts ||
	    c->pyrec.probe != e->probe) {
		c->pyrec.tid = e->tid;
		c->pyrec.probe = e->probe;
		c->pyrec.ts = e->ts;
		c->pyrec.n = 0;
	}
	c->pyrec.flags = e->py.flags;
	for (uint32_t i = 0; i < e->py.n && i < SPYRE_PY_PER_REC &&
			     base + i < SPYRE_PY_FRAMES; i++)
		c->pyrec.frame[base + i] = e->py.frame[i];
	if (base + e->py.n <= SPYRE_PY_FRAMES && base + e->py.n > c->pyrec.n)
		c->pyrec.n = base + e->py.n;
	return 0;
}

uint64_t innermost_py(const struct consumer *c, const struct spyre_event *e)
{
	if (!c->py || !c->pyrec.n || c->pyrec.tid != e->tid || c->pyrec.probe != e->probe ||
	    c->pyrec.ts != e->ts)
		return 0;
	return c->pyrec.frame[0];
}

int64_t call_ustack(const struct consumer *c, const struct spyre_event *e, uint64_t *caller)
{
	*caller = 0;
	if (!c->ustack || !c->usrec.set || c->usrec.tid != e->tid || c->usrec.probe != e->probe ||
	    c->usrec.ts != e->ts)
		return -1;
	*caller = c->usrec.caller;
	return c->usrec.id;
}

/*
 * The native stack of call record @e as "args.ustack" (innermost first) at @args: 1, or 0
 * when it has none (not asked, or not kept: counted in BPF, or not in the map).
 */
static int ustack_args(struct consumer *c, const struct spyre_event *e, struct trace_arg *args)
{
	static const char *v[USTACK_MAX_NAMES];	/* (one consumer at a time) */
	uint64_t caller;
	int64_t id = call_ustack(c, e, &caller);
	bool added;
	int n;

	c->usrec.set = false;
	if (id < 0)
		return 0;
	n = ustack_frames(c->ustack, e->tgid, id, caller, v, &added);
	if (n <= 0) {
		c->us_unread++;
		return 0;
	}
	c->us_stacks++;
	c->us_callers += added;
	args[0] = (struct trace_arg){ .key = "ustack", .type = TA_STRS, .n = (uint32_t)n,
				      .sv = v };
	return 1;
}

/* Names of a call's Python frames, innermost first (stack_args'). */
struct py_names {
	char buf[SPYRE_PY_FRAMES][320];
	const char *v[SPYRE_PY_FRAMES];
	uint32_t n;
};

/*
 * The Python stack of call record @e (its SPYRE_EV_PYSTACK records came right before it) into
 * @out, as "args.python" (the innermost frame) and "args.pystack" (all, innermost first) at
 * @args; returns how many args were added (0: none). Frames that cannot be named (a code
 * object torn down while read) are left out, never shown with a wrong line.
 */
static int python_args(struct consumer *c, const struct spyre_event *e, struct py_names *out,
		       struct trace_arg *args)
{
	uint32_t n;

	if (!c->py || !c->pyrec.n || c->pyrec.tid != e->tid || c->pyrec.probe != e->probe ||
	    c->pyrec.ts != e->ts)
		return 0;
	n = c->pyrec.n;
	c->pyrec.n = 0;
	c->py_stacks++;
	out->n = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (pystack_frame(c->py, e->tgid, c->pyrec.frame[i], out->buf[out->n],
				  sizeof(out->buf[0]))) {
			out->v[out->n] = out->buf[out->n];
			out->n++;
		}
	}
	if (!out->n) {
		c->py_lost++;
		return 0;
	}
	/* a stack read whole and named whole gives the frames' spans their depths */
	if (c->pyspans && e->type == SPYRE_EV_SPAN)
		pyspans_add(c->pyspans, e->tgid, e->tid, e->ts, e->ts + e->dur, out->v, out->n,
			    out->n == n && !(c->pyrec.flags & (SPYRE_PY_TRUNCATED | SPYRE_PY_FAULT)));
	args[0] = (struct trace_arg){ .key = "python", .type = TA_STR, .s = out->v[0] };
	args[1] = (struct trace_arg){ .key = "pystack", .type = TA_STRS, .n = out->n,
				      .sv = out->v };
	return 2;
}

int on_ustack(struct consumer *c, const struct spyre_event *e)
{
	c->usrec.tid = e->tid;
	c->usrec.probe = e->probe;
	c->usrec.ts = e->ts;
	c->usrec.id = e->ustack.id;
	c->usrec.caller = e->ustack.caller;
	c->usrec.set = true;
	return 0;
}

int stack_args(struct consumer *c, const struct spyre_event *e, struct trace_arg *args)
{
	int n;

	/* (3 KiB of names, which the call's event points into until it is written) */
	if (c->py && !c->pyn)
		c->pyn = calloc(1, sizeof(*c->pyn));
	n = c->pyn ? python_args(c, e, c->pyn, args) : 0;
	return n + ustack_args(c, e, args + n);
}
