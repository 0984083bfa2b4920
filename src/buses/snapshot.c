/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* snapshot.c - save and load the model as JSON, with json-c. */
#include "snapshot.h"

#include "core/hashmap.h"
#include "snapshot-format.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FORMAT DM_SNAPSHOT_FORMAT
#define VERSION DM_SNAPSHOT_VERSION

/* ---- save ---- */

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

/* ---- load ---- */

/* Bound in the snapshot: a driver matches the devices recorded as bound
 * to it (the device's bus data holds that driver's name). */
static int snapshot_match(struct dm_device *dev, struct dm_driver *drv)
{
	const char *bound = dm_device_get_bus_data(dev);
	return bound && strcmp(bound, dm_driver_get_name(drv)) == 0;
}

static const struct dm_bus_type snapshot_bus_type = {
	.match = snapshot_match,
};

static int fail(char *err, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A string member, or NULL when absent; -EINVAL (with *bad set) when the
 * member is not a string. */
static const char *get_string(json_object *o, const char *key, bool *bad)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return NULL;
	if (!json_object_is_type(v, json_type_string)) {
		*bad = true;
		return NULL;
	}
	return json_object_get_string(v);
}

static json_object *get_array(json_object *o, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_array) ? v
												: NULL;
}

static int load_buses(struct dm_model *m, json_object *buses, char *err, size_t size)
{
	for (size_t i = 0; i < json_object_array_length(buses); i++) {
		json_object *b = json_object_array_get_idx(buses, i);
		bool bad = false;
		const char *name = json_object_is_type(b, json_type_object) ? get_string(b, "name", &bad)
									     : NULL;
		json_object *drivers = name ? get_array(b, "drivers") : NULL;
		struct dm_bus *bus;
		if (!name || bad || !drivers || dm_bus_get(m, name, &snapshot_bus_type, &bus) < 0)
			return fail(err, size, "buses[%zu]: needs a valid name and a drivers array", i);
		for (size_t k = 0; k < json_object_array_length(drivers); k++) {
			json_object *d = json_object_array_get_idx(drivers, k), *prio;
			const char *dname = get_string(d, "name", &bad);
			const char *kind = get_string(d, "kind", &bad);
			struct dm_driver *drv = NULL; /* unref'ed whether or not it was made */
			if (!dname || bad || !kind ||
			    (strcmp(kind, "kernel") && strcmp(kind, "user")) ||
			    !json_object_object_get_ex(d, "priority", &prio) ||
			    !json_object_is_type(prio, json_type_int))
				return fail(err, size, "buses[%zu].drivers[%zu]: needs name, kind "
						       "(kernel|user) and an integer priority", i, k);
			int r = dm_driver_new(dname, strcmp(kind, "kernel") ? DM_DRIVER_USER
									    : DM_DRIVER_KERNEL,
					      json_object_get_int(prio), NULL, NULL, NULL, &drv);
			if (r == 0)
				r = dm_driver_register(bus, drv);
			dm_driver_unref(drv);
			if (r < 0)
				return fail(err, size, "buses[%zu].drivers[%zu] %s: %s", i, k, dname,
					    strerror(-r));
		}
	}
	return 0;
}

static int load_classes(struct dm_model *m, json_object *classes, char *err, size_t size)
{
	for (size_t i = 0; i < json_object_array_length(classes); i++) {
		json_object *c = json_object_array_get_idx(classes, i);
		bool bad = false;
		const char *name = get_string(c, "name", &bad);
		json_object *ifaces = get_array(c, "interfaces");
		struct dm_class *cls;
		if (!name || bad || !ifaces || dm_class_get(m, name, &cls) < 0)
			return fail(err, size, "classes[%zu]: needs a valid name and an interfaces array", i);
		for (size_t k = 0; k < json_object_array_length(ifaces); k++) {
			json_object *n = json_object_array_get_idx(ifaces, k);
			struct dm_interface *iface;
			if (!json_object_is_type(n, json_type_string) ||
			    dm_class_get_interface(cls, json_object_get_string(n), &iface) < 0)
				return fail(err, size, "classes[%zu].interfaces[%zu]: not a valid name", i, k);
		}
	}
	return 0;
}

static int set_values(struct dm_device *dev, json_object *values)
{
	json_object_object_foreach(values, key, val) {
		if (!json_object_is_type(val, json_type_string))
			return -EINVAL;
		int r = dm_device_set_value(dev, key, json_object_get_string(val));
		if (r < 0)
			return r;
	}
	return 0;
}

struct path_entry {
	char *path;
	struct dm_device *dev;
};

/* Adds the device described by @o; *ret is its path entry (NULL for root),
 * which @paths holds and the caller frees. */
