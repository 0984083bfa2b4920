/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* readall.c - reading a descriptor to its end into one buffer. */
#include "util/readall.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* dm_read_all(), which @short_is_end stops at a first read that comes
 * back short (*ret_len < @first - 1). */
static int read_from(int fd, size_t first, size_t max, bool short_is_end, char **ret,
		     size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int r = 0;
	for (bool once = false;; once = true) {
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
		if (short_is_end && !once && len < cap - 1)
			break;
	}
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

int dm_read_all(int fd, size_t first, size_t max, char **ret, size_t *ret_len)
{
	return read_from(fd, first, max, false, ret, ret_len);
}

int dm_read_value(int fd, size_t max, char **ret, size_t *ret_len)
{
	/* a page and the byte after it: a value of a whole page is one read */
	return read_from(fd, 4097 + 1, max, true, ret, ret_len);
}

ssize_t dm_pread_all(int fd, void *buf, size_t size, off_t off)
{
	size_t got = 0;
	while (got < size) {
		ssize_t n = pread(fd, (char *)buf + got, size - got, off + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 && got == 0 ? -errno : (ssize_t)got;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int dm_open_value_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EOPNOTSUPP;
	}
	return fd;
}
