// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The driver tier's records (see vfio_decode.h): VFIO command names, what each fd is, one
 * ph:"X" event per ioctl, and the per-command counts the summary prints.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "stream/vfio_decode.h"

#define VFIO_TYPE	';'
#define VFIO_BASE	100
#define FD_CACHE	64	/* open VFIO fds of the traced process: a handful per device */
#define RDEV_CACHE	16	/* device nodes: the container, a group and a device per card */
#define PATH_LEN	160
#define DEV_DEPTH	3	/* /dev/vfio/devices/vfio0: the deepest node a VFIO fd names */

struct fd_entry {
	uint32_t tgid;		/* 0 = empty slot */
	int32_t fd;
	uint32_t ino;		/* low 32 bits of the inode number, when ino_known */
	bool ino_known;
	bool looked;		/* path read from /proc (or tried) */
	uint8_t learned;	/* from commands only one kind of fd takes */
	uint64_t used;		/* LRU stamp */
	char path[PATH_LEN];	/* "" when unknown */
};

/* A device number's node; name "" when neither sysfs nor /dev has one. */
struct rdev_entry {
	uint32_t rdev;		/* kernel dev_t; 0 = empty slot */
	char name[PATH_LEN];
};

struct vfio_decoder {
	char root[48];		/* proc/, sys/ and dev/ are under it ("" = this machine's) */
	bool resolve;		/* false: fds and devices are not looked up */
	uint8_t func_kind[SPYRE_DRV_MAX_FUNCS];
	int nfuncs;
	uint64_t spans;
	struct fd_entry fds[FD_CACHE];
	uint64_t stamp;
	struct rdev_entry rdevs[RDEV_CACHE];
	int rdev_next;		/* the slot replaced next once all are taken */
	struct vfio_name_stat names[VFIO_NAME_STATS];
	int nnames;
	char namebuf[32];
	char devbuf[PATH_LEN];
};

/* --- command names (linux/vfio.h) ------------------------------------------------------------ */

/* _IO(';', 100 + n) for n = 0..11: one meaning whatever the fd */
static const char *const common_names[] = {
	"VFIO_GET_API_VERSION", "VFIO_CHECK_EXTENSION", "VFIO_SET_IOMMU",
	"VFIO_GROUP_GET_STATUS", "VFIO_GROUP_SET_CONTAINER", "VFIO_GROUP_UNSET_CONTAINER",
	"VFIO_GROUP_GET_DEVICE_FD", "VFIO_DEVICE_GET_INFO", "VFIO_DEVICE_GET_REGION_INFO",
	"VFIO_DEVICE_GET_IRQ_INFO", "VFIO_DEVICE_SET_IRQS", "VFIO_DEVICE_RESET",
};

/* n = 12..17 on a device fd */
static const char *const device_names[] = {
	"VFIO_DEVICE_GET_PCI_HOT_RESET_INFO", "VFIO_DEVICE_PCI_HOT_RESET",
	"VFIO_DEVICE_QUERY_GFX_PLANE", "VFIO_DEVICE_GET_GFX_DMABUF", "VFIO_DEVICE_IOEVENTFD",
	"VFIO_DEVICE_FEATURE",
};

/* n = 12..21 on a container; 12 and 17 depend on the IOMMU backend the platform uses */
static const char *const container_names[] = {
#if defined(__powerpc__)
	"VFIO_IOMMU_SPAPR_TCE_GET_INFO",
#else
	"VFIO_IOMMU_GET_INFO",
#endif
	"VFIO_IOMMU_MAP_DMA", "VFIO_IOMMU_UNMAP_DMA", "VFIO_IOMMU_ENABLE", "VFIO_IOMMU_DISABLE",
#if defined(__powerpc__)
	"VFIO_IOMMU_SPAPR_REGISTER_MEMORY",
#else
	"VFIO_IOMMU_DIRTY_PAGES",
#endif
	"VFIO_IOMMU_SPAPR_UNREGISTER_MEMORY", "VFIO_IOMMU_SPAPR_TCE_CREATE",
	"VFIO_IOMMU_SPAPR_TCE_REMOVE", "VFIO_EEH_PE_OP",
};

