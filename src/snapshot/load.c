/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* load.c - a snapshot file read back into an empty model. */
#include "snapshot.h"

#include "core/hashmap.h"
#include "core/thread.h"
#include "files.h"
#include "format.h"
#include "json-stream.h"
#include "scan/scan.h"
#include "util/readall.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <pthread.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FORMAT DM_SNAPSHOT_FORMAT
#define VERSION DM_SNAPSHOT_VERSION
#define VERSION_MIN DM_SNAPSHOT_VERSION_MIN

/* Bound in the snapshot: a driver matches the devices recorded as bound
 * to it (the device's bus data, its struct dm_snapshot_files, holds that
 * driver). */
static int snapshot_match(struct dm_device *dev, struct dm_driver *drv)
{
	return dm_snapshot_files_get_driver(dm_device_get_bus_data(dev)) == drv;
}

static const struct dm_bus_type snapshot_bus_type = {
	.match = snapshot_match,
};

/* A string member, or NULL when absent; -EINVAL (with *bad set) when the
 * member is not a string. */
/* What a name or path of a snapshot may hold: dm_snapshot_name_is_clean(). */
#define CLEAN "UTF-8 without control characters"

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

/* The drivers of @what[@i] (a bus's, or a class's: @c), registered. */
static int load_drivers(json_object *drivers, const char *what, size_t i, struct dm_bus *bus,
			struct dm_class *c, char *err, size_t size)
{
	bool bad = false;
	for (size_t k = 0; k < json_object_array_length(drivers); k++) {
		json_object *d = json_object_array_get_idx(drivers, k), *prio;
		const char *dname = get_string(d, "name", &bad);
		const char *kind = get_string(d, "kind", &bad);
		struct dm_driver *drv = NULL; /* unref'ed whether or not it was made */
		/* a class driver is a user one: the kernel has none */
		if (!dname || bad || !kind || !dm_snapshot_name_is_clean(dname) || (strcmp(kind, "kernel") && strcmp(kind, "user")) ||
		    (c && strcmp(kind, "user")) || !json_object_object_get_ex(d, "priority", &prio) ||
		    !json_object_is_type(prio, json_type_int))
			return dm_snapshot_fail(err, size,
						"%s[%zu].drivers[%zu]: needs name (" CLEAN "), kind (%s) and an "
						"integer priority",
						what, i, k, c ? "user" : "kernel|user");
		int r = dm_driver_new(dname, strcmp(kind, "kernel") ? DM_DRIVER_USER : DM_DRIVER_KERNEL,
				      json_object_get_int(prio), NULL, NULL, NULL, &drv);
		if (r == 0 && c)
			dm_driver_set_match(drv, snapshot_match);
		if (r == 0)
			r = bus ? dm_driver_register(bus, drv) : dm_driver_register_class(c, drv);
		dm_driver_unref(drv);
		if (r < 0)
			return dm_snapshot_fail(err, size, "%s[%zu].drivers[%zu] %s: %s", what, i, k,
						dname, strerror(-r));
	}
	return 0;
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
		if (!name || bad || !drivers || !dm_snapshot_name_is_clean(name) ||
		    dm_bus_get(m, name, &snapshot_bus_type, &bus) < 0)
			return dm_snapshot_fail(err, size,
						"buses[%zu]: needs a valid name (" CLEAN ") and a "
						"drivers array", i);
		int r = load_drivers(drivers, "buses", i, bus, NULL, err, size);
		if (r < 0)
			return r;
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
		if (!name || bad || !ifaces || !dm_snapshot_name_is_clean(name) ||
		    dm_class_get(m, name, &cls) < 0)
			return dm_snapshot_fail(err, size,
						"classes[%zu]: needs a valid name (" CLEAN ") and an "
						"interfaces array", i);
		for (size_t k = 0; k < json_object_array_length(ifaces); k++) {
			json_object *n = json_object_array_get_idx(ifaces, k);
			struct dm_interface *iface;
			if (!json_object_is_type(n, json_type_string) ||
			    !dm_snapshot_name_is_clean(json_object_get_string(n)) ||
			    dm_class_get_interface(cls, json_object_get_string(n), &iface) < 0)
				return dm_snapshot_fail(err, size,
							"classes[%zu].interfaces[%zu]: not a valid name "
							"(" CLEAN ")", i, k);
		}
		/* class drivers: absent when the class has none */
		json_object *drivers;
		if (json_object_object_get_ex(c, "drivers", &drivers)) {
			if (!json_object_is_type(drivers, json_type_array))
				return dm_snapshot_fail(err, size,
							"classes[%zu]: drivers is not an array", i);
			int r = load_drivers(drivers, "classes", i, NULL, cls, err, size);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int set_values(struct dm_device *dev, json_object *values)
{
	size_t n = 0, bytes = 0;
	json_object_object_foreach(values, k, v) {
		(void)k;
		n++;
		bytes += json_object_get_string_len(v) + 1;
	}
	if (dm_device_reserve_values(dev, n, bytes) == -ENOMEM) /* -EBUSY for root */
		return -ENOMEM;
	json_object_object_foreach(values, key, val) {
		if (!json_object_is_type(val, json_type_string) || !dm_snapshot_name_is_clean(key))
			return -EINVAL;
		int r = dm_device_set_value(dev, key, json_object_get_string(val));
		if (r < 0)
			return r;
	}
	return 0;
}

/* A kernel's text file @name of the device, moved from its values into
 * its files (as format 2 saves a file that is no value). */
static int value_to_file(json_object *o, json_object *values, const char *key, const char *name)
{
	json_object *v, *files, *f;
	if (!json_object_object_get_ex(values, key, &v) || !json_object_is_type(v, json_type_string))
		return 0;
	if (!json_object_object_get_ex(o, "files", &files)) {
		if (!(files = json_object_new_object()) || json_object_object_add(o, "files", files))
			return -ENOMEM;
	}
	char *text;
	if (!json_object_is_type(files, json_type_object) ||
	    json_object_object_get_ex(files, name, NULL))
		return -EINVAL;
	if (asprintf(&text, "%s\n", json_object_get_string(v)) < 0)
		return -ENOMEM;
	f = json_object_new_object();
	int r = f && !json_object_object_add(f, "mode", json_object_new_string("0444")) &&
			!json_object_object_add(f, "text", json_object_new_string(text)) &&
			!json_object_object_add(files, name, f)
		? 0
		: -ENOMEM;
	free(text);
	if (r == 0)
		json_object_object_del(values, key);
	return r;
}

/*
 * The names of a device's values as the mount served them, to the model's
 * (docs/design.md §6.2). driverfsd's own values ("name", "devnode") are
 * saved under the name they were served under, DM_OWN_PREFIX "<name>"
 * where the kernel had a file of that name, which was saved as "<name>";
 * a file of version 1 or 2 written before that rule saved the kernel's as
 * "sysfs:<name>" (and "sysfs:devpath", "sysfs:power" ... beside files of
 * driverfsd's that are not saved). The model holds its own value under
 * the plain name, so the kernel's "name" becomes a file.
 */
static int own_values(json_object *o, json_object *values)
{
	static const char *const own[] = { "name", "devnode" };
	static const char *const old[] = { "devpath", "kernel_driver", "power", "power_error",
					   "power_log" };
	char key[DM_NAME_MAX + 1], longest[DM_NAME_MAX + 1];
	json_object *v;
	/* every name looked for below starts with "sysfs:" or DM_OWN_PREFIX:
	 * a device with no such value (nearly all) has nothing to move, found
	 * in one pass over its values instead of a lookup of each name */
	bool prefixed = false;
	json_object_object_foreach(values, name, val) {
		(void)val;
		if ((name[0] == 's' && strncmp(name, "sysfs:", 6) == 0) ||
		    (name[0] == DM_OWN_PREFIX[0] &&
		     strncmp(name, DM_OWN_PREFIX, sizeof(DM_OWN_PREFIX) - 1) == 0)) {
			prefixed = true;
			break;
		}
	}
	if (!prefixed)
		return 0;
	for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++) {
		snprintf(key, sizeof(key), "sysfs:%s", old[i]);
		if (json_object_object_get_ex(values, key, &v) &&
		    !json_object_object_get_ex(values, old[i], NULL)) {
			json_object_object_add(values, old[i], json_object_get(v));
			json_object_object_del(values, key);
		}
	}
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		int r;
		snprintf(key, sizeof(key), "sysfs:%s", own[i]);
		if (json_object_object_get_ex(values, key, NULL)) {
			r = value_to_file(o, values, key, own[i]);
			if (r < 0)
				return r;
			continue;
		}
		longest[0] = '\0';
		for (int k = 1; k <= DM_OWN_PREFIX_MAX; k++)
			if (dm_own_name_prefixed(own[i], k, key, sizeof(key)) &&
			    json_object_object_get_ex(values, key, NULL))
				snprintf(longest, sizeof(longest), "%s", key);
		if (!longest[0] || !json_object_object_get_ex(values, longest, &v))
			continue;
		json_object_get(v);
		json_object_object_del(values, longest);
		r = value_to_file(o, values, own[i], own[i]);
		if (r == 0 && json_object_object_add(values, own[i], v))
			r = -ENOMEM;
		else if (r < 0)
			json_object_put(v);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The device at @path (under root/), or NULL when none. */
static struct dm_device *find_path(struct dm_model *m, const char *path, size_t len)
{
	char name[256];
	dm_model_read_lock(m);
	struct dm_device *dev = dm_model_get_root(m);
	for (size_t i = 0; dev && i < len;) {
		const char *slash = memchr(path + i, '/', len - i);
		size_t n = (slash ? (size_t)(slash - path) : len) - i;
		if (n >= sizeof(name)) {
			dev = NULL;
			break;
		}
		memcpy(name, path + i, n);
		name[n] = '\0';
		dev = dm_device_find_child_locked(dev, name);
		i += n + 1;
	}
	dm_model_unlock(m);
	return dev; /* the model keeps it: nothing is removed while loading */
}

static void files_free(void *f)
{
	dm_snapshot_files_free(f);
}

/* The device's files of format 2 ("files", "dirs") and its bound driver
 * (a reference, taken; NULL for none), as its bus data; the group that
 * serves the files when there are any. */
static int set_files(struct dm_model *m, struct dm_device *dev, json_object *o,
		     struct dm_driver *drv, char *err, size_t size)
{
	struct dm_snapshot_files *f = dm_snapshot_files_new();
	if (!f) {
		if (drv)
			dm_driver_unref(drv);
		return -ENOMEM;
	}
	dm_snapshot_files_set_driver(f, drv);
	int r = dm_snapshot_files_parse(f, o, err, size);
	if (r == 0 && !dm_snapshot_files_empty(f))
		r = dev == dm_model_get_root(m) ? dm_model_add_root_group(m, &dm_snapshot_files_group)
						: dm_device_add_group(dev, &dm_snapshot_files_group);
	if (r < 0 || (!drv && dm_snapshot_files_empty(f))) {
		dm_snapshot_files_free(f);
		return r;
	}
	dm_device_set_bus_data(dev, f, files_free);
	return 0;
}

/* The device added last, and its path: a file in global-list order names
 * as each device's parent the device before it or one of its ancestors. */
struct last_added {
	struct dm_device *dev; /* NULL: none yet */
	char path[PATH_MAX];
};

/* The device at the first @len bytes of @path, found up from the last one
 * added, else down from root. */
static struct dm_device *find_parent(struct dm_model *m, const struct last_added *last,
				     const char *path, size_t len)
{
	struct dm_device *dev = last->dev;
	size_t at = dev ? strlen(last->path) : 0;
	dm_model_read_lock(m);
	while (dev && at > len) {
		dev = dm_device_get_parent_locked(dev);
		while (at > 0 && last->path[at - 1] != '/')
			at--;
		at = at > 0 ? at - 1 : 0;
	}
	dm_model_unlock(m);
	if (dev && at == len && memcmp(last->path, path, len) == 0)
		return dev;
	return find_path(m, path, len);
}

/* Adds the device described by @o, the @i-th of the array. */
static int load_device(struct dm_model *m, struct last_added *last, json_object *o, size_t i,
		       char *err, size_t size)
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
	const struct {
		const char *key, *value;
	} names[] = { { "path", path },	  { "devpath", devpath }, { "sysname", sysname },
		      { "bus", busname }, { "class", clsname },	  { "interface", ifname },
		      { "driver", driver }, { "kernel_driver", kdriver } };
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (!dm_snapshot_name_is_clean(names[k].value))
			return dm_snapshot_fail(err, size, "devices[%zu]: its %s is no valid name ("
					      CLEAN ")", i, names[k].key);
	json_object *values;
	if (!path || bad || (power && strcmp(power, "on") && strcmp(power, "suspended")) ||
	    !json_object_object_get_ex(o, "values", &values) ||
	    !json_object_is_type(values, json_type_object))
		return dm_snapshot_fail(err, size, "devices[%zu]: needs a string path, an object of "
					"values, strings elsewhere, power on|suspended", i);
	if (own_values(o, values) < 0)
		return dm_snapshot_fail(err, size, "devices[%zu]: a value saved twice, as a value "
					"and as a file", i);
	if (!*path) { /* root */
		char why[200] = "";
		struct dm_device *root = dm_model_get_root(m);
		if (set_values(root, values) < 0 || set_files(m, root, o, NULL, why, sizeof(why)) < 0)
			return dm_snapshot_fail(err, size, "devices[%zu] (root): bad values%s%s", i,
						*why ? ": " : "", why);
		return 0;
	}
	const char *slash = strrchr(path, '/');
	struct dm_device *parent = find_parent(m, last, path, slash ? (size_t)(slash - path) : 0);
	if (!parent)
		return dm_snapshot_fail(err, size,
					"devices[%zu] %s: its parent is not listed before it", i, path);
	struct dm_device *dev;
	int r = dm_device_new(m, slash ? slash + 1 : path, &dev);
	if (r < 0)
		return dm_snapshot_fail(err, size, "devices[%zu] %s: bad name", i, path);
	if (devpath)
		r = dm_device_set_devpath(dev, devpath);
	if (r >= 0 && sysname)
		r = dm_device_set_sysname(dev, sysname);
	if (r >= 0 && kdriver)
		r = dm_device_set_kernel_driver(dev, kdriver);
	if (r >= 0)
		r = set_values(dev, values);
	struct dm_driver *drv = NULL;
	if (r >= 0 && busname) {
		struct dm_bus *bus;
		r = dm_bus_get(m, busname, &snapshot_bus_type, &bus);
		if (r >= 0)
			dm_device_set_bus(dev, bus);
		/* the bound driver, which the buses listed (else it stays
		 * unbound): snapshot_match() knows it by its pointer */
		drv = r >= 0 && driver ? dm_bus_find_driver(bus, driver) : NULL;
	} else if (r >= 0 && clsname && driver) {
		/* a class device's driver, which its class listed */
		struct dm_class *cls;
		drv = dm_class_get(m, clsname, &cls) >= 0 ? dm_class_find_driver(cls, driver) : NULL;
	}
	char why[200] = "";
	if (r >= 0)
		r = set_files(m, dev, o, drv, why, sizeof(why));
	else if (drv)
		dm_driver_unref(drv);
	if (*why) {
		dm_device_unref(dev);
		return dm_snapshot_fail(err, size, "devices[%zu] %s: %s", i, path, why);
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
		r = dm_device_add(dev, parent);
	if (r >= 0 && power && strcmp(power, "suspended") == 0)
		dm_device_set_power(dev, DM_POWER_SUSPENDED);
	if (r >= 0 && strlen(path) < sizeof(last->path)) {
		last->dev = dev;
		strcpy(last->path, path);
	}
	dm_device_unref(dev); /* added, the model keeps it */
	if (r == -EEXIST)
		return dm_snapshot_fail(err, size, "devices[%zu] %s: listed twice (path or devpath)",
					i, path);
	if (r < 0)
		return dm_snapshot_fail(err, size, "devices[%zu] %s: %s", i, path, strerror(-r));
	return 0;
}

/* How many devices the array at the reader's position may have, at most:
 * its "path" keys (a string value "path" also counts). */
static size_t count_paths(const struct dm_json_reader *r)
{
	static const char key[] = "\"path\"";
	size_t n = 0;
	for (const char *p = r->buf + r->pos, *end = r->buf + r->len;
	     (p = memmem(p, (size_t)(end - p), key, sizeof(key) - 1)); p += sizeof(key) - 1)
		n++;
	return n;
}

struct loading {
	struct dm_model *m; /* NULL: only parse */
	struct last_added last;
	char *err;
	size_t err_size;
};

static int take_now(json_object *o, size_t i, void *data)
{
	struct loading *l = data;
	int r = l->m ? load_device(l->m, &l->last, o, i, l->err, l->err_size) : 0;
	json_object_put(o);
	return r;
}

/*
 * Loading in two stages: json-c's parse of each device (most of a load,
 * mostly its allocations; bench/RESULTS.md) on a thread of its own, the model's work
 * on the caller's, the objects passed in order through a ring. The parser
 * also frees the objects the loader is done with, so that json-c's churn
 * stays in its thread's malloc arena, apart from the model's memory.
 * Slots [tail, mid) are done, [mid, head) parsed and not yet loaded.
 */
#define RING 256

struct ring {
	pthread_mutex_t lock;
	pthread_cond_t parsed; /* head moved, or the parser is done */
	pthread_cond_t loaded; /* mid moved, or the loader stopped */
	json_object *o[RING];
	size_t head, mid, tail;
	bool done, stop;
	int ret; /* the parser's */
	struct dm_json_reader r; /* the parser's, with its own error buffer */
};

/* The parser's @take: frees what was loaded, waits for room, queues @o. */
static int take_queued(json_object *o, size_t i, void *data)
{
	struct ring *q = data;
	(void)i;
	pthread_mutex_lock(&q->lock);
	while (!q->stop && q->head - q->mid == RING)
		pthread_cond_wait(&q->loaded, &q->lock);
	size_t tail = q->tail, mid = q->mid;
	bool stop = q->stop;
	pthread_mutex_unlock(&q->lock);
	for (size_t k = tail; k < mid; k++) /* not touched by the loader any more */
		json_object_put(q->o[k % RING]);
	pthread_mutex_lock(&q->lock);
	q->tail = mid;
	if (!stop) {
		q->o[q->head % RING] = o;
		if (q->head++ == q->mid)
			pthread_cond_signal(&q->parsed);
	}
	pthread_mutex_unlock(&q->lock);
	if (stop)
		json_object_put(o);
	return stop;
}

static void *parse_thread(void *data)
{
	struct ring *q = data;
	int ret = dm_json_walk_devices(&q->r, take_queued, q);
	pthread_mutex_lock(&q->lock);
	q->ret = ret;
	q->done = true;
	pthread_cond_signal(&q->parsed);
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* Loads each device the parser queues, in order; then the parser's end
 * (*ret_parser set when the result is the parser's). */
static int load_queued(struct ring *q, struct loading *l, bool *ret_parser)
{
	int ret = 0;
	for (size_t i = 0;; i++) {
		pthread_mutex_lock(&q->lock);
		while (q->mid == q->head && !q->done)
			pthread_cond_wait(&q->parsed, &q->lock);
		json_object *o = q->mid < q->head ? q->o[q->mid % RING] : NULL;
		pthread_mutex_unlock(&q->lock);
		if (!o) {
			*ret_parser = true;
			return q->ret;
		}
		ret = load_device(l->m, &l->last, o, i, l->err, l->err_size);
		pthread_mutex_lock(&q->lock);
		q->mid++;
		q->stop = ret < 0;
		pthread_cond_signal(&q->loaded);
		pthread_mutex_unlock(&q->lock);
		if (ret < 0)
			return ret;
	}
}

/* Loads the array of devices with a parser thread; *ret_started false
 * when none could be started (nothing read then). */
static int load_pipelined(struct dm_json_reader *r, struct loading *l, bool *ret_started)
{
	struct ring *q = calloc(1, sizeof(*q));
	char *err = q ? calloc(1, r->err_size ? r->err_size : 1) : NULL;
	*ret_started = false;
	if (!err) {
		free(q);
		return 0;
	}
	q->r = *r;
	q->r.err = err;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->parsed, NULL);
	pthread_cond_init(&q->loaded, NULL);
	pthread_t t;
	int ret = 0;
	*ret_started = dm_thread_start(&t, 0, parse_thread, q) == 0;
	if (*ret_started) {
		bool parser = false;
		ret = load_queued(q, l, &parser);
		pthread_join(t, NULL);
		for (size_t k = q->tail; k < q->head; k++)
			json_object_put(q->o[k % RING]);
		r->pos = q->r.pos;
		if (ret < 0 && parser)
			snprintf(r->err, r->err_size, "%s", err);
	}
	pthread_cond_destroy(&q->loaded);
	pthread_cond_destroy(&q->parsed);
	pthread_mutex_destroy(&q->lock);
	free(err);
	free(q);
	return ret;
}

/* Walks the array of devices at the reader's position: each is loaded
 * when @m is not NULL, else only parsed (to find the array's end). */
static int read_devices(struct dm_json_reader *r, struct dm_model *m)
{
	struct loading l = { .m = m, .err = r->err, .err_size = r->err_size };
	if (!m)
		return dm_json_walk_devices(r, take_now, &l);
	/* a hint, worth a scan of the file: the model's indexes would
	 * otherwise grow step by step, each step a pass of cache misses */
	(void)dm_model_reserve_devices(m, count_paths(r)); /* else they grow */
	bool started;
	int ret = load_pipelined(r, &l, &started);
	return started ? ret : dm_json_walk_devices(r, take_now, &l);
}

enum { M_FORMAT, M_VERSION, M_BUSES, M_CLASSES, M_LINKS, N_MEMBERS };
static const char *const member_names[N_MEMBERS] = { "format", "version", "buses", "classes",
						     "links" };

struct object_find {
	const char *name;
	struct dm_device *dev;
};

static int find_object(struct dm_device *dev, void *data)
{
	struct object_find *f = data;
	if (strcmp(dm_device_get_sysname(dev), f->name) != 0)
		return 0;
	f->dev = dm_device_ref(dev);
	return 1;
}

static int devlink_class(struct dm_class *c, void *data)
{
	if (strcmp(dm_class_get_name(c), "devlink") != 0)
		return 0;
	dm_class_for_each_device_locked(c, find_object, data);
	return 1;
}

/* A saved value of @dev, its newline cut ("" when it has none). */
static void object_value(struct dm_device *dev, const char *name, char *buf, size_t size)
{
	int n = dm_device_show(dev, NULL, name, buf, size - 1);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/* The document's links: each between two loaded devices, its flags and
 * dormancy from its devlink device's saved values, as a live scan reads
 * them from sysfs (dm_scan_sync_links()). */
static int load_links(struct dm_model *m, json_object *links, struct dm_json_reader *r)
{
	if (!links)
		return 0;
	if (!json_object_is_type(links, json_type_array))
		return dm_snapshot_fail(r->err, r->err_size, "%s: \"links\" is not an array", r->file);
	size_t n = json_object_array_length(links);
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(links, i);
		bool bad = !json_object_is_type(o, json_type_object);
		const char *sp = bad ? NULL : get_string(o, "supplier", &bad);
		const char *cp = bad ? NULL : get_string(o, "consumer", &bad);
		struct dm_device *s = sp ? find_path(m, sp, strlen(sp)) : NULL;
		struct dm_device *c = cp ? find_path(m, cp, strlen(cp)) : NULL;
		if (bad || !s || !c)
			return dm_snapshot_fail(r->err, r->err_size,
						"%s: links[%zu]: needs a supplier and a consumer, "
						"each the path of a device", r->file, i);
		char name[600], sname[256], cname[256];
		dm_model_read_lock(m);
		dm_device_link_name_locked(s, sname, sizeof(sname));
		dm_device_link_name_locked(c, cname, sizeof(cname));
		snprintf(name, sizeof(name), "%s--%s", sname, cname);
		struct object_find f = { .name = name };
		dm_model_for_each_class_locked(m, devlink_class, &f);
		dm_model_unlock(m);
		char status[32] = "", sso[8] = "", rpm[8] = "";
		if (f.dev) {
			object_value(f.dev, "status", status, sizeof(status));
			object_value(f.dev, "sync_state_only", sso, sizeof(sso));
			object_value(f.dev, "runtime_pm", rpm, sizeof(rpm));
		}
		unsigned flags;
		bool dormant;
		dm_scan_link_state(status, sso, rpm, &flags, &dormant);
		int k = dm_link_add(s, c, flags, NULL);
		if (k == 0) {
			(void)dm_link_set_dormant(s, c, dormant);
			if (f.dev)
				(void)dm_link_set_object(s, c, f.dev);
		}
		dm_device_unref(f.dev);
		if (k < 0)
			return dm_snapshot_fail(r->err, r->err_size, "%s: links[%zu]: %s -> %s: %s",
						r->file, i, sp, cp,
						k == -ELOOP ? "it would make a cycle" : strerror(-k));
	}
	return 0;
}

/* Checks the members other than devices and loads buses and classes;
 * @have_devices: whether the document has devices. */
static int load_head(struct dm_model *m, json_object *const *mem, bool have_devices,
		     struct dm_json_reader *r)
{
	json_object *format = mem[M_FORMAT], *version = mem[M_VERSION];
	if (!have_devices || !format || !json_object_is_type(format, json_type_string) ||
	    strcmp(json_object_get_string(format), FORMAT) || !version ||
	    !json_object_is_type(version, json_type_int) || json_object_get_int(version) < VERSION_MIN ||
	    json_object_get_int(version) > VERSION ||
	    !json_object_is_type(mem[M_BUSES], json_type_array) ||
	    !json_object_is_type(mem[M_CLASSES], json_type_array))
		return dm_snapshot_fail(r->err, r->err_size, "%s: not a %s file of version %d to %d "
					"(format, version, buses, classes and devices needed)",
					r->file, FORMAT, VERSION_MIN, VERSION);
	int ret = load_buses(m, mem[M_BUSES], r->err, r->err_size);
	return ret < 0 ? ret : load_classes(m, mem[M_CLASSES], r->err, r->err_size);
}

struct doc {
	json_object *mem[N_MEMBERS]; /* the members other than devices */
	bool have_devices;
	size_t devices_at; /* where the devices array starts */
	bool loaded; /* the devices were loaded as they were read */
};

/* Reads the member at the reader's position ("key": value). */
static int read_member(struct dm_model *m, struct dm_json_reader *r, struct doc *d)
{
	json_object *key = dm_json_read_value(r);
	if (!key)
		return -EINVAL;
	char name[16]; /* longer than any member's name: then none */
	bool is_key = json_object_is_type(key, json_type_string);
	snprintf(name, sizeof(name), "%s", is_key ? json_object_get_string(key) : "");
	json_object_put(key);
	if (!is_key || dm_json_peek(r) != ':')
		return dm_snapshot_fail(r->err, r->err_size,
					"%s: not JSON (a member expected at byte %zu)", r->file, r->pos);
	r->pos++;
	size_t k = 0;
	while (k < N_MEMBERS && strcmp(name, member_names[k]))
		k++;
	bool devices = strcmp(name, "devices") == 0;
	if ((k < N_MEMBERS && d->mem[k]) || (devices && d->have_devices))
		return dm_snapshot_fail(r->err, r->err_size, "%s: \"%s\" given twice", r->file, name);
	if (devices) {
		d->have_devices = true;
		d->devices_at = r->pos;
		d->loaded = d->mem[M_FORMAT] && d->mem[M_VERSION] && d->mem[M_BUSES] &&
			    d->mem[M_CLASSES];
		int ret = d->loaded ? load_head(m, d->mem, true, r) : 0;
		return ret < 0 ? ret : read_devices(r, d->loaded ? m : NULL);
	}
	json_object *v = dm_json_read_value(r);
	if (!v)
		return -EINVAL;
	if (k < N_MEMBERS)
		d->mem[k] = v;
	else
		json_object_put(v); /* unknown members are ignored */
	return 0;
}

/*
 * The document: its devices are loaded as they are read when the other
 * members came before them (as driverfsd writes them), else the array is
 * only parsed then and read again at the end.
 */
static int load_document(struct dm_model *m, struct dm_json_reader *r)
{
	struct doc d = { .loaded = false };
	int ret = dm_json_expect(r, '{');
	if (ret == 0 && dm_json_peek(r) == '}')
		r->pos++; /* no member: the error comes from load_head() */
	else
		while (ret == 0 && (ret = read_member(m, r, &d)) == 0) {
			if (dm_json_peek(r) == '}') {
				r->pos++;
				break;
			}
			ret = dm_json_expect(r, ',');
		}
	if (ret == 0 && dm_json_peek(r) != '\0')
		ret = dm_snapshot_fail(r->err, r->err_size,
				       "%s: not JSON (more after the end, at byte %zu)", r->file, r->pos);
	if (ret == 0 && !d.loaded) {
		ret = load_head(m, d.mem, d.have_devices, r);
		r->pos = d.devices_at;
		if (ret == 0)
			ret = read_devices(r, m);
	}
	if (ret == 0)
		ret = load_links(m, d.mem[M_LINKS], r);
	for (size_t k = 0; k < N_MEMBERS; k++)
		json_object_put(d.mem[k]);
	return ret;
}

/* The file's bytes, read into memory (a regular file's in one read of its
 * size; a pipe's as they come). Never mapped: a file truncated while it is
 * loaded is then a short read and an error, not a SIGBUS. */
static int read_file(const char *path, char **ret, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int r = fstat(fd, &st) < 0 ? -errno : 0;
	/* room for the size and a byte more, which tells the end */
	size_t first = r == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
				       (uintmax_t)st.st_size < SIZE_MAX - 2
			       ? (size_t)st.st_size + 2
			       : 65536;
	if (r == 0)
		r = dm_read_all(fd, first, SIZE_MAX, ret, ret_len);
	close(fd);
	return r;
}

int dm_snapshot_load(struct dm_model *m, const char *path, char *err, size_t size)
{
	struct dm_json_reader r = { .file = path, .err = err, .err_size = size };
	char *buf = NULL;
	int ret = read_file(path, &buf, &r.len);
	if (ret < 0)
		return dm_snapshot_fail(err, size, "%s: %s", path, strerror(-ret));
	r.buf = buf;
	r.tok = json_tokener_new();
	ret = r.tok ? load_document(m, &r) : -ENOMEM;
	json_tokener_free(r.tok);
	free(buf);
	/* what parsing freed, given back rather than kept for a daemon's
	 * life */
	malloc_trim(0);
	return ret;
}
