/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `spyre-bpftrace -- CMD`: start CMD held before exec, so probes can be attached to the
 * libraries it will load before it runs a single instruction of them.
 */
#ifndef SPYRE_LAUNCH_H
#define SPYRE_LAUNCH_H

#include <sys/types.h>

struct launch {
	pid_t pid;
	int go_fd;	/* write end of the pipe the child waits on */
};

/* Fork CMD, held before execvp until launch_release(). */
int launch_start(struct launch *l, char **argv);
/* Let the child exec. */
int launch_release(struct launch *l);
/* Kill a child that was never released (setup failed). */
void launch_abort(struct launch *l);
/*
 * Stop a released child that still runs: @sig, then SIGKILL if it has not ended after
 * @grace_ms; reaped. Its wait(2) status into @status. 0, 1 when it took SIGKILL, or -errno.
 */
int launch_stop(struct launch *l, int sig, int grace_ms, int *status);
/* A job's wait(2) @status as a shell's $? has it: its exit code, or 128 + the killing signal. */
int launch_shell_status(int status);

/*
 * The program image CMD will run, found as execvp finds it: the file itself, or for a script
 * (#!) its interpreter (through env too). Returns 0, -ENOEXEC when that is no ELF file (an
 * interpreter that is a script itself is not followed), or -errno.
 */
int launch_find_image(const char *cmd, char *out, size_t len);

/*
 * List the shared libraries the dynamic loader would load for the program image @exe run
 * with @argv (as ldd does, through LD_TRACE_LOADED_OBJECTS, which makes the loader print and
 * exit before main). Only done for dynamically linked executables: a static one would simply
 * run. Calls @cb per path, with the name the program asks for ("libstdc++.so.6"; NULL for
 * the loader itself).
 */
int launch_needed_libs(const char *exe, char **argv,
		       int (*cb)(const char *path, const char *name, void *ctx), void *ctx);

#endif