#define ARRAY_LEN(a)	(int)(sizeof(a) / sizeof((a)[0]))

/* n of _IO(';', 100 + n), or -1 when @cmd is not of that form */
static int vfio_nr(uint32_t cmd)
{
	uint32_t base = _IO(VFIO_TYPE, VFIO_BASE);

	if (cmd < base || cmd >= base + 32)
		return -1;
	return cmd - base;
}

const char *vfio_cmd_name(uint32_t cmd, enum vfio_fd_kind kind)
{
	int n = vfio_nr(cmd);

	if (n < 0)
		return NULL;
	if (n < ARRAY_LEN(common_names))
		return common_names[n];
	n -= ARRAY_LEN(common_names);
	/* an fd of unknown kind is taken for a container: MAP/UNMAP_DMA are the common case */
	if (kind == VFIO_FD_DEVICE)
		return n < ARRAY_LEN(device_names) ? device_names[n] : NULL;
	return n < ARRAY_LEN(container_names) ? container_names[n] : NULL;
}

enum vfio_fd_kind vfio_kind_of_cmd(uint32_t cmd)
{
	int n = vfio_nr(cmd);

	if (n < 0)
		return VFIO_FD_UNKNOWN;
	if (n <= 2)
		return VFIO_FD_CONTAINER;	/* GET_API_VERSION, CHECK_EXTENSION, SET_IOMMU */
	if (n <= 6)
		return VFIO_FD_GROUP;
	if (n <= 11)
		return VFIO_FD_DEVICE;
	return VFIO_FD_UNKNOWN;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

enum vfio_fd_kind vfio_kind_of_path(const char *path)
{
	const char *base;

