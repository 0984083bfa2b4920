/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * persist.h - bindings kept across boots and replugs (docs/design.md §7.5).
 *
 * A request made with "persist" (driverfsctl bind --persist) that succeeds
 * is recorded, by bus and device name, in the state file (driverfsd.conf's
 * [Binding] PersistFile=, default DM_PERSIST_FILE): one "BUS NAME DRIVER"
 * line each, DRIVER "none" for a device kept unbound. "default persist"
 * removes the device's line. The file is rewritten whole (a temporary file
 * renamed over it) at each change, and read at start, where it must be
 * root's (trust.h). At start, and whenever a recorded device appears
 * (hotplug add: the kernel has bound its own driver by then), the recorded
 * binding is applied through the same transaction, in-use checks included
 * (a refusal is logged), by the thread that saw it: the start's, or the
 * monitor's, whose next events wait meanwhile. the bindings file lists each
 * with whether it is in force.
 */
#ifndef DM_PERSIST_H
#define DM_PERSIST_H

#include "core/model.h"

#define DM_PERSIST_FILE "/var/lib/driverfsd/bindings"

/* Reads the state file at @path (kept for the rewrites; NULL: the
 * default). A missing file is none. Bad lines are logged (FILE:LINE) and
 * skipped. 0 or -errno (a file anyone but root could change: -EPERM). */
int dm_persist_load(const char *path);

/* Records @driver ("none": kept unbound) for the device @name of @bus, or
 * with @driver NULL forgets it; rewrites the file (dm_replace_file(): what
 * is not a regular file is refused). 0 or -errno, its reason in @msg
 * (@size bytes). */
int dm_persist_set(const char *bus, const char *name, const char *driver, char *msg,
		   size_t size);

/* Applies every recorded binding whose device is in @m and bound
 * otherwise. */
void dm_persist_apply_all(struct dm_model *m);

/* A device appeared (hotplug add): its recorded binding, if any, is
 * applied. */
void dm_persist_device_added(struct dm_device *dev);

/* the bindings file (0444): "BUS NAME DRIVER STATE" per recorded binding, STATE
 * "in-force", "absent" or "bound-to:X". */
extern const struct dm_attribute_group dm_persist_root_group;

#endif
