/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nameset.h - the model's devices by kernel name (sysname), for the bus,
 * class, interface and driver listings, which name devices so: a lookup of
 * one name there costs O(1), not a walk of the listing.
 *
 * Names are not unique across the model ("0:0:0:0" in several classes), so
 * this is a multiset: an open-addressing table of device pointers (one
 * pointer per slot, at most half full), probed linearly and compacted by
 * backward shift on removal. Not thread-safe: the model lock protects it.
 * A device's sysname must not change while it is in the set.
 */
#ifndef DM_NAMESET_H
#define DM_NAMESET_H

#include <stdbool.h>
#include <stddef.h>

struct dm_device;

struct dm_nameset {
	struct dm_device **slots;
	size_t cap; /* a power of two, or 0 */
	size_t n;
};

void dm_nameset_done(struct dm_nameset *s);
/* 0 or -ENOMEM. */
int dm_nameset_add(struct dm_nameset *s, struct dm_device *dev);
void dm_nameset_remove(struct dm_nameset *s, struct dm_device *dev);
/* The first device named @name for which @match returns true, or NULL. */
struct dm_device *dm_nameset_find(const struct dm_nameset *s, const char *name,
				  bool (*match)(struct dm_device *, void *), void *data);

#endif
