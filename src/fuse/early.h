/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * early.h - a connection handed over, answered before the next daemon has
 * its model (docs/design.md §10.1).
 *
 * A next daemon enumerates the machine before it serves, which takes
 * seconds to a minute on a large one; its readers would wait all along.
 * So, from the moment it holds the connection, a thread of its own reads
 * /dev/fuse and answers what the node mirror alone lets it answer right
 * (fs_mirror_source(): a file below its device's devpath, the device
 * checked to be the same one by its identity):
 *  - the read-only opens of sysfs attributes the last daemon read through
 *    a passthrough backing, each given a backing (shared with the files
 *    the last daemon opened), so that the kernel reads the value from
 *    sysfs itself, fresh; and their GETATTRs (a read through a backing
 *    drops the atime the kernel keeps, so the stat after one asks);
 *  - the read-only opens of values whose pages the kernel keeps
 *    (keep_cache: the last daemon's pages, as a reader would have had them
 *    without a restart, dropped with the kernel's other caches of the
 *    last daemon once the model is there); and their GETATTRs, answered
 *    with exactly the size and mtime the last daemon told the kernel
 *    last (fs_mirror_told(): any other drops the pages);
 *  - the GETATTRs of directories (fs_mirror_dir());
 *  - ENOSYS to what the session answers so (an ioctl: isatty() of every
 *    stdio open).
 * Every other request is kept, in order, and given to the session when it
 * starts (fs_early_pop(), from the session's I/O), as if the kernel had
 * sent it then. Only over /dev/fuse. Private to src/fuse.
 */
#ifndef DM_FS_EARLY_H
#define DM_FS_EARLY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct fs_early;
struct fs_mirror;
struct fs_passthrough;

/* Starts answering the connection @fd from @m (read only, until
 * fs_early_stop()), with backings from @pt, its files' times from @start
 * (the last daemon's time base, as fs_view_stat() gave them: what the
 * kernel holds), and ENOSYS to the requests
 * @unhandled names (the session's answer to them). 0 or -errno. */
struct timespec;
int fs_early_start(int fd, const struct fs_mirror *m, struct fs_passthrough *pt,
		   const struct timespec *start, bool (*unhandled)(uint32_t opcode),
		   struct fs_early **ret);
/* Stops reading (the thread ended on return): the requests read and not
 * answered are kept for fs_early_pop(). The opens answered and the
 * requests kept, so far. */
void fs_early_stop(struct fs_early *e, uint64_t *ret_answered, uint64_t *ret_kept);
/* The next request kept, copied into @buf (the session's read buffer):
 * its length, 0 when none is left, -EMSGSIZE for one larger than @size
 * (dropped: answered EIO). Any thread. */
ssize_t fs_early_pop(void *e, void *buf, size_t size);
void fs_early_free(struct fs_early *e);

#endif
