// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Kernel functions in /proc/kallsyms (see kallsyms.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "resolve/kallsyms.h"

_Static_assert(KSYM_NAME_MAX == 64, "the module's width in kallsyms_find's format");

int kallsyms_find(const char *path, const char *hint, char names[][KSYM_NAME_MAX], int n,
		  bool *present, char module[][KSYM_NAME_MAX])
{
	char line[512], type, sym[256], mod[KSYM_NAME_MAX];
	int found = 0;
	FILE *f;

	for (int i = 0; i < n; i++) {
		present[i] = false;
		module[i][0] = 0;
	}
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		int k;

		mod[0] = 0;
		if (hint && !strstr(line, hint))
			continue;
		/* longer lines are cut, and then match no name */
		k = sscanf(line, "%*s %c %255s [%63[^]]]", &type, sym, mod);
		if (k < 2 || (type != 't' && type != 'T'))
			continue;
		for (int i = 0; i < n; i++) {
			if (present[i] || strcmp(sym, names[i]))
				continue;
			present[i] = true;
			if (k == 3)
				memcpy(module[i], mod, strlen(mod) + 1);
			found++;
		}
	}
	fclose(f);
	return found;
}
