/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * view.h - the model as the mount shows it (docs/design.md §6): the
 * entries of a directory node, the node a name finds, the target of a link
 * and the attributes of a node. Private to src/fuse; nothing here talks to
 * the kernel, so it is tested without a mount (tests/unit/test-view.c).
 */
#ifndef DM_FS_VIEW_H
#define DM_FS_VIEW_H

#include "inode.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

/*
 * How long the kernel may keep a name and a node's attributes. Names,
 * static values and the files of power/ change only with the model, and
 * whatever changes the model after the mount invalidates what the kernel
 * cached (notify.c; docs/design.md §6.6), so both are kept long and a warm
 * walk costs no lookup, getattr or read. A changing value's pages are never
 * cached (it is read with direct_io: fs-files.c, fs_op_open()); a cached value's
 * mtime moves with each change of its device's files, so that invalidating
 * its attributes drops its pages too. The one exception is a live value of
 * unbounded length (the journal), whose size is measured at each stat:
 * fs_view_stat() gives it an attribute timeout of 0.
 */
#define FS_ENTRY_TIMEOUT 3600.0
#define FS_ATTR_TIMEOUT 3600.0

/* How long the kernel may keep a name of @kind without asking again: the
 * links of class/<class>/drivers/ come and go with the bindings of devices
 * the class does not hold, which the notifier does not follow name by
 * name, so they are looked up each time. */
static inline double fs_entry_timeout(enum fs_kind kind)
{
	return kind == FS_LINK_TO_DRV ? 0 : FS_ENTRY_TIMEOUT;
}

/* The directory listing @drv ("bus/<bus>/drivers", "class/<class>/drivers"
 * for a class driver), and its own directory (that and "/<driver>"), under
 * the mount root, into @buf: the length, or -ENAMETOOLONG. */
int fs_view_driver_listing(const struct dm_driver *drv, char *buf, size_t size);
int fs_view_driver_path(const struct dm_driver *drv, char *buf, size_t size);

/* Gets each entry of a directory; a non-zero return stops the walk. */
typedef int (*fs_emit_fn)(void *ctx, const char *name, const struct fs_target *t, mode_t type);

/* Walks the directory @dir of the model @m (its entries in listing order,
 * without "." and ".."); call with the model's read lock held. -ENOENT when
 * the directory itself is gone, -ENOTDIR when @dir is not a directory. */
int fs_view_walk_locked(struct dm_model *m, const struct fs_ref *dir, fs_emit_fn emit, void *ctx);

/* The target of @name in the directory @dir: from an index where one
 * serves (a device's children, groups and files; an attribute directory's;
 * bus, class, interface and driver listings, which may hold 10^5 entries),
 * else by walking @dir. -ENOENT when there is no such entry. A nested
 * attribute directory's path is put in @group, which the target's group
 * then points to. Call with the model's read lock held; the target holds
 * no reference (take one before dropping the lock). */
int fs_view_find_locked(struct dm_model *m, const struct fs_ref *dir, const char *name,
			struct fs_target *ret, char group[FS_GROUP_MAX]);

/* The target of the link node @n ("../" up to the mount root, then the
 * path there) into @buf; returns its length. -ENOENT when the device or
 * what it points to is gone, -ENAMETOOLONG when it does not fit. Call with
 * the model's read lock held. */
int fs_view_link_target_locked(const struct fs_ref *n, char *buf, size_t size);

/* Fills @st for the node @n of @m (times from @start, the mount's start,
 * or moved past it by the device's changes); -ENOENT when it no longer
 * exists. *ret_timeout (may be NULL) gets how long the kernel may keep it.
 * Call without the model lock: an attribute's size comes from its show(). */
int fs_view_stat(struct dm_model *m, const struct timespec *start, const struct fs_ref *n,
		 struct stat *st, double *ret_timeout);

/* The value of a driver's own file @name ("kind", "priority"), with its
 * newline ("" for a kernel driver's write-only bind and unbind); -ENOENT
 * when there is no such file. */
int fs_view_driver_file_show(struct dm_driver *drv, const char *name, char *buf, size_t size);
/* Whether a driver's file @name takes writes: bind and unbind. */
bool fs_view_driver_file_writable(const char *name);

#endif
