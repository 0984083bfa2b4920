/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * format.h - the snapshot's JSON (docs/snapshot.md) built from
 * plain values, with json-c only. driverfsd fills it from the model and
 * driverfsctl from the files of a mount; both write through here, so one
 * place fixes the key order and layout that make their files identical.
 */
#ifndef DM_SNAPSHOT_FORMAT_H
#define DM_SNAPSHOT_FORMAT_H

#include <json-c/json.h>
#include <stdbool.h>

#define DM_SNAPSHOT_FORMAT "driverfs-snapshot"
#define DM_SNAPSHOT_VERSION 1

/* A new document with its empty "buses", "classes" and "devices" arrays,
 * which the document owns (borrowed into the ret_ pointers); NULL on ENOMEM. */
json_object *dm_snapshot_doc_new(json_object **ret_buses, json_object **ret_classes,
				 json_object **ret_devices);

/* Appends a bus (name; its "drivers" array, borrowed into *ret_drivers) to
 * @buses; a driver (name, kind, priority) to a bus's drivers; a class (its
 * "interfaces" array in *ret_interfaces) to @classes. 0 or -ENOMEM. */
int dm_snapshot_add_bus(json_object *buses, const char *name, json_object **ret_drivers);
int dm_snapshot_add_driver(json_object *drivers, const char *name, bool kernel, int priority);
int dm_snapshot_add_class(json_object *classes, const char *name, json_object **ret_interfaces);
int dm_snapshot_add_string(json_object *array, const char *s);

/* One device's members; NULL members are left out. */
struct dm_snapshot_device {
	const char *path; /* under root/, "" for root */
	const char *devpath;
	const char *sysname; /* only where it differs from the directory name */
	const char *bus;
	const char *class_name;
	const char *interface;
	const char *driver;
	const char *kernel_driver;
	bool suspended;
};

/* Appends the device @d to @devices; *ret_values (borrowed) is its "values"
 * object, to be filled in name order with dm_snapshot_add_value(). */
int dm_snapshot_add_device(json_object *devices, const struct dm_snapshot_device *d,
			   json_object **ret_values);
int dm_snapshot_add_value(json_object *values, const char *name, const char *value);
/* Whether a value of @len bytes can be saved in this format: UTF-8 text
 * without a NUL, shorter than a page. */
bool dm_snapshot_value_is_text(const char *value, size_t len);
/* Whether the content of a value file (@len bytes, as read) is kept in a
 * snapshot: text, as above, followed by exactly the one newline a loaded
 * static value is shown with, so that the snapshot's mount shows the same
 * bytes. Others (binary sysfs attributes such as USB descriptors, values
 * without a newline, empty files) are left out, by driverfsd --save and
 * driverfsctl save alike. */
bool dm_snapshot_file_is_kept(const char *content, size_t len);

/* The document as the file holds it, without the final newline; owned by
 * @doc. */
const char *dm_snapshot_to_string(json_object *doc);

/* Writes @doc to @path whole or not at all: a temporary file beside it,
 * synced, then renamed over it. 0 or -errno. */
int dm_snapshot_write_file(json_object *doc, const char *path);

#endif
