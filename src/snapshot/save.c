/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* save.c - the model written as a snapshot file, in format.c's layout. */
#include "snapshot.h"

#include "format.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* A value of a device's entry: a static one, copied under the model lock,
 * or the name of a sysfs attribute, read after it (values are read without
 * the lock, as every show() is). */
struct saved_value {
	char *name;
	char *value; /* NULL: to be read */
};

/* A device whose "values" object is filled after the lock is dropped. */
struct saved_device {
	struct dm_device *dev; /* referenced */
	json_object *values; /* borrowed from the document */
	struct saved_value *v;
	size_t n, cap;
	int err;
};

struct saving {
	json_object *devices;
	struct saved_device *devs;
	size_t n, cap;
};

static int keep(struct saved_device *sd, const char *name, const char *value)
{
	if (sd->n == sd->cap) {
		size_t cap = sd->cap ? 2 * sd->cap : 16;
		struct saved_value *v = realloc(sd->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		sd->v = v;
		sd->cap = cap;
	}
	struct saved_value *e = &sd->v[sd->n];
	e->name = strdup(name);
	e->value = value ? strdup(value) : NULL;
	if (!e->name || (value && !e->value)) {
		free(e->name);
		free(e->value);
		return -ENOMEM;
	}
	sd->n++;
	return 0;
}

static int keep_value(const char *name, const char *value, void *data)
{
	return keep(data, name, value) < 0;
}

/* The readable sysfs attributes of the device, by name. */
static int keep_sysfs(const struct dm_file_info *fi, void *data)
{
	if (!(fi->flags & DM_ATTR_SYSFS) || !(fi->mode & 0444))
		return 0;
	return keep(data, fi->name, NULL) < 0;
}

/* One device's entry: keys in a fixed order; its values come later. */
static int save_device(struct dm_device *dev, void *data)
{
	struct saving *s = data;
	char path[PATH_MAX];
	if (dm_device_path_locked(dev, path, sizeof(path)) < 0)
		return 1;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct saved_device *v = realloc(s->devs, cap * sizeof(*v));
		if (!v)
			return 1;
		s->devs = v;
		s->cap = cap;
	}
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
	struct saved_device *sd = &s->devs[s->n];
	*sd = (struct saved_device){ .dev = dev };
	if (dm_snapshot_add_device(s->devices, &d, &sd->values) < 0)
		return 1;
	s->n++;
	dm_device_ref(dev);
	return dm_device_for_each_value_locked(dev, keep_value, sd) ||
	       dm_device_for_each_file_locked(dev, NULL, keep_sysfs, sd);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct saved_value *)a)->name, ((const struct saved_value *)b)->name);
}

/* Reads the device's sysfs values (their newline off, as a static value is
 * kept), leaving out those it cannot read or keep (format.h), and fills its
 * "values" object in name order. */
static int fill_values(struct saved_device *sd)
{
	for (size_t i = 0; i < sd->n; i++) {
		struct saved_value *e = &sd->v[i];
		char *buf;
		size_t len;
		if (e->value || dm_device_show_alloc(sd->dev, NULL, e->name, &buf, &len) < 0)
			continue;
		if (dm_snapshot_file_is_kept(buf, len)) {
			buf[len - 1] = '\0';
			e->value = buf;
		} else {
			free(buf);
		}
	}
	qsort(sd->v, sd->n, sizeof(*sd->v), by_name);
	for (size_t i = 0; i < sd->n; i++) {
		const char *v = sd->v[i].value;
		if (v && dm_snapshot_value_is_text(v, strlen(v)) &&
		    dm_snapshot_add_value(sd->values, sd->v[i].name, v) < 0)
			return -ENOMEM;
	}
	return 0;
}

static void saved_device_done(struct saved_device *sd)
{
	for (size_t i = 0; i < sd->n; i++) {
		free(sd->v[i].name);
		free(sd->v[i].value);
	}
	free(sd->v);
	dm_device_unref(sd->dev);
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
	json_object *buses, *classes;
	struct saving s = { 0 };
	json_object *doc = dm_snapshot_doc_new(&buses, &classes, &s.devices);
	if (!doc)
		return NULL;
	dm_model_read_lock(m);
	int failed = dm_model_for_each_bus_locked(m, save_bus, buses) ||
		     dm_model_for_each_class_locked(m, save_class, classes) ||
		     dm_model_for_each_device_locked(m, save_device, &s);
	dm_model_unlock(m);
	for (size_t i = 0; i < s.n; i++) {
		if (!failed && fill_values(&s.devs[i]) < 0)
			failed = 1;
		saved_device_done(&s.devs[i]);
	}
	free(s.devs);
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