	if (!path || !*path)
		return VFIO_FD_UNKNOWN;
	if (strstr(path, "[vfio-device]") || !strncmp(path, "/dev/vfio/devices/", 18))
		return VFIO_FD_DEVICE;
	if (!strcmp(path, "/dev/iommu"))
		return VFIO_FD_CONTAINER;	/* iommufd, with the VFIO container compat ioctls */
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	/* /dev/vfio/vfio, /dev/vfio/<group>, /dev/vfio/noiommu-<group>; the same base names
	 * under another directory are stand-ins (the mock runtime on a host without VFIO) */
	if (!strcmp(base, "vfio"))
		return VFIO_FD_CONTAINER;
	if (all_digits(base) || (!strncmp(base, "noiommu-", 8) && all_digits(base + 8)))
		return VFIO_FD_GROUP;
	if (!strncmp(base, "vfio-device", 11))
		return VFIO_FD_DEVICE;
	return VFIO_FD_UNKNOWN;
}

enum vfio_fd_kind vfio_kind_of_func(const char *func)
{
	if (strstr(func, "group"))
		return VFIO_FD_GROUP;
	if (strstr(func, "device") || strstr(func, "pci"))
		return VFIO_FD_DEVICE;
	if (strstr(func, "iommu") || strstr(func, "container") || strstr(func, "tce") ||
	    !strcmp(func, "vfio_fops_unl_ioctl"))
		return VFIO_FD_CONTAINER;
	return VFIO_FD_UNKNOWN;
}

/* --- the decoder ------------------------------------------------------------------------------ */

int vfio_decoder_new(struct vfio_decoder **out, const char *root)
{
	struct vfio_decoder *d = calloc(1, sizeof(*d));

	*out = d;
	if (!d)
		return -ENOMEM;
	if (root) {
		snprintf(d->root, sizeof(d->root), "%s", root);
		d->resolve = true;
	}
	return 0;
}

void vfio_decoder_free(struct vfio_decoder *d)
{
	free(d);
}

void vfio_decoder_func(struct vfio_decoder *d, int i, const char *func)
{
	if (i < 0 || i >= SPYRE_DRV_MAX_FUNCS)
		return;
	d->func_kind[i] = vfio_kind_of_func(func);
	if (i >= d->nfuncs)
		d->nfuncs = i + 1;
}

uint64_t vfio_decoder_spans(const struct vfio_decoder *d)
{
	return d->spans;
}

int vfio_decoder_names(const struct vfio_decoder *d, const struct vfio_name_stat **names)
{
	*names = d->names;
	return d->nnames;
}

/* --- records ---------------------------------------------------------------------------- */

/*
 * The cache entry of an fd; with @want_path its /proc/PID/fd/N target is read, once. Records
 * arrive milliseconds after the ioctl, so the fd may have been closed and reused since: the
 * inode the kernel saw must still match (or the process be gone: no path).
 */
static struct fd_entry *fd_lookup(struct vfio_decoder *v, uint32_t tgid, int32_t fd, uint32_t ino,
				  bool ino_known, bool want_path)
{
	struct fd_entry *slot = NULL;
	char link[96];
	struct stat st;
	ssize_t n;

	for (int i = 0; i < FD_CACHE; i++) {
		struct fd_entry *e = &v->fds[i];

		if (e->tgid == tgid && e->fd == fd) {
			if (!ino_known || !e->ino_known || e->ino == ino) {
				e->used = ++v->stamp;
				slot = e;
				goto found;
			}
			slot = e;	/* another file now: resolve again */
			break;
		}
	}
	if (!slot) {
		slot = &v->fds[0];
		for (int i = 0; i < FD_CACHE; i++) {
			if (!v->fds[i].tgid) {
				slot = &v->fds[i];
				break;
			}
			if (v->fds[i].used < slot->used)
				slot = &v->fds[i];
		}
	}
	memset(slot, 0, sizeof(*slot));
	slot->tgid = tgid;
	slot->fd = fd;
	slot->ino = ino;
	slot->ino_known = ino_known;
	slot->used = ++v->stamp;
found:
	if (!want_path || slot->looked || !v->resolve)
		return slot;
	slot->looked = true;
	snprintf(link, sizeof(link), "%s/proc/%u/fd/%d", v->root, tgid, fd);
	n = readlink(link, slot->path, sizeof(slot->path) - 1);
	if (n <= 0) {
		slot->path[0] = 0;
		return slot;
	}
	slot->path[n] = 0;
	if (ino_known && !stat(link, &st) && (uint32_t)st.st_ino != ino)
		slot->path[0] = 0;	/* closed and reused: not the file of this ioctl */
	return slot;
}

/* The DEVNAME of @maj:@min in sysfs' uevent, as "/dev/NAME" into @out; false if none. */
static bool sysfs_devname(const struct vfio_decoder *v, unsigned int maj, unsigned int min,
			  char *out, size_t len)
{
	char p[96], line[PATH_LEN];
	bool found = false;
	FILE *f;

	snprintf(p, sizeof(p), "%s/sys/dev/char/%u:%u/uevent", v->root, maj, min);
	f = fopen(p, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "DEVNAME=", 8))
			continue;
		line[strcspn(line, "\n")] = 0;
		found = line[8] != 0;
		if (found)
			snprintf(out, len, "/dev/%s", line + 8);
	}
	fclose(f);
	return found;
}

/* A character node of @dev under @dir (@depth levels down at most), into @out; false if none. */
static bool dev_scan(const char *dir, dev_t dev, int depth, char *out, size_t len)
{
	struct dirent *de;
	bool found = false;
	char p[PATH_LEN];
	struct stat st;
	DIR *d = opendir(dir);

	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, de->d_name) >= sizeof(p) ||
		    lstat(p, &st))
			continue;
		if (S_ISCHR(st.st_mode) && st.st_rdev == dev) {
			snprintf(out, len, "%s", p);
			found = true;
		} else if (S_ISDIR(st.st_mode) && depth > 1) {
			found = dev_scan(p, dev, depth - 1, out, len);
		}
	}
	closedir(d);
	return found;
}

