/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* iter.c - walks over the model's lists, for its views. */
#include "model-private.h"

#include "array.h"

#include <errno.h>

int dm_walk_devices(struct dm_list *head, size_t off, dm_device_fn fn, void *data)
{
	struct dm_list *p;
	dm_list_for_each(p, head) {
		struct dm_device *dev = (struct dm_device *)(void *)((char *)p - off);
		if (dm_device_is_dead(dev))
			continue;
		int r = fn(dev, data);
		if (r)
			return r;
	}
	return 0;
}

int dm_device_for_each_child_locked(struct dm_device *dev, dm_device_fn fn, void *data)
{
	dm_model_assert_held(dev->model);
	return dm_walk_devices(&dev->children, offsetof(struct dm_device, sibling), fn, data);
}

int dm_bus_for_each_device_locked(struct dm_bus *bus, dm_device_fn fn, void *data)
{
	dm_model_assert_held(bus->model);
	return dm_walk_devices(&bus->devices, offsetof(struct dm_device, bus_node), fn, data);
}

int dm_driver_for_each_device_locked(struct dm_driver *drv, dm_device_fn fn, void *data)
{
	if (dm_driver_model(drv)) /* else on no model's lists yet */
		dm_model_assert_held(dm_driver_model(drv));
	return dm_walk_devices(&drv->devices, offsetof(struct dm_device, driver_node), fn, data);
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

#define WALK(head, type, member, fn, data)                                     \
	do {                                                                   \
		struct dm_list *_p;                                            \
		dm_list_for_each(_p, (head)) {                                 \
			int _r = (fn)(dm_list_entry(_p, type, member), (data)); \
			if (_r)                                                \
				return _r;                                     \
		}                                                              \
		return 0;                                                      \
	} while (0)

int dm_model_for_each_bus_locked(struct dm_model *m, int (*fn)(struct dm_bus *, void *), void *data)
{
	dm_model_assert_held(m);
	WALK(&m->buses, struct dm_bus, node, fn, data);
}

int dm_bus_for_each_driver_locked(struct dm_bus *bus, int (*fn)(struct dm_driver *, void *),
				  void *data)
{
	dm_model_assert_held(bus->model);
	WALK(&bus->drivers, struct dm_driver, node, fn, data);
}

int dm_model_for_each_class_locked(struct dm_model *m, int (*fn)(struct dm_class *, void *),
				   void *data)
{
	dm_model_assert_held(m);
	WALK(&m->classes, struct dm_class, node, fn, data);
}

int dm_class_for_each_interface_locked(struct dm_class *c,
				       int (*fn)(struct dm_interface *, void *), void *data)
{
	dm_model_assert_held(c->model);
	WALK(&c->interfaces, struct dm_interface, node, fn, data);
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

uint64_t dm_model_generation(struct dm_model *m)
{
	return atomic_load_explicit(&m->gen, memory_order_relaxed);
}

uint64_t dm_model_count_class_driver_builds(struct dm_model *m)
{
	return atomic_load_explicit(&m->class_driver_builds, memory_order_relaxed);
}

int dm_class_for_each_driver_locked(struct dm_class *c, int (*fn)(struct dm_driver *, void *),
				    void *data)
{
	dm_model_assert_held(c->model);
	WALK(&c->drivers, struct dm_driver, node, fn, data);
}
