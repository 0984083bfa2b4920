/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef DRIVERFS_UNMOUNT_WATCH_H
#define DRIVERFS_UNMOUNT_WATCH_H

/* Forks a watcher that detaches the driverfs mount just made at
 * @mountpoint if this process ends without unmounting it (SIGKILL, a
 * crash). Call it once, after the mount and after daemonizing. As non-root
 * it does nothing (fusermount3's auto_unmount stays the only cure).
 * @handover: the connection's shared state (dm_fs_handover_header()), or
 * NULL: a daemon that left the connection to a successor (handover.h) is
 * not one that died, and its mount stays while one serves, or comes within
 * 30 s; else it is detached then.
 * Returns 1 when a watcher runs, 0 when none is needed (not root), or
 * -errno (-ENOENT: no driverfs mount there). */
int dm_unmount_watch_start(const char *mountpoint, const void *handover);

#endif
