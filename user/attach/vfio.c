// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Driver tier (see vfio.h): choose and attach the BPF front end, read its counters. Its options
 * are parsed in cmd/env.c, its functions looked up in resolve/kallsyms.c, its records decoded in
 * stream/vfio_decode.c and reported in report/driver.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common/parallel.h"
#include "common/log.h"
#include "attach/vfio.h"
#include "vfio.skel.h"

struct vfio_tracer {
	struct vfio_config cfg;
	struct vfio_funcs funcs;	/* funcs.n = 0: none to find (tracepoints, off) */
	char modules[SPYRE_DRV_MAX_FUNCS][VFIO_FUNC_NAME_MAX];
	bool present[SPYRE_DRV_MAX_FUNCS];
	enum spyre_drv_path path;
	struct vfio_bpf *skel;
	struct bpf_link *links[2 * SPYRE_DRV_MAX_FUNCS];
	int nlinks;
};

/*
 * --driver-funcs by default: the container, group and device ioctl entry points, and the type1
 * IOMMU backend (reached from the container's, or directly when that one is inlined).
 */
static const struct vfio_funcs default_funcs = {
	.n = 4,
	.name = { "vfio_fops_unl_ioctl", "vfio_group_fops_unl_ioctl", "vfio_device_fops_unl_ioctl",
		  "vfio_iommu_type1_ioctl" },
};

const char *vfio_path_name(enum spyre_drv_path p)
{
	switch (p) {
	case SPYRE_DRV_FENTRY:
		return "fentry";
	case SPYRE_DRV_KPROBE:
		return "kprobe";
	case SPYRE_DRV_TRACEPOINT:
		return "tracepoint";
	default:
		return "off";
	}
}

int vfio_plan(enum vfio_mode mode, const struct vfio_caps *caps, enum spyre_drv_path *out,
	      char *why, size_t whylen)
{
	static const char no_funcs[] = "none of the driver functions is in /proc/kallsyms "
				       "(VFIO modules not loaded, or the functions were inlined; "
				       "see --driver-funcs)";
	int n = 0;

	if (whylen)
		why[0] = 0;
	switch (mode) {
	case VFIO_MODE_OFF:
		return 0;
	case VFIO_MODE_FENTRY:
		if (!caps->nfuncs)
			snprintf(why, whylen, "fentry: %s", no_funcs);
		else if (!caps->fentry_btf)
			snprintf(why, whylen, "fentry: no BTF for the driver functions "
				 "(/sys/kernel/btf/vmlinux and the module's /sys/kernel/btf/MODULE)");
		else
			out[n++] = SPYRE_DRV_FENTRY;
		return n;
	case VFIO_MODE_KPROBE:
		if (!caps->kprobes)
			snprintf(why, whylen, "kprobes are not available on this kernel (no "
				 "/sys/bus/event_source/devices/kprobe, no kprobe_events: "
				 "CONFIG_KPROBES is off?); use --driver auto or tracepoint");
		else if (!caps->nfuncs)
			snprintf(why, whylen, "kprobe: %s", no_funcs);
		else
			out[n++] = SPYRE_DRV_KPROBE;
		return n;
	case VFIO_MODE_TRACEPOINT:
		out[n++] = SPYRE_DRV_TRACEPOINT;
		return n;
	case VFIO_MODE_AUTO:
		if (caps->nfuncs && caps->fentry_btf)
			out[n++] = SPYRE_DRV_FENTRY;
		if (caps->nfuncs && caps->kprobes)
			out[n++] = SPYRE_DRV_KPROBE;
		out[n++] = SPYRE_DRV_TRACEPOINT;
		return n;
	}
	return 0;
}

int vfio_open(struct vfio_tracer **out, const struct vfio_config *cfg, char *err, size_t errlen)
{
	const struct vfio_funcs *funcs = cfg->funcs ? cfg->funcs : &default_funcs;
	struct vfio_tracer *v;

	*out = NULL;
	if (funcs->n < 0 || funcs->n > SPYRE_DRV_MAX_FUNCS) {
		snprintf(err, errlen, "--driver-funcs: at most %d functions", SPYRE_DRV_MAX_FUNCS);
		return -EINVAL;
	}
	v = calloc(1, sizeof(*v));
	if (!v) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	v->cfg = *cfg;
	v->cfg.funcs = NULL;	/* the caller's, copied: it need not outlive the open */
	/* the tracepoints see every ioctl: no function to find */
	if (cfg->mode != VFIO_MODE_OFF && cfg->mode != VFIO_MODE_TRACEPOINT)
		v->funcs = *funcs;
	*out = v;
	return 0;
}

