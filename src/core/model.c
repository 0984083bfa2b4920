/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* model.c - the model object: its lock and the lock checks, lookups, the
 * named objects' get-or-create, names, the change notifications. */
#include "array.h"
#include "model-private.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dm_model_new(struct dm_model **ret)
{
	struct dm_model *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	/* glibc's default lets readers in while a writer waits: a stream of
	 * readers (any user's walks) would hold off hotplug and PM for ever */
	pthread_rwlockattr_t attr;
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&m->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&m->order_lock, NULL);
	pthread_mutex_init(&m->log_lock, NULL);
	pthread_mutex_init(&m->metrics_lock, NULL);
	dm_list_init(&m->devices);
	dm_list_init(&m->deferred);
	dm_list_init(&m->buses);
	dm_list_init(&m->classes);
	dm_list_init(&m->links);
	dm_idset_init(&m->by_id, dm_device_hash_id, NULL);
	dm_idset_init(&m->by_devpath, dm_device_hash_devpath, NULL);
	dm_idset_init(&m->by_child, dm_device_hash_child, NULL);
	dm_idset_init(&m->by_sysname, dm_device_hash_sysname, NULL);
	dm_strpool_init(&m->names);
	m->next_id = 1;

	struct dm_device *root;
	int r = dm_device_new(m, "root", &root);
	if (r < 0)
		goto out_free;
	r = dm_device_add(root, NULL);
	if (r < 0) {
		dm_device_unref(root);
		goto out_free;
	}
	m->root = root; /* the model's reference from add keeps it */
	dm_device_unref(root);
	*ret = m;
	return 0;

out_free:
	dm_idset_done(&m->by_id);
	dm_idset_done(&m->by_devpath);
	dm_idset_done(&m->by_child);
	dm_idset_done(&m->by_sysname);
	dm_strpool_done(&m->names);
	pthread_rwlock_destroy(&m->lock);
	pthread_mutex_destroy(&m->order_lock);
	pthread_mutex_destroy(&m->log_lock);
	pthread_mutex_destroy(&m->metrics_lock);
	free(m->order);
	free(m->order_parent);
	free(m->order_driver);
	free(m->link_edges);
	free(m);
	return r;
}

/* Unregisters every driver of a bus's or a class's @drivers. */
static void unregister_all(struct dm_list *drivers)
{
	while (!dm_list_empty(drivers))
		dm_driver_unregister(dm_list_entry(drivers->next, struct dm_driver, node));
}

void dm_model_free(struct dm_model *m)
{
	if (!m)
		return;
	/* Unregister drivers first so remove() runs while the devices exist. */
	struct dm_list *bn;
	dm_list_for_each(bn, &m->buses)
		unregister_all(&dm_list_entry(bn, struct dm_bus, node)->drivers);
	dm_list_for_each(bn, &m->classes)
		unregister_all(&dm_list_entry(bn, struct dm_class, node)->drivers);
	dm_device_del(m->root);

	struct dm_list *n, *tmp;
	dm_list_for_each_safe(n, tmp, &m->buses) {
		struct dm_bus *bus = dm_list_entry(n, struct dm_bus, node);
		free(bus->name);
		free(bus);
	}
	dm_list_for_each_safe(n, tmp, &m->classes) {
		struct dm_class *c = dm_list_entry(n, struct dm_class, node);
		struct dm_list *in, *itmp;
		dm_list_for_each_safe(in, itmp, &c->interfaces) {
			struct dm_interface *i = dm_list_entry(in, struct dm_interface, node);
			free(i->name);
			free(i);
		}
		free(c->name);
		free(c->bus_drivers);
		pthread_mutex_destroy(&c->bus_drivers_lock);
		free(c);
	}
	dm_idset_done(&m->by_id);
	dm_idset_done(&m->by_devpath);
	dm_idset_done(&m->by_child);
	dm_idset_done(&m->by_sysname);
	dm_strpool_done(&m->names);
	pthread_rwlock_destroy(&m->lock);
	pthread_mutex_destroy(&m->order_lock);
	dm_blob_unref(m->log_copy);
	pthread_mutex_destroy(&m->log_lock);
	pthread_mutex_destroy(&m->metrics_lock);
	free(m->order);
	free(m->order_parent);
	free(m->order_driver);
	free(m->link_edges);
	free(m);
}

void dm_model_set_listener(struct dm_model *m, const struct dm_model_listener *l, void *data)
{
	dm_model_write_lock(m);
	m->listener = l;
	m->listener_data = data;
	dm_model_unlock(m);
}