/*
 * The /dev node of the character device @rdev (kernel dev_t), looked up once: sysfs' DEVNAME,
 * else a scan of /dev. Unlike /proc/PID/fd it does not depend on the fd still being open when
 * the record is read. NULL when there is none.
 */
static const char *rdev_name(struct vfio_decoder *v, uint32_t rdev)
{
	unsigned int maj = spyre_rdev_major(rdev), min = spyre_rdev_minor(rdev);
	size_t rl = strlen(v->root);
	struct rdev_entry *r;
	char dir[80];

	for (int i = 0; i < RDEV_CACHE; i++)
		if (v->rdevs[i].rdev == rdev)
			return v->rdevs[i].name[0] ? v->rdevs[i].name : NULL;
	r = &v->rdevs[v->rdev_next];
	v->rdev_next = (v->rdev_next + 1) % RDEV_CACHE;
	r->rdev = rdev;
	r->name[0] = 0;
	if (sysfs_devname(v, maj, min, r->name, sizeof(r->name)))
		return r->name;
	snprintf(dir, sizeof(dir), "%s/dev", v->root);
	if (!dev_scan(dir, makedev(maj, min), DEV_DEPTH, r->name, sizeof(r->name)))
		return NULL;
	/* as this machine names it: without the root */
	memmove(r->name, r->name + rl, strlen(r->name + rl) + 1);
	return r->name;
}

/*
 * What the fd of @e names: a device node by its number (@node, rdev_name), an anonymous
 * inode's file by the kernel's name for it, another file by its /proc path while that still is
 * the file, else by its base name. NULL when none of them is known.
 */
static const char *fd_device(struct vfio_decoder *v, const struct spyre_event *e,
			     const char *node, struct fd_entry *fe)
{
	const struct spyre_rec_ioctl *io = &e->ioctl;
	char name[SPYRE_IOCTL_NAME_LEN + 1];

	memcpy(name, io->name, SPYRE_IOCTL_NAME_LEN);
	name[SPYRE_IOCTL_NAME_LEN] = 0;
	if (node)
		return node;
	if ((io->flags & SPYRE_IOCTL_F_ANON) && name[0]) {
		snprintf(v->devbuf, sizeof(v->devbuf), "anon_inode:%s", name);
		return v->devbuf;
	}
	if (fe && fe->path[0])
		return fe->path;
	if (name[0] && !e->rdev) {
		snprintf(v->devbuf, sizeof(v->devbuf), "%s", name);
		return v->devbuf;
	}
	return NULL;
}

static void add_arg(struct trace_arg *a, int *n, const char *key, enum trace_arg_type t,
		    uint64_t u)
{
	if (*n >= VFIO_MAX_EVENT_ARGS)
		return;
	a[*n].key = key;
	a[*n].type = t;
	a[*n].u = u;
	(*n)++;
}

int vfio_event_args(struct vfio_decoder *v, const struct spyre_event *e, const char **name,
		    struct trace_arg *args)
{
	const struct spyre_rec_ioctl *io = &e->ioctl;
	uint32_t cmd = (uint32_t)io->cmd;
	int64_t fd = io->fd, ret = io->ret;
	unsigned int flags = io->flags;
	enum vfio_fd_kind kind = VFIO_FD_UNKNOWN, implied = vfio_kind_of_cmd(cmd);
	struct fd_entry *fe = NULL;
	const char *node, *dev, *nm;
	int n = 0;

