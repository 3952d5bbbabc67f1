// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The driver tier's report: its counters (attach/vfio.c) and the ioctls decoded (stream/). */
#include <stdio.h>
#include "attach/vfio.h"
#include "common/util.h"
#include "output/jsonw.h"
#include "output/facts.h"
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
	char b[5][32];
	int nnames;

	if (path == SPYRE_DRV_OFF)
		return;
	vfio_counts(v, &c);
	nnames = vfio_decoder_names(d, &names);
	/* a skipped return is counted twice (missed, then unpaired): not added up */
	/* thousands grouped, as the summary's own counts */
	fprintf(f, "driver tier (%s): %s VFIO ioctls, %s dropped (ring full %s, entry or return "
		"missed %s), %s runs of ours skipped by the kernel\n", vfio_path_name(path),
		fmt_count(vfio_decoder_spans(d), b[0], sizeof(b[0])),
		fmt_count(c.drops_ring + c.unpaired, b[1], sizeof(b[1])),
		fmt_count(c.drops_ring, b[2], sizeof(b[2])), fmt_count(c.unpaired, b[3], sizeof(b[3])),
		fmt_count(c.missed, b[4], sizeof(b[4])));
	/* the summary's columns (output/facts.h); the ioctls' durations are summed, not kept */
	if (nnames) {
		fn_row_head(f);
		fprintf(f, "  ioctl\n");
	}
	for (int i = 0; i < nnames; i++) {
		const struct vfio_name_stat *s = &names[i];
		struct fn_row r = { .count = s->count, .total_ns = s->total_ns,
				    .no_quantiles = true };

		fn_row_text(f, &r);
		if (s->name)
			fprintf(f, "  %s\n", s->name);
		else
			fprintf(f, "  ioctl 0x%x\n", s->cmd);
	}
}
