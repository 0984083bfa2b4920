/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * scan.h - enumeration: sources fill a table of device records keyed by
 * sysfs path (one device = one record, whichever sources saw it), then the
 * table is committed to the model, parents first. Which sources run, and in
 * what order, is the registry's (src/buses/sources.h): the scan runs the
 * ones it is given, and knows neither udev nor any bus.
 */
#ifndef DM_SCAN_H
#define DM_SCAN_H

#include "core/hashmap.h"
#include "core/model.h"

#include <stdbool.h>

struct dm_record_value {
	char *name;
	char *value;
};

struct dm_record {
	char *devpath; /* "/devices/pci0000:00/0000:00:02.0" */
	char *name; /* the directory name in the tree */
	char *sysname; /* the kernel's name when name differs (a clash), else NULL */
	char *parent; /* parent's devpath; NULL: a child of root */
	char *subsystem; /* kernel subsystem, may be NULL */
	char *driver; /* kernel driver bound, may be NULL */
	char *bus; /* the model bus ("sys" when none), or NULL for a class device */
	char *class_name; /* the class of a class device, or NULL */
	char *iface; /* its interface within the class (docs/design.md §6.1), or NULL */
	struct dm_record_value *values;
	size_t n_values;
	/* one device's scan: an ancestor the model has already, recorded for
	 * the sources' sake (a USB interface is filled from its device) and
	 * left as it is */
	bool known;
};

struct dm_source_cache;

struct dm_scan {
	struct dm_record **recs;
	size_t n, cap;
	struct dm_hashmap by_devpath;
	struct dm_hashmap by_name; /* "<subsystem>/<name>", built on first use */
	char **name_keys; /* the keys of by_name */
	size_t n_keys;
	size_t n_indexed; /* records when by_name was built; rebuilt when n moves on */
	bool partial; /* one device's records (hotplug): sources skip the rest quietly */
	struct dm_model *model; /* with partial: ancestors it has are not climbed past */
	/* what a caller keeps across scans for the sources (hotplug: the
	 * usb source's udev hwdb), or NULL: a source opens its own. Its
	 * layout is the sources' (src/buses/sources.h). */
	struct dm_source_cache *cache;
};

struct dm_source_ops {
	const char *name;
	/* the subsystem whose records it completes (NULL: it records devices
	 * itself): one device's scan runs it only for a new or changed record
	 * of that subsystem */
	const char *fills;
	/* Adds or completes records; returns 0 or -errno (the scan goes on
	 * with what the other sources found). */
	int (*scan)(struct dm_scan *s);
};

/* The most sources a scan runs: the registry's table is checked against
 * it when it is compiled (src/buses/sources.c). */
#define DM_SCAN_SOURCES_MAX 8

/* What a scan runs, and what it gives each device it adds: picked from the
 * registry of sources (dm_sources_pick()). */
struct dm_scan_sources {
	/* a whole scan's sources in their order, NULL-terminated: the one
	 * that places every device comes first */
	const struct dm_source_ops *all[DM_SCAN_SOURCES_MAX + 1];
	/* those of them that complete the records of a hotplugged device
	 * (dm_scan_devices()), in their order, NULL-terminated */
	const struct dm_source_ops *fillers[DM_SCAN_SOURCES_MAX + 1];
	/* the attribute groups every device added gets, in order,
	 * NULL-terminated (the sysfs-backed ones: pm/, the PCIe link, the
	 * device's own attributes, binding) */
	const struct dm_attribute_group *const *groups;
};

void dm_scan_init(struct dm_scan *s);
void dm_scan_done(struct dm_scan *s);
/* Finds or creates the record of @devpath. */
int dm_scan_get(struct dm_scan *s, const char *devpath, struct dm_record **ret);
struct dm_record *dm_scan_find(struct dm_scan *s, const char *devpath);
/* The record of subsystem @subsystem whose name is @name, or NULL. */
struct dm_record *dm_scan_find_by_name(struct dm_scan *s, const char *subsystem, const char *name);
int dm_record_set(struct dm_record *r, const char *name, const char *value);
/* The value @name of the record, or NULL. */
const char *dm_record_get(const struct dm_record *r, const char *name);
int dm_record_set_string(char **field, const char *value);

/* What a reconcile did. @device (may be NULL) is told of each device it
 * added or changed, after the fact, and of each it removes, just before. */
struct dm_scan_report {
	void (*device)(struct dm_device *dev, const char *action, void *data);
	void *data;
	size_t added, removed, changed, failed;
};

/*
 * Runs @src's sources (all) in order and brings @m in line with what they see: devices
 * the model has and the sources do not are removed (children first), those
 * it lacks are added (parents first), and the values and kernel driver of
 * the others refreshed (the listener is told what changed). On an empty
 * model this is the enumeration at start; after a lost event (hotplug), the
 * rescan. Counts go to @rep. Call without the model lock.
 */
int dm_scan_reconcile(struct dm_model *m, const struct dm_scan_sources *src,
		      struct dm_scan_report *rep);
/* dm_scan_reconcile() at start, logging what was found. */
int dm_scan_model(struct dm_model *m, const struct dm_scan_sources *src);

/* The model's device links made to match the devlink class devices it
 * has (their supplier and consumer links, status, sync_state_only,
 * runtime_pm, read from sysfs): missing ones added (one that would make a
 * cycle is refused and logged), those without a devlink device removed.
 * After every scan and hotplug run. Call without the model lock. */
int dm_scan_sync_links(struct dm_model *m);

/* A link's flags and dormancy from its devlink device's status,
 * sync_state_only and runtime_pm values (newlines cut; "" when missing),
 * for the scan and for a snapshot's links alike. */
void dm_scan_link_state(const char *status, const char *sync_state_only, const char *runtime_pm,
			unsigned *flags, bool *dormant);

/* A kernel driver's uevent (@devpath "/bus/<bus>/drivers/<name>", a module
 * loaded or unloaded): its proxy is registered (@add) or unregistered, as
 * sysfs then shows it, on a bus of the model. 0; -EINVAL for another
 * devpath, -ESTALE for an add sysfs does not show (the event is old), -errno.
 * Call without the model lock. */
int dm_scan_driver_event(struct dm_model *m, const char *devpath, bool add);

/* Hotplug's bind and unbind: @dev's kernel driver is now @driver (NULL:
 * none); it moves between kernel driver proxies, a user driver that holds
 * it keeps it. Call without the model lock. */
int dm_scan_set_kernel_driver(struct dm_device *dev, const char *driver);

/* Records the @i-th device of a hotplug run into @s (the source that
 * places devices: src/buses/udev.h's) and sets *ret to its record; leaves
 * *ret NULL for a device it skips (gone from sysfs meanwhile). */
typedef int (*dm_scan_record_fn)(struct dm_scan *s, size_t i, void *data, struct dm_record **ret);

/*
 * Hotplug: records @n devices with @record (add, change... events), keeps
 * the ancestors the model has as they are, completes the records with
 * @src's fillers (each run once for all, and only when a record of its
 * subsystem is new or changed), then adds what the model lacks (parents
 * first) and refreshes the values of what it has. @cache (may be NULL) is
 * the caller's, kept across runs for the sources.
 */
int dm_scan_devices(struct dm_model *m, size_t n, dm_scan_record_fn record, void *data,
		    const struct dm_scan_sources *src, struct dm_source_cache *cache);

#endif