/* --- kernel side ------------------------------------------------------------------------------ */

static void probe_caps(struct vfio_tracer *v, struct vfio_caps *caps)
{
	const char *ks = v->cfg.kallsyms ? v->cfg.kallsyms : "/proc/kallsyms";
	const char *hint = "vfio";
	int n;

	memset(caps, 0, sizeof(*caps));
	/*
	 * No VFIO in this kernel at all (module or built-in both show in /sys/module): none of
	 * its functions can be probed, and reading /proc/kallsyms costs ~40 ms of attach time.
	 */
	/* every default function has "vfio" in its name: the other 100k lines skipped fast */
	for (int i = 0; i < v->funcs.n && hint; i++)
		if (!strstr(v->funcs.name[i], hint))
			hint = NULL;
	if (!v->cfg.kallsyms && access("/sys/module/vfio", F_OK))
		n = 0;
	else
		n = kallsyms_find(ks, hint, v->funcs.name, v->funcs.n, v->present, v->modules);
	caps->nfuncs = n > 0 ? n : 0;
	caps->fentry_btf = !access("/sys/kernel/btf/vmlinux", R_OK);
	for (int i = 0; i < v->funcs.n && caps->fentry_btf; i++) {
		char p[128];

		if (!v->present[i] || !v->modules[i][0])
			continue;
		snprintf(p, sizeof(p), "/sys/kernel/btf/%s", v->modules[i]);
		caps->fentry_btf = !access(p, R_OK);
	}
	caps->kprobes = !access("/sys/bus/event_source/devices/kprobe", F_OK) ||
			!access("/sys/kernel/tracing/kprobe_events", F_OK) ||
			!access("/sys/kernel/debug/tracing/kprobe_events", F_OK);
}

/*
 * libbpf reads tracepoint ids from debugfs's tracing directory when it exists, else from
 * /sys/kernel/tracing, which is empty until tracefs is mounted there: mount it ourselves.
 */
static int ensure_tracefs(char *why, size_t len)
{
	const char *dir = access("/sys/kernel/debug/tracing", F_OK) ? "/sys/kernel/tracing" :
				"/sys/kernel/debug/tracing";
	char id[128];

	snprintf(id, sizeof(id), "%s/events/syscalls/sys_enter_ioctl/id", dir);
	if (!access(id, R_OK))
		return 0;
	if (!strcmp(dir, "/sys/kernel/tracing") && access("/sys/kernel/tracing/events", F_OK)) {
		if (mount("tracefs", "/sys/kernel/tracing", "tracefs",
			  MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RELATIME, NULL)) {
			int err = -errno;

			snprintf(why, len, "tracepoint: cannot mount tracefs on /sys/kernel/tracing: "
				 "%s", strerror(-err));
			return err;
		}
		if (!access(id, R_OK))
			return 0;
	}
	snprintf(why, len, "tracepoint: no syscalls:sys_enter_ioctl in %s/events "
		 "(CONFIG_FTRACE_SYSCALLS off?)", dir);
	return -ENOENT;
}

static void drop_links(struct vfio_tracer *v)
{
	struct bpf_link *pass_links[2 * SPYRE_DRV_MAX_FUNCS];

	/*
	 * Returns first: an entry without its return leaves a record the LRU map ages out. Each
	 * pass side by side: every kprobe or tracepoint event waits for grace periods when it
	 * goes (~70 ms each here).
	 */
	for (int pass = 1; pass >= 0; pass--) {
		int n = 0;

		for (int i = 0; i < v->nlinks; i++) {
			if ((i & 1) != pass || !v->links[i])
				continue;
			pass_links[n++] = v->links[i];
			v->links[i] = NULL;
		}
		destroy_links_parallel(pass_links, n);
	}
	v->nlinks = 0;
}

static struct bpf_program *slot_prog(struct vfio_bpf *skel, const char *kind, int i)
{
	char name[32];

	snprintf(name, sizeof(name), "vfio_%s%d", kind, i);
	return bpf_object__find_program_by_name(skel->obj, name);
}

/* Keep @l; -errno when the attach that made it failed. */
static int add_link(struct vfio_tracer *v, struct bpf_link *l)
{
	if (!l)
		return errno ? -errno : -EINVAL;
	v->links[v->nlinks++] = l;
	return 0;
}

