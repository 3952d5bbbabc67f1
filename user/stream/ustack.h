/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Native stacks named (--ustack, stack=1): a SPYRE_EV_USTACK record carries only the id of a
 * stack in the kernel's ustacks map (bpf/spyre.bpf.c), whose frames are build ids and file
 * offsets. Each stack is read from the map once per process naming it; each library is found by
 * its build id among the files that process maps (files known by device and inode: a build id
 * is a claim, never an identity; mappings read again at most every USTACK_RESCAN_MS) and its
 * function symbols are read once, when a frame first lands in it; each frame is named
 * "QUALNAME+0xOFF (LIBRARY)". A frame the kernel could only give as an address (the page with
 * the build id was not in memory) is named from the process's mappings.
 */
#ifndef SPYRE_USTACK_H
#define SPYRE_USTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "stream/spyre_event_user.h"

struct ustack;

/*
 * A process's mappings are read again when a stack of it is named and they are older than this:
 * names taken from a library since unmapped (dlclose, then dlopen of another at its address)
 * last at most that long. Reading /proc/PID/maps of the mock job: ~0.1 ms.
 */
#define USTACK_RESCAN_MS	1000
/* A frame's name: "QUALNAME+0xOFF (LIBRARY)", cut to fit */
#define USTACK_NAME_LEN	200

/*
 * Stacks from the map @map_fd (a BPF_MAP_TYPE_STACK_TRACE with BPF_F_STACK_BUILD_ID of
 * SPYRE_USTACK_FRAMES frames), processes' files under @procfs ("/proc"); NULL on ENOMEM.
 */
struct ustack *ustack_new(int map_fd, const char *procfs);
void ustack_free(struct ustack *u);
/* Frames ustack_frames gives at most: the stack's, and its caller's where the walk skipped it */
#define USTACK_MAX_NAMES	(SPYRE_USTACK_FRAMES + 1)
/*
 * Process @pid maps libraries a stack may name: their build ids are read now, while it lives
 * (a stack named after its end finds them by build id, at their paths).
 */
void ustack_add_proc(struct ustack *u, uint32_t pid);
/*
 * The frames of stack @id, taken in process @pid at a call whose return address was @caller (0:
 * unknown), named into @out (USTACK_MAX_NAMES of them), innermost first: the traced function
 * itself, then its callers. Their count (0: the stack could not be read); each name valid until
 * the next call (a stack is named again for another process, or after its mappings changed); *@caller_added (may be NULL): the caller was added from the return address, the
 * kernel's walk skipped it. A frame whose library cannot be found is named by its build id and
 * offset, or its address.
 */
int ustack_frames(struct ustack *u, uint32_t pid, int64_t id, uint64_t caller,
		  const char **out, bool *caller_added);
/*
 * Frames that could not be named (library not found, no symbol; each counted once) and stacks
 * cut where the walk went astray (a frame past its file's end or in no file: a caller without
 * frame pointers; each stack counted once).
 */
void ustack_counts(const struct ustack *u, uint64_t *unnamed, uint64_t *cut);

#endif