void dm_model_set_bind_request(struct dm_model *m, dm_bind_request_fn fn, void *data)
{
	dm_model_write_lock(m);
	m->bind_request = fn;
	m->bind_request_data = data;
	dm_model_unlock(m);
}

void dm_model_get_bind_request(struct dm_model *m, dm_bind_request_fn *ret_fn, void **ret_data)
{
	dm_model_read_lock(m);
	dm_model_get_bind_request_locked(m, ret_fn, ret_data);
	dm_model_unlock(m);
}

void dm_model_get_bind_request_locked(struct dm_model *m, dm_bind_request_fn *ret_fn,
				      void **ret_data)
{
	dm_model_assert_held(m);
	*ret_fn = m->bind_request;
	*ret_data = m->bind_request_data;
}

int dm_blob_new(char *data, size_t len, struct dm_blob **ret)
{
	struct dm_blob *b = malloc(sizeof(*b));
	if (!b) {
		free(data);
		return -ENOMEM;
	}
	atomic_init(&b->refs, 1);
	b->len = len;
	b->data = data;
	*ret = b;
	return 0;
}

struct dm_blob *dm_blob_ref(struct dm_blob *b)
{
	if (b)
		atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
	return b;
}

void dm_blob_unref(struct dm_blob *b)
{
	if (!b || atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1)
		return;
	free(b->data);
	free(b);
}

struct dm_device *dm_model_get_root(struct dm_model *m)
{
	return m->root;
}

#ifdef DM_LOCK_CHECKS
_Noreturn void dm_lock_rule_broken(const char *rule)
{
	fprintf(stderr, "driverfsd: a lock rule is broken: %s\n", rule);
	abort();
}

/* This thread's holds of models' locks: a few models at once at most (a
 * test's, the daemon's one), each shared (reads, recursive as the rwlock
 * allows) or exclusive (writes: one). */
struct model_hold {
	const struct dm_model *m;
	unsigned reads, writes;
};
static _Thread_local struct model_hold holds[4];

static struct model_hold *hold_of(const struct dm_model *m, bool add)
{
	struct model_hold *free_slot = NULL;
	for (size_t i = 0; i < sizeof(holds) / sizeof(holds[0]); i++) {
		if (holds[i].m == m)
			return &holds[i];
		if (!holds[i].m && !free_slot)
			free_slot = &holds[i];
	}
	if (!add)
		return NULL;
	if (!free_slot)
		dm_lock_rule_broken("a thread holds more models' locks than counted");
	free_slot->m = m;
	return free_slot;
}

static void hold_count(const struct dm_model *m, bool write)
{
	struct model_hold *h = hold_of(m, true);
	if (h->writes)
		dm_lock_rule_broken("the model's lock taken again by the thread that holds it exclusively");
	if (write && h->reads)
		dm_lock_rule_broken("the model's write lock taken by a thread holding it shared");
	if (write)
		h->writes++;
	else
		h->reads++;
}

static void hold_drop(const struct dm_model *m)
{
	struct model_hold *h = hold_of(m, false);
	if (!h)
		dm_lock_rule_broken("the model's lock released by a thread that does not hold it");
	if (h->writes)
		h->writes--;
	else
		h->reads--;
	if (!h->reads && !h->writes)
		h->m = NULL;
}

void dm_model_assert_held(const struct dm_model *m)
{
	if (!hold_of(m, false))
		dm_lock_rule_broken("a *_locked function called without the model's lock");
}

void dm_model_assert_write_held(const struct dm_model *m)
{
	const struct model_hold *h = hold_of(m, false);
	if (!h || !h->writes)
		dm_lock_rule_broken("called without the model's write lock");
}

void dm_model_assert_not_held(const struct dm_model *m)
{
	if (hold_of(m, false))
		dm_lock_rule_broken("called with the model's lock held (a hook, a program, a device mutex must come first)");
}
#else
static inline void hold_count(const struct dm_model *m, bool write) { (void)m; (void)write; }
static inline void hold_drop(const struct dm_model *m) { (void)m; }
#endif

void dm_model_read_lock(struct dm_model *m)
{
	hold_count(m, false);
	pthread_rwlock_rdlock(&m->lock);
}

void dm_model_write_lock(struct dm_model *m)
{
	hold_count(m, true);
	pthread_rwlock_wrlock(&m->lock);
	atomic_fetch_add_explicit(&m->gen, 1, memory_order_relaxed);
}

void dm_model_unlock(struct dm_model *m)
{
	hold_drop(m);
	pthread_rwlock_unlock(&m->lock);
}

