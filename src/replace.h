/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* replace.h - writing a file whole or not at all. */
#ifndef DM_REPLACE_H
#define DM_REPLACE_H

#include <stddef.h>

/* Writes the @len bytes at @data as the file @path. A regular file (or a
 * new one) is replaced whole or not at all: written to a file of a random
 * name beside it (created with O_EXCL, which follows no symlink), synced,
 * made 0644 and renamed over it. A symlink of the caller's or root's is
 * followed (its target replaced); anyone else's is replaced itself, never
 * followed (the file may be in a directory others write to). Anything
 * else (/dev/null, a fifo, a terminal) is written to, as renaming over it
 * would replace the node itself; a directory is -EISDIR. 0 or -errno; on
 * failure the file is as it was. */
int dm_replace_file(const char *path, const char *data, size_t len);

#endif
