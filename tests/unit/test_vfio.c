// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "offline/jsonparse.h"
#include "output/trace_writer.h"
#include "unit.h"
#include "attach/vfio.h"
#include "stream/vfio_decode.h"
#include "report/driver.h"

#define VIO(n)	_IO(';', 100 + (n))

TEST(vfio_cmd_names)
{
	static const char *const common[] = {
		"VFIO_GET_API_VERSION", "VFIO_CHECK_EXTENSION", "VFIO_SET_IOMMU",
		"VFIO_GROUP_GET_STATUS", "VFIO_GROUP_SET_CONTAINER", "VFIO_GROUP_UNSET_CONTAINER",
		"VFIO_GROUP_GET_DEVICE_FD", "VFIO_DEVICE_GET_INFO", "VFIO_DEVICE_GET_REGION_INFO",
		"VFIO_DEVICE_GET_IRQ_INFO", "VFIO_DEVICE_SET_IRQS", "VFIO_DEVICE_RESET",
	};

	/* the fd's kind does not matter below 112 */
	for (int i = 0; i < 12; i++) {
		CHECK_STR(vfio_cmd_name(VIO(i), VFIO_FD_UNKNOWN), common[i]);
		CHECK_STR(vfio_cmd_name(VIO(i), VFIO_FD_DEVICE), common[i]);
	}
#if defined(__x86_64__) || defined(__s390x__)
	CHECK_STR(vfio_cmd_name(0x3B64, VFIO_FD_UNKNOWN), "VFIO_GET_API_VERSION");
	CHECK_STR(vfio_cmd_name(0x3B71, VFIO_FD_CONTAINER), "VFIO_IOMMU_MAP_DMA");
	CHECK_STR(vfio_cmd_name(0x3B75, VFIO_FD_DEVICE), "VFIO_DEVICE_FEATURE");
#endif
	/* 112.. mean one thing on a container, another on a device */
	CHECK_STR(vfio_cmd_name(VIO(13), VFIO_FD_CONTAINER), "VFIO_IOMMU_MAP_DMA");
	CHECK_STR(vfio_cmd_name(VIO(14), VFIO_FD_CONTAINER), "VFIO_IOMMU_UNMAP_DMA");
	CHECK_STR(vfio_cmd_name(VIO(13), VFIO_FD_UNKNOWN), "VFIO_IOMMU_MAP_DMA");
	CHECK_STR(vfio_cmd_name(VIO(13), VFIO_FD_DEVICE), "VFIO_DEVICE_PCI_HOT_RESET");
	CHECK_STR(vfio_cmd_name(VIO(12), VFIO_FD_DEVICE), "VFIO_DEVICE_GET_PCI_HOT_RESET_INFO");
	CHECK_STR(vfio_cmd_name(VIO(16), VFIO_FD_DEVICE), "VFIO_DEVICE_IOEVENTFD");
	CHECK_STR(vfio_cmd_name(VIO(17), VFIO_FD_DEVICE), "VFIO_DEVICE_FEATURE");
	CHECK_STR(vfio_cmd_name(VIO(15), VFIO_FD_CONTAINER), "VFIO_IOMMU_ENABLE");
	CHECK_STR(vfio_cmd_name(VIO(21), VFIO_FD_CONTAINER), "VFIO_EEH_PE_OP");
	/* past the last one, other ioctl types, or with direction/size bits: not VFIO */
	CHECK(vfio_cmd_name(VIO(18), VFIO_FD_DEVICE) == NULL);
	CHECK(vfio_cmd_name(VIO(22), VFIO_FD_CONTAINER) == NULL);
	CHECK(vfio_cmd_name(VIO(0) - 1, VFIO_FD_UNKNOWN) == NULL);
	CHECK(vfio_cmd_name(_IOR(';', 100, int), VFIO_FD_UNKNOWN) == NULL);
	CHECK(vfio_cmd_name(_IO('T', 100), VFIO_FD_UNKNOWN) == NULL);
	CHECK(vfio_cmd_name(0, VFIO_FD_UNKNOWN) == NULL);
}

