/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* device.c - device lifetime, the tree and its place in the global list. */
#include "model-private.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int dm_device_new(struct dm_model *m, const char *name, struct dm_device **ret)
{
	if (!dm_name_is_valid(name))
		return -EINVAL;
	/* the name after the struct, in the room the alignment leaves or
	 * more: one allocation */
	size_t len = strlen(name) + 1;
	struct dm_device *dev =
		aligned_alloc(DM_CACHE_LINE, DM_ALIGN_UP(sizeof(*dev) + len, DM_CACHE_LINE));
	if (!dev)
		return -ENOMEM;
	memset(dev, 0, sizeof(*dev));
	dev->name = memcpy((char *)(dev + 1), name, len);
	atomic_init(&dev->refcount, 1);
	atomic_init(&dev->state, DM_DEV_INIT);
	atomic_init(&dev->power, DM_POWER_ON);
	dev->model = m;
	dm_list_init(&dev->children);
	dm_list_init(&dev->sibling);
	dm_list_init(&dev->global);
	dm_list_init(&dev->bus_node);
	dm_list_init(&dev->class_node);
	dm_list_init(&dev->iface_node);
	dm_list_init(&dev->driver_node);
	dm_list_init(&dev->consumer_links);
	dm_list_init(&dev->supplier_links);
	pthread_mutex_init(&dev->mutex, NULL);
	dev->groups[dev->n_groups++] = dm_core_device_group();
	*ret = dev;
	return 0;
}

#ifdef DM_LOCK_CHECKS
/* The device mutexes this thread holds: one at a time in the code as it is
 * (a walk takes each device's in turn), a few allowed. */
static _Thread_local const struct dm_device *mutexes_held[4];

void dm_device_assert_mutex_held(const struct dm_device *dev)
{
	bool held = false;
	for (size_t i = 0; i < sizeof(mutexes_held) / sizeof(mutexes_held[0]); i++)
		held = held || mutexes_held[i] == dev;
	if (!held)
		dm_lock_rule_broken("a *_mutex_held function called without the device's mutex");
}

static void mutex_hold(const struct dm_device *dev, const struct dm_device *was)
{
	for (size_t i = 0; i < sizeof(mutexes_held) / sizeof(mutexes_held[0]); i++)
		if (mutexes_held[i] == was) {
			mutexes_held[i] = dev;
			return;
		}
	dm_lock_rule_broken("a device mutex released by a thread that does not hold it, or a fifth one taken");
}
#else
static inline void mutex_hold(const struct dm_device *dev, const struct dm_device *was)
{
	(void)dev;
	(void)was;
}
#endif

void dm_device_lock(struct dm_device *dev)
{
	dm_model_assert_not_held(dev->model); /* device mutex, then model lock */
	pthread_mutex_lock(&dev->mutex);
	mutex_hold(dev, NULL);
}

void dm_device_unlock(struct dm_device *dev)
{
	mutex_hold(NULL, dev);
	pthread_mutex_unlock(&dev->mutex);
}

struct dm_device *dm_device_ref(struct dm_device *dev)
{
	if (dev)
		atomic_fetch_add_explicit(&dev->refcount, 1, memory_order_relaxed);
	return dev;
}

static void device_free(struct dm_device *dev)
{
	if (dev->free_bus_data)
		dev->free_bus_data(dev->bus_data);
	dm_device_values_free(dev);
	pthread_mutex_destroy(&dev->mutex);
	free(dev->power_error);
	free(dev->sysname);
	free(dev->devpath);
	free(dev);
}

struct dm_device *dm_device_unref(struct dm_device *dev)
{
	if (!dev)
		return NULL;
	if (atomic_fetch_sub_explicit(&dev->refcount, 1, memory_order_acq_rel) == 1)
		device_free(dev);
	return NULL;
}

const char *dm_device_get_name(const struct dm_device *dev)
{
	return dev->name;
}

struct dm_model *dm_device_get_model(const struct dm_device *dev)
{
	return dev->model;
}

const char *dm_device_get_devpath(const struct dm_device *dev)
{
	return dev->devpath;
}

