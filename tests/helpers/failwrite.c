/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * failwrite.c - a preload library that plays the kernel refusing a sysfs
 * write, for the tests. A testbed's attributes are plain files that take
 * every write; the kernel's answer to a bad value (EINVAL), a busy device
 * (EBUSY) or a refused one (EPERM) is what the tree must pass on, so this
 * library fails the write(2) of chosen files with a chosen errno and
 * writes nothing to them:
 *
 *   DRIVERFS_FAIL_WRITES="SUFFIX=ERRNO[,SUFFIX=ERRNO...]"
 *
 * A write to a file whose path (as /proc/self/fd names it) ends in SUFFIX
 * fails with ERRNO (a number); an open of such a file (by the path it is
 * asked for, /sys/...) loses O_TRUNC, which sysfs ignores and a testbed's
 * plain file would obey. Loaded before umockdev's preload library
 * (LD_PRELOAD order). Every other open and write goes on as usual.
 */
#include "preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The errno writes to @path fail with, or 0. */
static int errno_of_path(const char *path)
{
	const char *spec = getenv("DRIVERFS_FAIL_WRITES");
	if (!spec || !*spec || !path)
		return 0;
	size_t plen = strlen(path);
	while (*spec) {
		const char *eq = strchr(spec, '=');
		if (!eq)
			return 0;
		size_t slen = (size_t)(eq - spec);
		int err = atoi(eq + 1);
		if (slen > 0 && slen <= plen && memcmp(path + plen - slen, spec, slen) == 0 && err > 0)
			return err;
		const char *comma = strchr(eq, ',');
		if (!comma)
			break;
		spec = comma + 1;
	}
	return 0;
}

/* The errno @fd's writes fail with, or 0. */
static int chosen_errno(int fd)
{
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	return errno_of_path(path);
}

/* a file whose writes fail keeps its content */
static bool fails(const char *path)
{
	return errno_of_path(path) != 0;
}

PRELOAD_OPEN_KEEPING_CONTENT(fails)

ssize_t write(int fd, const void *buf, size_t count)
{
	static ssize_t (*real_write)(int, const void *, size_t);
	if (!real_write)
		real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	int err = fd > 2 ? chosen_errno(fd) : 0;
	if (err) {
		errno = err;
		return -1;
	}
	return real_write(fd, buf, count);
}