TEST(vfio_kinds)
{
	CHECK_EQ_INT(vfio_kind_of_path("/dev/vfio/vfio"), VFIO_FD_CONTAINER);
	CHECK_EQ_INT(vfio_kind_of_path("/dev/vfio/12"), VFIO_FD_GROUP);
	CHECK_EQ_INT(vfio_kind_of_path("/dev/vfio/noiommu-0"), VFIO_FD_GROUP);
	CHECK_EQ_INT(vfio_kind_of_path("anon_inode:[vfio-device]"), VFIO_FD_DEVICE);
	CHECK_EQ_INT(vfio_kind_of_path("/dev/vfio/devices/vfio0"), VFIO_FD_DEVICE);
	CHECK_EQ_INT(vfio_kind_of_path("/dev/iommu"), VFIO_FD_CONTAINER);
	/* the mock's stand-ins */
	CHECK_EQ_INT(vfio_kind_of_path("/tmp/x/vfio"), VFIO_FD_CONTAINER);
	CHECK_EQ_INT(vfio_kind_of_path("/tmp/x/3"), VFIO_FD_GROUP);
	CHECK_EQ_INT(vfio_kind_of_path("/tmp/x/vfio-device-1"), VFIO_FD_DEVICE);
	CHECK_EQ_INT(vfio_kind_of_path("/dev/null"), VFIO_FD_UNKNOWN);
	CHECK_EQ_INT(vfio_kind_of_path("/dev/vfio/"), VFIO_FD_UNKNOWN);
	CHECK_EQ_INT(vfio_kind_of_path("/dev/vfio/noiommu-"), VFIO_FD_UNKNOWN);
	CHECK_EQ_INT(vfio_kind_of_path(""), VFIO_FD_UNKNOWN);
	CHECK_EQ_INT(vfio_kind_of_path(NULL), VFIO_FD_UNKNOWN);

	CHECK_EQ_INT(vfio_kind_of_func("vfio_fops_unl_ioctl"), VFIO_FD_CONTAINER);
	CHECK_EQ_INT(vfio_kind_of_func("vfio_iommu_type1_ioctl"), VFIO_FD_CONTAINER);
	CHECK_EQ_INT(vfio_kind_of_func("tce_iommu_ioctl"), VFIO_FD_CONTAINER);
	CHECK_EQ_INT(vfio_kind_of_func("vfio_group_fops_unl_ioctl"), VFIO_FD_GROUP);
	CHECK_EQ_INT(vfio_kind_of_func("vfio_device_fops_unl_ioctl"), VFIO_FD_DEVICE);
	CHECK_EQ_INT(vfio_kind_of_func("vfio_pci_core_ioctl"), VFIO_FD_DEVICE);
	CHECK_EQ_INT(vfio_kind_of_func("sock_ioctl"), VFIO_FD_UNKNOWN);

	CHECK_EQ_INT(vfio_kind_of_cmd(VIO(0)), VFIO_FD_CONTAINER);
	CHECK_EQ_INT(vfio_kind_of_cmd(VIO(2)), VFIO_FD_CONTAINER);
	CHECK_EQ_INT(vfio_kind_of_cmd(VIO(3)), VFIO_FD_GROUP);
	CHECK_EQ_INT(vfio_kind_of_cmd(VIO(6)), VFIO_FD_GROUP);
	CHECK_EQ_INT(vfio_kind_of_cmd(VIO(7)), VFIO_FD_DEVICE);
	CHECK_EQ_INT(vfio_kind_of_cmd(VIO(11)), VFIO_FD_DEVICE);
	CHECK_EQ_INT(vfio_kind_of_cmd(VIO(13)), VFIO_FD_UNKNOWN);
	CHECK_EQ_INT(vfio_kind_of_cmd(12345), VFIO_FD_UNKNOWN);
}

TEST(vfio_path_names)
{
	CHECK_STR(vfio_path_name(SPYRE_DRV_TRACEPOINT), "tracepoint");
	CHECK_STR(vfio_path_name(SPYRE_DRV_FENTRY), "fentry");
	CHECK_STR(vfio_path_name(SPYRE_DRV_KPROBE), "kprobe");
	CHECK_STR(vfio_path_name(SPYRE_DRV_OFF), "off");
}

