/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * deferred.h - devices_deferred at the mount's top (docs/design.md §6.10):
 * the kernel's deferred probes (debugfs's devices_deferred, read at each
 * open, root only as debugfs is), a line per device, "NAME\tREASON", each
 * escaped and bounded as fleet/deferred.h says. Empty when the kernel's
 * file cannot be read (debugfs not mounted, a daemon not root). A live
 * machine's: a snapshot's mount has none.
 */
#ifndef DM_BUSES_DEFERRED_H
#define DM_BUSES_DEFERRED_H

#include "core/model.h"

/* the root device's group (dm_model_add_root_group()) */
extern const struct dm_attribute_group dm_deferred_root_group;

#endif
