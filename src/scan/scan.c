/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* scan.c - the record table and its commit to the model. */
#include "scan.h"

#include "core/array.h"
#include "drivers/kernel.h"
#include "util/log.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void dm_scan_init(struct dm_scan *s)
{
	*s = (struct dm_scan){ 0 };
	dm_hashmap_init(&s->by_devpath, dm_hash_string, dm_cmp_string);
	dm_hashmap_init(&s->by_name, dm_hash_string, dm_cmp_string);
}

static void name_index_clear(struct dm_scan *s)
{
	for (size_t i = 0; i < s->n_keys; i++)
		free(s->name_keys[i]);
	free(s->name_keys);
	s->name_keys = NULL;
	s->n_keys = s->n_indexed = 0;
	dm_hashmap_done(&s->by_name);
	dm_hashmap_init(&s->by_name, dm_hash_string, dm_cmp_string);
}

static void record_free(struct dm_record *r)
{
	for (size_t i = 0; i < r->n_values; i++) {
		free(r->values[i].name);
		free(r->values[i].value);
	}
	free(r->values);
	free(r->devpath);
	free(r->name);
	free(r->sysname);
	free(r->parent);
	free(r->subsystem);
	free(r->driver);
	free(r->bus);
	free(r->class_name);
	free(r->iface);
	free(r);
}

void dm_scan_done(struct dm_scan *s)
{
	for (size_t i = 0; i < s->n; i++)
		record_free(s->recs[i]);
	free(s->recs);
	name_index_clear(s);
	dm_hashmap_done(&s->by_name);
	dm_hashmap_done(&s->by_devpath);
}

struct dm_record *dm_scan_find(struct dm_scan *s, const char *devpath)
{
	return dm_hashmap_get(&s->by_devpath, devpath);
}

/* Indexes every record with a subsystem by "<subsystem>/<name>"; the first
 * of equal keys wins, as a linear search would find it. */
static int name_index_build(struct dm_scan *s)
{
	name_index_clear(s);
	s->name_keys = calloc(s->n ? s->n : 1, sizeof(*s->name_keys));
	if (!s->name_keys)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		struct dm_record *r = s->recs[i];
		if (!r->subsystem)
			continue;
		char *key;
		if (asprintf(&key, "%s/%s", r->subsystem, r->name) < 0)
			return -ENOMEM;
		s->name_keys[s->n_keys++] = key;
		dm_hashmap_put(&s->by_name, key, r); /* -EEXIST: keep the first */
	}
	s->n_indexed = s->n;
	return 0;
}

struct dm_record *dm_scan_find_by_name(struct dm_scan *s, const char *subsystem, const char *name)
{
	if (s->n != s->n_indexed && name_index_build(s) < 0)
		return NULL;
	char key[512];
	if (snprintf(key, sizeof(key), "%s/%s", subsystem, name) >= (int)sizeof(key))
		return NULL;
	return dm_hashmap_get(&s->by_name, key);
}