TEST(vfio_plan_paths)
{
	enum spyre_drv_path p[3];
	struct vfio_caps none = {}, host = { .nfuncs = 0, .fentry_btf = true, .kprobes = false };
	struct vfio_caps all = { .nfuncs = 3, .fentry_btf = true, .kprobes = true };
	struct vfio_caps no_btf = { .nfuncs = 3, .fentry_btf = false, .kprobes = true };
	char why[256];

	/* this host: no VFIO functions, no kprobes -> the tracepoints */
	CHECK_EQ_INT(vfio_plan(VFIO_MODE_AUTO, &host, p, why, sizeof(why)), 1);
	CHECK_EQ_INT(p[0], SPYRE_DRV_TRACEPOINT);
	CHECK_EQ_INT(vfio_plan(VFIO_MODE_AUTO, &none, p, why, sizeof(why)), 1);
	CHECK_EQ_INT(p[0], SPYRE_DRV_TRACEPOINT);
	/* everything there: fentry first, kprobes second, tracepoints last */
	CHECK_EQ_INT(vfio_plan(VFIO_MODE_AUTO, &all, p, why, sizeof(why)), 3);
	CHECK_EQ_INT(p[0], SPYRE_DRV_FENTRY);
	CHECK_EQ_INT(p[1], SPYRE_DRV_KPROBE);
	CHECK_EQ_INT(p[2], SPYRE_DRV_TRACEPOINT);
	CHECK_EQ_INT(vfio_plan(VFIO_MODE_AUTO, &no_btf, p, why, sizeof(why)), 2);
	CHECK_EQ_INT(p[0], SPYRE_DRV_KPROBE);
	/* forced modes: the one path, or nothing with the reason */
	CHECK_EQ_INT(vfio_plan(VFIO_MODE_KPROBE, &host, p, why, sizeof(why)), 0);
	CHECK(strstr(why, "kprobes are not available") != NULL);
	CHECK_EQ_INT(vfio_plan(VFIO_MODE_KPROBE, &all, p, why, sizeof(why)), 1);
	CHECK_EQ_INT(p[0], SPYRE_DRV_KPROBE);
	CHECK_EQ_INT(vfio_plan(VFIO_MODE_FENTRY, &host, p, why, sizeof(why)), 0);
	CHECK(strstr(why, "kallsyms") != NULL);
	CHECK_EQ_INT(vfio_plan(VFIO_MODE_FENTRY, &no_btf, p, why, sizeof(why)), 0);
	CHECK(strstr(why, "BTF") != NULL);
	CHECK_EQ_INT(vfio_plan(VFIO_MODE_TRACEPOINT, &none, p, why, sizeof(why)), 1);
	CHECK_EQ_INT(p[0], SPYRE_DRV_TRACEPOINT);
	CHECK_EQ_INT(vfio_plan(VFIO_MODE_OFF, &all, p, why, sizeof(why)), 0);
}

/*
 * A fake root: proc/1234/fd with links named by fd, pointing where the test says; sys/dev/char
 * with the uevent of the container (10:196) and of group 7 (246:7); a dev/ with a character
 * node of its own (1:3, no uevent) for the scan.
 */
struct fakeproc {
	char root[64];
	char file[96];		/* a real file, for the inode check */
};

static void fake_link(struct fakeproc *fp, int fd, const char *target)
{
	char p[160];

	snprintf(p, sizeof(p), "%s/proc/1234/fd/%d", fp->root, fd);
	CHECK_EQ_INT(symlink(target, p), 0);
}

