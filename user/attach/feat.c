// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/log.h"
#include "attach/umulti.h"
#include "attach/feat.h"
#include "spyre_feat.skel.h"

enum feat_prog { FEAT_FIND_VMA, FEAT_WRITE_USER, FEAT_EMPTY, FEAT_COUNT, FEAT_COUNT_RET };

static struct bpf_program *prog_of(struct spyre_feat_bpf *o, enum feat_prog which)
{
	switch (which) {
	case FEAT_FIND_VMA:
		return o->progs.feat_find_vma;
	case FEAT_WRITE_USER:
		return o->progs.feat_write_user;
	case FEAT_EMPTY:
		return o->progs.feat_empty;
	case FEAT_COUNT:
		return o->progs.feat_count;
	case FEAT_COUNT_RET:
#if defined(__x86_64__)	/* the only architecture whose returns BPF can do so far */
		return o->progs.feat_count_ret;
#else
		return NULL;
#endif
	}
	return NULL;
}

/*
 * Program @which of the object loaded alone (the others not: a program the kernel refuses would
 * fail them all), counting in @map when it counts (-1: not one that counts), for uprobe_multi
 * links with @multi: a copy of its fd that outlives the object, or -errno. The verifier's words
 * in @log. No CO-RE relocation: libbpf does not read the kernel's BTF for it. A load took
 * ~0.5 ms here (strace: the object's BTF, 15.8 KB with the callback's typed arguments, 0.3 ms;
 * the program 0.1-0.2 ms), against ~0.2 ms for the hand-built programs before.
 */
static int feat_load(enum feat_prog which, int map, bool multi, char *log, size_t len)
{
	struct spyre_feat_bpf *o;
	struct bpf_program *p, *want;
	int fd, err;

	o = spyre_feat_bpf__open();
	if (!o)
		return -errno;
	want = prog_of(o, which);
	if (!want) {	/* not built for this architecture */
		spyre_feat_bpf__destroy(o);
		return -EOPNOTSUPP;
	}
	bpf_object__for_each_program(p, o->obj)
		bpf_program__set_autoload(p, p == want);
	if (map >= 0)
		err = bpf_map__reuse_fd(o->maps.feat_hits, map);
	else
		err = bpf_map__set_autocreate(o->maps.feat_hits, false);
	if (!err && multi)
		err = bpf_program__set_expected_attach_type(want, SPYRE_TRACE_UPROBE_MULTI);
	if (!err && log && len) {
		log[0] = 0;
		err = bpf_program__set_log_buf(want, log, len) ?:
		      bpf_program__set_log_level(want, 1);
	}
	if (err) {
		spyre_feat_bpf__destroy(o);
		return err;
	}
	/* a refusal is an answer here, not an error to print */
	libbpf_quiet(true);
	err = spyre_feat_bpf__load(o);
	libbpf_quiet(false);
	fd = err ? err : dup(bpf_program__fd(want));
	if (fd < 0 && !err)
		fd = -errno;
	spyre_feat_bpf__destroy(o);
	return fd;
}

bool feat_find_vma(void)
{
	int fd = feat_load(FEAT_FIND_VMA, -1, false, NULL, 0);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

bool feat_write_user(void)
{
	char log[4096];
	int fd = feat_load(FEAT_WRITE_USER, -1, false, log, sizeof(log));

	/* refused either way (a NULL destination): its words say whether for the helper */
	if (fd >= 0)
		close(fd);
	return log[0] && !strstr(log, "cannot use helper") && !strstr(log, "unknown func") &&
	       !strstr(log, "invalid func");
}

int feat_empty_prog(bool multi)
{
	return feat_load(FEAT_EMPTY, -1, multi, NULL, 0);
}

int feat_count_prog(int map, bool emulate, bool multi, char *log, size_t len)
{
	return feat_load(emulate ? FEAT_COUNT_RET : FEAT_COUNT, map, multi, log, len);
}
