/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* readall.c - reading a descriptor to its end into one buffer. */
#include "readall.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

int dm_read_all(int fd, size_t first, size_t max, char **ret, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int r = 0;
	for (;;) {
		/* always room for a byte past the data (a NUL, for callers) */
		if (len + 1 >= cap) {
			size_t more = cap ? cap * 2 : first;
			if (cap >= max || more < cap) {
				r = cap >= max ? -EFBIG : -ENOMEM;
				break;
			}
			char *nb = realloc(buf, more);
			if (!nb) {
				r = -ENOMEM;
				break;
			}
			buf = nb;
			cap = more;
		}
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}