static void fake_mkdirs(struct fakeproc *fp, const char *rel)
{
	char p[160], cmd[200];

	snprintf(p, sizeof(p), "%s/%s", fp->root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", p);
	CHECK_EQ_INT(system(cmd), 0);
}

static void fake_uevent(struct fakeproc *fp, const char *majmin, const char *text)
{
	char p[160];
	FILE *f;

	snprintf(p, sizeof(p), "sys/dev/char/%s", majmin);
	fake_mkdirs(fp, p);
	snprintf(p, sizeof(p), "%s/sys/dev/char/%s/uevent", fp->root, majmin);
	f = fopen(p, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void fake_setup(struct fakeproc *fp)
{
	char p[160];
	int fd;

	snprintf(fp->root, sizeof(fp->root), "/tmp/unit-vfio-XXXXXX");
	CHECK(mkdtemp(fp->root) != NULL);
	fake_mkdirs(fp, "proc/1234/fd");
	fake_uevent(fp, "10:196", "MAJOR=10\nMINOR=196\nDEVNAME=vfio/vfio\n");
	fake_uevent(fp, "246:7", "MAJOR=246\nMINOR=7\nDEVNAME=vfio/7\n");
	fake_uevent(fp, "1:3", "MAJOR=1\nMINOR=3\n");		/* no DEVNAME: /dev is scanned */
	fake_mkdirs(fp, "dev/a/b");
	snprintf(p, sizeof(p), "%s/dev/a/b/zero-ish", fp->root);
	CHECK_EQ_INT(mknod(p, S_IFCHR | 0600, makedev(1, 3)), 0);
	snprintf(fp->file, sizeof(fp->file), "%s/standin-vfio", fp->root);
	fd = open(fp->file, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0);
	close(fd);
	fake_link(fp, 3, "/dev/vfio/vfio");		/* absent here: no inode to compare */
	fake_link(fp, 4, "/dev/vfio/7");
	fake_link(fp, 5, "anon_inode:[vfio-device]");
	fake_link(fp, 6, fp->file);
	fake_link(fp, 7, "/dev/null");
}

static void fake_teardown(struct fakeproc *fp)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fp->root);
	CHECK_EQ_INT(system(cmd), 0);
}

static struct spyre_event ioctl_event(uint32_t cmd, int fd, unsigned int path, unsigned int func,
				      unsigned int flags, uint32_t ino)
{
	struct spyre_event e = {};

	e.type = SPYRE_EV_IOCTL;
	e.tgid = 1234;
	e.tid = 1240;
	e.ts = 1000;
	e.dur = 500;
	e.ioctl.cmd = cmd;
	e.ioctl.fd = fd;
	e.ioctl.path = path;
	e.ioctl.func = func;
	e.ioctl.flags = flags;
	e.ioctl.ino = ino;
	e.ioctl.ret = -25;
	return e;
}

static const struct trace_arg *find_arg(const struct trace_arg *a, int n, const char *key)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(a[i].key, key))
			return &a[i];
	return NULL;
}

/* A decoder for @cfg's tracer, set up as the session does: each function's kind of fd. */
static struct vfio_decoder *open_decoder(const struct vfio_config *cfg, struct vfio_tracer **vt)
{
	struct vfio_decoder *d = NULL;
	char err[256];

	*vt = NULL;
	CHECK_EQ_INT(vfio_open(vt, cfg, err, sizeof(err)), 0);
	CHECK_EQ_INT(vfio_decoder_new(&d, cfg->root), 0);
	for (int i = 0; *vt && d && vfio_func(*vt, i); i++)
		vfio_decoder_func(d, i, vfio_func(*vt, i));
	return d;
}

static void close_decoder(struct vfio_decoder *d, struct vfio_tracer *vt)
{
	vfio_decoder_free(d);
	vfio_close(vt);
}