/* One function: entry first, return second (drop_links relies on the order). */
static int attach_func(struct vfio_tracer *v, enum spyre_drv_path path, int i)
{
	struct vfio_bpf *skel = v->skel;
	const char *func = v->funcs.name[i];
	LIBBPF_OPTS(bpf_kprobe_opts, o, .bpf_cookie = i);
	int err;

	if (path == SPYRE_DRV_FENTRY) {
		err = add_link(v, bpf_program__attach(slot_prog(skel, "fentry", i)));
		return err ? err : add_link(v, bpf_program__attach(slot_prog(skel, "fexit", i)));
	}
	err = add_link(v, bpf_program__attach_kprobe_opts(skel->progs.vfio_kprobe, func, &o));
	if (err)
		return err;
	o.retprobe = true;
	return add_link(v, bpf_program__attach_kprobe_opts(skel->progs.vfio_kretprobe, func, &o));
}

static int attach_path(struct vfio_tracer *v, enum spyre_drv_path path, char *why, size_t len)
{
	struct vfio_bpf *skel = v->skel;
	int err;

	if (path == SPYRE_DRV_TRACEPOINT) {
		err = add_link(v, bpf_program__attach_tracepoint(skel->progs.vfio_sys_enter,
								 "syscalls", "sys_enter_ioctl"));
		if (!err)
			err = add_link(v, bpf_program__attach_tracepoint(skel->progs.vfio_sys_exit,
									 "syscalls", "sys_exit_ioctl"));
		if (err)
			snprintf(why, len, "tracepoint: cannot attach to syscalls:sys_*_ioctl: %s",
				 strerror(-err));
		return err;
	}
	for (int i = 0; i < v->funcs.n; i++) {
		if (!v->present[i])
			continue;
		err = attach_func(v, path, i);
		if (err) {
			snprintf(why, len, "%s: cannot attach to %s: %s", vfio_path_name(path),
				 v->funcs.name[i], strerror(-err));
			return err;
		}
	}
	return 0;
}

static int try_path(struct vfio_tracer *v, enum spyre_drv_path path, int events_fd, char *why,
		    size_t len)
{
	bool quiet = v->cfg.mode == VFIO_MODE_AUTO && !v->cfg.verbose;
	struct bpf_program *prog;
	struct vfio_bpf *skel;
	int err;

	if (path == SPYRE_DRV_TRACEPOINT && (err = ensure_tracefs(why, len)))
		return err;
	skel = vfio_bpf__open();
	if (!skel) {
		err = -errno;
		snprintf(why, len, "%s: cannot open the BPF object: %s", vfio_path_name(path),
			 strerror(-err));
		return err;
	}
	v->skel = skel;
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, false);
	/* file_operations handlers get the struct file first; backends (type1) do not */
	for (int i = 0; i < v->funcs.n; i++)
		if (strstr(v->funcs.name[i], "fops"))
			skel->rodata->file_funcs |= 1u << i;
	skel->rodata->targ_tgid = v->cfg.tgid;
	/* fault injection for tests: the kernel skipping the exit program (bpf/vfio.bpf.c) */
	if (getenv("SPYRE_TEST_SKIP_SYS_EXIT"))
		skel->rodata->test_skip_exit = strtoul(getenv("SPYRE_TEST_SKIP_SYS_EXIT"), NULL, 10);
	skel->rodata->test_skip_pair = getenv("SPYRE_TEST_SKIP_SYS_PAIR") != NULL;
	switch (path) {
	case SPYRE_DRV_FENTRY:
		for (int i = 0; i < v->funcs.n; i++) {
			struct bpf_program *fe = slot_prog(skel, "fentry", i);
			struct bpf_program *fx = slot_prog(skel, "fexit", i);

			if (!v->present[i] || !fe || !fx)
				continue;
			bpf_program__set_autoload(fe, true);
			bpf_program__set_autoload(fx, true);
			bpf_program__set_attach_target(fe, 0, v->funcs.name[i]);
			bpf_program__set_attach_target(fx, 0, v->funcs.name[i]);
		}
		break;
	case SPYRE_DRV_KPROBE:
		bpf_program__set_autoload(skel->progs.vfio_kprobe, true);
		bpf_program__set_autoload(skel->progs.vfio_kretprobe, true);
		break;
	default:
		bpf_program__set_autoload(skel->progs.vfio_sys_enter, true);
		bpf_program__set_autoload(skel->progs.vfio_sys_exit, true);
		break;
	}
	err = bpf_map__reuse_fd(skel->maps.events, events_fd);
	if (err) {
		snprintf(why, len, "%s: cannot share the ring buffer: %s", vfio_path_name(path),
			 strerror(-err));
		goto fail;
	}
	/* an expected refusal (fentry under lockdown) must not flood stderr in auto mode */
	libbpf_quiet(quiet);
	err = vfio_bpf__load(skel);
	libbpf_quiet(false);
	if (err) {
		snprintf(why, len, "%s: loading was refused: %s%s", vfio_path_name(path),
			 strerror(-err), err == -EPERM ?
			 " (kernel lockdown, or CAP_BPF/CAP_PERFMON missing)" :
			 " (run with -v for libbpf's log)");
		goto fail;
	}
	err = attach_path(v, path, why, len);
	if (err)
		goto fail;
	v->path = path;
	return 0;
