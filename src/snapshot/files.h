/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * files.h - what a loaded snapshot's device holds beyond its static
 * values: the files of format 2's "files" and "dirs" members (a mode of
 * their own, binary contents, attribute directories), served read-only by
 * a dynamic attribute group; and the driver the device was bound to. Both
 * are the device's bus data (a snapshot device has no enumerator).
 */
#ifndef DM_SNAPSHOT_FILES_H
#define DM_SNAPSHOT_FILES_H

#include "core/model.h"

#include <json-c/json.h>

struct dm_snapshot_files;

/* A device's saved files, empty. NULL when out of memory. */
struct dm_snapshot_files *dm_snapshot_files_new(void);
void dm_snapshot_files_free(struct dm_snapshot_files *f);

/* Takes the "files" and "dirs" members of the device object @o (and,
 * under "dirs", each directory's "values", "files" and "dirs"); names
 * every entry it refuses in @err. 0, -EINVAL or -ENOMEM. */
int dm_snapshot_files_parse(struct dm_snapshot_files *f, json_object *o, char *err,
			    size_t err_size);
/* Whether there is anything to serve. */
bool dm_snapshot_files_empty(const struct dm_snapshot_files *f);

/* The driver the device was bound to (a reference, taken), or NULL. */
void dm_snapshot_files_set_driver(struct dm_snapshot_files *f, struct dm_driver *drv);
struct dm_driver *dm_snapshot_files_get_driver(const struct dm_snapshot_files *f);

/* The group that serves them: the device's bus data must be its
 * struct dm_snapshot_files. */
extern const struct dm_attribute_group dm_snapshot_files_group;

#endif
