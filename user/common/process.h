/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The tracer as a process: its privileges, the kernel's readiness, its signals, the ready file. */
#ifndef SPYRE_PROCESS_H
#define SPYRE_PROCESS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Start-up's heap in transparent huge pages, where the kernel gives them on request (THP
 * "madvise" or "always"): every thread allocates from the main heap, large blocks too, and what
 * is freed stays there for the next allocation until heap_start_end(). SPYRE_NO_HUGE_HEAP=1:
 * the allocator's defaults.
 */
void heap_start_huge(void);
/* The BPF objects are loaded: what start-up freed goes back to the kernel, defaults again. */
void heap_start_end(void);
/* Root, or CAP_BPF + CAP_PERFMON + CAP_SYS_PTRACE. */
bool have_privileges(void);
/* What tracing needs before anything is loaded: 0, EXIT_PERM or EXIT_NO_BTF (with a message). */
int preflight_bpf(void);
/* Block SIGINT, SIGTERM and SIGHUP (and SIGUSR1 with @usr1: the flight recorder's dump) and
 * return a signalfd for them (-errno): signals then arrive in the drain loop, never in the
 * middle of a write. */
int stop_signals_fd(bool usr1);
/* Create @path atomically, containing our pid: the --ready-file handshake. */
int write_ready_file(const char *path);
/* @len bytes of @text as the whole of @path, written beside it and renamed (no reader sees half
 * of it): 0 or -errno. */
int write_file_whole(const char *path, const char *text, size_t len);

/*
 * The tests' hold (never on a real job): with the environment variable @var set to a path F,
 * create F.held and wait (a minute at most) until F.go exists, so that a test can change the
 * world at that point (SPYRE_TEST_HOLD_ATTACH: before the probes are attached; _END: when
 * tracing stops, before the names are read).
 */
void test_hold(const char *var);
/*
 * The calling thread's nice value to @nice (a thread's own on Linux); its value before in
 * @old. -errno (EPERM/EACCES without CAP_SYS_NICE or room in RLIMIT_NICE: nothing changed).
 */
int thread_nice(int nice, int *old);

#endif