fail:
	drop_links(v);
	vfio_bpf__destroy(skel);
	v->skel = NULL;
	return err;
}

int vfio_attach(struct vfio_tracer *v, int events_fd, char *err, size_t errlen)
{
	enum spyre_drv_path plan[3];
	struct vfio_caps caps;
	char why[512], notes[1024] = "";
	int n, rc = -EOPNOTSUPP;

	if (errlen)
		err[0] = 0;
	v->path = SPYRE_DRV_OFF;
	if (v->cfg.mode == VFIO_MODE_OFF)
		return 0;
	probe_caps(v, &caps);
	n = vfio_plan(v->cfg.mode, &caps, plan, why, sizeof(why));
	if (!n) {
		snprintf(err, errlen, "%s", why);
		return -EOPNOTSUPP;
	}
	for (int i = 0; i < n; i++) {
		size_t used = strlen(notes);

		why[0] = 0;
		rc = try_path(v, plan[i], events_fd, why, sizeof(why));
		if (!rc)
			return 0;
		snprintf(notes + used, sizeof(notes) - used, "%s%s", used ? "; " : "", why);
	}
	if (v->cfg.mode == VFIO_MODE_AUTO) {
		snprintf(err, errlen, "driver tier off: %s", notes);
		return 0;
	}
	snprintf(err, errlen, "%s", notes);
	return rc;
}

void vfio_record(struct vfio_tracer *v, bool on)
{
	if (v && v->skel && v->skel->data)
		v->skel->data->drv_on = on;
}

void vfio_detach(struct vfio_tracer *v)
{
	if (v)
		drop_links(v);
}

void vfio_close(struct vfio_tracer *v)
{
	if (!v)
		return;
	drop_links(v);
	vfio_bpf__destroy(v->skel);
	free(v);
}

enum spyre_drv_path vfio_path(const struct vfio_tracer *v)
{
	return v ? v->path : SPYRE_DRV_OFF;
}

const char *vfio_func(const struct vfio_tracer *v, int i)
{
	return v && i >= 0 && i < v->funcs.n ? v->funcs.name[i] : NULL;
}

bool vfio_func_present(const struct vfio_tracer *v, int i)
{
	return vfio_func(v, i) && v->present[i];
}

/* --- counters --------------------------------------------------------------------------------- */

static void read_counters(const struct vfio_tracer *v, struct spyre_drv_counters *sum)
{
	int ncpu = libbpf_num_possible_cpus();
	struct spyre_drv_counters *pc;
	__u32 zero = 0;

	memset(sum, 0, sizeof(*sum));
	if (!v->skel || ncpu <= 0)
		return;
	pc = calloc(ncpu, sizeof(*pc));
	if (!pc)
		return;
	if (!bpf_map_lookup_elem(bpf_map__fd(v->skel->maps.drv_counters), &zero, pc)) {
		for (int i = 0; i < ncpu; i++) {
			sum->hits += pc[i].hits;
			sum->drops_ring += pc[i].drops_ring;
			sum->unmatched += pc[i].unmatched;
			sum->nested += pc[i].nested;
			sum->unpaired += pc[i].unpaired;
		}
	}
	free(pc);
}

/*
 * Runs of our programs the kernel skipped and counted (per program): it runs no kprobe or
 * tracepoint program on a CPU where another one, or a bpf() map syscall, is in progress. Each is
 * an entry or a return not seen. It skips others without counting them (user guide, "Driver
 * tier"): those show only as unpaired records.
 */
static uint64_t kernel_misses(const struct vfio_tracer *v)
{
	struct bpf_program *prog;
	uint64_t n = 0;

	if (!v->skel)
		return 0;
	bpf_object__for_each_program(prog, v->skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			n += info.recursion_misses;
	}
	return n;
}

void vfio_counts(const struct vfio_tracer *v, struct vfio_counts *out)
{
	struct spyre_drv_counters c;

	read_counters(v, &c);
	out->drops_ring = c.drops_ring;
	out->unpaired = c.unpaired;
	out->missed = kernel_misses(v);
}