	if (!(flags & SPYRE_IOCTL_F_FD) || fd < 0 || fd > INT_MAX)
		fd = -1;
	/* a device node or an anonymous inode is named by the record alone, not by /proc */
	node = e->rdev && v->resolve ? rdev_name(v, e->rdev) : NULL;
	if (fd >= 0)
		fe = fd_lookup(v, e->tgid, (int32_t)fd, io->ino, flags & SPYRE_IOCTL_F_FILE,
			       !node && !(flags & SPYRE_IOCTL_F_ANON));
	dev = fd_device(v, e, node, fe);
	/* what the fd is: the probed function says best, then its name, then its history */
	if (io->path != SPYRE_DRV_TRACEPOINT && io->func < v->nfuncs)
		kind = v->func_kind[io->func];
	if (!kind)
		kind = vfio_kind_of_path(dev);
	if (!kind && fe)
		kind = fe->learned;
	if (fe && implied)
		fe->learned = implied;
	if (!kind)
		kind = implied;
	nm = vfio_cmd_name(cmd, kind);
	if (!nm) {
		snprintf(v->namebuf, sizeof(v->namebuf), "ioctl 0x%x", cmd);
		nm = v->namebuf;
	}
	*name = nm;

	if (!dev && e->rdev)
		dev = v->devbuf, snprintf(v->devbuf, sizeof(v->devbuf), "char %u:%u",
					  spyre_rdev_major(e->rdev), spyre_rdev_minor(e->rdev));
	else if (!dev && fd >= 0)
		dev = v->devbuf, snprintf(v->devbuf, sizeof(v->devbuf), "fd %lld", (long long)fd);
	else if (!dev)
		dev = "?";

	/* no "cmd": the name is the command, decoded or "ioctl 0x3bNN" (15 bytes an event) */
	add_arg(args, &n, "fd", TA_I64, (uint64_t)fd);
	add_arg(args, &n, "device", TA_STR, 0);
	args[n - 1].s = dev;
	add_arg(args, &n, "ret", TA_I64, (uint64_t)ret);
	if (ret < 0 && ret >= -4095) {
		const char *en = strerrorname_np((int)-ret);

		if (en) {
			add_arg(args, &n, "error", TA_STR, 0);
			args[n - 1].s = en;
		}
	}
	if ((flags & SPYRE_IOCTL_F_DMA) && nm == container_names[1]) {
		add_arg(args, &n, "iova", TA_HEX, io->iova);
		add_arg(args, &n, "size", TA_U64, io->size);
		add_arg(args, &n, "vaddr", TA_HEX, io->arg);
	} else if ((flags & SPYRE_IOCTL_F_DMA) && nm == container_names[2]) {
		add_arg(args, &n, "iova", TA_HEX, io->iova);
		add_arg(args, &n, "size", TA_U64, io->size);
	} else {
		add_arg(args, &n, "arg", TA_HEX, io->arg);
	}
	return n;
}

static void count_name(struct vfio_decoder *v, const char *name, uint32_t cmd, uint64_t dur)
{
	/* table names are static; unknown commands share one buffer, so key those by cmd */
	const char *key = name == v->namebuf ? NULL : name;
	int i;

	for (i = 0; i < v->nnames; i++)
		if (v->names[i].name == key && (key || v->names[i].cmd == cmd))
			break;
	if (i == v->nnames) {
		if (v->nnames == VFIO_NAME_STATS)
			return;
		v->names[v->nnames].name = key;
		v->names[v->nnames].cmd = cmd;
		v->nnames++;
	}
	v->names[i].count++;
	v->names[i].total_ns += dur;
}

void vfio_event(struct vfio_decoder *v, struct trace_writer *tw, const struct spyre_event *e)
{
	struct trace_arg args[VFIO_MAX_EVENT_ARGS];
	const char *name;
	int n;

	n = vfio_event_args(v, e, &name, args);
	v->spans++;
	count_name(v, name, (uint32_t)e->ioctl.cmd, e->dur);
	if (tw)
		trace_complete(tw, e->tgid, e->tid, e->ts, e->dur, name, VFIO_CAT, args, n);
}