TEST(vfio_event_decoding)
{
	static const struct vfio_funcs two = {
		2, { "vfio_fops_unl_ioctl", "vfio_device_fops_unl_ioctl" }
	};
	struct vfio_config cfg = { .mode = VFIO_MODE_AUTO, .root = NULL };
	struct trace_arg a[VFIO_MAX_EVENT_ARGS];
	const struct trace_arg *x;
	struct vfio_tracer *vt = NULL;
	struct vfio_decoder *v;
	struct spyre_event e;
	struct fakeproc fp;
	const char *name;
	char hex[32];
	struct stat st;
	int n;

	fake_setup(&fp);
	cfg.root = fp.root;
	v = open_decoder(&cfg, &vt);
	if (!v)
		return;

	/* MAP_DMA on the container: the user struct's values, errno name, device path */
	e = ioctl_event(VIO(13), 3, SPYRE_DRV_TRACEPOINT, SPYRE_DRV_NO_FUNC,
			SPYRE_IOCTL_F_FD | SPYRE_IOCTL_F_DMA, 0);
	e.ioctl.iova = 0x7f0000001000;
	e.ioctl.size = 65536;
	e.ioctl.arg = 0x7f0000001000;
	n = vfio_event_args(v, &e, &name, a);
	CHECK_STR(name, "VFIO_IOMMU_MAP_DMA");
	CHECK_EQ_INT(n, 7);
	CHECK(find_arg(a, n, "cmd") == NULL);
	CHECK((x = find_arg(a, n, "fd")) && x->type == TA_I64 && x->i == 3);
	CHECK((x = find_arg(a, n, "device")) && x->type == TA_STR &&
	      !strcmp(x->s, "/dev/vfio/vfio"));
	CHECK((x = find_arg(a, n, "ret")) && x->type == TA_I64 && x->i == -25);
	CHECK((x = find_arg(a, n, "error")) && !strcmp(x->s, "ENOTTY"));
	CHECK((x = find_arg(a, n, "iova")) && x->type == TA_HEX && x->u == 0x7f0000001000);
	CHECK((x = find_arg(a, n, "size")) && x->type == TA_U64 && x->u == 65536);
	CHECK((x = find_arg(a, n, "vaddr")) && x->u == 0x7f0000001000);
	CHECK(find_arg(a, n, "arg") == NULL);

	/* UNMAP_DMA: iova and size, no vaddr; success has no error */
	e = ioctl_event(VIO(14), 3, SPYRE_DRV_TRACEPOINT, SPYRE_DRV_NO_FUNC,
			SPYRE_IOCTL_F_FD | SPYRE_IOCTL_F_DMA, 0);
	e.ioctl.ret = 0;
	e.ioctl.iova = 0x2000;
	e.ioctl.size = 4096;
	n = vfio_event_args(v, &e, &name, a);
	CHECK_STR(name, "VFIO_IOMMU_UNMAP_DMA");
	CHECK((x = find_arg(a, n, "iova")) && x->u == 0x2000);
	CHECK(find_arg(a, n, "vaddr") == NULL && find_arg(a, n, "error") == NULL);

	/* MAP_DMA whose struct could not be read: the raw argument instead */
	e = ioctl_event(VIO(13), 3, SPYRE_DRV_TRACEPOINT, SPYRE_DRV_NO_FUNC, SPYRE_IOCTL_F_FD, 0);
	e.ioctl.arg = 0xbad;
	n = vfio_event_args(v, &e, &name, a);
	CHECK(find_arg(a, n, "iova") == NULL);
	CHECK((x = find_arg(a, n, "arg")) && x->u == 0xbad);

	/* the same number on a device fd (known from its path) is another ioctl */
	e = ioctl_event(VIO(13), 5, SPYRE_DRV_TRACEPOINT, SPYRE_DRV_NO_FUNC,
			SPYRE_IOCTL_F_FD | SPYRE_IOCTL_F_DMA, 0);
	n = vfio_event_args(v, &e, &name, a);
	CHECK_STR(name, "VFIO_DEVICE_PCI_HOT_RESET");
	CHECK((x = find_arg(a, n, "device")) && !strcmp(x->s, "anon_inode:[vfio-device]"));
	CHECK(find_arg(a, n, "iova") == NULL);

	e = ioctl_event(VIO(3), 4, SPYRE_DRV_TRACEPOINT, SPYRE_DRV_NO_FUNC, SPYRE_IOCTL_F_FD, 0);
	n = vfio_event_args(v, &e, &name, a);
	CHECK_STR(name, "VFIO_GROUP_GET_STATUS");
	CHECK((x = find_arg(a, n, "device")) && !strcmp(x->s, "/dev/vfio/7"));

	/* an fd of unknown kind learns it from a device-only command */
	e = ioctl_event(VIO(17), 7, SPYRE_DRV_TRACEPOINT, SPYRE_DRV_NO_FUNC, SPYRE_IOCTL_F_FD, 0);
	vfio_event_args(v, &e, &name, a);
#if defined(__powerpc__)
	CHECK_STR(name, "VFIO_IOMMU_SPAPR_REGISTER_MEMORY");	/* the sPAPR IOMMU's 117 */
#else
	CHECK_STR(name, "VFIO_IOMMU_DIRTY_PAGES");
#endif
	e.ioctl.cmd = VIO(7);
	vfio_event_args(v, &e, &name, a);
	CHECK_STR(name, "VFIO_DEVICE_GET_INFO");
	e.ioctl.cmd = VIO(17);
	vfio_event_args(v, &e, &name, a);
	CHECK_STR(name, "VFIO_DEVICE_FEATURE");

	/* inode check: the fd now names another file (closed and reused) -> not its path */
	CHECK_EQ_INT(stat(fp.file, &st), 0);
	e = ioctl_event(VIO(0), 6, SPYRE_DRV_TRACEPOINT, SPYRE_DRV_NO_FUNC,
			SPYRE_IOCTL_F_FD | SPYRE_IOCTL_F_FILE, (uint32_t)st.st_ino + 1);
	e.rdev = 10u << 20 | 197;	/* misc 10:197: neither in sysfs nor in /dev */
	n = vfio_event_args(v, &e, &name, a);
	CHECK((x = find_arg(a, n, "device")) && !strcmp(x->s, "char 10:197"));
	e.rdev = 0;
	e.ioctl.fd = 9;	/* no link at all */
	n = vfio_event_args(v, &e, &name, a);
	CHECK((x = find_arg(a, n, "device")) && !strcmp(x->s, "fd 9"));
	/* the matching inode: the path */
	e = ioctl_event(VIO(0), 6, SPYRE_DRV_TRACEPOINT, SPYRE_DRV_NO_FUNC,
			SPYRE_IOCTL_F_FD | SPYRE_IOCTL_F_FILE, (uint32_t)st.st_ino);
	n = vfio_event_args(v, &e, &name, a);
	CHECK((x = find_arg(a, n, "device")) && !strcmp(x->s, fp.file));

	/* unknown fd, unknown command */
	e = ioctl_event(_IO(';', 99), -1, SPYRE_DRV_TRACEPOINT, SPYRE_DRV_NO_FUNC, 0, 0);
	n = vfio_event_args(v, &e, &name, a);
	/* _IO() sets a direction bit on powerpc (0x20003b63) and none elsewhere */
	snprintf(hex, sizeof(hex), "ioctl %#x", (unsigned int)_IO(';', 99));
	CHECK_STR(name, hex);
	CHECK((x = find_arg(a, n, "fd")) && x->i == -1);
	CHECK((x = find_arg(a, n, "device")) && !strcmp(x->s, "?"));
	close_decoder(v, vt);

	/* kprobe path: the probed function says what the fd is, even without a path */
	cfg.funcs = &two;
	cfg.root = NULL;
	v = open_decoder(&cfg, &vt);
	if (!v)
		goto out;
	e = ioctl_event(VIO(13), 11, SPYRE_DRV_KPROBE, 1, SPYRE_IOCTL_F_FD, 0);
	vfio_event_args(v, &e, &name, a);
	CHECK_STR(name, "VFIO_DEVICE_PCI_HOT_RESET");
	e = ioctl_event(VIO(13), 12, SPYRE_DRV_KPROBE, 0, SPYRE_IOCTL_F_FD, 0);
	vfio_event_args(v, &e, &name, a);
	CHECK_STR(name, "VFIO_IOMMU_MAP_DMA");
	/* an out-of-range function index is ignored, not trusted */
	e = ioctl_event(VIO(13), 13, SPYRE_DRV_KPROBE, 200, SPYRE_IOCTL_F_FD, 0);
	vfio_event_args(v, &e, &name, a);
	CHECK_STR(name, "VFIO_IOMMU_MAP_DMA");
	close_decoder(v, vt);
out:
	fake_teardown(&fp);
}