static int load_device(struct dm_model *m, struct dm_hashmap *paths, json_object *o, size_t i,
		       char *err, size_t size, struct path_entry **ret)
{
	bool bad = false;
	const char *path = get_string(o, "path", &bad);
	const char *devpath = get_string(o, "devpath", &bad);
	const char *sysname = get_string(o, "sysname", &bad);
	const char *busname = get_string(o, "bus", &bad);
	const char *clsname = get_string(o, "class", &bad);
	const char *ifname = get_string(o, "interface", &bad);
	const char *driver = get_string(o, "driver", &bad);
	const char *kdriver = get_string(o, "kernel_driver", &bad);
	const char *power = get_string(o, "power", &bad);
	json_object *values;
	if (!path || bad || (power && strcmp(power, "on") && strcmp(power, "suspended")) ||
	    !json_object_object_get_ex(o, "values", &values) ||
	    !json_object_is_type(values, json_type_object))
		return fail(err, size, "devices[%zu]: needs a string path, an object of values, "
				       "strings elsewhere, power on|suspended", i);
	*ret = NULL;
	if (!*path) { /* root */
		if (set_values(dm_model_get_root(m), values) < 0)
			return fail(err, size, "devices[%zu] (root): bad values", i);
		return 0;
	}
	const char *slash = strrchr(path, '/');
	char parent_path[PATH_MAX];
	snprintf(parent_path, sizeof(parent_path), "%.*s", slash ? (int)(slash - path) : 0, path);
	struct path_entry *pe = *parent_path ? dm_hashmap_get(paths, parent_path) : NULL;
	if (*parent_path && !pe)
		return fail(err, size, "devices[%zu] %s: its parent is not listed before it", i, path);
	struct dm_device *dev;
	int r = dm_device_new(m, slash ? slash + 1 : path, &dev);
	if (r < 0)
		return fail(err, size, "devices[%zu] %s: bad name", i, path);
	if (devpath)
		r = dm_device_set_devpath(dev, devpath);
	if (r >= 0 && sysname)
		r = dm_device_set_sysname(dev, sysname);
	if (r >= 0 && kdriver)
		r = dm_device_set_kernel_driver(dev, kdriver);
	if (r >= 0)
		r = set_values(dev, values);
	if (r >= 0 && busname) {
		struct dm_bus *bus;
		r = dm_bus_get(m, busname, &snapshot_bus_type, &bus);
		if (r >= 0)
			dm_device_set_bus(dev, bus);
		if (r >= 0 && driver) {
			char *d = strdup(driver);
			if (!d)
				r = -ENOMEM;
			else
				dm_device_set_bus_data(dev, d, free);
		}
	}
	if (r >= 0 && clsname) {
		struct dm_class *cls;
		struct dm_interface *iface = NULL;
		r = dm_class_get(m, clsname, &cls);
		if (r >= 0 && ifname)
			r = dm_class_get_interface(cls, ifname, &iface);
		if (r >= 0)
			dm_device_set_class(dev, cls, iface);
	}
	if (r >= 0)
		r = dm_device_add(dev, pe ? pe->dev : NULL);
	if (r < 0) {
		dm_device_unref(dev);
		return fail(err, size, "devices[%zu] %s: %s", i, path, strerror(-r));
	}
	if (power && strcmp(power, "suspended") == 0)
		dm_device_set_power(dev, DM_POWER_SUSPENDED);
	struct path_entry *e = malloc(sizeof(*e));
	if (!e || !(e->path = strdup(path))) {
		free(e);
		dm_device_unref(dev);
		return -ENOMEM;
	}
	e->dev = dev; /* the reference from dm_device_new, dropped at the end */
	if (dm_hashmap_put(paths, e->path, e) < 0) {
		free(e->path);
		free(e);
		dm_device_unref(dev);
		return fail(err, size, "devices[%zu] %s: listed twice", i, path);
	}
	*ret = e;
	return 0;
}

static int load_devices(struct dm_model *m, json_object *devices, char *err, size_t size)
{
	struct dm_hashmap paths;
	int r = 0;
	dm_hashmap_init(&paths, dm_hash_string, dm_cmp_string);
	size_t n = json_object_array_length(devices), n_all = 0;
	struct path_entry **all = calloc(n + 1, sizeof(*all));
	if (!all && r == 0)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < n; i++) {
		json_object *o = json_object_array_get_idx(devices, i);
		struct path_entry *e;
		if (!json_object_is_type(o, json_type_object)) {
			r = fail(err, size, "devices[%zu]: not an object", i);
			break;
		}
		r = load_device(m, &paths, o, i, err, size, &e);
		if (r == 0 && e)
			all[n_all++] = e;
	}
	for (size_t i = 0; i < n_all; i++) {
		dm_hashmap_remove(&paths, all[i]->path);
		dm_device_unref(all[i]->dev);
		free(all[i]->path);
		free(all[i]);
	}
	free(all);
	dm_hashmap_done(&paths);
	return r;
}

int dm_snapshot_load(struct dm_model *m, const char *path, char *err, size_t size)
{
	json_object *doc = json_object_from_file(path);
	if (!doc)
		return fail(err, size, "%s: %s", path, json_util_get_last_err() ?: "not JSON");
	int r;
	bool bad = false;
	const char *format = get_string(doc, "format", &bad);
	json_object *version, *buses = get_array(doc, "buses"), *classes = get_array(doc, "classes"),
			      *devices = get_array(doc, "devices");
	if (!format || strcmp(format, FORMAT) ||
	    !json_object_object_get_ex(doc, "version", &version) ||
	    json_object_get_int(version) != VERSION || !buses || !classes || !devices) {
		r = fail(err, size, "%s: not a %s version %d file (format, version, buses, "
				    "classes and devices needed)", path, FORMAT, VERSION);
		goto out_doc;
	}
	r = load_buses(m, buses, err, size);
	if (r == 0)
		r = load_classes(m, classes, err, size);
	if (r == 0)
		r = load_devices(m, devices, err, size);
out_doc:
	json_object_put(doc);
	/* The parsed document, several times the model's size, was freed as a
	 * whole: give its pages back rather than keep them for a daemon's
	 * life. */
	malloc_trim(0);
	return r;
}