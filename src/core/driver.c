/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* driver.c - drivers, matching, bind and claim (docs/design.md §3.4). */
#include "model-private.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

int dm_driver_new(const char *name, enum dm_driver_kind kind, int priority,
		  const struct dm_driver_ops *ops, void *data, void (*free_data)(void *),
		  struct dm_driver **ret)
{
	if (!dm_name_is_valid(name))
		return -EINVAL;
	struct dm_driver *drv = calloc(1, sizeof(*drv));
	if (!drv)
		return -ENOMEM;
	drv->name = strdup(name);
	if (!drv->name) {
		free(drv);
		return -ENOMEM;
	}
	atomic_init(&drv->refcount, 1);
	drv->kind = kind;
	drv->priority = priority;
	drv->ops = ops;
	drv->data = data;
	drv->free_data = free_data;
	dm_list_init(&drv->devices);
	dm_list_init(&drv->node);
	*ret = drv;
	return 0;
}

struct dm_driver *dm_driver_ref(struct dm_driver *drv)
{
	if (drv)
		atomic_fetch_add_explicit(&drv->refcount, 1, memory_order_relaxed);
	return drv;
}

struct dm_driver *dm_driver_unref(struct dm_driver *drv)
{
	if (!drv || atomic_fetch_sub_explicit(&drv->refcount, 1, memory_order_acq_rel) != 1)
		return NULL;
	if (drv->free_data)
		drv->free_data(drv->data);
	for (size_t i = 0; i < drv->n_rules; i++) {
		free(drv->rules[i].key);
		free(drv->rules[i].glob);
	}
	free(drv->rules);
	free(drv->name);
	free(drv);
	return NULL;
}

const char *dm_driver_get_name(const struct dm_driver *drv)
{
	return drv->name;
}

int dm_driver_get_priority(const struct dm_driver *drv)
{
	return drv->priority;
}

enum dm_driver_kind dm_driver_get_kind(const struct dm_driver *drv)
{
	return drv->kind;
}

