/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sysfs-attrs.h - a device's own sysfs attributes, passed through
 * (docs/design.md §6.7). Each regular file of the device's sysfs directory
 * is a file of its directory in the tree, under its sysfs name, unless
 * driverfsd has a file of that name (its own keeps the name) or the file
 * is one the tree leaves out (memory-mapped, side-effecting or binding
 * files: dm_sysfs_attr_policy()). Values are read from sysfs at each open
 * (DM_ATTR_LIVE: never cached), whole, as bytes; the listing is sysfs's at
 * the time it is taken. A write by root goes to the sysfs file, one value
 * per write, and returns the kernel's answer; files that change bindings or
 * the device set are read-only here. Modes are sysfs's, never looser.
 */
#ifndef DM_SYSFS_ATTRS_H
#define DM_SYSFS_ATTRS_H

#include <stdbool.h>

#include "core/model.h"

extern const struct dm_attribute_group dm_sysfs_attrs_group;

enum dm_sysfs_attr_policy {
	DM_SYSFS_PASS, /* shown, with sysfs's mode */
	DM_SYSFS_READ_ONLY, /* shown, never written through the tree */
	DM_SYSFS_LEFT_OUT, /* not shown */
	/* a PCI function's config: shown read-only, as much of it as sysfs
	 * gives a reader without CAP_SYS_ADMIN (the header: 64 bytes, 128 for
	 * a CardBus bridge), since FUSE tells the daemon a reader's uid and
	 * not its capabilities; left out elsewhere */
	DM_SYSFS_PCI_CONFIG,
};

/* What the tree does with the sysfs attribute @name. */
enum dm_sysfs_attr_policy dm_sysfs_attr_policy(const char *name);
/* Whether the file @name is a binary attribute a device gives piece by
 * piece (config, eeprom, edid, descriptors, report_descriptor, nvmem): read
 * by offset and size, as sysfs reads it, each read only what it asks. */
bool dm_sysfs_attr_is_ranged(const char *name);

#endif
