/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Python stacks named (--python, py=1): a SPYRE_EV_PYSTACK record carries code object addresses
 * and instruction indexes only; each code object is read from its process once (qualname,
 * filename, first line, line table), cached by (pid, address), and each frame named
 * "FILE:LINE QUALNAME" from CPython's location table.
 */
#ifndef SPYRE_PYSTACK_H
#define SPYRE_PYSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "resolve/pyrt.h"

struct pystack;

struct pystack *pystack_new(void);
void pystack_free(struct pystack *ps);
/* Process @pp->pid runs the interpreter @pp (its offsets must be known): 0 or -ENOMEM. */
int pystack_add_proc(struct pystack *ps, const struct py_proc *pp);
/*
 * Frame word @word (bpf/spyre_event.h SPYRE_PY_FRAMES) of process @pid named into @buf:
 * "FILE:LINE QUALNAME". Returns false when the address is not a code object of a process we
 * know (a frame read while it was torn down): the frame is left out, never given a wrong line.
 */
bool pystack_frame(struct pystack *ps, uint32_t pid, uint64_t word, char *buf, size_t len);
/* Code objects read, and those that could not be (not a code object, process gone). */
void pystack_counts(const struct pystack *ps, uint64_t *codes, uint64_t *bad);

/*
 * The line of the instruction at code unit @idx (-1: before the first instruction) from a
 * CPython 3.11 location table (co_linetable, Objects/locations.md) of a code object starting at
 * line @firstlineno: >= 0, or -1 where the table says the instruction has no line, -ENOENT
 * past the table's end, -EINVAL for a malformed table.
 */
int py_linetable_line(const uint8_t *tab, size_t len, int firstlineno, int idx);

#endif
