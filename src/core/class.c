/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* class.c - classes and their interfaces (the 2002 model's struct
 * device_class and struct device_interface, drivers/base/class.c and
 * intf.c): each named once in the model, their devices, and the drivers a
 * class's listing shows, its own (class drivers) and its devices' bus
 * drivers (docs/design.md §3.1, §7.6). */
#include "array.h"
#include "model-private.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const struct dm_named_kind class_kind = DM_NAMED_KIND(struct dm_class);
static const struct dm_named_kind interface_kind = DM_NAMED_KIND(struct dm_interface);

static void class_setup(void *obj, bool made, void *data)
{
	struct dm_class *c = obj;
	if (made) {
		c->model = data;
		dm_list_init(&c->devices);
		dm_list_init(&c->interfaces);
		dm_list_init(&c->drivers);
		pthread_mutex_init(&c->bus_drivers_lock, NULL);
	}
}

int dm_class_get(struct dm_model *m, const char *name, struct dm_class **ret)
{
	if (!dm_name_is_valid(name))
		return -EINVAL;
	void *c;
	int r = dm_model_get_named(m, &m->classes, &class_kind, name, class_setup, m, &c);
	if (r == 0)
		*ret = c;
	return r;
}

static void interface_setup(void *obj, bool made, void *data)
{
	struct dm_interface *i = obj;
	if (made) {
		i->class = data;
		dm_list_init(&i->devices);
	}
}

int dm_class_get_interface(struct dm_class *c, const char *name, struct dm_interface **ret)
{
	/* "devices" and "drivers" are the class's own listings */
	if (!dm_name_is_valid(name) || strcmp(name, "devices") == 0 || strcmp(name, "drivers") == 0)
		return -EINVAL;
	void *i;
	int r = dm_model_get_named(c->model, &c->interfaces, &interface_kind, name, interface_setup, c,
			  &i);
	if (r == 0)
		*ret = i;
	return r;
}

const char *dm_class_get_name(const struct dm_class *c)
{
	return c->name;
}

const char *dm_interface_get_name(const struct dm_interface *i)
{
	return i->name;
}

int dm_class_for_each_device_locked(struct dm_class *c, dm_device_fn fn, void *data)
{
	dm_model_assert_held(c->model);
	return dm_walk_devices(&c->devices, offsetof(struct dm_device, class_node), fn, data);
}

int dm_interface_for_each_device_locked(struct dm_interface *i, dm_device_fn fn, void *data)
{
	dm_model_assert_held(i->class->model);
	return dm_walk_devices(&i->devices, offsetof(struct dm_device, iface_node), fn, data);
}

int dm_model_for_each_class_locked(struct dm_model *m, int (*fn)(struct dm_class *, void *),
				   void *data)
{
	dm_model_assert_held(m);
	DM_WALK_LIST(&m->classes, struct dm_class, node, fn, data);
}

int dm_class_for_each_interface_locked(struct dm_class *c,
				       int (*fn)(struct dm_interface *, void *), void *data)
{
	dm_model_assert_held(c->model);
	DM_WALK_LIST(&c->interfaces, struct dm_interface, node, fn, data);
}

/* The driver of the bus device nearest above the class device @dev, or
 * NULL. */
static struct dm_driver *bus_driver_of(struct dm_device *dev)
{
	struct dm_device *p = dev;
	while (p && !p->bus)
		p = p->parent;
	return p && !dm_device_is_dead(p) ? p->driver : NULL;
}

static int add_bus_driver(struct dm_device *dev, void *data)
{
	struct dm_class *c = data;
	struct dm_driver *drv = dm_device_is_dead(dev) ? NULL : bus_driver_of(dev);
	if (!drv)
		return 0;
	for (size_t i = 0; i < c->n_bus_drivers; i++)
		if (c->bus_drivers[i] == drv)
			return 0;
	if (!dm_array_grow((void **)&c->bus_drivers, &c->cap_bus_drivers, c->n_bus_drivers,
			   sizeof(*c->bus_drivers), 8))
		return -ENOMEM;
	c->bus_drivers[c->n_bus_drivers++] = drv;
	return 0;
}

int dm_class_for_each_bus_driver_locked(struct dm_class *c,
					int (*fn)(struct dm_driver *, void *), void *data)
{
	dm_model_assert_held(c->model);
	struct dm_model *m = c->model;
	uint64_t gen = dm_model_generation(m);
	int r = 0;
	pthread_mutex_lock(&c->bus_drivers_lock);
	if (c->bus_drivers_gen != gen) {
		c->n_bus_drivers = 0;
		r = dm_class_for_each_device_locked(c, add_bus_driver, c);
		c->bus_drivers_gen = r == 0 ? gen : 0;
		atomic_fetch_add_explicit(&m->class_driver_builds, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&c->bus_drivers_lock);
	/* no other reader of this generation changes the list */
	for (size_t i = 0; r == 0 && i < c->n_bus_drivers; i++)
		r = fn(c->bus_drivers[i], data);
	return r;
}

uint64_t dm_model_count_class_driver_builds(struct dm_model *m)
{
	return atomic_load_explicit(&m->class_driver_builds, memory_order_relaxed);
}

int dm_class_for_each_driver_locked(struct dm_class *c, int (*fn)(struct dm_driver *, void *),
				    void *data)
{
	dm_model_assert_held(c->model);
	DM_WALK_LIST(&c->drivers, struct dm_driver, node, fn, data);
}
