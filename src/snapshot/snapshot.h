/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * snapshot.h - the whole model as a JSON file (schema: docs/snapshot.md),
 * for offline inspection, bug reports and benchmarks.
 *
 * A save, load and save again gives the same bytes: devices are written in
 * global-list order, values in name order, keys in a fixed order.
 */
#ifndef DM_SNAPSHOT_H
#define DM_SNAPSHOT_H

#include "core/model.h"

/* Writes @m to @path (through a temporary file renamed into place; what
 * is not a regular file is refused, the reason in @msg: dm_replace_file());
 * with @sanitize, what identifies the machine is masked (sanitize.h). */
int dm_snapshot_save(struct dm_model *m, const char *path, bool sanitize, char *msg,
		     size_t size);

/*
 * Fills the empty model @m from @path. Drivers come back bound to the devices
 * they were bound to, without hooks. On a bad file, returns -EINVAL and
 * writes a message naming what is wrong (and where) into @err.
 */
int dm_snapshot_load(struct dm_model *m, const char *path, char *err, size_t err_size);

#endif
