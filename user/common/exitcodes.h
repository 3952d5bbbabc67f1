/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The exit codes every subcommand answers with: here, at the bottom, so that the offline
 * subcommands and common/ can return them without reaching up into cmd/.
 */
#ifndef SPYRE_EXITCODES_H
#define SPYRE_EXITCODES_H

/* Distinct, documented exit codes (docs/user-guide.md): scripts tell failures apart by them. */
enum spyre_exit {
	EXIT_OK = 0,
	EXIT_ERROR = 1,		/* anything else (libbpf load/attach failure, ...) */
	EXIT_USAGE = 2,		/* bad options, malformed probe spec */
	EXIT_NO_PID = 3,	/* no such process (or not a user process) */
	EXIT_PERM = 4,		/* not root / missing CAP_BPF, CAP_PERFMON */
	EXIT_NO_RUNTIME = 5,	/* nothing in the target matches the probe table */
	EXIT_NO_BTF = 6,	/* kernel without BTF (/sys/kernel/btf/vmlinux) */
	EXIT_OUTPUT = 7,	/* output cannot be created or written */
	EXIT_CHECK = 8,		/* `check` found problems in a trace */
	EXIT_TARGET_KILLED = 9,	/* the traced process was killed by a signal while traced */
	EXIT_NO_MATCH = 10,	/* a probe of --probe/--probes resolves nowhere (--allow-missing) */
};

#endif
