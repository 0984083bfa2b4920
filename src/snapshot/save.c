/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* save.c - the model written as a snapshot file, in format.c's layout. */
#include "snapshot.h"

#include "core/array.h"
#include "format.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A file of a device: listed under the model lock, read after it (values
 * are read without the lock, as every show() is). */
struct saved_file {
	char *group; /* NULL: the device's own directory */
	char *name;
	mode_t mode;
};

/* A device whose files are read and written once the lock is dropped. */
struct saved_device {
	struct dm_device *dev; /* referenced */
	json_object *obj; /* borrowed from the document */
	struct saved_file *f;
	size_t n, cap;
	char **dirs; /* attribute directories: "queue", "queue/iosched" */
	size_t n_dirs, cap_dirs;
};

struct saving {
	json_object *devices;
	struct saved_device *devs;
	size_t n, cap;
	const struct dm_sanitizer *sanitize;
};

struct listing {
	struct saved_device *sd;
	const char *group;
	int depth;
};

static int list_file(const struct dm_file_info *fi, void *data)
{
	struct listing *l = data;
	struct saved_device *sd = l->sd;
	/* driverfsd's own files that the model gives (a kernel's file of the
	 * same name is saved: docs/design.md §6.2) */
	const char *own = dm_own_name_base(fi->name);
	if (!l->group && dm_device_is_own_name_locked(sd->dev, fi->name, own) &&
	    dm_snapshot_is_derived(own, sd->dev == dm_model_get_root(dm_device_get_model(sd->dev))))
		return 0;
	if (!dm_array_grow((void **)&sd->f, &sd->cap, sd->n, sizeof(*sd->f), 16))
		return 1;
	struct saved_file *f = &sd->f[sd->n];
	*f = (struct saved_file){ .name = strdup(fi->name), .mode = fi->mode & 0777,
				  .group = l->group ? strdup(l->group) : NULL };
	if (!f->name || (l->group && !f->group)) {
		free(f->name);
		free(f->group);
		return 1;
	}
	sd->n++;
	return 0;
}

static int list_files(struct saved_device *sd, const char *group, int depth);

/* An attribute directory (not pm/, which passes the machine's sysfs
 * through live: no place in a snapshot), its files and its own. */
static int list_dir(const char *name, void *data)
{
	struct listing *l = data;
	struct saved_device *sd = l->sd;
	char path[DM_SNAPSHOT_DIR_PATH_MAX + 1];
	if ((!l->group && dm_device_is_own_name_locked(sd->dev, name, "pm")) ||
	    l->depth >= DM_SNAPSHOT_DIR_DEPTH_MAX)
		return 0;
	int n = l->group ? snprintf(path, sizeof(path), "%s/%s", l->group, name)
			 : snprintf(path, sizeof(path), "%s", name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return 0;
	if (!dm_array_grow((void **)&sd->dirs, &sd->cap_dirs, sd->n_dirs, sizeof(*sd->dirs), 16) ||
	    !(sd->dirs[sd->n_dirs] = strdup(path)))
		return 1;
	sd->n_dirs++;
	return list_files(sd, path, l->depth + 1);
}

static int list_files(struct saved_device *sd, const char *group, int depth)
{
	struct listing l = { .sd = sd, .group = group, .depth = depth };
	return dm_device_for_each_file_locked(sd->dev, group, list_file, &l) ||
	       dm_device_for_each_dir_locked(sd->dev, group, list_dir, &l);
}

/* One device's entry: keys in a fixed order; its files come later. */
static int save_device(struct dm_device *dev, void *data)
{
	struct saving *s = data;
	char path[PATH_MAX];
	if (dm_device_path_locked(dev, path, sizeof(path)) < 0)
		return 1;
	if (!dm_array_grow((void **)&s->devs, &s->cap, s->n, sizeof(*s->devs), 256))
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
	struct saved_device *sd = &s->devs[s->n];
	*sd = (struct saved_device){ .dev = dev };
	if (dm_snapshot_add_device(s->devices, &d, &sd->obj) < 0)
		return 1;
	s->n++;
	dm_device_ref(dev);
	return list_files(sd, NULL, 0);
}

static int file_by_name(const void *a, const void *b)
{
	return strcmp(((const struct saved_file *)a)->name, ((const struct saved_file *)b)->name);
}

static int dir_by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool same_group(const char *a, const char *b)
{
	return a ? b && strcmp(a, b) == 0 : !b;
}

/* The directory @dir of the device (NULL: its own) into @owner: its files
 * read now and in name order, then its directories, as format.h wants. */
static int fill_dir(const struct saving *s, struct saved_device *sd, const char *dir,
		    json_object *owner)
{
	struct saved_file *files = malloc((sd->n ? sd->n : 1) * sizeof(*files));
	if (!files)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < sd->n; i++)
		if (same_group(sd->f[i].group, dir))
			files[n++] = sd->f[i];
	qsort(files, n, sizeof(*files), file_by_name);
	int r = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		char *buf = NULL;
		size_t len = 0;
		int e = files[i].mode & 0444
				? dm_device_show_alloc(sd->dev, dir, files[i].name, &buf, &len)
				: 0;
		if (e < 0)
			buf = NULL; /* saved with its mode and the read's error */
		r = dm_snapshot_add_file(owner, files[i].name, files[i].mode, buf, len, -e,
					 s->sanitize);
		free(buf);
	}
	free(files);
	/* the directories right under @dir, in name order */
	size_t skip = dir ? strlen(dir) + 1 : 0;
	for (size_t i = 0; r == 0 && i < sd->n_dirs; i++) {
		const char *p = sd->dirs[i];
		if (dir && (strncmp(p, dir, skip - 1) != 0 || p[skip - 1] != '/'))
			continue;
		if (strchr(p + skip, '/'))
			continue;
		json_object *sub;
		r = dm_snapshot_add_dir(owner, p + skip, &sub);
		if (r == 0)
			r = fill_dir(s, sd, p, sub);
	}
	return r;
}