int dm_driver_add_match(struct dm_driver *drv, const char *key, const char *glob)
{
	if (!key || !*key || !glob || drv->bus || drv->class)
		return -EINVAL;
	struct dm_match_rule *r = realloc(drv->rules, (drv->n_rules + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	drv->rules = r;
	char *k = strdup(key), *g = strdup(glob);
	if (!k || !g) {
		free(k);
		free(g);
		return -ENOMEM;
	}
	drv->rules[drv->n_rules++] = (struct dm_match_rule){ .key = k, .glob = g };
	return 0;
}

/* Called without the lock: rules read attribute values through show(). */
int dm_driver_default_match(struct dm_device *dev, struct dm_driver *drv)
{
	if (drv->kind == DM_DRIVER_KERNEL && drv->n_rules == 0)
		return dev->kernel_driver && strcmp(dev->kernel_driver, drv->name) == 0;
	for (size_t i = 0; i < drv->n_rules; i++) {
		char buf[DM_ATTR_MAX + 1];
		int n = dm_device_show(dev, NULL, drv->rules[i].key, buf, sizeof(buf));
		if (n < 0)
			return 0;
		buf[n] = '\0';
		if (n > 0 && buf[n - 1] == '\n')
			buf[n - 1] = '\0';
		if (fnmatch(drv->rules[i].glob, buf, 0) != 0)
			return 0;
	}
	return 1;
}

void dm_driver_set_match(struct dm_driver *drv,
			 int (*match)(struct dm_device *dev, struct dm_driver *drv))
{
	drv->match = match;
}

static int driver_match(struct dm_device *dev, struct dm_driver *drv)
{
	if (drv->match)
		return drv->match(dev, drv);
	const struct dm_bus_type *t = drv->bus ? drv->bus->type : NULL;
	return t && t->match ? t->match(dev, drv) : dm_driver_default_match(dev, drv);
}

/* Binds under the lock after a successful probe, unless the device went away
 * or was bound meanwhile. Returns true when bound. */
static bool bind_locked(struct dm_device *dev, struct dm_driver *drv)
{
	dm_model_assert_write_held(dev->model);
	if (dm_device_is_dead(dev) || dev->driver || !drv->registered)
		return false;
	dev->driver = dm_driver_ref(drv);
	dev->claimed_under = dev->kernel_driver;
	atomic_fetch_and(&dev->flags, (uint8_t)~DM_DEV_F_CLAIM_STALE); /* it holds */
	dm_model_order_bound_locked(dev);
	dm_list_append(&drv->devices, &dev->driver_node);
	dm_model_notify_changed_locked(dev->model, dev);
	return true;
}

/* Offers @dev to @drv with the device mutex held. 1 bound, 0 declined. */
static int try_bind(struct dm_device *dev, struct dm_driver *drv)
{
	dm_device_assert_mutex_held(dev);
	dm_model_assert_not_held(dev->model); /* the probe runs without it */
	if (driver_match(dev, drv) <= 0)
		return 0;
	if (drv->ops && drv->ops->probe) {
		int r = drv->ops->probe(dev, drv->data);
		if (r < 0)
			return 0; /* -ENODEV/-ENXIO: quietly; others are the driver's to log */
	}
	dm_model_write_lock(dev->model);
	bool bound = bind_locked(dev, drv);
	dm_model_unlock(dev->model);
	if (!bound && drv->ops && drv->ops->remove)
		drv->ops->remove(dev, drv->data); /* undo the probe */
	return bound;
}

/* The drivers @dev is offered to: its bus's, or a class device's (on no
 * bus) its class's; NULL: none. */
static struct dm_list *candidates_locked(struct dm_device *dev)
{
	dm_model_assert_held(dev->model);
	return dev->bus ? &dev->bus->drivers : dev->class ? &dev->class->drivers : NULL;
}

/* References to the drivers of @list in probe order; *ret_n 0 when none
 * or out of memory (then nothing is probed). */
static struct dm_driver **pin_drivers_locked(struct dm_list *list, size_t *ret_n)
{
	size_t n = 0, i = 0;
	struct dm_list *p;
	dm_list_for_each(p, list)
		n++;
	struct dm_driver **drvs = n ? calloc(n, sizeof(*drvs)) : NULL;
	if (!drvs) {
		*ret_n = 0;
		return NULL;
	}
	dm_list_for_each(p, list)
		drvs[i++] = dm_driver_ref(dm_list_entry(p, struct dm_driver, node));
	*ret_n = n;
	return drvs;
}

/* dm_device_attach() with the device mutex held. */
static int attach_mutex_held(struct dm_device *dev)
{
	dm_device_assert_mutex_held(dev);
	struct dm_model *m = dev->model;
	size_t n = 0;
	int bound = 0;

	dm_model_read_lock(m);
	struct dm_list *list = candidates_locked(dev);
	if (dev->driver || !list || dm_device_is_dead(dev) || dev->binding) {
		dm_model_unlock(m);
		return 0;
	}
	/* Pin the candidates, then probe without the lock. */
	struct dm_driver **drvs = pin_drivers_locked(list, &n);
	dm_model_unlock(m);

	for (size_t i = 0; i < n && !bound; i++)
		bound = try_bind(dev, drvs[i]);
	for (size_t i = 0; i < n; i++)
		dm_driver_unref(drvs[i]);
	free(drvs);
	return bound;
}

int dm_device_attach(struct dm_device *dev)
{
	dm_device_lock(dev);
	int bound = attach_mutex_held(dev);
	dm_device_unlock(dev);
	return bound;
}

/* dm_device_release_driver() with the device mutex held. */
void dm_device_release_mutex_held(struct dm_device *dev)
{
	dm_device_assert_mutex_held(dev);
	struct dm_model *m = dev->model;
	dm_model_write_lock(m);
	struct dm_driver *drv = dev->driver;
	dm_model_unlock(m);
	if (!drv)
		return;
	if (drv->ops && drv->ops->remove)
		drv->ops->remove(dev, drv->data);
	dm_model_write_lock(m);
	dev->driver = NULL;
	dev->claimed_under = NULL;
	atomic_fetch_and(&dev->flags, (uint8_t)~DM_DEV_F_CLAIM_STALE);
	dm_model_order_bound_locked(dev);
	dev->driver_data = NULL;
	dm_list_remove(&dev->driver_node);
	if (!dm_device_is_dead(dev))
		dm_model_notify_changed_locked(m, dev);
	dm_model_unlock(m);
	dm_driver_unref(drv);
}

void dm_device_release_driver(struct dm_device *dev)
{
	dm_device_lock(dev);
	dm_device_release_mutex_held(dev);
	dm_device_unlock(dev);
}

static bool same_name(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Whether the driver bound to @dev may still drive it: a user driver
 * probed a device under one kernel binding (none for pci-pm, vfio-pci for
 * vfio-pci) and decided on that; once the kernel bound another driver, or
 * unbound it, the decision no longer holds. Kernel proxies follow the
 * kernel's binding themselves (dm_scan_set_kernel_driver()). Device mutex
 * held: kernel_driver and the binding change only under it. */
static bool claim_holds(const struct dm_device *dev)
{
	const struct dm_driver *drv = dev->driver;
	return !drv || drv->kind != DM_DRIVER_USER || same_name(dev->kernel_driver, dev->claimed_under);
}

void dm_device_update_claim(struct dm_device *dev)
{
	if (claim_holds(dev))
		atomic_fetch_and(&dev->flags, (uint8_t)~DM_DEV_F_CLAIM_STALE);
	else
		atomic_fetch_or(&dev->flags, (uint8_t)DM_DEV_F_CLAIM_STALE);
}

/* Drops a claim that no longer holds and offers the device to the bus's
 * drivers again, as the kernel's binding now stands. Device mutex held. */
void dm_device_drop_claim_mutex_held(struct dm_device *dev)
{
	dm_device_assert_mutex_held(dev);
	dm_device_release_mutex_held(dev);
	attach_mutex_held(dev);
}

static bool on_bus(struct dm_device *dev, void *bus)
{
	return dev->bus == bus;
}

struct dm_device *dm_model_find_on_bus(struct dm_model *m, const char *bus, const char *name)
{
	struct dm_device *dev = NULL;
	dm_model_read_lock(m);
	struct dm_list *p;
	dm_list_for_each(p, &m->buses) {
		struct dm_bus *b = dm_list_entry(p, struct dm_bus, node);
		if (strcmp(b->name, bus) == 0) {
			dev = dm_model_find_listed_locked(m, name, on_bus, b);
			break;
		}
	}
	if (dev)
		dm_device_ref(dev);
	dm_model_unlock(m);
	return dev;
}

int dm_driver_bind_request(struct dm_driver *drv, const char *devname, bool unbind)
{
	struct dm_bus *bus = drv->bus;
	if (!bus)
		return -ENODEV;
	struct dm_model *m = bus->model;
	dm_model_read_lock(m);
	struct dm_device *dev = dm_model_find_listed_locked(m, devname, on_bus, bus);
	if (dev && unbind && !same_name(dev->kernel_driver, drv->name))
		dev = NULL;
	if (dev)
		dm_device_ref(dev);
	dm_bind_request_fn fn = m->bind_request;
	void *data = m->bind_request_data;
	dm_model_unlock(m);
	if (!dev)
		return -ENODEV;
	int r = fn ? fn(dev, unbind ? NULL : drv->name, data) : -EOPNOTSUPP;
	dm_device_unref(dev);
	return r;
}

void dm_device_set_binding(struct dm_device *dev, bool binding)
{
	dm_device_lock(dev);
	dev->binding = binding;
	/* at the end, offered as the kernel's binding now stands */
	if (!binding) {
		if (!claim_holds(dev))
			dm_device_drop_claim_mutex_held(dev);
		else
			attach_mutex_held(dev);
	}
	dm_device_unlock(dev);
}

bool dm_device_claim_is_stale(const struct dm_device *dev)
{
	return atomic_load_explicit(&dev->flags, memory_order_relaxed) & DM_DEV_F_CLAIM_STALE;
}

int dm_device_recheck_claim(struct dm_device *dev)
{
	int dropped = 0;
	dm_device_lock(dev);
	if (!claim_holds(dev)) {
		dm_device_drop_claim_mutex_held(dev);
		dropped = 1;
	}
	dm_device_unlock(dev);
	return dropped;
}

static struct dm_driver *find_driver(struct dm_model *m, struct dm_list *drivers,
				     const char *name)
{
	struct dm_driver *found = NULL;
	dm_model_read_lock(m);
	struct dm_list *p;
	dm_list_for_each(p, drivers) {
		struct dm_driver *drv = dm_list_entry(p, struct dm_driver, node);
		if (strcmp(drv->name, name) == 0) {
			found = dm_driver_ref(drv);
			break;
		}
	}
	dm_model_unlock(m);
	return found;
}

struct dm_driver *dm_bus_find_driver(struct dm_bus *bus, const char *name)
{
	return find_driver(bus->model, &bus->drivers, name);
}

struct dm_driver *dm_class_find_driver(struct dm_class *c, const char *name)
{
	return find_driver(c->model, &c->drivers, name);
}

/* The device of a bus's (@class false) or a class's devices list node @p. */
static struct dm_device *listed_device(struct dm_list *p, bool class)
{
	return class ? dm_list_entry(p, struct dm_device, class_node)
		     : dm_list_entry(p, struct dm_device, bus_node);
}

/* dm_driver_register() on @bus, or dm_driver_register_class() on @c. */
static int driver_register(struct dm_model *m, struct dm_bus *bus, struct dm_class *c,
			   struct dm_driver *drv)
{
	struct dm_list *drivers = bus ? &bus->drivers : &c->drivers;
	struct dm_list *devices = bus ? &bus->devices : &c->devices;
	struct dm_device **devs = NULL;
	size_t n = 0, i = 0;
	struct dm_list *p;
	int r = 0;

	dm_model_write_lock(m);
	if (drv->bus || drv->class) {
		r = -EBUSY;
		goto out_unlock;
	}
	dm_list_for_each(p, drivers)
		if (strcmp(dm_list_entry(p, struct dm_driver, node)->name, drv->name) == 0) {
			r = -EEXIST;
			goto out_unlock;
		}
	/* Room for the devices it is offered, before it is published: once
	 * listed it cannot fail any more, so a failure registers nothing. */
	dm_list_for_each(p, devices)
		n++;
	if (n && !(devs = calloc(n, sizeof(*devs)))) {
		r = -ENOMEM;
		goto out_unlock;
	}
	/* by priority, highest first; equal priorities in registration order */
	dm_list_for_each(p, drivers)
		if (dm_list_entry(p, struct dm_driver, node)->priority < drv->priority)
			break;
	dm_list_insert_before(p, &drv->node);
	drv->bus = bus;
	drv->class = bus ? NULL : c;
	drv->registered = true;
	dm_driver_ref(drv);
	dm_model_notify_driver_locked(m, drv);

	/* Offer it the unbound devices, in global-list order: a class driver
	 * the class devices (a device on a bus is its bus drivers') */
	dm_list_for_each(p, devices) {
		struct dm_device *dev = listed_device(p, !bus);
		if (!dev->driver && !dm_device_is_dead(dev) && (bus || !dev->bus))
			devs[i++] = dm_device_ref(dev);
	}
	dm_model_unlock(m);

	for (size_t k = 0; k < i; k++) {
		dm_device_lock(devs[k]);
		dm_model_read_lock(m);
		bool unbound = !devs[k]->driver && drv->registered;
		dm_model_unlock(m);
		if (unbound)
			try_bind(devs[k], drv);
		dm_device_unlock(devs[k]);
		dm_device_unref(devs[k]);
	}
	free(devs);
	return 0;

out_unlock:
	dm_model_unlock(m);
	return r;
}

int dm_driver_register(struct dm_bus *bus, struct dm_driver *drv)
{
	return driver_register(bus->model, bus, NULL, drv);
}

int dm_driver_register_class(struct dm_class *c, struct dm_driver *drv)
{
	return driver_register(c->model, NULL, c, drv);
}

int dm_model_add_driver(struct dm_model *m, const char *busname, const char *name,
			enum dm_driver_kind kind, int priority, const struct dm_driver_ops *ops,
			void *data, void (*free_data)(void *), struct dm_driver **ret)
{
	struct dm_driver *drv;
	struct dm_bus *bus;
	int r = dm_driver_new(name, kind, priority, ops, data, free_data, &drv);
	if (r < 0) {
		if (free_data)
			free_data(data);
		return r;
	}
	r = dm_bus_get(m, busname, NULL, &bus);
	if (r >= 0)
		r = dm_driver_register(bus, drv);
	if (r < 0) {
		dm_driver_unref(drv); /* frees @data */
		return r;
	}
	*ret = drv;
	return 0;
}

void dm_driver_unregister(struct dm_driver *drv)
{
	if (!drv->bus && !drv->class)
		return;
	struct dm_model *m = drv->bus ? drv->bus->model : drv->class->model;
	dm_model_write_lock(m);
	if (!drv->registered) {
		dm_model_unlock(m);
		return;
	}
	drv->registered = false; /* from now on nothing binds to it */
	dm_list_remove(&drv->node);
	dm_model_notify_driver_locked(m, drv);
	dm_model_unlock(m);

	for (;;) {
		dm_model_write_lock(m);
		struct dm_device *dev = dm_list_empty(&drv->devices)
						? NULL
						: dm_device_ref(dm_list_entry(drv->devices.next,
									      struct dm_device,
									      driver_node));
		dm_model_unlock(m);
		if (!dev)
			break;
		dm_device_release_driver(dev);
		dm_device_unref(dev);
	}
	dm_driver_unref(drv);
}

int dm_driver_for_each_device_locked(struct dm_driver *drv, dm_device_fn fn, void *data)
{
	if (dm_driver_model(drv)) /* else on no model's lists yet */
		dm_model_assert_held(dm_driver_model(drv));
	return dm_walk_devices(&drv->devices, offsetof(struct dm_device, driver_node), fn, data);
}

bool dm_driver_is_registered_locked(const struct dm_driver *drv)
{
	if (dm_driver_model(drv)) /* else on no model's lists yet */
		dm_model_assert_held(dm_driver_model(drv));
	return drv->registered;
}

struct dm_bus *dm_driver_get_bus(const struct dm_driver *drv)
{
	return drv->bus;
}

struct dm_class *dm_driver_get_class(const struct dm_driver *drv)
{
	return drv->class;
}
