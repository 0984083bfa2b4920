/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* save.c - the model written as a snapshot file, in format.c's layout. */
#include "snapshot.h"

#include "format.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

static int add_value(const char *name, const char *value, void *data)
{
	return dm_snapshot_add_value(data, name, value) < 0;
}

/* One device's entry: keys in a fixed order, values in name order. */
static int save_device(struct dm_device *dev, void *data)
{
	char path[PATH_MAX];
	if (dm_device_path_locked(dev, path, sizeof(path)) < 0)
		return 1;
	struct dm_bus *bus = dm_device_get_bus_locked(dev);
	struct dm_class *cls = dm_device_get_class_locked(dev);
	struct dm_interface *iface = dm_device_get_interface_locked(dev);
	struct dm_driver *drv = dm_device_get_driver_locked(dev);
	const char *sysname = dm_device_get_sysname(dev);
	struct dm_snapshot_device d = {
		.path = path,
		.devpath = dm_device_get_devpath(dev),
		.sysname = strcmp(sysname, dm_device_get_name(dev)) ? sysname : NULL,
		.bus = bus ? dm_bus_get_name(bus) : NULL,
		.class_name = cls ? dm_class_get_name(cls) : NULL,
		.interface = iface ? dm_interface_get_name(iface) : NULL,
		.driver = drv ? dm_driver_get_name(drv) : NULL,
		.kernel_driver = dm_device_get_kernel_driver(dev),
		.suspended = dm_device_get_power(dev) == DM_POWER_SUSPENDED,
	};
	json_object *values;
	return dm_snapshot_add_device(data, &d, &values) < 0 ||
	       dm_device_for_each_value_locked(dev, add_value, values);
}

static int save_driver(struct dm_driver *drv, void *data)
{
	return dm_snapshot_add_driver(data, dm_driver_get_name(drv),
				      dm_driver_get_kind(drv) == DM_DRIVER_KERNEL,
				      dm_driver_get_priority(drv)) < 0;
}

static int save_bus(struct dm_bus *bus, void *data)
{
	json_object *drivers;
	return dm_snapshot_add_bus(data, dm_bus_get_name(bus), &drivers) < 0 ||
	       dm_bus_for_each_driver_locked(bus, save_driver, drivers);
}

static int save_iface(struct dm_interface *i, void *data)
{
	return dm_snapshot_add_string(data, dm_interface_get_name(i)) < 0;
}

static int save_class(struct dm_class *c, void *data)
{
	json_object *ifaces;
	return dm_snapshot_add_class(data, dm_class_get_name(c), &ifaces) < 0 ||
	       dm_class_for_each_interface_locked(c, save_iface, ifaces);
}

static json_object *model_json(struct dm_model *m)
{
	json_object *buses, *classes, *devices;
	json_object *doc = dm_snapshot_doc_new(&buses, &classes, &devices);
	if (!doc)
		return NULL;
	dm_model_read_lock(m);
	int failed = dm_model_for_each_bus_locked(m, save_bus, buses) ||
		     dm_model_for_each_class_locked(m, save_class, classes) ||
		     dm_model_for_each_device_locked(m, save_device, devices);
	dm_model_unlock(m);
	if (failed) {
		json_object_put(doc);
		return NULL;
	}
	return doc;
}

int dm_snapshot_save(struct dm_model *m, const char *path)
{
	json_object *doc = model_json(m);
	if (!doc)
		return -ENOMEM;
	int r = dm_snapshot_write_file(doc, path);
	json_object_put(doc);
	return r;
}