static void saved_device_done(struct saved_device *sd)
{
	for (size_t i = 0; i < sd->n; i++) {
		free(sd->f[i].name);
		free(sd->f[i].group);
	}
	free(sd->f);
	for (size_t i = 0; i < sd->n_dirs; i++)
		free(sd->dirs[i]);
	free(sd->dirs);
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

static int any_driver(struct dm_driver *drv, void *data)
{
	(void)drv, (void)data;
	return 1;
}

static int save_class(struct dm_class *c, void *data)
{
	json_object *ifaces, *drivers;
	if (dm_snapshot_add_class(data, dm_class_get_name(c), &ifaces) < 0 ||
	    dm_class_for_each_interface_locked(c, save_iface, ifaces))
		return 1;
	/* class drivers, where the class has any */
	if (!dm_class_for_each_driver_locked(c, any_driver, NULL))
		return 0;
	return dm_snapshot_add_class_drivers(data, &drivers) < 0 ||
	       dm_class_for_each_driver_locked(c, save_driver, drivers);
}

/* The device links as path pairs (supplier, consumer). */
struct link_paths {
	char **v;
	size_t n, cap;
};

static int save_link(struct dm_link *l, void *data)
{
	struct link_paths *lp = data;
	char path[PATH_MAX];
	for (int k = 0; k < 2; k++) {
		struct dm_device *dev = k ? dm_link_get_consumer(l) : dm_link_get_supplier(l);
		if (!dm_array_grow((void **)&lp->v, &lp->cap, lp->n, sizeof(*lp->v), 64) ||
		    dm_device_path_locked(dev, path, sizeof(path)) < 0 ||
		    !(lp->v[lp->n] = strdup(path)))
			return 1;
		lp->n++;
	}
	return 0;
}

static json_object *model_json(struct dm_model *m, const struct dm_sanitizer *sanitize)
{
	json_object *buses, *classes;
	struct saving s = { .sanitize = sanitize };
	json_object *doc = dm_snapshot_doc_new(&buses, &classes, &s.devices);
	if (!doc)
		return NULL;
	struct link_paths lp = { 0 };
	dm_model_read_lock(m);
	int failed = dm_model_for_each_bus_locked(m, save_bus, buses) ||
		     dm_model_for_each_class_locked(m, save_class, classes) ||
		     dm_model_for_each_device_locked(m, save_device, &s) ||
		     dm_model_for_each_link_locked(m, save_link, &lp);
	dm_model_unlock(m);
	for (size_t i = 0; i < s.n; i++) {
		struct saved_device *sd = &s.devs[i];
		if (!failed && sd->n_dirs)
			qsort(sd->dirs, sd->n_dirs, sizeof(*sd->dirs), dir_by_name);
		if (!failed && fill_dir(&s, sd, NULL, sd->obj) < 0)
			failed = 1;
		saved_device_done(&s.devs[i]);
	}
	free(s.devs);
	if (!failed && dm_snapshot_add_links(doc, (const char *const *)lp.v, lp.n / 2) < 0)
		failed = 1;
	for (size_t i = 0; i < lp.n; i++)
		free(lp.v[i]);
	free(lp.v);
	if (failed) {
		json_object_put(doc);
		return NULL;
	}
	return doc;
}

int dm_snapshot_save(struct dm_model *m, const char *path, bool sanitize, char *msg,
		     size_t size)
{
	if (msg && size)
		*msg = '\0';
	struct dm_sanitizer rules;
	if (sanitize)
		dm_sanitizer_init(&rules);
	json_object *doc = model_json(m, sanitize ? &rules : NULL);
	if (!doc)
		return -ENOMEM;
	int r = dm_snapshot_write_file(doc, path, msg, size);
	json_object_put(doc);
	return r;
}
