// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "unit.h"
#include "resolve/kallsyms.h"

/* A kallsyms-format file of @text at @path (mkstemp's template): true when written. */
static bool write_file(char *path, const char *text)
{
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	CHECK(f != NULL);
	if (!f)
		return false;
	fputs(text, f);
	fclose(f);
	return true;
}

TEST(kallsyms_find_text_symbols)
{
	char names[4][KSYM_NAME_MAX] = { "vfio_fops_unl_ioctl", "vfio_pci_core_ioctl",
					 "vfio_iommu_type1_ioctl", "do_vfs_ioctl" };
	char mods[4][KSYM_NAME_MAX];
	char path[] = "/tmp/unit-kallsyms-XXXXXX";
	bool present[4];

	if (!write_file(path,
			"ffffffff816f6ee0 t do_vfs_ioctl\n"
			"ffffffffc0a01000 t vfio_fops_unl_ioctl\t[vfio]\n"
			/* a clone is not the function: kprobes on the plain name would fail */
			"ffffffffc0b02000 t vfio_pci_core_ioctl.isra.0\t[vfio_pci_core]\n"
			/* data, not text */
			"ffffffffc0c03000 d vfio_iommu_type1_ioctl\t[vfio_iommu_type1]\n"
			"garbage\n\n"
			"ffffffffc0c04000 T\n"))
		return;
	CHECK_EQ_INT(kallsyms_find(path, NULL, names, 4, present, mods), 2);
	CHECK(present[0] && !present[1] && !present[2] && present[3]);
	CHECK_STR(mods[0], "vfio");
	CHECK_STR(mods[3], "");
	/* with a hint, a line without it is not read: do_vfs_ioctl is not seen */
	CHECK_EQ_INT(kallsyms_find(path, "vfio", names, 4, present, mods), 1);
	CHECK(present[0] && !present[3]);
	unlink(path);
	CHECK_EQ_INT(kallsyms_find(path, NULL, names, 4, present, mods), -ENOENT);
	/* what an earlier call found is not left behind */
	CHECK(!present[0] && !mods[0][0]);
}
