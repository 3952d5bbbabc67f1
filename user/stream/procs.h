/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The consumer's processes and threads (stream/consumer.h includes this): who they are (names,
 * cmdline, container, rank in a distributed job, from /proc once each), their names in the
 * trace, their exits. The first part is for every user of the consumer, the rest for its files.
 */
#ifndef SPYRE_PROCS_H
#define SPYRE_PROCS_H

#include <stddef.h>
#include <stdint.h>
#include "stream/consumer_state.h"

/* The exit code of traced process @pid, if its end was seen (true), into @code. */
bool consumer_exit_code(const struct consumer *c, uint32_t pid, int *code);
/* The name of thread @tid as last seen ("" if never seen). */
const char *consumer_thread_name(const struct consumer *c, uint32_t tid);
/*
 * The whole entries of a process's environment read up to a cap (/proc/PID/environ, @len
 * bytes): a read that filled the cap may end inside an entry (RANK=12345 read as RANK=12), so
 * what follows the last NUL is dropped. Returns the length kept.
 */
size_t environ_whole(const char *env, size_t len);
/*
 * The distributed-job variables of an environment block (NUL-separated NAME=VALUE, as
 * /proc/PID/environ): RANK, WORLD_SIZE as torchrun sets them (else AIU_WORLD_SIZE, the Spyre
 * stack's), AIU_WORLD_RANK_<RANK>. Fields not found stay as they were, for getRank/getSize.
 */
void dist_from_environ(const char *env, size_t len, struct dist_info *d);
/* @d's pci_bus_id: AIU_WORLD_RANK_<its rank> of @env ("" without a rank or the variable). */
void dist_pci_from_environ(const char *env, size_t len, struct dist_info *d);
/* Process info by pid (NULL if never seen). */
const struct process_info *consumer_process(const struct consumer *c, uint32_t pid);

/* The consumer's own (consumer.c, calls.c): */
/* The slot of @tid: its own, or the empty one where it belongs (tid 0). */
struct thread_info *thread_slot(struct consumer *c, uint32_t tid);
/* Process @pid, its /proc facts read the first time (@comm: its name now, NULL: unknown). */
struct process_info *see_process(struct consumer *c, uint32_t pid, const char *comm);
/* A thread seen without its SPYRE_EV_THREAD (ring was full then): ask /proc. */
void see_thread(struct consumer *c, uint32_t pid, uint32_t tid);
/* A thread's names (SPYRE_EV_THREAD): its own and its process's. */
int on_thread_event(struct consumer *c, const struct spyre_event *e);
/* A traced process ended (SPYRE_EV_EXIT): 0, -ENOMEM when it could not be kept. */
int on_exit_event(struct consumer *c, const struct spyre_event *e);
/*
 * getRank()/getSize() (a dist= span): each for a process whose environment did not say it (one
 * with RANK but no world size takes getSize's, and the other way round)
 */
void call_dist(struct consumer *c, const struct probe_spec *s, const struct spyre_event *e);
/*
 * The names processes and threads have now (/proc) written at @now where they changed since
 * they were first written, except for those seen to exit (consumer_write_metadata).
 */
void names_refresh(struct consumer *c, uint64_t now);
/* Every process and thread named again, at the start of a new file (consumer_switch). */
void names_again(struct consumer *c);

#endif
