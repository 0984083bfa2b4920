/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bus.c - bus types (the 2002 model's struct bus_type, drivers/base/bus.c):
 * each bus named once in the model, found or made on first use, with its
 * devices and its drivers by priority, and the bus's match() (docs/design.md
 * §3.1, §3.4). */
#include "model-private.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const struct dm_named_kind bus_kind = DM_NAMED_KIND(struct dm_bus);

/* a bus no enumerator gave a type of its own: drivers match by their rules */
static const struct dm_bus_type generic_bus_type = {
	.match = NULL,
};

struct bus_setup {
	struct dm_model *model;
	const struct dm_bus_type *type;
};

static void bus_setup(void *obj, bool made, void *data)
{
	struct dm_bus *bus = obj;
	struct bus_setup *b = data;
	if (made) {
		bus->model = b->model;
		bus->type = b->type ? b->type : &generic_bus_type;
		dm_list_init(&bus->devices);
		dm_list_init(&bus->drivers);
	} else if (b->type && bus->type == &generic_bus_type) {
		bus->type = b->type;
	}
}

int dm_bus_get(struct dm_model *m, const char *name, const struct dm_bus_type *type,
	       struct dm_bus **ret)
{
	if (!dm_name_is_valid(name))
		return -EINVAL;
	void *bus;
	int r = dm_model_get_named(m, &m->buses, &bus_kind, name, bus_setup,
			  &(struct bus_setup){ m, type }, &bus);
	if (r == 0)
		*ret = bus;
	return r;
}

const char *dm_bus_get_name(const struct dm_bus *bus)
{
	return bus->name;
}

int dm_bus_for_each_device_locked(struct dm_bus *bus, dm_device_fn fn, void *data)
{
	dm_model_assert_held(bus->model);
	return dm_walk_devices(&bus->devices, offsetof(struct dm_device, bus_node), fn, data);
}

int dm_model_for_each_bus_locked(struct dm_model *m, int (*fn)(struct dm_bus *, void *), void *data)
{
	dm_model_assert_held(m);
	DM_WALK_LIST(&m->buses, struct dm_bus, node, fn, data);
}

int dm_bus_for_each_driver_locked(struct dm_bus *bus, int (*fn)(struct dm_driver *, void *),
				  void *data)
{
	dm_model_assert_held(bus->model);
	DM_WALK_LIST(&bus->drivers, struct dm_driver, node, fn, data);
}
