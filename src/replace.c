/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * replace.c - writing a file whole or not at all (replace.h): snapshots
 * (driverfsd --save, driverfsctl save), the persisted bindings and
 * driverfsctl metrics' file for a textfile collector, which may read it at
 * any moment.
 *
 * The file may be in a directory someone else can write to (/tmp, or
 * node_exporter's textfile directory, owned by its user), while driverfsd
 * and a metrics timer run as root: a symlink planted there under the
 * file's name must not make root replace what it points to. A link is
 * followed only when it is the caller's own or root's (as the kernel's
 * protected_symlinks has it for sticky directories, here everywhere);
 * anyone else's link is replaced itself, as rename(2) does.
 */
#include "replace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_HOPS 8

static int write_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = write(fd, data, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

/* @path with the caller's and root's symlinks followed, into @out; *@st
 * what is there (st_mode 0 when nothing is). 0 or -errno. */
static int resolve(const char *path, char *out, size_t size, struct stat *st)
{
	if ((size_t)snprintf(out, size, "%s", path) >= size)
		return -ENAMETOOLONG;
	for (int hop = 0;; hop++) {
		if (lstat(out, st) < 0) {
			if (errno != ENOENT)
				return -errno;
			st->st_mode = 0;
			return 0;
		}
		if (!S_ISLNK(st->st_mode) || (st->st_uid != geteuid() && st->st_uid != 0))
			return 0;
		if (hop == MAX_HOPS)
			return -ELOOP;
		char target[PATH_MAX];
		ssize_t n = readlink(out, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		if (target[0] == '/') {
			memcpy(out, target, (size_t)n + 1);
			continue;
		}
		char *slash = strrchr(out, '/');
		size_t dir = slash ? (size_t)(slash - out) + 1 : 0;
		if (dir + (size_t)n >= size)
			return -ENAMETOOLONG;
		memcpy(out + dir, target, (size_t)n + 1);
	}
}

int dm_replace_file(const char *path, const char *data, size_t len)
{
	char real[PATH_MAX], tmp[PATH_MAX + 8];
	struct stat st;
	int r = resolve(path, real, sizeof(real), &st);
	if (r < 0)
		return r;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (st.st_mode && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
		/* /dev/null, a fifo, a terminal: written to, as renaming over
		 * it would replace the node itself */
		int fd = open(real, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
		if (fd < 0)
			return -errno;
		r = write_all(fd, data, len);
		if (close(fd) < 0 && r == 0 && errno != EINTR)
			r = -errno;
		return r;
	}
	/* a regular file, someone else's symlink, or nothing yet: a file of
	 * a random name beside it (O_EXCL: no link is followed), renamed over
	 * the name */
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", real) >= sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = write_all(fd, data, len);
	if (r == 0 && (fsync(fd) < 0 || fchmod(fd, 0644) < 0))
		r = -errno;
	if (close(fd) < 0 && r == 0 && errno != EINTR)
		r = -errno;
	if (r == 0 && rename(tmp, real) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}
