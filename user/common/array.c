// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

int array_reserve(void *arrp, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t ncap = *cap ? *cap : (first ? first : 1);
	void *arr, *na;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (!size || ncap > SIZE_MAX / size)
		return -ENOMEM;
	/* through memcpy: @arrp is a T **, and T * need not alias void * */
	memcpy(&arr, arrp, sizeof(arr));
	na = realloc(arr, ncap * size);
	if (!na)
		return -ENOMEM;
	memcpy(arrp, &na, sizeof(na));
	*cap = ncap;
	return 0;
}
