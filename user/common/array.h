/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Growable arrays: the one place that doubles a capacity and reallocs. */
#ifndef SPYRE_ARRAY_H
#define SPYRE_ARRAY_H

#include <stddef.h>

/*
 * Make room for @need elements of @size bytes in the array whose address is @arrp (a T **),
 * of capacity *@cap elements: the capacity doubles from @first (or from *@cap) until it holds
 * @need. Returns 0, or -ENOMEM with the array and *@cap untouched (the caller still frees it).
 */
int array_reserve(void *arrp, size_t *cap, size_t need, size_t size, size_t first);

#endif
