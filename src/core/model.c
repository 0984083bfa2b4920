/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* model.c - the model object: lock, lookups, buses and classes. */
#include "array.h"
#include "model-private.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const struct dm_bus_type generic_bus_type = {
	.name = NULL,
};

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

void dm_model_set_pm_handler(struct dm_model *m, const struct dm_pm_handler *h, void *data)
{
	dm_model_write_lock(m);
	m->pm_handler = h;
	m->pm_data = data;
	dm_model_unlock(m);
	/* another journal: its versions say nothing of the copy kept */
	pthread_mutex_lock(&m->log_lock);
	dm_blob_unref(m->log_copy);
	m->log_copy = NULL;
	pthread_mutex_unlock(&m->log_lock);
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

/* A fresh copy of the journal (or an empty one without a handler). */
static int log_build(const struct dm_pm_handler *h, void *data, struct dm_blob **ret)
{
	char *buf = NULL;
	size_t len = 0;
	int r = h && h->show_log ? h->show_log(&buf, &len, data) : 0;
	if (r < 0)
		return r;
	if (!buf && !(buf = strdup("")))
		return -ENOMEM;
	return dm_blob_new(buf, len, ret);
}

int dm_model_show_log(struct dm_model *m, struct dm_blob **ret)
{
	dm_model_read_lock(m);
	const struct dm_pm_handler *h = m->pm_handler;
	void *data = m->pm_data;
	dm_model_unlock(m);
	if (!h || !h->log_version) {
		atomic_fetch_add_explicit(&m->log_builds, 1, memory_order_relaxed);
		return log_build(h, data, ret);
	}
	/* The version is read before the text is built: a copy holds at
	 * least what its version says, and an entry added meanwhile moves
	 * the version again, so that the next read builds anew. Built under
	 * log_lock (taken before the handler's locks and the model's): a
	 * crowd of readers of a new version waits for one copy instead of
	 * each building its own. */
	uint64_t version = h->log_version(data);
	pthread_mutex_lock(&m->log_lock);
	if (!m->log_copy || m->log_copy_version != version) {
		struct dm_blob *b;
		int r = log_build(h, data, &b);
		if (r < 0) {
			pthread_mutex_unlock(&m->log_lock);
			return r;
		}
		atomic_fetch_add_explicit(&m->log_builds, 1, memory_order_relaxed);
		dm_blob_unref(m->log_copy);
		m->log_copy = b;
		m->log_copy_version = version;
	}
	*ret = dm_blob_ref(m->log_copy);
	pthread_mutex_unlock(&m->log_lock);
	return 0;
}

uint64_t dm_model_count_log_builds(struct dm_model *m)
{
	return atomic_load_explicit(&m->log_builds, memory_order_relaxed);
}

struct dm_device *dm_model_get_root(struct dm_model *m)
{
	return m->root;
}

#ifndef NDEBUG
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
	assert(free_slot && "a thread holds more models' locks than counted");
	free_slot->m = m;
	return free_slot;
}

static void hold_count(const struct dm_model *m, bool write)
{
	struct model_hold *h = hold_of(m, true);
	assert(!h->writes && "the model's lock taken again by the thread that holds it exclusively");
	assert(!(write && h->reads) && "the model's write lock taken by a thread holding it shared");
	if (write)
		h->writes++;
	else
		h->reads++;
}

static void hold_drop(const struct dm_model *m)
{
	struct model_hold *h = hold_of(m, false);
	assert(h && (h->reads || h->writes) && "the model's lock released by a thread that does not hold it");
	if (h->writes)
		h->writes--;
	else
		h->reads--;
	if (!h->reads && !h->writes)
		h->m = NULL;
}

void dm_model_assert_held(const struct dm_model *m)
{
	const struct model_hold *h = hold_of(m, false);
	assert(h && (h->reads || h->writes) && "a *_locked function called without the model's lock");
	(void)h;
}

