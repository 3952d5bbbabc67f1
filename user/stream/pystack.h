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

/*
 * A line table longer than this is not read: its frames' lines are "?", counted (lt_long). The
 * longest of the 41,796 code objects of Debian's python3.11 stdlib and python3-torch is 157 KB
 * (a generated module's <module>); a traced process chooses its own, and each is copied once
 * per code object and scanned once per (code, index) (the frame's line cache, below).
 */
#define PY_LINETABLE_MAX	(256 << 10)
/*
 * The code cache's bounds: what its entries hold (line tables, names, slots) and how many. A
 * process that makes new code objects on every call (each pointing at a long line table) would
 * grow it without end: past a bound it is emptied whole and counted (evicted); the code objects
 * still in use are read again on their next frame.
 */
#define PY_CACHE_BYTES		(32u << 20)
#define PY_CACHE_CODES		65536

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
/*
 * What the code cache did: code objects read, those that could not be (not a code object,
 * process gone), those whose line table was too long to read (their frames' lines are "?"),
 * and those forgotten because the cache reached its bound (32 MiB, 65,536 code objects).
 */
struct pystack_stats {
	uint64_t codes, bad, lt_long, evicted;
};
void pystack_counts(const struct pystack *ps, struct pystack_stats *st);

/*
 * The line of the instruction at code unit @idx (-1: before the first instruction) from a
 * CPython 3.11 location table (co_linetable, Objects/locations.md) of a code object starting at
 * line @firstlineno: >= 0, or -1 where the table says the instruction has no line, -ENOENT
 * past the table's end, -EINVAL for a malformed table.
 */
int py_linetable_line(const uint8_t *tab, size_t len, int firstlineno, int idx);

#endif
