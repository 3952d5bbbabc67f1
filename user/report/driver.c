// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The driver tier's report: its counters (attach/vfio.c) and the ioctls decoded (stream/). */
#include <stdio.h>
#include "attach/vfio.h"
#include "output/jsonw.h"
#include "report/driver.h"
#include "stream/stats.h"
#include "stream/vfio_decode.h"

void driver_stats_json(const struct vfio_tracer *v, const struct vfio_decoder *d, struct jw *w)
{
	enum spyre_drv_path path = vfio_path(v);
	struct vfio_counts c;

	vfio_counts(v, &c);
	jw_kv_str(w, "driverPath", vfio_path_name(path));
	jw_kv_u64(w, "driverSpans", vfio_decoder_spans(d));
	jw_kv_u64(w, "driverDrops", c.drops_ring);
	jw_kv_u64(w, "driverUnpaired", c.unpaired);
	jw_kv_u64(w, "driverMissed", c.missed);
	if (path != SPYRE_DRV_FENTRY && path != SPYRE_DRV_KPROBE)
		return;
	jw_key(w, "driverFunctions");
	jw_arr_begin(w);
	for (int i = 0; vfio_func(v, i); i++) {
		if (!vfio_func_present(v, i))
			continue;
		jw_elem(w);
		jw_str(w, vfio_func(v, i));
	}
	jw_arr_end(w);
}

void driver_summary(const struct vfio_tracer *v, const struct vfio_decoder *d, FILE *f)
{
	enum spyre_drv_path path = vfio_path(v);
	const struct vfio_name_stat *names;
	struct vfio_counts c;
	char b1[32], b2[32];
	int nnames;

	if (path == SPYRE_DRV_OFF)
		return;
	vfio_counts(v, &c);
	nnames = vfio_decoder_names(d, &names);
	/* a skipped return is counted twice (missed, then unpaired): not added up */
	fprintf(f, "driver tier (%s): %llu VFIO ioctls, %llu dropped (ring full %llu, entry or "
		"return missed %llu), %llu runs of ours skipped by the kernel\n",
		vfio_path_name(path), (unsigned long long)vfio_decoder_spans(d),
		(unsigned long long)(c.drops_ring + c.unpaired), (unsigned long long)c.drops_ring,
		(unsigned long long)c.unpaired, (unsigned long long)c.missed);
	for (int i = 0; i < nnames; i++) {
		const struct vfio_name_stat *s = &names[i];
		char unknown[32];

		if (!s->name)
			snprintf(unknown, sizeof(unknown), "ioctl 0x%x", s->cmd);
		fprintf(f, "%-36s %10llu %10s %10s\n", s->name ? s->name : unknown,
			(unsigned long long)s->count, fmt_duration(s->total_ns, b1, sizeof(b1)),
			fmt_duration(s->count ? s->total_ns / s->count : 0, b2, sizeof(b2)));
	}
}
