// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// libstackrt.so: the "runtime" of stackjob (stackjob.c): an allocator whose blocks the ledger
// books (mem=alloc, mem=free) and a native stack names. Built -O2 with frame pointers.
#include <stdlib.h>
#include <string.h>

void *dev_alloc(size_t n)
{
	char *p = malloc(n);

	if (p)
		memset(p, 0xa5, n < 16 ? n : 16);
	return p;
}

void dev_free(void *p)
{
	if (p)
		memset(p, 0, 1);
	free(p);
}
