/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* replace.h - writing a file whole or not at all. */
#ifndef DM_REPLACE_H
#define DM_REPLACE_H

#include <stddef.h>
#include <sys/types.h>

/* Writes the @len bytes at @data as the file @path. A regular file (or a
 * new one) is replaced whole or not at all: written to a dot-file of a
 * random name beside it (".NAME.XXXXXX", created with O_EXCL, which
 * follows no symlink, and skipped by readers of a directory's files), synced,
 * made 0644 and renamed over it. A symlink of the caller's or root's is
 * followed (its target replaced); anyone else's is replaced itself, never
 * followed (the file may be in a directory others write to). Anything
 * else is refused, never opened (a fifo with no reader would block the
 * writer forever; renaming over a device would replace the node): a
 * directory is -EISDIR, a fifo, socket, character device (/dev/null, a
 * terminal) or block device -EACCES, with "not a regular file (a fifo)"
 * in @msg (@size bytes; "" on success and other errors). 0 or -errno; on
 * failure the file is as it was. */
int dm_replace_file(const char *path, const char *data, size_t len, char *msg, size_t size);

/* Opens @path for writing (@flags: O_WRONLY or O_RDWR with any of O_CREAT,
 * O_TRUNC, O_APPEND; @mode for O_CREAT) when it is a regular file, or
 * none yet with O_CREAT, refusing anything else as dm_replace_file() does
 * (a symlink too, -ELOOP), without blocking: what lstat() shows is checked
 * before it is opened, with O_NONBLOCK, and what was opened is checked
 * again with fstat() (a fifo put there in between). O_CLOEXEC, O_NOCTTY
 * and O_NOFOLLOW are added; O_NONBLOCK is off on the descriptor returned.
 * The descriptor or -errno, @msg as dm_replace_file()'s. */
int dm_open_regular(const char *path, int flags, mode_t mode, char *msg, size_t size);

#endif