/*
 * A job that closed its fds or exited before its records were read (launch mode's short jobs;
 * the 6.1 guest named these "char 246:0" and "char 10:196"): names from the record alone.
 */
TEST(vfio_names_without_proc)
{
	struct vfio_config cfg = { .mode = VFIO_MODE_TRACEPOINT };
	struct trace_arg a[VFIO_MAX_EVENT_ARGS];
	const struct trace_arg *x;
	struct vfio_tracer *vt = NULL;
	struct vfio_decoder *v;
	struct spyre_event e;
	struct fakeproc fp;
	const char *name;
	int n;

	fake_setup(&fp);
	cfg.root = fp.root;
	v = open_decoder(&cfg, &vt);
	if (!v)
		goto out;
	/* the container and a group by their device numbers (sysfs' DEVNAME); pid 999 is gone */
	e = ioctl_event(VIO(13), 3, SPYRE_DRV_TRACEPOINT, SPYRE_DRV_NO_FUNC,
			SPYRE_IOCTL_F_FD | SPYRE_IOCTL_F_FILE, 77);
	e.tgid = 999;
	e.rdev = 10u << 20 | 196;
	n = vfio_event_args(v, &e, &name, a);
	CHECK_STR(name, "VFIO_IOMMU_MAP_DMA");
	CHECK((x = find_arg(a, n, "device")) && !strcmp(x->s, "/dev/vfio/vfio"));
	e.ioctl.cmd = VIO(3);
	e.ioctl.fd = 4;
	e.rdev = 246u << 20 | 7;
	n = vfio_event_args(v, &e, &name, a);
	CHECK_STR(name, "VFIO_GROUP_GET_STATUS");
	CHECK((x = find_arg(a, n, "device")) && !strcmp(x->s, "/dev/vfio/7"));
	/* a number sysfs has no DEVNAME for: the node found in /dev, named as this machine does */
	e.rdev = 1u << 20 | 3;
	n = vfio_event_args(v, &e, &name, a);
	CHECK((x = find_arg(a, n, "device")) && !strcmp(x->s, "/dev/a/b/zero-ish"));
	/* the device fd: an anonymous inode, its kind from the kernel's name (117 = FEATURE) */
	e = ioctl_event(VIO(17), 5, SPYRE_DRV_TRACEPOINT, SPYRE_DRV_NO_FUNC,
			SPYRE_IOCTL_F_FD | SPYRE_IOCTL_F_FILE | SPYRE_IOCTL_F_ANON, 1);
	e.tgid = 999;
	memcpy(e.ioctl.name, "[vfio-device]", 14);
	n = vfio_event_args(v, &e, &name, a);
	CHECK_STR(name, "VFIO_DEVICE_FEATURE");
	CHECK((x = find_arg(a, n, "device")) && !strcmp(x->s, "anon_inode:[vfio-device]"));
	/* the anonymous inode's name wins over a /proc link that now names another file */
	e.tgid = 1234;
	n = vfio_event_args(v, &e, &name, a);
	CHECK((x = find_arg(a, n, "device")) && !strcmp(x->s, "anon_inode:[vfio-device]"));
	/* a plain file (the mock's stand-ins) of a process gone: its base name, its kind */
	e = ioctl_event(VIO(17), 8, SPYRE_DRV_TRACEPOINT, SPYRE_DRV_NO_FUNC,
			SPYRE_IOCTL_F_FD | SPYRE_IOCTL_F_FILE, 5);
	e.tgid = 999;
	memcpy(e.ioctl.name, "vfio-device-1", 14);
	n = vfio_event_args(v, &e, &name, a);
	CHECK_STR(name, "VFIO_DEVICE_FEATURE");
	CHECK((x = find_arg(a, n, "device")) && !strcmp(x->s, "vfio-device-1"));
	/* a name of all 16 bytes (no NUL in the record) is cut, not overrun */
	memcpy(e.ioctl.name, "0123456789abcdef", 16);
	e.ioctl.fd = 9;
	n = vfio_event_args(v, &e, &name, a);
	CHECK((x = find_arg(a, n, "device")) && !strcmp(x->s, "0123456789abcdef"));
	close_decoder(v, vt);
	/* not resolving (NULL root): the numbers, as before */
	cfg.root = NULL;
	v = open_decoder(&cfg, &vt);
	if (!v)
		goto out;
	e = ioctl_event(VIO(0), 3, SPYRE_DRV_TRACEPOINT, SPYRE_DRV_NO_FUNC,
			SPYRE_IOCTL_F_FD | SPYRE_IOCTL_F_FILE, 77);
	e.rdev = 10u << 20 | 196;
	n = vfio_event_args(v, &e, &name, a);
	CHECK((x = find_arg(a, n, "device")) && !strcmp(x->s, "char 10:196"));
	close_decoder(v, vt);
out:
	fake_teardown(&fp);
}

