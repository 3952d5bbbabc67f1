/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The driver tier's records, decoded: a SPYRE_EV_IOCTL record (attach/vfio.h made it) becomes one
 * ph:"X" event named by its VFIO command, on the calling thread, cat "privateuse1_driver". What
 * an fd is (container, group, device) decides some names: the probed kernel function says best,
 * then what the fd names (its device node, anonymous inode or path), then the commands seen on
 * it.
 */
#ifndef SPYRE_VFIO_DECODE_H
#define SPYRE_VFIO_DECODE_H

#include <stdbool.h>
#include <stdint.h>
#include "stream/spyre_event_user.h"
#include "output/trace_writer.h"

#define VFIO_CAT		"privateuse1_driver"
#define VFIO_NAME_STATS		48	/* distinct commands counted for the summary */

/* What an fd is; some command numbers mean different things on a container and a device. */
enum vfio_fd_kind {
	VFIO_FD_UNKNOWN = 0,
	VFIO_FD_CONTAINER,	/* /dev/vfio/vfio (type1 / spapr IOMMU) */
	VFIO_FD_GROUP,		/* /dev/vfio/<group> */
	VFIO_FD_DEVICE,		/* anon_inode:[vfio-device], /dev/vfio/devices/vfioN */
};

struct vfio_decoder;

/* Per command name: calls and time (name NULL: an unknown command, named by @cmd). */
struct vfio_name_stat {
	const char *name;
	uint32_t cmd;
	uint64_t count;
	uint64_t total_ns;
};

/*
 * @root: the directory whose proc/, sys/ and dev/ name the fds ("" = this machine's: fds by
 * /proc/PID/fd, device numbers by /sys/dev/char or a scan of /dev); NULL: they are not named.
 * 0 or -ENOMEM.
 */
int vfio_decoder_new(struct vfio_decoder **out, const char *root);
void vfio_decoder_free(struct vfio_decoder *d);
/* Records of probed function @i (its index in --driver-funcs) come from fds of @func's kind. */
void vfio_decoder_func(struct vfio_decoder *d, int i, const char *func);

/* One record -> one event in @tw (NULL: only counted). */
void vfio_event(struct vfio_decoder *v, struct trace_writer *tw, const struct spyre_event *e);

/* The VFIO name of @cmd on an fd of @kind; NULL when @cmd is no VFIO ioctl. */
const char *vfio_cmd_name(uint32_t cmd, enum vfio_fd_kind kind);
/* The kind a command implies, for commands only one kind of fd takes; else UNKNOWN. */
enum vfio_fd_kind vfio_kind_of_cmd(uint32_t cmd);
/* From what an fd names ("/dev/vfio/vfio", "anon_inode:[vfio-device]", a base name, ...). */
enum vfio_fd_kind vfio_kind_of_path(const char *path);
/* From a probed kernel function's name (vfio_fops_unl_ioctl -> container, ...). */
enum vfio_fd_kind vfio_kind_of_func(const char *func);

#define VFIO_MAX_EVENT_ARGS	8
/*
 * The event's name and args (cmd, fd, device, ret, [error], iova/size/vaddr or arg). Strings
 * point into @v (or the fd's path) and stay valid until the next call. Returns the number of args.
 */
int vfio_event_args(struct vfio_decoder *v, const struct spyre_event *e, const char **name,
		    struct trace_arg *args);

uint64_t vfio_decoder_spans(const struct vfio_decoder *d);
/* The per-command counts, in first-seen order; returns how many. */
int vfio_decoder_names(const struct vfio_decoder *d, const struct vfio_name_stat **names);

#endif
