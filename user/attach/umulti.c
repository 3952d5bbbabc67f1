// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>
#include "attach/umulti.h"
#include "common/util.h"

#define SPYRE_F_UPROBE_MULTI_RETURN	1

/* The BPF_LINK_CREATE attributes of a uprobe_multi link, laid out as in the kernel's union. */
struct uprobe_multi_attr {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 uflags;
	__u32 pid;
	__u32 pad;
	__u64 reserved[8];	/* the rest of union bpf_attr must read as zero */
};

static pthread_once_t probed = PTHREAD_ONCE_INIT;
static bool supported;

static void probe(void)
{
	static const char name[] = "bpf_uprobe_multi_link";
	struct stat st;
	void *btf;
	int fd;

	if (env_is_1("SPYRE_NO_UPROBE_MULTI"))
		return;
	/*
	 * The type's name in the BTF string table is enough, and a memmem over the mapped file
	 * takes ~1 ms where parsing the whole BTF took ~20 ms of attach time.
	 */
	fd = open("/sys/kernel/btf/vmlinux", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (!fstat(fd, &st) && st.st_size > 0) {
		btf = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (btf != MAP_FAILED) {
			/* the string table holds it NUL-terminated on both sides */
			const char *p = btf, *end = p + st.st_size;

			while ((p = memmem(p, end - p, name, sizeof(name))) && !supported) {
				supported = p > (const char *)btf && p[-1] == 0;
				p++;
			}
			munmap(btf, st.st_size);
		} else {
			/*
			 * Before 6.16 the file does not map: read it, a page per read() (sysfs
			 * hands out no more; one pread of the whole size saw only the first page)
			 */
			char *buf = malloc(st.st_size);
			size_t len = 0;
			ssize_t n = 1;

			while (buf && len < (size_t)st.st_size &&
			       ((n = pread(fd, buf + len, st.st_size - len, len)) > 0 ||
				(n < 0 && errno == EINTR)))
				len += n > 0 ? n : 0;
			supported = buf && memmem(buf, len, name, sizeof(name));
			free(buf);
		}
	}
	close(fd);
}

bool umulti_supported(void)
{
	pthread_once(&probed, probe);
	return supported;
}

int umulti_link(int prog_fd, const char *path, const unsigned long *offs, const __u64 *cookies,
		int n, bool ret, int pid)
{
	struct uprobe_multi_attr a = {
		.prog_fd = prog_fd,
		.attach_type = SPYRE_TRACE_UPROBE_MULTI,
		.path = (__u64)(unsigned long)path,
		.offsets = (__u64)(unsigned long)offs,
		.cookies = (__u64)(unsigned long)cookies,
		.cnt = n,
		.uflags = ret ? SPYRE_F_UPROBE_MULTI_RETURN : 0,
		.pid = pid > 0 ? pid : 0,
	};
	int fd = syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));

	return fd < 0 ? -errno : fd;
}
