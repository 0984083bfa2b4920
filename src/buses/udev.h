/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * udev.h - what of the udev source (src/buses/udev.c) takes a udev_device:
 * the hotplug monitor's recording of one device's uevent. Its whole scan
 * is dm_source_udev, in the registry (src/buses/sources.c).
 */
#ifndef DM_UDEV_H
#define DM_UDEV_H

#include "scan/scan.h"

struct udev_device;

/*
 * Hotplug: the devices of the uevents @ds (add, change...) and their
 * ancestors recorded by the udev source (up to the first ancestor the
 * model has), completed by @src's fillers and applied (dm_scan_devices()).
 * A device gone from sysfs meanwhile is skipped (its remove event
 * follows); other errors are logged. @cache (may be NULL) is the caller's.
 */
int dm_udev_scan_devices(struct dm_model *m, struct udev_device *const *ds, size_t n,
			 const struct dm_scan_sources *src, struct dm_source_cache *cache);

/*
 * Hotplug's bind and unbind: @dev's uevent value recorded again from the
 * sysfs text of @d, its event's device (the kernel's text gains or loses
 * DRIVER=), with the checks of a recording; kept when the device left
 * sysfs meanwhile or its text is empty. 1 when it changed, 0 when not,
 * -errno. Call without the model lock.
 */
int dm_udev_refresh_uevent(struct dm_device *dev, struct udev_device *d);

#endif