void dm_model_assert_write_held(const struct dm_model *m)
{
	const struct model_hold *h = hold_of(m, false);
	assert(h && h->writes && "called without the model's write lock");
	(void)h;
}

void dm_model_assert_not_held(const struct dm_model *m)
{
	assert(!hold_of(m, false) && "called with the model's lock held (a hook, a program, a device mutex must come first)");
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

int dm_model_for_each_device_locked(struct dm_model *m, int (*fn)(struct dm_device *, void *),
				    void *data)
{
	dm_model_assert_held(m);
	return dm_walk_devices(&m->devices, offsetof(struct dm_device, global), fn, data);
}

int dm_model_ref_devices(struct dm_model *m, struct dm_device *top, struct dm_device ***ret,
		      size_t *ret_n)
{
	dm_model_read_lock(m);
	if (top && dm_device_is_dead(top)) {
		dm_model_unlock(m);
		return -ENODEV;
	}
	size_t cap = 64, n = 0;
	struct dm_device **v = malloc(cap * sizeof(*v));
	if (!v) {
		dm_model_unlock(m);
		return -ENOMEM;
	}
	/* A subtree is contiguous in the global list: it ends after the last
	 * device of its last child's subtree. */
	struct dm_list *start = top ? &top->global : m->devices.next;
	struct dm_list *end = top ? dm_device_subtree_last_locked(top)->global.next : &m->devices;
	for (struct dm_list *p = start; p != end; p = p->next) {
		struct dm_device *dev = dm_list_entry(p, struct dm_device, global);
		if (dm_device_is_dead(dev))
			continue;
		if (n == cap) {
			struct dm_device **nv = realloc(v, cap * 2 * sizeof(*v));
			if (!nv) {
				dm_model_unlock(m);
				dm_device_array_free(v, n);
				return -ENOMEM;
			}
			v = nv;
			cap *= 2;
		}
		v[n++] = dm_device_ref(dev);
	}
	dm_model_unlock(m);
	*ret = v;
	*ret_n = n;
	return 0;
}

static int order_rebuild(struct dm_model *m)
{
	if (m->cap_order < m->n_devices) {
		size_t cap = m->n_devices;
		struct dm_device **o = realloc(m->order, cap * sizeof(*o));
		if (o)
			m->order = o;
		int *op = o ? realloc(m->order_parent, cap * sizeof(*op)) : NULL;
		if (op)
			m->order_parent = op;
		struct dm_driver **od = op ? realloc(m->order_driver, cap * sizeof(*od)) : NULL;
		if (!od)
			return -ENOMEM;
		m->order_driver = od;
		m->cap_order = cap;
	}
	size_t n = 0;
	struct dm_list *p;
	dm_list_for_each(p, &m->devices) {
		if (n == m->cap_order)
			return -EIO; /* n_devices disagrees with the list */
		struct dm_device *dev = dm_list_entry(p, struct dm_device, global);
		dev->order_index = n;
		/* pre-order: the parent has its index already */
		m->order_parent[n] = dev->parent ? (int)dev->parent->order_index : -1;
		m->order_driver[n] = dev->driver;
		m->order[n++] = dev;
	}
	m->n_order = n;
	m->order_valid = true;
	return 0;
}

void dm_model_order_bound_locked(struct dm_device *dev)
{
	dm_model_assert_write_held(dev->model);
	struct dm_model *m = dev->model;
	if (m->order_valid)
		m->order_driver[dev->order_index] = dev->driver;
}

/* The ordering links as index pairs into the order (model->link_edges);
 * order_lock held, the order valid. */
static int link_edges_rebuild(struct dm_model *m)
{
	m->n_link_edges = 0;
	if (m->n_links > m->cap_link_edges) {
		struct dm_pm_edge *v = realloc(m->link_edges, m->n_links * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->link_edges = v;
		m->cap_link_edges = m->n_links;
	}
	struct dm_list *p;
	dm_list_for_each(p, &m->links) {
		struct dm_link *l = dm_list_entry(p, struct dm_link, m_node);
		/* a device being removed is not in the order */
		if (dm_link_orders(l) && !dm_device_is_dead(l->supplier) &&
		    !dm_device_is_dead(l->consumer))
			m->link_edges[m->n_link_edges++] = (struct dm_pm_edge){
				(int)l->supplier->order_index, (int)l->consumer->order_index
			};
	}
	m->link_edges_valid = true;
	m->link_edges_gen++;
	return 0;
}

int dm_model_order_locked(struct dm_model *m)
{
	dm_model_assert_held(m);
	pthread_mutex_lock(&m->order_lock);
	bool rebuilt = !m->order_valid;
	int r = rebuilt ? order_rebuild(m) : 0;
	if (r == 0 && (rebuilt || !m->link_edges_valid))
		r = link_edges_rebuild(m);
	pthread_mutex_unlock(&m->order_lock);
	return r;
}

/* The order's link edges: both ends in [start, start + n) of the global
 * array, or one outside; read lock held, the array and its edges valid. */
static int order_links_locked(struct dm_model *m, size_t start, size_t n, struct dm_pm_order *s)
{
	dm_model_assert_held(m);
	s->n_edges = s->n_outside = 0;
	s->edges_gen = 0;
	const struct dm_pm_edge *e = m->link_edges;
	size_t count = m->n_link_edges;
	if (start == 0 && n == m->n_order) {
		/* the whole tree: every edge, as is */
		if (count > s->cap_edges) {
			struct dm_pm_edge *v = realloc(s->edges, count * sizeof(*v));
			if (!v)
				return -ENOMEM;
			s->edges = v;
			s->cap_edges = count;
		}
		if (count)
			memcpy(s->edges, e, count * sizeof(*e));
		s->n_edges = count;
		s->edges_gen = m->link_edges_gen;
		return 0;
	}
	for (size_t k = 0; k < count; k++) {
		size_t si = (size_t)e[k].supplier, ci = (size_t)e[k].consumer;
		bool s_in = si >= start && si - start < n, c_in = ci >= start && ci - start < n;
		if (s_in && c_in) {
			if (!dm_array_grow((void **)&s->edges, &s->cap_edges, s->n_edges,
					   sizeof(*s->edges), 64))
				return -ENOMEM;
			s->edges[s->n_edges++] = (struct dm_pm_edge){ (int)(si - start), (int)(ci - start) };
		} else if (s_in || c_in) {
			if (!dm_array_grow((void **)&s->outside, &s->cap_outside, s->n_outside,
					   sizeof(*s->outside), 16))
				return -ENOMEM;
			s->outside[s->n_outside++] = (struct dm_pm_outside){
				.dev = m->order[s_in ? ci : si],
				.inside = (int)((s_in ? si : ci) - start),
				.is_consumer = s_in,
			};
		}
	}
	return 0;
}

int dm_model_take_pm_order(struct dm_model *m, struct dm_device *top, struct dm_pm_order *s)
{
	dm_pm_order_release(s);
	dm_model_read_lock(m);
	if (top && dm_device_is_dead(top)) {
		dm_model_unlock(m);
		return -ENODEV;
	}
	int r = dm_model_order_locked(m);
	if (r < 0) {
		dm_model_unlock(m);
		return r;
	}
	/* the subtree is contiguous in the global list (see dm_model_ref_devices);
	 * devices being removed are kept, the walk skips them */
	size_t start = top ? top->order_index : 0;
	size_t n = (top ? dm_device_subtree_last_locked(top)->order_index + 1 : m->n_order) - start;
	if (n > s->cap) {
		struct dm_pm_order_node *v = realloc(s->nodes, n * sizeof(*v));
		if (!v) {
			dm_model_unlock(m);
			return -ENOMEM;
		}
		s->nodes = v;
		s->cap = n;
	}
	/* from the arrays only: no device is touched; a run of nodes with
	 * the same driver holds one reference to it (see release) */
	for (size_t k = 0; k < n; k++) {
		int p = m->order_parent[start + k];
		struct dm_driver *drv = m->order_driver[start + k];
		if (k == 0 || drv != s->nodes[k - 1].driver)
			dm_driver_ref(drv);
		s->nodes[k] = (struct dm_pm_order_node){ m->order[start + k], drv,
							 k == 0 ? -1 : p - (int)start };
	}
	s->n = n;
	r = order_links_locked(m, start, n, s);
	if (r < 0) {
		for (size_t k = 0; k < n; k++)
			if (k == 0 || s->nodes[k].driver != s->nodes[k - 1].driver)
				dm_driver_unref(s->nodes[k].driver);
		s->n = 0;
		dm_model_unlock(m);
		return r;
	}
	s->pinned = m;
	atomic_fetch_add(&m->pins, 1);
	atomic_store(&m->pin_seq, m->add_seq);
	dm_model_unlock(m);
	return 0;
}

void dm_pm_order_release(struct dm_pm_order *s)
{
	struct dm_model *m = s->pinned;
	if (!m)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (i == 0 || s->nodes[i].driver != s->nodes[i - 1].driver)
			dm_driver_unref(s->nodes[i].driver);
	s->n = 0;
	s->pinned = NULL;
	/* the last order out releases what was removed meanwhile; under
	 * the write lock, so that no new order's device is among them */
	struct dm_list gone;
	dm_list_init(&gone);
	dm_model_write_lock(m);
	if (atomic_fetch_sub(&m->pins, 1) == 1 && !dm_list_empty(&m->deferred)) {
		gone = m->deferred;
		gone.next->prev = &gone;
		gone.prev->next = &gone;
		dm_list_init(&m->deferred);
	}
	dm_model_unlock(m);
	while (!dm_list_empty(&gone)) {
		struct dm_device *dev = dm_list_entry(gone.next, struct dm_device, global);
		dm_list_remove(&dev->global);
		dm_device_unref(dev);
	}
}

void dm_pm_order_done(struct dm_pm_order *s)
{
	dm_pm_order_release(s);
	free(s->nodes);
	free(s->edges);
	free(s->outside);
	*s = (struct dm_pm_order){ 0 };
}

void dm_device_array_free(struct dm_device **devs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dm_device_unref(devs[i]);
	free(devs);
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

/* ---- buses, classes and interfaces ---- */

/* Buses, classes and interfaces are each a named object on a list of its
 * kind, kept sorted by name so that listings are stable, and found or made
 * on first use by get_named(). What it needs of a kind: */
struct named_kind {
	size_t size;
	size_t node; /* offset of its struct dm_list on the list */
	size_t name; /* offset of its char *name */
};
#define NAMED_KIND(type) { sizeof(type), offsetof(type, node), offsetof(type, name) }

static const struct named_kind bus_kind = NAMED_KIND(struct dm_bus);
static const struct named_kind class_kind = NAMED_KIND(struct dm_class);
static const struct named_kind interface_kind = NAMED_KIND(struct dm_interface);

static char **named_name(const struct named_kind *k, void *obj)
{
	return (char **)((char *)obj + k->name);
}

static struct dm_list *named_node(const struct named_kind *k, void *obj)
{
	return (struct dm_list *)((char *)obj + k->node);
}

/* The object named @name on @head, or one made there: zeroed, named and
 * inserted in name order. @setup then runs on it with @data, told whether
 * it was just made; all under @m's write lock. */
static int get_named(struct dm_model *m, struct dm_list *head, const struct named_kind *k,
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
	int r = get_named(m, &m->buses, &bus_kind, name, bus_setup,
			  &(struct bus_setup){ m, type }, &bus);
	if (r == 0)
		*ret = bus;
	return r;
}

const char *dm_bus_get_name(const struct dm_bus *bus)
{
	return bus->name;
}

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
	int r = get_named(m, &m->classes, &class_kind, name, class_setup, m, &c);
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
	int r = get_named(c->model, &c->interfaces, &interface_kind, name, interface_setup, c,
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