void dm_model_notify_changed_locked(struct dm_model *m, struct dm_device *dev)
{
	dm_model_assert_write_held(m);
	atomic_fetch_add(&dev->changes, 1);
	atomic_fetch_add(&dev->names_gen, 1); /* its attributes may have come or gone */
	if (m->listener && m->listener->device_changed)
		m->listener->device_changed(dev, m->listener_data);
}

void dm_device_announce_change(struct dm_device *dev)
{
	struct dm_model *m = dm_device_get_model(dev);
	dm_model_write_lock(m);
	if (!dm_device_is_dead(dev))
		dm_model_notify_changed_locked(m, dev);
	dm_model_unlock(m);
}

void dm_model_notify_driver_locked(struct dm_model *m, struct dm_driver *drv)
{
	dm_model_assert_write_held(m);
	if (m->listener && m->listener->driver_changed)
		m->listener->driver_changed(drv, m->listener_data);
}

struct dm_device *dm_model_find_devpath(struct dm_model *m, const char *devpath)
{
	dm_model_read_lock(m);
	struct dm_device *dev = dm_model_find_devpath_locked(m, devpath);
	if (dev && dm_device_is_dead(dev))
		dev = NULL;
	dm_device_ref(dev);
	dm_model_unlock(m);
	return dev;
}

struct dm_device *dm_model_find_id(struct dm_model *m, uint64_t id)
{
	dm_model_read_lock(m);
	struct dm_device *dev = dm_model_find_id_locked(m, id);
	if (dev && dm_device_is_dead(dev))
		dev = NULL;
	dm_device_ref(dev);
	dm_model_unlock(m);
	return dev;
}

size_t dm_model_count_devices(struct dm_model *m)
{
	dm_model_read_lock(m);
	size_t n = m->n_devices;
	dm_model_unlock(m);
	return n;
}

int dm_model_reserve_devices(struct dm_model *m, size_t n)
{
	dm_model_write_lock(m);
	int r = dm_idset_reserve(&m->by_id, n);
	if (r == 0)
		r = dm_idset_reserve(&m->by_devpath, n);
	if (r == 0)
		r = dm_idset_reserve(&m->by_child, n);
	if (r == 0)
		r = dm_idset_reserve(&m->by_sysname, n);
	dm_model_unlock(m);
	return r;
}

/* ---- names ---- */

bool dm_name_is_valid(const char *name)
{
	return name && *name && !strchr(name, '/') && strcmp(name, ".") != 0 &&
	       strcmp(name, "..") != 0 && strlen(name) <= DM_NAME_MAX;
}

bool dm_name_is_printable(const char *name)
{
	if (!dm_name_is_valid(name))
		return false;
	for (const char *c = name; *c; c++)
		if (iscntrl((unsigned char)*c))
			return false;
	return true;
}

bool dm_name_is_plain(const char *name, size_t len)
{
	/* "." and ".." are made of those characters, and name no driver:
	 * bus/<bus>/drivers/. is the drivers directory, .. the bus's */
	if (len == 0 || (len <= 2 && strncmp(name, "..", len) == 0))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		/* (strchr() finds the NUL too) */
		if (!isalnum((unsigned char)c) && (c == '\0' || !strchr("_-.:+", c)))
			return false;
	}
	return true;
}

/* ---- the named objects: buses, classes and interfaces ---- */

static char **named_name(const struct dm_named_kind *k, void *obj)
{
	return (char **)((char *)obj + k->name);
}

static struct dm_list *named_node(const struct dm_named_kind *k, void *obj)
{
	return (struct dm_list *)((char *)obj + k->node);
}

int dm_model_get_named(struct dm_model *m, struct dm_list *head, const struct dm_named_kind *k,
		       const char *name, void (*setup)(void *obj, bool made, void *data),
		     void *data, void **ret)
{
	struct dm_list *n;
	void *obj = NULL;
	dm_model_write_lock(m);
	dm_list_for_each(n, head) {
		void *o = (char *)n - k->node;
		int cmp = strcmp(*named_name(k, o), name);
		if (cmp == 0)
			obj = o;
		if (cmp >= 0)
			break;
	}
	bool made = !obj;
	if (made) {
		obj = calloc(1, k->size);
		if (!obj || !(*named_name(k, obj) = strdup(name))) {
			free(obj);
			dm_model_unlock(m);
			return -ENOMEM;
		}
		/* @n is the first one named after @name, or @head */
		dm_list_insert_before(n, named_node(k, obj));
	}
	setup(obj, made, data);
	dm_model_unlock(m);
	*ret = obj;
	return 0;
}

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

uint64_t dm_model_generation(struct dm_model *m)
{
	return atomic_load_explicit(&m->gen, memory_order_relaxed);
}
