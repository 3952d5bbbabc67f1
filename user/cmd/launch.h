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
 * List the shared libraries the dynamic loader would load for CMD (as ldd does, through
 * LD_TRACE_LOADED_OBJECTS, which makes the loader print and exit before main). Only done
 * for dynamically linked executables: a static one would simply run. Calls @cb per path.
 */
int launch_needed_libs(char **argv, int (*cb)(const char *path, void *ctx), void *ctx);

#endif
