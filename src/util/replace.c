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
 *
 * Nor may a node planted there make root block or write where it should
 * not: a fifo (opened for writing, it waits for a reader forever), a
 * terminal, /dev/null or any device. Only a regular file is written;
 * not_regular() is the one rule, for dm_replace_file() and the writers
 * that append to a file of their own (dm_open_regular()).
 */
#include "util/replace.h"

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

/* What @mode is, for a message. */
static const char *kind(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a fifo";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFSOCK:
		return "a socket";
	case S_IFLNK:
		return "a symlink";
	default:
		return "of no known type";
	}
}

/* 0 when @mode is a regular file's; else -EISDIR for a directory, -ELOOP
 * for a symlink, -EACCES for the rest, the reason in @msg. */
static int not_regular(mode_t mode, char *msg, size_t size)
{
	if (S_ISREG(mode))
		return 0;
	if (msg && size)
		snprintf(msg, size, "not a regular file (%s)", kind(mode));
	return S_ISDIR(mode) ? -EISDIR : S_ISLNK(mode) ? -ELOOP : -EACCES;
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

int dm_replace_file(const char *path, const char *data, size_t len, char *msg, size_t size)
{
	char real[PATH_MAX], tmp[PATH_MAX + 9];
	struct stat st;
	if (msg && size)
		*msg = '\0';
	int r = resolve(path, real, sizeof(real), &st);
	if (r < 0)
		return r;
	/* someone else's symlink is replaced itself, as nothing is */
	if (st.st_mode && !S_ISLNK(st.st_mode) && (r = not_regular(st.st_mode, msg, size)) < 0)
		return r;
	/* a regular file, someone else's symlink, or nothing yet: a file of
	 * a random name beside it (O_EXCL: no link is followed), renamed over
	 * the name; a dot-file, which readers of a directory's files skip
	 * (NFD's features.d, node_exporter's textfile directory) */
	const char *slash = strrchr(real, '/');
	int dir = slash ? (int)(slash - real) + 1 : 0;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%.*s.%s.XXXXXX", dir, real, real + dir) >=
	    sizeof(tmp))
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

int dm_open_regular(const char *path, int flags, mode_t mode, char *msg, size_t size)
{
	struct stat st;
	if (msg && size)
		*msg = '\0';
	if (lstat(path, &st) == 0) {
		int r = not_regular(st.st_mode, msg, size);
		if (r < 0)
			return r;
	} else if (errno != ENOENT || !(flags & O_CREAT)) {
		return -errno;
	}
	int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, mode);
	if (fd < 0) {
		int e = errno;
		/* ENXIO: a fifo with no reader put there since */
		if (e == ENXIO && lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
			return not_regular(st.st_mode, msg, size);
		return -e;
	}
	int r = fstat(fd, &st) < 0 ? -errno : not_regular(st.st_mode, msg, size);
	int fl = r == 0 ? fcntl(fd, F_GETFL) : 0;
	if (r == 0 && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0))
		r = -errno;
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}