int dm_scan_get(struct dm_scan *s, const char *devpath, struct dm_record **ret)
{
	struct dm_record *r = dm_scan_find(s, devpath);
	if (r) {
		*ret = r;
		return 0;
	}
	const char *slash = strrchr(devpath, '/');
	if (!slash || !slash[1])
		return -EINVAL;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct dm_record **v = realloc(s->recs, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->recs = v;
		s->cap = cap;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->devpath = strdup(devpath);
	r->name = strdup(slash + 1);
	if (!r->devpath || !r->name || dm_hashmap_put(&s->by_devpath, r->devpath, r) < 0) {
		record_free(r);
		return -ENOMEM;
	}
	s->recs[s->n++] = r;
	*ret = r;
	return 0;
}

int dm_record_set_string(char **field, const char *value)
{
	char *c = value ? strdup(value) : NULL;
	if (value && !c)
		return -ENOMEM;
	free(*field);
	*field = c;
	return 0;
}

const char *dm_record_get(const struct dm_record *r, const char *name)
{
	for (size_t i = 0; i < r->n_values; i++)
		if (strcmp(r->values[i].name, name) == 0)
			return r->values[i].value;
	return NULL;
}

int dm_record_set(struct dm_record *r, const char *name, const char *value)
{
	for (size_t i = 0; i < r->n_values; i++)
		if (strcmp(r->values[i].name, name) == 0)
			return dm_record_set_string(&r->values[i].value, value);
	struct dm_record_value *v = realloc(r->values, (r->n_values + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	r->values = v;
	char *n = strdup(name), *val = strdup(value);
	if (!n || !val) {
		free(n);
		free(val);
		return -ENOMEM;
	}
	r->values[r->n_values++] = (struct dm_record_value){ n, val };
	return 0;
}

static int by_devpath(const void *a, const void *b)
{
	return strcmp((*(struct dm_record *const *)a)->devpath, (*(struct dm_record *const *)b)->devpath);
}

/* The kernel driver proxy @name on @bus, registered on first use. */
static int kernel_driver_get(struct dm_bus *bus, const char *name)
{
	struct dm_driver *drv = dm_bus_find_driver(bus, name);
	if (drv) {
		dm_driver_unref(drv);
		return 0;
	}
	int r = dm_kernel_driver_new(name, &drv);
	if (r < 0)
		return r;
	r = dm_driver_register(bus, drv);
	dm_driver_unref(drv);
	return r == -EEXIST ? 0 : r;
}

static int record_commit(struct dm_model *m, const struct dm_attribute_group *const *groups,
			 struct dm_record *rec)
{
	struct dm_device *parent = NULL, *dev;
	int r;

	if (rec->parent) {
		parent = dm_model_find_devpath(m, rec->parent);
		if (!parent) {
			log_warn("%s: parent %s is not in the tree; placing it under root",
				 rec->devpath, rec->parent);
		}
	}
	r = dm_device_new(m, rec->name, &dev);
	if (r < 0)
		goto out_parent;
	r = dm_device_set_devpath(dev, rec->devpath);
	/* the sysfs-backed groups the registry gives (src/buses/sources.c) */
	for (const struct dm_attribute_group *const *g = groups; r >= 0 && g && *g; g++)
		r = dm_device_add_group(dev, *g);
	if (r >= 0 && rec->sysname)
		r = dm_device_set_sysname(dev, rec->sysname);
	if (r >= 0 && rec->driver)
		r = dm_device_set_kernel_driver(dev, rec->driver);
	for (size_t i = 0; r >= 0 && i < rec->n_values; i++)
		r = dm_device_set_value(dev, rec->values[i].name, rec->values[i].value);
	if (r >= 0 && rec->bus) {
		struct dm_bus *bus;
		r = dm_bus_get(m, rec->bus, NULL, &bus);
		if (r >= 0) {
			dm_device_set_bus(dev, bus);
			if (rec->driver)
				r = kernel_driver_get(bus, rec->driver);
		}
	}
	if (r >= 0 && rec->class_name) {
		struct dm_class *c;
		struct dm_interface *iface = NULL;
		r = dm_class_get(m, rec->class_name, &c);
		if (r >= 0 && rec->iface)
			r = dm_class_get_interface(c, rec->iface, &iface);
		if (r >= 0)
			dm_device_set_class(dev, c, iface);
	}
	if (r >= 0)
		r = dm_device_add(dev, parent);
	dm_device_unref(dev);
out_parent:
	dm_device_unref(parent);
	return r;
}

static int by_parent_and_name(const void *a, const void *b)
{
	const struct dm_record *x = *(struct dm_record *const *)a, *y = *(struct dm_record *const *)b;
	int c = strcmp(x->parent ? x->parent : "", y->parent ? y->parent : "");
	return c ? c : strcmp(x->name, y->name);
}

/*
 * Where children of one device share a name (a SCSI device's scsi_disk,
 * scsi_device and bsg class devices are all "0:0:0:0"), every clashing class
 * device is named "<class>:<name>"; a bus device keeps its plain name. The
 * result depends only on the set of records, so the same machine always
 * gives the same paths.
 */
static int resolve_name_clashes(struct dm_scan *s)
{
	struct dm_record **v = malloc((s->n ? s->n : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, s->recs, s->n * sizeof(*v));
	qsort(v, s->n, sizeof(*v), by_parent_and_name);
	int r = 0;
	for (size_t i = 0; i < s->n && r == 0;) {
		size_t j = i + 1;
		while (j < s->n && by_parent_and_name(&v[i], &v[j]) == 0)
			j++;
		for (size_t k = i; j - i > 1 && k < j && r == 0; k++) {
			/* bus devices keep their names */
			if (!v[k]->class_name)
				continue;
			char *name;
			if (asprintf(&name, "%s:%s", v[k]->class_name, v[k]->name) < 0) {
				r = -ENOMEM;
				break;
			}
			v[k]->sysname = v[k]->name;
			v[k]->name = name;
		}
		i = j;
	}
	free(v);
	return r;
}

/* The kernel driver of @dev is now @driver (NULL: none): the device moves
 * between kernel driver proxies (a user driver that holds it keeps it). */
int dm_scan_set_kernel_driver(struct dm_device *dev, const char *driver)
{
	struct dm_model *m = dm_device_get_model(dev);
	dm_model_read_lock(m);
	struct dm_driver *bound = dm_driver_ref(dm_device_get_driver_locked(dev));
	struct dm_bus *bus = dm_device_get_bus_locked(dev);
	dm_model_unlock(m);
	if (bound && dm_driver_get_kind(bound) == DM_DRIVER_KERNEL)
		dm_device_release_driver(dev);
	dm_driver_unref(bound);
	int r = dm_device_set_kernel_driver(dev, driver);
	if (r == 0 && driver && bus)
		r = kernel_driver_get(bus, driver);
	dm_device_attach(dev);
	return r;
}

static bool same_string(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Whether the device sits where the record places it: same name under the
 * same parent. A device that moved is removed and added again. */
static bool record_in_place(struct dm_device *dev, const struct dm_record *rec)
{
	struct dm_model *m = dm_device_get_model(dev);
	dm_model_read_lock(m);
	struct dm_device *parent = dm_device_get_parent_locked(dev);
	bool same = strcmp(dm_device_get_name(dev), rec->name) == 0 && parent &&
		    same_string(dm_device_get_devpath(parent), rec->parent);
	dm_model_unlock(m);
	return same;
}

/* The device's values and kernel driver as the sources see them now;
 * returns 1 when something changed, 0 when nothing did. */
static int record_refresh(struct dm_device *dev, const struct dm_record *rec)
{
	int changed = 0;
	for (size_t i = 0; i < rec->n_values; i++) {
		char old[DM_ATTR_MAX];
		int n = dm_device_get_value(dev, rec->values[i].name, old, sizeof(old));
		if (n >= 0 && strcmp(old, rec->values[i].value) == 0)
			continue; /* unchanged: nothing to invalidate */
		int r = dm_device_set_value(dev, rec->values[i].name, rec->values[i].value);
		if (r < 0)
			return r;
		changed = 1;
	}
	if (!same_string(dm_device_get_kernel_driver(dev), rec->driver)) {
		int r = dm_scan_set_kernel_driver(dev, rec->driver);
		if (r < 0)
			return r;
		changed = 1;
	}
	return changed;
}

static void report_device(struct dm_scan_report *rep, struct dm_device *dev, const char *action)
{
	if (rep->device)
		rep->device(dev, action, rep->data);
}

/* Removes a device of the model the records do not have any more (its
 * subtree goes with it, children first). */
static void report_remove(struct dm_scan_report *rep, struct dm_device *dev)
{
	report_device(rep, dev, "remove"); /* before it goes: what it was */
	dm_device_del(dev);
	rep->removed++;
}

/*
 * Brings the model in line with the records, parents first: a device the
 * model lacks is added, one it has in the same place is refreshed, one that
 * moved is removed and added again.
 */
static void records_apply(struct dm_model *m, struct dm_scan *s,
			  const struct dm_attribute_group *const *groups, struct dm_scan_report *rep)
{
	/* a parent's devpath is a prefix of its children's: sorting puts it first
	 * (no records, no array: every device of a run left sysfs meanwhile) */
	if (s->n)
		qsort(s->recs, s->n, sizeof(*s->recs), by_devpath);
	for (size_t i = 0; i < s->n; i++) {
		struct dm_record *rec = s->recs[i];
		if (rec->known)
			continue;
		struct dm_device *dev = dm_model_find_devpath(m, rec->devpath);
		int r = 0;
		if (dev && record_in_place(dev, rec)) {
			r = record_refresh(dev, rec);
			if (r > 0) {
				rep->changed++;
				report_device(rep, dev, "change");
			} else if (r == 0 && s->partial) {
				/* an event of its own with its values unchanged:
				 * its sysfs attributes may have come or gone */
				dm_device_announce_change(dev);
			}
		} else {
			if (dev)
				report_remove(rep, dev);
			r = record_commit(m, groups, rec);
			if (r == 0) {
				rep->added++;
				struct dm_device *added =
					rep->device ? dm_model_find_devpath(m, rec->devpath) : NULL;
				if (added)
					report_device(rep, added, "add");
				dm_device_unref(added);
			}
		}
		dm_device_unref(dev);
		if (r < 0) {
			log_warn("%s: %s", rec->devpath, strerror(-r));
			rep->failed++;
		}
	}
}

/* Removes, children first, every device of the model with a devpath the
 * records lack. */
static int records_remove_missing(struct dm_model *m, struct dm_scan *s,
				  struct dm_scan_report *rep)
{
	struct dm_device **devs;
	size_t n;
	int r = dm_model_ref_devices(m, NULL, &devs, &n);
	if (r < 0)
		return r;
	for (size_t i = n; i-- > 0;) {
		const char *devpath = dm_device_get_devpath(devs[i]);
		if (devpath && !dm_device_is_dead(devs[i]) && !dm_scan_find(s, devpath))
			report_remove(rep, devs[i]);
	}
	dm_device_array_free(devs, n);
	return 0;
}

/* Whether a record the scan will apply is of @subsystem (NULL: any). */
static bool records_need(const struct dm_scan *s, const char *subsystem)
{
	for (size_t i = 0; i < s->n; i++)
		if (!s->recs[i]->known &&
		    (!subsystem || same_string(s->recs[i]->subsystem, subsystem)))
			return true;
	return false;
}

int dm_scan_devices(struct dm_model *m, size_t n, dm_scan_record_fn record, void *data,
		    const struct dm_scan_sources *src, struct dm_source_cache *cache)
{
	struct dm_scan s;
	struct dm_scan_report rep = { 0 };
	struct dm_record **selves = calloc(n ? n : 1, sizeof(*selves));
	if (!selves)
		return -ENOMEM;
	dm_scan_init(&s);
	s.partial = true;
	s.model = m;
	s.cache = cache;
	for (size_t i = 0; i < n; i++)
		record(&s, i, data, &selves[i]); /* a device it misses is skipped */
	/* the events' devices are refreshed; their ancestors the model has, kept */
	for (size_t i = 0; i < s.n; i++) {
		struct dm_device *dev = dm_model_find_devpath(m, s.recs[i]->devpath);
		s.recs[i]->known = dev != NULL;
		dm_device_unref(dev);
	}
	for (size_t i = 0; i < n; i++)
		if (selves[i])
			selves[i]->known = false;
	for (const struct dm_source_ops *const *f = src->fillers; *f; f++) {
		int r = records_need(&s, (*f)->fills) ? (*f)->scan(&s) : 0;
		if (r < 0)
			log_warn("hotplug: source %s: %s; devices have what the others found",
				 (*f)->name, strerror(-r));
	}
	records_apply(m, &s, src->groups, &rep);
	dm_scan_done(&s);
	free(selves);
	if (dm_scan_sync_links(m) < 0)
		log_warn("hotplug: device links: out of memory; some are missing");
	return 0;
}

struct bus_names {
	char **names;
	size_t n, cap;
};

static int collect_bus(struct dm_bus *bus, void *data)
{
	struct bus_names *b = data;
	if (!dm_array_grow((void **)&b->names, &b->cap, b->n, sizeof(*b->names), 16))
		return 1;
	return !(b->names[b->n++] = strdup(dm_bus_get_name(bus)));
}

struct bus_find {
	const char *name;
	struct dm_bus *bus;
};

static int find_bus(struct dm_bus *bus, void *data)
{
	struct bus_find *f = data;
	if (strcmp(dm_bus_get_name(bus), f->name) != 0)
		return 0;
	f->bus = bus;
	return 1;
}

/* Whether /sys/bus/@bus/drivers/@name is a directory now. */
static bool sysfs_has_driver(const char *bus, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	return (size_t)snprintf(path, sizeof(path), "/sys/bus/%s/drivers/%s", bus, name) <
		       sizeof(path) &&
	       stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int dm_scan_driver_event(struct dm_model *m, const char *devpath, bool add)
{
	char bus[256], name[256], rest[2];
	if (sscanf(devpath, "/bus/%255[^/]/drivers/%255[^/]%1s", bus, name, rest) != 2 ||
	    !dm_name_is_valid(bus) || !dm_name_is_valid(name))
		return -EINVAL;
	/* sysfs, not the event's text, says whether the driver is there (a
	 * remove needs no look: events come in order, a later add follows) */
	if (add && !sysfs_has_driver(bus, name))
		return -ESTALE;
	struct bus_find f = { .name = bus };
	dm_model_read_lock(m);
	dm_model_for_each_bus_locked(m, find_bus, &f);
	dm_model_unlock(m);
	if (!f.bus)
		return 0; /* a bus without devices: not in the tree */
	if (add)
		return kernel_driver_get(f.bus, name);
	struct dm_driver *drv = dm_bus_find_driver(f.bus, name);
	if (drv && dm_driver_get_kind(drv) == DM_DRIVER_KERNEL)
		dm_driver_unregister(drv);
	dm_driver_unref(drv);
	return 0;
}

/*
 * Every driver the kernel has on a bus of the model (/sys/bus/<bus>/drivers),
 * bound to a device or not (vfio-pci waiting for one), as a kernel driver
 * proxy: the tree lists each (docs/design.md §3.4). A full scan's; a driver
 * loaded or unloaded later follows its uevent (dm_scan_driver_event()).
 */
static void add_sysfs_drivers(struct dm_model *m)
{
	struct bus_names b = { 0 };
	dm_model_read_lock(m);
	dm_model_for_each_bus_locked(m, collect_bus, &b);
	dm_model_unlock(m);
	for (size_t i = 0; i < b.n; i++) {
		char path[PATH_MAX];
		struct dm_bus *bus;
		DIR *d = NULL;
		if (b.names[i] && dm_name_is_valid(b.names[i]) &&
		    (size_t)snprintf(path, sizeof(path), "/sys/bus/%s/drivers", b.names[i]) <
			    sizeof(path) &&
		    dm_bus_get(m, b.names[i], NULL, &bus) >= 0)
			d = opendir(path);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.' || !dm_name_is_valid(e->d_name) ||
			    (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
				continue;
			int r = kernel_driver_get(bus, e->d_name);
			if (r < 0)
				log_warn("%s/%s: %s", path, e->d_name, strerror(-r));
		}
		if (d)
			closedir(d);
		free(b.names[i]);
	}
	free(b.names);
}

int dm_scan_reconcile(struct dm_model *m, const struct dm_scan_sources *src,
		      struct dm_scan_report *rep)
{
	struct dm_scan s;
	int r;

	dm_scan_init(&s);
	for (const struct dm_source_ops *const *o = src->all; *o; o++) {
		r = (*o)->scan(&s);
		if (r < 0)
			log_err("source %s: %s; serving what the others found", (*o)->name,
				strerror(-r));
	}
	r = resolve_name_clashes(&s);
	if (r == 0)
		r = records_remove_missing(m, &s, rep);
	if (r == 0)
		records_apply(m, &s, src->groups, rep);
	dm_scan_done(&s);
	if (r == 0)
		add_sysfs_drivers(m);
	if (r == 0 && dm_scan_sync_links(m) < 0)
		log_warn("device links: out of memory; some are missing");
	return r;
}

int dm_scan_model(struct dm_model *m, const struct dm_scan_sources *src)
{
	struct dm_scan_report rep = { 0 };
	int r = dm_scan_reconcile(m, src, &rep);
	if (r == 0)
		log_info("enumerated %zu devices%s, %zu device links", rep.added,
			 rep.failed ? " (some skipped)" : "", dm_model_count_links(m));
	return r;
}