uint64_t dm_device_identity(struct dm_device *dev)
{
	if (atomic_load_explicit(&dev->identity_known, memory_order_acquire))
		return atomic_load_explicit(&dev->identity, memory_order_relaxed);
	char path[PATH_MAX];
	struct stat st;
	uint64_t id = 0;
	/* the devpath is set before the device is added, never changed */
	if (dev->devpath && (size_t)snprintf(path, sizeof(path), "/sys%s", dev->devpath) <
				    sizeof(path) &&
	    stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		id = (uint64_t)st.st_ino;
	atomic_store_explicit(&dev->identity, id, memory_order_relaxed);
	atomic_store_explicit(&dev->identity_known, true, memory_order_release);
	return id;
}

const char *dm_device_get_kernel_driver(const struct dm_device *dev)
{
	return dev->kernel_driver;
}

uint64_t dm_device_get_id(const struct dm_device *dev)
{
	return dev->id;
}

bool dm_device_is_dead(const struct dm_device *dev)
{
	return atomic_load(&dev->state) == DM_DEV_DEAD;
}

void dm_device_set_driver_data(struct dm_device *dev, void *data)
{
	dev->driver_data = data;
}

void *dm_device_get_driver_data(const struct dm_device *dev)
{
	return dev->driver_data;
}

int dm_device_set_devpath(struct dm_device *dev, const char *devpath)
{
	if (atomic_load(&dev->state) != DM_DEV_INIT)
		return -EBUSY;
	return dm_set_string(&dev->devpath, devpath);
}

int dm_device_set_kernel_driver(struct dm_device *dev, const char *driver)
{
	/* a few names for all devices: interned, so the old one stays valid
	 * for whoever still reads it */
	const char *name = driver ? dm_strpool_intern(&dev->model->names, driver) : NULL;
	if (driver && !name)
		return -ENOMEM;
	if (atomic_load(&dev->state) == DM_DEV_INIT) {
		dev->kernel_driver = name;
		dm_device_update_claim(dev);
		return 0;
	}
	/* hotplug's bind/unbind: matching and probing read it under the
	 * device mutex, other readers under the model lock */
	dm_device_lock(dev);
	dm_model_write_lock(dev->model);
	dev->kernel_driver = name;
	dm_device_update_claim(dev);
	/* its kernel_driver file comes, goes or changes */
	if (!dm_device_is_dead(dev))
		dm_model_notify_changed_locked(dev->model, dev);
	dm_model_unlock(dev->model);
	dm_device_unlock(dev);
	return 0;
}

int dm_device_set_sysname(struct dm_device *dev, const char *sysname)
{
	if (atomic_load(&dev->state) != DM_DEV_INIT)
		return -EBUSY;
	if (sysname && !dm_name_is_valid(sysname))
		return -EINVAL;
	return dm_set_string(&dev->sysname, sysname);
}

const char *dm_device_get_sysname(const struct dm_device *dev)
{
	return dev->sysname ? dev->sysname : dev->name;
}

void dm_device_set_bus(struct dm_device *dev, struct dm_bus *bus)
{
	dev->bus = bus;
}

void dm_device_set_class(struct dm_device *dev, struct dm_class *c, struct dm_interface *iface)
{
	dev->class = c;
	dev->iface = iface && iface->class == c ? iface : NULL;
}

int dm_device_add_group(struct dm_device *dev, const struct dm_attribute_group *g)
{
	if (atomic_load(&dev->state) != DM_DEV_INIT)
		return -EBUSY;
	if (dev->n_groups >= DM_DEVICE_MAX_GROUPS)
		return -E2BIG;
	dev->groups[dev->n_groups++] = g;
	return 0;
}

int dm_model_add_root_group(struct dm_model *m, const struct dm_attribute_group *g)
{
	struct dm_device *root = dm_model_get_root(m);
	int r = 0;
	/* root is in the model from its start: readers may be walking it */
	dm_model_write_lock(m);
	if (root->n_groups >= DM_DEVICE_MAX_GROUPS)
		r = -E2BIG;
	else
		root->groups[root->n_groups++] = g;
	dm_model_unlock(m);
	return r;
}

void dm_device_set_bus_data(struct dm_device *dev, void *data, void (*free_data)(void *))
{
	dev->bus_data = data;
	dev->free_bus_data = free_data;
}

void *dm_device_get_bus_data(const struct dm_device *dev)
{
	return dev->bus_data;
}

/* ---- tree ---- */

struct dm_device *dm_device_get_parent_locked(const struct dm_device *dev)
{
	dm_model_assert_held(dev->model);
	return dev->parent;
}

/* ---- the model's indexes of devices (struct dm_idset) ---- */

static uint64_t child_hash(uint64_t parent_id, const char *name)
{
	uint64_t h = dm_hash_u64(&parent_id);
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	return h;
}

uint64_t dm_device_hash_child(uintptr_t item, void *ctx)
{
	(void)ctx;
	const struct dm_device *dev = (const struct dm_device *)item;
	return child_hash(dev->parent->id, dev->name);
}

uint64_t dm_device_hash_id(uintptr_t item, void *ctx)
{
	(void)ctx;
	return dm_hash_u64(&((const struct dm_device *)item)->id);
}

uint64_t dm_device_hash_devpath(uintptr_t item, void *ctx)
{
	(void)ctx;
	return dm_hash_string(((const struct dm_device *)item)->devpath);
}

uint64_t dm_device_hash_sysname(uintptr_t item, void *ctx)
{
	(void)ctx;
	return dm_hash_string(dm_device_get_sysname((const struct dm_device *)item));
}

struct child_key {
	const struct dm_device *parent;
	const char *name;
};

static bool child_match(uintptr_t item, void *data)
{
	const struct dm_device *dev = (const struct dm_device *)item;
	const struct child_key *k = data;
	return dev->parent == k->parent && strcmp(dev->name, k->name) == 0;
}

struct dm_device *dm_device_find_child_locked(const struct dm_device *dev, const char *name)
{
	dm_model_assert_held(dev->model);
	struct child_key k = { .parent = dev, .name = name };
	return (struct dm_device *)dm_idset_find(&dev->model->by_child, child_hash(dev->id, name),
						 child_match, &k);
}

static bool id_match(uintptr_t item, void *data)
{
	return ((const struct dm_device *)item)->id == *(const uint64_t *)data;
}

struct dm_device *dm_model_find_id_locked(struct dm_model *m, uint64_t id)
{
	dm_model_assert_held(m);
	return (struct dm_device *)dm_idset_find(&m->by_id, dm_hash_u64(&id), id_match, &id);
}

static bool devpath_match(uintptr_t item, void *data)
{
	return strcmp(((const struct dm_device *)item)->devpath, data) == 0;
}

struct dm_device *dm_model_find_devpath_locked(struct dm_model *m, const char *devpath)
{
	dm_model_assert_held(m);
	return (struct dm_device *)dm_idset_find(&m->by_devpath, dm_hash_string(devpath),
						 devpath_match, (void *)devpath);
}

struct listed_match {
	const char *sysname;
	bool (*match)(struct dm_device *, void *);
	void *data;
};

static bool listed_match(uintptr_t item, void *data)
{
	const struct listed_match *l = data;
	struct dm_device *dev = (struct dm_device *)item;
	return strcmp(dm_device_get_sysname(dev), l->sysname) == 0 && !dm_device_is_dead(dev) &&
	       l->match(dev, l->data);
}

struct dm_device *dm_model_find_listed_locked(struct dm_model *m, const char *sysname,
					      bool (*match)(struct dm_device *, void *), void *data)
{
	dm_model_assert_held(m);
	struct listed_match l = { .sysname = sysname, .match = match, .data = data };
	return (struct dm_device *)dm_idset_find(&m->by_sysname, dm_hash_string(sysname),
						 listed_match, &l);
}

struct dm_bus *dm_device_get_bus_locked(const struct dm_device *dev)
{
	dm_model_assert_held(dev->model);
	return dev->bus;
}

struct dm_class *dm_device_get_class_locked(const struct dm_device *dev)
{
	dm_model_assert_held(dev->model);
	return dev->class;
}

struct dm_interface *dm_device_get_interface_locked(const struct dm_device *dev)
{
	dm_model_assert_held(dev->model);
	return dev->iface;
}

struct dm_driver *dm_device_get_driver_locked(const struct dm_device *dev)
{
	dm_model_assert_held(dev->model);
	return dev->driver;
}

int dm_device_path_locked(const struct dm_device *dev, char *buf, size_t size)
{
	dm_model_assert_held(dev->model);
	/* Fill from the end, then move to the front. */
	if (size == 0)
		return -ENAMETOOLONG;
	size_t pos = size - 1;
	buf[pos] = '\0';
	for (const struct dm_device *d = dev; d->parent; d = d->parent) {
		size_t l = strlen(d->name) + (d == dev ? 0 : 1);
		if (l > pos)
			return -ENAMETOOLONG;
		pos -= l;
		memcpy(buf + pos, d->name, strlen(d->name));
		if (d != dev)
			buf[pos + l - 1] = '/';
	}
	size_t len = size - 1 - pos;
	memmove(buf, buf + pos, len + 1);
	return (int)len;
}

struct dm_device *dm_device_subtree_last_locked(struct dm_device *dev)
{
	dm_model_assert_held(dev->model);
	while (!dm_list_empty(&dev->children))
		dev = dm_list_entry(dev->children.prev, struct dm_device, sibling);
	return dev;
}

/* Link @dev among its siblings in natural name order and into the global
 * list right after the subtree of its predecessor (or after its parent), so
 * the list stays a depth-first pre-order walk for any insertion order. */
static void tree_link_locked(struct dm_device *dev, struct dm_device *parent)
{
	dm_model_assert_write_held(dev->model);
	struct dm_model *m = dev->model;
	m->order_valid = false;
	if (!parent) {
		dm_list_append(&m->devices, &dev->global);
		return;
	}
	struct dm_list *pos = parent->children.prev;
	/* Enumerators mostly add in order: check the tail first. */
	if (pos != &parent->children &&
	    strverscmp(dm_list_entry(pos, struct dm_device, sibling)->name, dev->name) > 0) {
		dm_list_for_each(pos, &parent->children)
			if (strverscmp(dm_list_entry(pos, struct dm_device, sibling)->name,
				       dev->name) > 0)
				break;
		pos = pos->prev;
	}
	struct dm_device *before = pos == &parent->children
					   ? parent
					   : dm_device_subtree_last_locked(dm_list_entry(pos, struct dm_device, sibling));
	dm_list_insert_after(pos, &dev->sibling);
	dm_list_insert_after(&before->global, &dev->global);
	atomic_fetch_add(&parent->names_gen, 1); /* a name of its directory taken */
}

int dm_device_add(struct dm_device *dev, struct dm_device *parent)
{
	struct dm_model *m = dev->model;
	int r;

	dm_model_write_lock(m);
	if (atomic_load(&dev->state) != DM_DEV_INIT) {
		r = -EBUSY;
		goto out_unlock;
	}
	if (!parent)
		parent = m->root; /* NULL while the model creates root itself */
	if (parent && (parent->model != m || atomic_load(&parent->state) != DM_DEV_ADDED)) {
		r = -ENODEV;
		goto out_unlock;
	}
	if ((parent && dm_device_find_child_locked(parent, dev->name)) ||
	    (dev->devpath && dm_model_find_devpath_locked(m, dev->devpath))) {
		r = -EEXIST;
		goto out_unlock;
	}
	dev->id = m->next_id++;
	dev->parent = parent; /* by_child's hash reads it */
	if (parent) {
		r = dm_idset_add(&m->by_child, (uintptr_t)dev);
		if (r < 0)
			goto out_parent;
	}
	if (dev->devpath) {
		r = dm_idset_add(&m->by_devpath, (uintptr_t)dev);
		if (r < 0)
			goto out_child;
	}
	r = dm_idset_add(&m->by_id, (uintptr_t)dev);
	if (r < 0)
		goto out_devpath;
	r = dm_idset_add(&m->by_sysname, (uintptr_t)dev);
	if (r < 0)
		goto out_id;

	dm_device_values_pack(dev);
	dm_device_ref(parent);
	tree_link_locked(dev, parent);
	if (dev->bus)
		dm_list_append(&dev->bus->devices, &dev->bus_node);
	if (dev->class)
		dm_list_append(&dev->class->devices, &dev->class_node);
	if (dev->iface)
		dm_list_append(&dev->iface->devices, &dev->iface_node);
	m->n_devices++;
	dev->add_seq = ++m->add_seq;
	dm_device_ref(dev); /* the model's reference */
	atomic_store(&dev->state, DM_DEV_ADDED);
	if (m->listener && m->listener->device_added)
		m->listener->device_added(dev, m->listener_data);
	dm_model_unlock(m);

	/* offered to its bus's drivers, a class device to its class's */
	if (dev->bus || dev->class)
		dm_device_attach(dev);
	return 0;

out_id:
	dm_idset_remove(&m->by_id, (uintptr_t)dev);
out_devpath:
	if (dev->devpath)
		dm_idset_remove(&m->by_devpath, (uintptr_t)dev);
out_child:
	if (parent)
		dm_idset_remove(&m->by_child, (uintptr_t)dev);
out_parent:
	dev->parent = NULL;
out_unlock:
	dm_model_unlock(m);
	return r;
}

static void mark_dead_locked(struct dm_device *dev)
{
	dm_model_assert_write_held(dev->model);
	atomic_store(&dev->state, DM_DEV_DEAD);
	struct dm_list *n;
	dm_list_for_each(n, &dev->children)
		mark_dead_locked(dm_list_entry(n, struct dm_device, sibling));
}

static void device_del_one(struct dm_device *dev)
{
	struct dm_model *m = dev->model;

	/* children first, last child first */
	for (;;) {
		dm_model_write_lock(m);
		struct dm_device *child = dm_list_empty(&dev->children)
						  ? NULL
						  : dm_device_ref(dm_list_entry(dev->children.prev,
										struct dm_device, sibling));
		dm_model_unlock(m);
		if (!child)
			break;
		device_del_one(child);
		dm_device_unref(child);
	}

	dm_device_release_driver(dev);

	dm_model_write_lock(m);
	if (m->listener && m->listener->device_removed)
		m->listener->device_removed(dev, m->listener_data);
	dm_device_drop_links_locked(dev);
	dm_idset_remove(&m->by_id, (uintptr_t)dev);
	dm_idset_remove(&m->by_sysname, (uintptr_t)dev);
	if (dev->devpath)
		dm_idset_remove(&m->by_devpath, (uintptr_t)dev);
	if (dev->parent)
		dm_idset_remove(&m->by_child, (uintptr_t)dev);
	dm_list_remove(&dev->sibling);
	if (dev->parent)
		atomic_fetch_add(&dev->parent->names_gen, 1); /* a name given back */
	dm_list_remove(&dev->global);
	m->order_valid = false;
	dm_list_remove(&dev->bus_node);
	dm_list_remove(&dev->class_node);
	dm_list_remove(&dev->iface_node);
	m->n_devices--;
	struct dm_device *parent = dev->parent;
	dev->parent = NULL;
	/* the model's reference: a PM order may still point to it, if
	 * it was there when the last one was taken */
	bool defer = atomic_load(&m->pins) > 0 && dev->add_seq <= atomic_load(&m->pin_seq);
	if (defer)
		dm_list_append(&m->deferred, &dev->global);
	dm_model_unlock(m);

	dm_device_unref(parent);
	if (!defer)
		dm_device_unref(dev);
}

void dm_device_del(struct dm_device *dev)
{
	if (!dev)
		return;
	struct dm_model *m = dev->model;
	dm_model_write_lock(m);
	/* Not added, or already dead: a removal of it or of an ancestor, which
	 * marked the whole subtree dead, is under way and will unlink it. */
	if (atomic_load(&dev->state) != DM_DEV_ADDED) {
		dm_model_unlock(m);
		return;
	}
	mark_dead_locked(dev);
	dm_model_unlock(m);
	dm_device_ref(dev);
	device_del_one(dev);
	dm_device_unref(dev);
}

unsigned dm_device_get_changes(const struct dm_device *dev)
{
	return atomic_load(&dev->changes);
}

_Static_assert(offsetof(struct dm_device, model) + sizeof(struct dm_model *) <= DM_CACHE_LINE,
	       "what a PM walk touches is on the device's first cache line");

int dm_device_for_each_child_locked(struct dm_device *dev, dm_device_fn fn, void *data)
{
	dm_model_assert_held(dev->model);
	return dm_walk_devices(&dev->children, offsetof(struct dm_device, sibling), fn, data);
}
