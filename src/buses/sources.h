/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sources.h - the registry of bus enumerators ("sources", docs/design.md
 * §5.2): one table (src/buses/sources.c) gives each its operations, its
 * key in driverfsd.conf's [Sources], its default and its role, in the
 * order the sources run. The configuration parser (the keys), the
 * daemon's set-up and the hotplug monitor (dm_sources_pick()) read it;
 * nothing else lists the sources.
 */
#ifndef DM_SOURCES_H
#define DM_SOURCES_H

#include "scan/scan.h"

#include <stdbool.h>
#include <stddef.h>

enum dm_source_role {
	/* records every device and its place in the tree (its ops fill no
	 * subsystem): always on, its key=no an error; it runs first, and
	 * records a hotplugged device (src/buses/udev.h) */
	DM_SOURCE_PLACES,
	/* completes the records of its ops' subsystem (fills): may be
	 * turned off; it runs after the one that places them, on a
	 * hotplugged device's records too */
	DM_SOURCE_FILLS,
};

struct dm_source {
	const struct dm_source_ops *ops;
	const char *key; /* its key in driverfsd.conf's [Sources] */
	bool on; /* its default */
	enum dm_source_role role;
};

/* The table, in the order the sources run: dm_n_sources of them, at most
 * DM_SCAN_SOURCES_MAX. A configuration's sources (struct dm_config) are
 * indexed as this table. */
extern const struct dm_source dm_sources[];
extern const size_t dm_n_sources;

/* The index in dm_sources of the source whose [Sources] key is @key
 * (case as written), or -1. */
int dm_source_find_key(const char *key);

/* The sources @on says (indexed as dm_sources; the placing one whatever it
 * says) into @ret->all in the table's order, the fillers among them into
 * @ret->fillers, and the groups every device added gets. */
void dm_sources_pick(const bool *on, struct dm_scan_sources *ret);

struct udev_hwdb;
/* What a caller keeps across scans for the sources (struct dm_scan's
 * cache; the hotplug monitor's, for its life). */
struct dm_source_cache {
	struct udev_hwdb *hwdb; /* the usb source's names; NULL: it opens its own */
};

#endif
