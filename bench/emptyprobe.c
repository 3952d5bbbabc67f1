// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * emptyprobe: attach bench/empty.bpf.c's do-nothing uprobe + uretprobe to one offset of one
 * file in one process, then wait for SIGINT/SIGTERM. The bench attaches it where
 * spyre-bpftrace attaches (past endbr64), so the two differ only in what the programs do.
 *
 * Two kinds of link, because the kernel's dispatch cost differs: perf-event uprobes (what
 * libbpf 1.1 offers) and, with --multi, a BPF_TRACE_UPROBE_MULTI link (kernel >= 6.6), which
 * spyre-bpftrace uses when the kernel has it. libbpf 1.1 has no wrapper for the latter, so the
 * link is created with the raw syscall.
 *
 * With --ret-site OFF[,OFF...] the return half is a plain uprobe on each of those offsets (a
 * function's return instructions and tail jumps, as `spyre-bpftrace list` prints them): the
 * limit of spyre-bpftrace's default mechanism, which never touches the traced stack. With
 * --ret-emu as well (x86-64, a kernel whose uprobe programs may write their registers), those
 * uprobes do the return themselves, so the kernel does not single-step the ret: the limit of
 * the default's emulated returns.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "empty.skel.h"
#include "attach/umulti.h"
#include "common/process.h"

#define MAX_SITES	16

static void usage(FILE *f)
{
	fprintf(f, "usage: emptyprobe -p PID -b FILE -o OFFSET [--multi] [--no-ret]\n"
		   "                  [--ret-site OFF[,OFF...] [--ret-emu]] [--ready-file F]\n"
		   "OFFSET is a file offset (0x... accepted), as spyre-bpftrace list prints it.\n"
		   "--ret-site: the return half as uprobes on these offsets (at most %d), not a\n"
		   "uretprobe on OFFSET. --ret-emu: those uprobes do the return (x86-64; ret\n"
		   "sites only, no tail jumps).\n", MAX_SITES);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "binary", required_argument, NULL, 'b' },
		{ "offset", required_argument, NULL, 'o' },
		{ "no-ret", no_argument, NULL, 'N' },
		{ "multi", no_argument, NULL, 'M' },
		{ "ready-file", required_argument, NULL, 'R' },
		{ "ret-site", required_argument, NULL, 'S' },
		{ "ret-emu", no_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *binary = NULL, *ready = NULL;
	struct bpf_link *entry = NULL, *ret[MAX_SITES] = {};
	struct empty_bpf *skel = NULL;
	unsigned long offset = 0, sites[MAX_SITES];
	bool no_ret = false, multi = false, emu = false;
	struct bpf_program *exit_prog;
	int c, pid = -1, sig, rc = 1, nsites = 0, mfd[2] = { -1, -1 };
	char *p, *end;
	sigset_t set;

	while ((c = getopt_long(argc, argv, "p:b:o:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			pid = atoi(optarg);
			break;
		case 'b':
			binary = optarg;
			break;
		case 'o':
			offset = strtoul(optarg, NULL, 0);
			break;
		case 'N':
			no_ret = true;
			break;
		case 'M':
			multi = true;
			break;
		case 'R':
			ready = optarg;
			break;
		case 'E':
			emu = true;
			break;
		case 'S':
			for (p = optarg; *p; p = *end ? end + 1 : end) {
				if (nsites == MAX_SITES) {
					fprintf(stderr, "emptyprobe: more than %d return sites\n",
						MAX_SITES);
					return 2;
				}
				sites[nsites] = strtoul(p, &end, 0);
				if (end == p || !sites[nsites] || (*end && *end != ',')) {
					fprintf(stderr, "emptyprobe: bad --ret-site '%s'\n", optarg);
					return 2;
				}
				nsites++;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (pid <= 0 || !binary || !offset || (emu && !nsites)) {
		usage(stderr);
		return 2;
	}
	/* blocked first: a stop request that arrives while attaching is not lost */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);

	skel = empty_bpf__open();
	if (!skel) {
		fprintf(stderr, "emptyprobe: cannot open: %s\n", strerror(errno));
		goto out;
	}
	/* the program that writes its registers loads only where the kernel allows it */
	exit_prog = emu ? skel->progs.empty_ret_emu : skel->progs.empty_exit;
	bpf_program__set_autoload(skel->progs.empty_ret_emu, emu);
	bpf_program__set_autoload(skel->progs.empty_exit, !emu);
	if (multi) {
		bpf_program__set_expected_attach_type(skel->progs.empty_entry,
						      SPYRE_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(exit_prog, SPYRE_TRACE_UPROBE_MULTI);
	}
	if (empty_bpf__load(skel)) {
		fprintf(stderr, "emptyprobe: cannot load: %s\n", strerror(errno));
		goto out;
	}
	if (multi) {
		mfd[0] = umulti_link(bpf_program__fd(skel->progs.empty_entry), binary, &offset,
				     NULL, 1, false, pid);
		if (mfd[0] < 0) {
			fprintf(stderr, "emptyprobe: uprobe_multi %s+0x%lx: %s\n", binary, offset,
				strerror(-mfd[0]));
			goto out;
		}
		if (!no_ret) {
			mfd[1] = umulti_link(bpf_program__fd(exit_prog), binary,
					     nsites ? sites : &offset, NULL, nsites ? nsites : 1,
					     !nsites, pid);
			if (mfd[1] < 0) {
				fprintf(stderr, "emptyprobe: %s %s+0x%lx: %s\n",
					nsites ? "return-site uprobe_multi" : "uretprobe_multi", binary,
					nsites ? sites[0] : offset, strerror(-mfd[1]));
				goto out;
			}
		}
	} else {
		entry = bpf_program__attach_uprobe(skel->progs.empty_entry, false, pid, binary,
						   offset);
		if (!entry) {
			fprintf(stderr, "emptyprobe: uprobe %s+0x%lx: %s\n", binary, offset,
				strerror(errno));
			goto out;
		}
		for (int i = 0; !no_ret && i < (nsites ? nsites : 1); i++) {
			unsigned long o = nsites ? sites[i] : offset;

			ret[i] = bpf_program__attach_uprobe(exit_prog, !nsites, pid, binary, o);
			if (!ret[i]) {
				fprintf(stderr, "emptyprobe: %s %s+0x%lx: %s\n",
					nsites ? "return-site uprobe" : "uretprobe", binary, o,
					strerror(errno));
				goto out;
			}
		}
	}
	if (ready && write_ready_file(ready)) {
		fprintf(stderr, "emptyprobe: cannot write %s\n", ready);
		goto out;
	}
	sigwait(&set, &sig);
	rc = 0;
out:
	for (int i = 0; i < 2; i++)
		if (mfd[i] >= 0)
			close(mfd[i]);
	for (int i = 0; i < MAX_SITES; i++)
		bpf_link__destroy(ret[i]);
	bpf_link__destroy(entry);
	empty_bpf__destroy(skel);
	return rc;
}
