/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* array.h - the one way an array that is appended to grows. */
#ifndef DM_CORE_ARRAY_H
#define DM_CORE_ARRAY_H

#include <stdbool.h>
#include <stdlib.h>

/* Room for one more element of @size bytes in the array *@v of @n elements
 * and *@cap allocated: doubled (from @first) when full. false when out of
 * memory (the array is unchanged then). */
static inline bool dm_array_grow(void **v, size_t *cap, size_t n, size_t size, size_t first)
{
	if (n < *cap)
		return true;
	size_t c = *cap ? 2 * *cap : first;
	if (c < *cap || c > (size_t)-1 / size)
		return false;
	void *p = realloc(*v, c * size);
	if (!p)
		return false;
	*v = p;
	*cap = c;
	return true;
}

#endif