TEST(vfio_open_copies_funcs)
{
	struct vfio_funcs one = { 1, { "vfio_pci_core_ioctl.isra.0" } };
	struct vfio_funcs nine = { SPYRE_DRV_MAX_FUNCS + 1 };
	struct vfio_config cfg = { .mode = VFIO_MODE_KPROBE, .funcs = &one };
	struct vfio_tracer *v = NULL;
	char err[256] = "";

	/* the names are the tracer's own: the command line's may go */
	CHECK_EQ_INT(vfio_open(&v, &cfg, err, sizeof(err)), 0);
	strcpy(one.name[0], "x");
	CHECK(v && vfio_func(v, 0) && !strcmp(vfio_func(v, 0), "vfio_pci_core_ioctl.isra.0"));
	CHECK(vfio_func(v, 1) == NULL);
	vfio_close(v);
	/* none given: the built-in four */
	cfg.funcs = NULL;
	CHECK_EQ_INT(vfio_open(&v, &cfg, err, sizeof(err)), 0);
	CHECK(v && vfio_func(v, 3) && !strcmp(vfio_func(v, 0), "vfio_fops_unl_ioctl"));
	CHECK(v && !strcmp(vfio_func(v, 3), "vfio_iommu_type1_ioctl") && !vfio_func(v, 4));
	vfio_close(v);
	/* the tracepoints see every ioctl: no functions */
	cfg.mode = VFIO_MODE_TRACEPOINT;
	CHECK_EQ_INT(vfio_open(&v, &cfg, err, sizeof(err)), 0);
	CHECK(v && vfio_func(v, 0) == NULL);
	vfio_close(v);
	/* more than the BPF side has slots for */
	cfg = (struct vfio_config){ .mode = VFIO_MODE_KPROBE, .funcs = &nine };
	v = (struct vfio_tracer *)1;
	CHECK_EQ_INT(vfio_open(&v, &cfg, err, sizeof(err)), -EINVAL);
	CHECK(v == NULL);
	CHECK(strstr(err, "--driver-funcs") != NULL);
}

