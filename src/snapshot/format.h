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

#include <sys/types.h>

#include "sanitize.h"

#define DM_SNAPSHOT_FORMAT "driverfs-snapshot"
/* The version written; a loader takes this one and every one back to
 * DM_SNAPSHOT_VERSION_MIN (version 1 has no "files" or "dirs"). */
#define DM_SNAPSHOT_VERSION 2
#define DM_SNAPSHOT_VERSION_MIN 1
/* The longest value a snapshot holds (a binary attribute, decoded). */
#define DM_SNAPSHOT_FILE_MAX ((size_t)1 << 20)
/* The deepest attribute directory and the longest path of one under a
 * device, as the tree passes them through from sysfs. */
#define DM_SNAPSHOT_DIR_DEPTH_MAX 8
#define DM_SNAPSHOT_DIR_PATH_MAX 200

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
/* The last class of @classes gets a "drivers" array (its class drivers,
 * added as a bus's are), borrowed into *ret_drivers: only a class that has
 * some, so that a snapshot without class drivers reads as before.
 * 0, -EINVAL (no class), -ENOMEM. */
int dm_snapshot_add_class_drivers(json_object *classes, json_object **ret_drivers);
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

/* Appends the device @d to @devices; *ret_dev (borrowed) is its object,
 * for dm_snapshot_add_file() and dm_snapshot_add_dir(). */
int dm_snapshot_add_device(json_object *devices, const struct dm_snapshot_device *d,
			   json_object **ret_dev);

/*
 * One file of a device's directory or of one of its attribute directories
 * (@owner: the object dm_snapshot_add_device() or dm_snapshot_add_dir()
 * gave): @len bytes of @content, as a read of the file from offset 0 gave
 * them (NULL: no read, or one that failed with the errno @err, kept by its
 * name: "EOPNOTSUPP"), and its @mode. Where it goes
 * (docs/snapshot.md): a mode-0444 file whose content is text ending in one
 * newline is a value ("values", the newline off); any other is a "files"
 * entry with its mode and its bytes, as text or in base64. With @sanitize,
 * values are masked (sanitize.h) and binary ones dropped. Files come in
 * name order, all before the owner's first directory. 0 or -ENOMEM.
 */
int dm_snapshot_add_file(json_object *owner, const char *name, mode_t mode, const char *content,
			 size_t len, int err, const struct dm_sanitizer *sanitize);
/* The errno of the name a file's "error" holds; 0 for none known. */
int dm_snapshot_errno(const char *name);
/* Whether driverfsd's own file @name (its name without DM_OWN_PREFIX) of
 * a device's own directory (the root device's: @root) is left out of its
 * entry: derived from the model or kept in other members (devpath,
 * kernel_driver, power, power_error, power_log; the root's metrics, the
 * serving daemon's counters). A kernel's file of such a name is saved:
 * the caller tells the two apart (docs/design.md §6.2). */
bool dm_snapshot_is_derived(const char *name, bool root);

/* Whether the file @name of a device (a path under its directory:
 * "statistics/rx_bytes") is volatile: a value the kernel changes between
 * any two reads, or that moves with power management, which a comparison
 * of two trees leaves out (docs/snapshot.md, "Volatile values"). */
bool dm_snapshot_is_volatile(const char *name);
/* The rules it applies, @i from 0 until NULL, as docs/snapshot.md writes
 * them: a name, "*SUFFIX", or "DIR/" for every file under such a
 * directory. */
const char *dm_snapshot_volatile_rule(size_t i);

/* The document's "links" (since version 2, absent when none): one object
 * per device link, "supplier" and "consumer" the paths under root/ of its
 * ends, sorted by their places in devices[] (the supplier's, then the
 * consumer's), which both savers give alike; @pairs holds @n (supplier,
 * consumer) path pairs, those naming a device devices[] lacks left out.
 * Call once devices[] is complete. 0, -ENOMEM. */
int dm_snapshot_add_links(json_object *doc, const char *const *pairs, size_t n);
/* An attribute directory of @owner, in name order after the owner's
 * files; *ret_dir (borrowed) takes its own files and directories. */
int dm_snapshot_add_dir(json_object *owner, const char *name, json_object **ret_dir);

/* Whether @s (NULL: yes) may be a name or path a snapshot's loader takes
 * (a device's path, devpath and sysname, a bus, class, interface or
 * driver, a file or directory): UTF-8 without a control character (C0,
 * DEL, C1). A device's strings reach shells and terminals; a crafted
 * snapshot must not bring them escape sequences or newlines. */
bool dm_snapshot_name_is_clean(const char *s);

/* Whether @len bytes of @value are text a snapshot holds as a JSON string:
 * UTF-8 without a NUL, a page at most (what sysfs gives of a value). */
bool dm_snapshot_value_is_text(const char *value, size_t len);

/* The document as the file holds it, without the final newline; owned by
 * @doc. */
const char *dm_snapshot_to_string(json_object *doc);

/* Writes @doc to @path whole or not at all: a temporary file beside it,
 * synced, then renamed over it; what is not a regular file is refused
 * with the reason in @msg (dm_replace_file()). 0 or -errno. */
int dm_snapshot_write_file(json_object *doc, const char *path, char *msg, size_t size);

#endif
