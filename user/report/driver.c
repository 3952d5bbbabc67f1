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
	bool first = true;

	vfio_counts(v, &c);
	jw_lit(w, ",\"driverPath\":");
	jw_str(w, vfio_path_name(path));
	jw_lit(w, ",\"driverSpans\":");
	jw_u64(w, vfio_decoder_spans(d));
	jw_lit(w, ",\"driverDrops\":");
	jw_u64(w, c.drops_ring);
	jw_lit(w, ",\"driverUnpaired\":");
	jw_u64(w, c.unpaired);
	jw_lit(w, ",\"driverMissed\":");
	jw_u64(w, c.missed);
	if (path != SPYRE_DRV_FENTRY && path != SPYRE_DRV_KPROBE)
		return;
	jw_lit(w, ",\"driverFunctions\":[");
	for (int i = 0; vfio_func(v, i); i++) {
		if (!vfio_func_present(v, i))
			continue;
		if (!first)
			jw_lit(w, ",");
		jw_str(w, vfio_func(v, i));
		first = false;
	}
	jw_lit(w, "]");
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
