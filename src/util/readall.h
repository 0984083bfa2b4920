/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* readall.h - reading a descriptor to its end into one buffer. */
#ifndef DM_READALL_H
#define DM_READALL_H

#include <stddef.h>
#include <sys/types.h>

/* Reads @fd to its end into a malloc()ed buffer (*ret, *ret_len bytes,
 * with room for one more byte after them), growing it from @first bytes;
 * -EFBIG past @max bytes, -ENOMEM, or the read's -errno (nothing
 * returned then). Does not close @fd. */
int dm_read_all(int fd, size_t first, size_t max, char **ret, size_t *ret_len);

/* The same for a sysfs attribute (or a regular file): a first read of a
 * page that comes back short is the whole value, as sysfs gives a value
 * whole at its first read; a full one is read on to the end. One read for
 * most values instead of two. */
int dm_read_value(int fd, size_t max, char **ret, size_t *ret_len);

/* Up to @size bytes at @off of @fd into @buf, fewer only at its end (a
 * binary sysfs attribute's part): the count, or the read's -errno when
 * nothing was read. */
ssize_t dm_pread_all(int fd, void *buf, size_t size, off_t off);

/* Opens the sysfs attribute (or regular file) @path to be read, following
 * no link at its end and never blocking (O_NONBLOCK stays on): the
 * descriptor, the open's -errno, or -EOPNOTSUPP when it is not a regular
 * file (closed then). */
int dm_open_value_file(const char *path);

#endif