TEST(vfio_trace_output)
{
	static const struct trace_meta meta = { .mono_base_ns = 1000, .real_base_ns = 5,
						.trace_name = "t", .tool_version = "v",
						.hostname = "h" };
	struct vfio_config cfg = { .mode = VFIO_MODE_OFF };
	struct trace_writer *tw = NULL;
	struct vfio_tracer *vt = NULL;
	struct vfio_decoder *v;
	const struct jv *ev, *args;
	struct jw *w = jw_memopen(), *sw = jw_memopen();
	struct spyre_event e;
	char err[256];
	const char *d;
	struct jv *root;
	size_t len;

	v = open_decoder(&cfg, &vt);
	CHECK_EQ_INT(trace_begin(&tw, w, &meta), 0);
	if (!v || !tw)
		return;
	e = ioctl_event(VIO(13), 3, SPYRE_DRV_TRACEPOINT, SPYRE_DRV_NO_FUNC,
			SPYRE_IOCTL_F_FD | SPYRE_IOCTL_F_DMA, 0);
	e.ioctl.iova = 0x1000;
	e.ioctl.size = 8192;
	e.ts = 3000;
	vfio_event(v, tw, &e);
	vfio_event(v, tw, &e);
	CHECK_EQ_INT(trace_finish(tw, NULL), 0);
	d = jw_mem_data(w, &len);
	root = jv_parse(d, len, err, sizeof(err));
	CHECK(root != NULL);
	ev = root ? jv_first(jv_get(root, "traceEvents")) : NULL;
	CHECK(ev != NULL);
	if (ev) {
		CHECK_STR(jv_get_str(ev, "ph"), "X");
		CHECK_STR(jv_get_str(ev, "cat"), "privateuse1_driver");
		CHECK_STR(jv_get_str(ev, "name"), "VFIO_IOMMU_MAP_DMA");
		args = jv_get(ev, "args");
		CHECK_STR(jv_get_str(args, "iova"), "0x1000");
		CHECK_STR(jv_get_str(args, "error"), "ENOTTY");
		CHECK_STR(jv_get(ev, "ts")->num.raw, "2.000");
		CHECK_STR(jv_get(ev, "tid")->num.raw, "1240");
	}
	jv_free(root);
	jw_close(w);

	jw_members_begin(sw, false);	/* after spyreStats' other members */
	driver_stats_json(vt, v, sw);
	jw_members_end(sw);
	d = jw_mem_data(sw, &len);
	CHECK_STR(d, ",\"driverPath\":\"off\",\"driverSpans\":2,\"driverDrops\":0,"
		  "\"driverUnpaired\":0,\"driverMissed\":0");
	jw_close(sw);
	close_decoder(v, vt);
}
