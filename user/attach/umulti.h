/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * uprobe_multi links (Linux 6.6+): many uprobes of one file behind one BPF link, made with a
 * raw BPF_LINK_CREATE because libbpf 1.1 predates them.
 */
#ifndef SPYRE_UMULTI_H
#define SPYRE_UMULTI_H

#include <stdbool.h>
#include <linux/types.h>

/* enum bpf_attach_type of Linux 6.6, absent from older uapi headers: programs load with it */
#define SPYRE_TRACE_UPROBE_MULTI	48

/*
 * Does the kernel have them? Older kernels accept the attach type at load and only refuse the
 * link (6.1 does): the kernel's BTF is asked, once per process. SPYRE_NO_UPROBE_MULTI=1 says no.
 */
bool umulti_supported(void);

/*
 * Link @prog_fd to the @n uprobes at file offsets @offs of @path (return probes if @ret), with
 * @cookies (may be NULL), for process @pid only if > 0. Returns the link's fd or -errno.
 */
int umulti_link(int prog_fd, const char *path, const unsigned long *offs, const __u64 *cookies,
		int n, bool ret, int pid);

#endif
