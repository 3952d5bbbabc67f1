/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * python_function spans (--python): the model's Python structure above the traced calls, as the
 * PyTorch profiler's with_stack export lays it out. Each traced call of a thread brings the
 * Python stack it was made from; a frame (a function at one line) becomes one span from the
 * first call made under it to the end of the last one, nested in its caller's, on the calls'
 * own thread, named "FILE(LINE): QUALNAME" with "Python id" and "Python parent id". Consecutive
 * calls made under the same frames share those spans; a call whose stack differs at some depth
 * closes the spans below it there and opens its own. Built from the calls' stacks alone: Python
 * that ran between two traced calls and made none shows in no span.
 */
#ifndef SPYRE_PYSPANS_H
#define SPYRE_PYSPANS_H

#include <stdbool.h>
#include <stdint.h>

struct pyspans;
struct trace_writer;

/* Calls kept at most (their stacks as ids: ~100 bytes a call); past that, counted */
#define PYSPANS_MAX_CALLS	(4u << 20)

struct pyspans *pyspans_new(void);
void pyspans_free(struct pyspans *p);
/*
 * A traced call of thread @tid of @pid from @ts_ns to @end_ns, made under the Python frames
 * @names (@n, innermost first, as "FILE:LINE QUALNAME"). A stack cut short (@whole false: the
 * thread had more frames than were read, or a read faulted) is not used: its depths are not
 * the others'. 0, or -ENOMEM (the call counted as left out).
 */
int pyspans_add(struct pyspans *p, uint32_t pid, uint32_t tid, uint64_t ts_ns, uint64_t end_ns,
		const char *const *names, uint32_t n, bool whole);
/* Write the spans of every call added so far (once, at the end); how many were written. */
uint64_t pyspans_write(struct pyspans *p, struct trace_writer *tw);
/* Calls left out: stacks cut short, and calls past PYSPANS_MAX_CALLS. */
uint64_t pyspans_left_out(const struct pyspans *p);
/* Calls whose frames' spans wait for the next pyspans_write. */
uint64_t pyspans_pending(const struct pyspans *p);

/* "FILE:LINE QUALNAME" as the PyTorch profiler names a frame, "FILE(LINE): QUALNAME", in @buf */
const char *pyspans_name(const char *frame, char *buf, unsigned int len);

#endif
