/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* notify.c - the invalidation notifier: what a model change made stale in
 * the kernel's caches, queued by the model's listener and sent on a thread
 * of its own. */
#define FUSE_USE_VERSION 312
#include "notify.h"

#include "view.h"

#include "core/array.h"
#include "core/thread.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void inval_free(struct fs_inval *v)
{
	dm_device_unref(v->dev);
	free(v->entry);
	for (size_t i = 0; i < sizeof(v->listings) / sizeof(v->listings[0]); i++)
		free(v->listings[i]);
	for (size_t i = 0; i < v->n_stale; i++)
		free(v->stale[i].name);
	free(v->stale);
}

static void queue_inval(struct fs_notifier *nf, struct fs_inval v);

/* Queues @dev; called by the model with its write lock held. */
static void queue_inval_locked(struct fs_notifier *nf, struct dm_device *dev, bool added,
			       bool removed)
{
	struct fs_inval v = { .dev = dm_device_ref(dev), .added = added, .removed = removed };
	struct dm_bus *bus = dm_device_get_bus_locked(dev);
	struct dm_class *cls = dm_device_get_class_locked(dev);
	struct dm_interface *iface = dm_device_get_interface_locked(dev);
	struct dm_driver *drv = dm_device_get_driver_locked(dev);
	struct dm_device *parent = dm_device_get_parent_locked(dev);
	int n = 0;
	v.parent_id = parent ? dm_device_get_id(parent) : 0;
	/* the listings that hold (or held) the device */
	if (bus && asprintf(&v.listings[n], "bus/%s/devices", dm_bus_get_name(bus)) >= 0)
		n++;
	if (bus && asprintf(&v.listings[n], "bus/%s/drivers", dm_bus_get_name(bus)) >= 0)
		n++;
	char path[2 * DM_NAME_MAX + 16];
	if (drv && fs_view_driver_path(drv, path, sizeof(path)) >= 0 &&
	    (v.listings[n] = strdup(path)))
		n++;
	if (cls && asprintf(&v.listings[n], "class/%s/devices", dm_class_get_name(cls)) >= 0)
		n++;
	if (cls && iface && asprintf(&v.listings[n], "class/%s/%s", dm_class_get_name(cls),
				     dm_interface_get_name(iface)) >= 0)
		n++;
	queue_inval(nf, v);
}

static void queue_inval(struct fs_notifier *nf, struct fs_inval v)
{
	pthread_mutex_lock(&nf->lock);
	if (nf->n == nf->cap) {
		size_t cap = nf->cap ? nf->cap * 2 : 64;
		struct fs_inval *q = realloc(nf->queue, cap * sizeof(*q));
		if (!q) {
			/* nothing to do but let the timeouts expire it */
			pthread_mutex_unlock(&nf->lock);
			inval_free(&v);
			return;
		}
		nf->queue = q;
		nf->cap = cap;
	}
	nf->queue[nf->n++] = v;
	nf->queued++;
	pthread_cond_signal(&nf->cond);
	pthread_mutex_unlock(&nf->lock);
}

static void on_added(struct dm_device *dev, void *data)
{
	queue_inval_locked(data, dev, true, false);
}

static void on_removed(struct dm_device *dev, void *data)
{
	queue_inval_locked(data, dev, false, true);
}

static void on_changed(struct dm_device *dev, void *data)
{
	queue_inval_locked(data, dev, false, false);
}

/* A driver came or went: its name in bus/<bus>/drivers (whose listing
 * and entry the kernel may cache) changes. */
static void on_driver_changed(struct dm_driver *drv, void *data)
{
	struct fs_inval v = { 0 };
	char path[2 * DM_NAME_MAX + 16];
	if (fs_view_driver_listing(drv, path, sizeof(path)) < 0 || !(v.listings[0] = strdup(path)))
		return;
	v.entry = strdup(dm_driver_get_name(drv));
	if (!v.entry) {
		inval_free(&v);
		return;
	}
	queue_inval(data, v);
}

/* Called with or without the model lock: touches only the queue. */
static void on_power_changed(struct dm_device *dev, void *data)
{
	queue_inval(data, (struct fs_inval){ .dev = dm_device_ref(dev), .power = true });
}

static const struct dm_model_listener notifier_listener = {
	.device_added = on_added,
	.device_removed = on_removed,
	.device_changed = on_changed,
	.driver_changed = on_driver_changed,
	.power_changed = on_power_changed,
};

/* The inode the kernel knows for "a/b/c" under the mount root, or 0. */
static uint64_t peek_path(struct fs_notifier *nf, const char *path)
{
	char copy[512], *save = NULL;
	snprintf(copy, sizeof(copy), "%s", path);
	uint64_t ino = FUSE_ROOT_ID;
	for (char *part = strtok_r(copy, "/", &save); part && ino; part = strtok_r(NULL, "/", &save))
		ino = fs_table_peek(nf->table, ino, part);
	return ino;
}

struct class_peek {
	struct fs_table *table;
	uint64_t top; /* class/ */
	uint64_t *v;
	size_t n, cap;
};

static int peek_class_drivers(struct dm_class *c, void *data)
{
	struct class_peek *cp = data;
	uint64_t ino = fs_table_peek(cp->table, cp->top, dm_class_get_name(c));
	if (ino)
		ino = fs_table_peek(cp->table, ino, "drivers");
	if (!ino)
		return 0; /* never looked up: nothing cached */
	if (!dm_array_grow((void **)&cp->v, &cp->cap, cp->n, sizeof(*cp->v), 16))
		return -ENOMEM;
	cp->v[cp->n++] = ino;
	return 0;
}

/* The listings of class/<class>/drivers/ the kernel knows: a binding of
 * any device may add or take a driver from one (their names are never
 * cached: fs_entry_timeout()). Once per batch of device changes. */
static void inval_class_drivers(struct fs_notifier *nf)
{
	struct class_peek cp = { .table = nf->table, .top = peek_path(nf, "class") };
	if (!cp.top)
		return;
	dm_model_read_lock(nf->model);
	dm_model_for_each_class_locked(nf->model, peek_class_drivers, &cp);
	dm_model_unlock(nf->model);
	for (size_t i = 0; i < cp.n; i++)
		fuse_lowlevel_notify_inval_inode(nf->se, cp.v[i], 0, 0);
	free(cp.v);
}

/* Invalidates the directory listings of every node of @dev (its files'
 * nodes are left alone: a file's pages are never waited for, see
 * send_stale()). */
static void inval_listings_of(struct fs_notifier *nf, struct dm_device *dev)
{
	struct fs_place *places;
	size_t n;
	if (fs_table_device_places(nf->table, dev, &places, &n) < 0)
		return; /* nothing to do but let the timeouts expire them */
	for (size_t i = 0; i < n; i++)
		if (places[i].dir)
			fuse_lowlevel_notify_inval_inode(nf->se, places[i].ino, 0, 0);
	free(places);
}

/* The names driverfsd's own entry @name of @dev may have been served
 * under, in each of @dev's directories the kernel knows: a child device
 * of that name came or went, so the entry moved between them. */
static void inval_own_names(struct fs_notifier *nf, struct dm_device *dev, const char *name)
{
	struct fs_place *places;
	size_t n;
	char served[DM_NAME_MAX + 1];
	if (fs_table_device_places(nf->table, dev, &places, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		for (int k = 0; places[i].dir && k <= DM_OWN_PREFIX_MAX &&
				dm_own_name_prefixed(name, k, served, sizeof(served));
		     k++)
			fuse_lowlevel_notify_inval_entry(nf->se, places[i].ino, served,
							 strlen(served));
	free(places);
}

/* A takeover's nodes: those made again lose their attributes (a file's
 * pages go at its next access: its mtime, which moves with the daemon's
 * start, differs) and a directory its listing, as send_inval() does it:
 * never waiting for a page lock, which a reader whose read the new daemon
 * has yet to answer may hold; those gone lose their names too, so that a
 * path through them is looked up, and fails, as after a removal. Some 2 s
 * for 10^6 nodes: a daemon that stops meanwhile leaves the rest (the
 * next daemon to serve the connection invalidates every node it takes
 * over; a mount that goes needs none), or its exit, which the next daemon
 * and the readers wait for, would wait for them. */
static void send_stale(struct fs_notifier *nf, const struct fs_stale *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i % 1024 == 0 && atomic_load_explicit(&nf->stopping, memory_order_relaxed))
			return;
		if (v[i].name)
			fuse_lowlevel_notify_inval_entry(nf->se, v[i].parent, v[i].name,
							 strlen(v[i].name));
		fuse_lowlevel_notify_inval_inode(nf->se, v[i].ino, v[i].dir ? 0 : -1, 0);
	}
}

static void send_inval(struct fs_notifier *nf, const struct fs_inval *v)
{
	struct fs_place *places;
	size_t n;
	if (v->stale) {
		send_stale(nf, v->stale, v->n_stale);
		return;
	}
	/* everything the kernel knows of the device: its directory, files,
	 * links to it; their names and their contents */
	if (v->entry) {
		uint64_t dir = peek_path(nf, v->listings[0]);
		if (dir) {
			fuse_lowlevel_notify_inval_entry(nf->se, dir, v->entry, strlen(v->entry));
			fuse_lowlevel_notify_inval_inode(nf->se, dir, 0, 0);
		}
		return;
	}
	/* every node of it, however many: a device listed in many places,
	 * or with many files, has no node left stale past a fixed count */
	if (fs_table_device_places(nf->table, v->dev, &places, &n) < 0)
		return; /* nothing to do but let the timeouts expire them */
	if (v->power) {
		/* the attributes of its power files: their mtime moved */
		for (size_t i = 0; i < n; i++)
			if (!places[i].dir &&
			    (strcmp(dm_own_name_base(places[i].name), "power") == 0 ||
			     strcmp(dm_own_name_base(places[i].name), "power_error") == 0))
				fuse_lowlevel_notify_inval_inode(nf->se, places[i].ino, -1, 0);
		free(places);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (places[i].parent && places[i].name[0])
			fuse_lowlevel_notify_inval_entry(nf->se, places[i].parent, places[i].name,
							 strlen(places[i].name));
		/* a directory's cached listing; a file's attributes, whose
		 * moved mtime drops its pages at the next access */
		fuse_lowlevel_notify_inval_inode(nf->se, places[i].ino, places[i].dir ? 0 : -1, 0);
		/* the directories listing it, whose listings are cached */
		if (places[i].parent)
			fuse_lowlevel_notify_inval_inode(nf->se, places[i].parent, 0, 0);
	}
	free(places);
	for (size_t i = 0; i < sizeof(v->listings) / sizeof(v->listings[0]) && v->listings[i]; i++) {
		uint64_t ino = peek_path(nf, v->listings[i]);
		if (ino)
			fuse_lowlevel_notify_inval_inode(nf->se, ino, 0, 0);
	}
	if (v->added || v->removed) {
		/* the parent's directory lists the newcomer (root is a device
		 * too), and its own entries change names where the device's
		 * takes or gives back one (docs/design.md §6.2) */
		struct dm_device *parent = dm_model_find_id(nf->model, v->parent_id);
		if (parent) {
			if (v->added)
				inval_listings_of(nf, parent);
			inval_own_names(nf, parent, dm_device_get_name(v->dev));
			dm_device_unref(parent);
		}
	}
}

/* ---- negative entries (notify.h) ---- */

struct fs_negative {
	uint64_t parent;
	char name[];
};

static uint64_t negative_hash(const void *key)
{
	const struct fs_negative *n = key;
	return dm_hash_string(n->name) ^ (n->parent * 0x9e3779b97f4a7c15ULL);
}

static int negative_cmp(const void *a, const void *b)
{
	const struct fs_negative *x = a, *y = b;
	return x->parent != y->parent ? 1 : strcmp(x->name, y->name);
}

bool fs_notifier_negative(struct fs_notifier *nf, uint64_t parent, const char *name)
{
	struct fs_negatives *ng = &nf->negatives;
	if (!nf->running)
		return false;
	pthread_rwlock_rdlock(&ng->gate);
	pthread_mutex_lock(&ng->lock);
	bool ok = true;
	size_t len = strlen(name);
	struct fs_negative *n = malloc(sizeof(*n) + len + 1);
	if (n) {
		n->parent = parent;
		memcpy(n->name, name, len + 1);
		if (dm_hashmap_get(&ng->map, n)) {
			free(n); /* given again: one invalidation serves both */
		} else if (dm_hashmap_size(&ng->map) >= FS_NEGATIVE_MAX ||
			   dm_hashmap_put(&ng->map, n, n) < 0) {
			free(n);
			ok = false;
		}
	} else {
		ok = false;
	}
	pthread_mutex_unlock(&ng->lock);
	if (!ok) {
		pthread_rwlock_unlock(&ng->gate);
		return false;
	}
	atomic_fetch_add_explicit(&ng->given, 1, memory_order_relaxed);
	return true;
}

void fs_notifier_negative_sent(struct fs_notifier *nf)
{
	pthread_rwlock_unlock(&nf->negatives.gate);
}

void fs_notifier_negative_counts(struct fs_notifier *nf, uint64_t *given, uint64_t *invalidated)
{
	*given = atomic_load_explicit(&nf->negatives.given, memory_order_relaxed);
	*invalidated = atomic_load_explicit(&nf->negatives.invalidated, memory_order_relaxed);
}

struct negative_list {
	struct fs_negative **v;
	size_t n;
};

static int collect_negative(void *value, void *data)
{
	struct negative_list *l = data;
	l->v[l->n++] = value;
	return 0;
}

/* Frees a value of the map (its key: the map looks at it no more). */
static int free_negative(void *value, void *data)
{
	(void)data;
	free(value);
	return 0;
}

/* After a batch of model changes: every negative entry given goes, since
 * any change may bring its name. Taken under the gate, so that each reply
 * recorded was sent; sent after it, since an invalidation waits for the
 * lookups in its directory, whose replies may wait for the gate. */
static void inval_negatives(struct fs_notifier *nf)
{
	struct fs_negatives *ng = &nf->negatives;
	struct negative_list l = { 0 };
	pthread_rwlock_wrlock(&ng->gate);
	size_t n = dm_hashmap_size(&ng->map);
	if (n && (l.v = malloc(n * sizeof(*l.v)))) {
		dm_hashmap_for_each(&ng->map, collect_negative, &l);
		dm_hashmap_done(&ng->map);
		dm_hashmap_init(&ng->map, negative_hash, negative_cmp);
	}
	pthread_rwlock_unlock(&ng->gate);
	if (n && !l.v) {
		/* no memory: each kept, to go with the next batch or expire */
		return;
	}
	for (size_t i = 0; i < l.n; i++) {
		fuse_lowlevel_notify_inval_entry(nf->se, l.v[i]->parent, l.v[i]->name,
						 strlen(l.v[i]->name));
		free(l.v[i]);
	}
	atomic_fetch_add_explicit(&ng->invalidated, l.n, memory_order_relaxed);
	free(l.v);
}

static void *notifier_thread(void *data)
{
	struct fs_notifier *nf = data;
	pthread_mutex_lock(&nf->lock);
	for (;;) {
		while (!nf->quit && nf->n == 0)
			pthread_cond_wait(&nf->cond, &nf->lock);
		if (nf->quit)
			break;
		struct fs_inval *batch = nf->queue;
		size_t n = nf->n;
		uint64_t upto = nf->queued;
		nf->queue = NULL;
		nf->n = nf->cap = 0;
		pthread_mutex_unlock(&nf->lock);
		bool devices = false; /* a device changed: bindings may have */
		bool names = false; /* a name may have come */
		for (size_t i = 0; i < n; i++) {
			devices |= batch[i].dev && !batch[i].power;
			names |= !batch[i].power;
			send_inval(nf, &batch[i]);
			inval_free(&batch[i]);
		}
		free(batch);
		if (names)
			inval_negatives(nf);
		if (devices)
			inval_class_drivers(nf);
		pthread_mutex_lock(&nf->lock);
		nf->sent = upto;
		pthread_cond_broadcast(&nf->cond);
	}
	pthread_mutex_unlock(&nf->lock);
	return NULL;
}

void fs_notifier_queue_stale(struct fs_notifier *nf, struct fs_stale *v, size_t n)
{
	if (n)
		queue_inval(nf, (struct fs_inval){ .stale = v, .n_stale = n });
	else
		free(v);
}

void fs_notifier_sync(struct fs_notifier *nf)
{
	pthread_mutex_lock(&nf->lock);
	uint64_t want = nf->queued;
	while (nf->running && nf->sent < want && !nf->quit)
		pthread_cond_wait(&nf->cond, &nf->lock);
	pthread_mutex_unlock(&nf->lock);
}

void fs_notifier_init(struct fs_notifier *nf, struct dm_model *m, struct fs_table *t)
{
	*nf = (struct fs_notifier){ .model = m, .table = t };
	pthread_mutex_init(&nf->lock, NULL);
	/* writers first: a stream of misses must not hold off the notifier */
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&nf->negatives.gate, &a);
	pthread_rwlockattr_destroy(&a);
	pthread_mutex_init(&nf->negatives.lock, NULL);
	dm_hashmap_init(&nf->negatives.map, negative_hash, negative_cmp);
	pthread_cond_init(&nf->cond, NULL);
}

int fs_notifier_start(struct fs_notifier *nf, struct fuse_session *se)
{
	nf->se = se;
	int r = dm_thread_start(&nf->thread, 0, notifier_thread, nf);
	if (r < 0)
		return r;
	nf->running = true;
	dm_model_set_listener(nf->model, &notifier_listener, nf);
	return 0;
}

void fs_notifier_stop(struct fs_notifier *nf)
{
	if (!nf->running)
		return;
	dm_model_set_listener(nf->model, NULL, NULL);
	atomic_store_explicit(&nf->stopping, true, memory_order_relaxed);
	pthread_mutex_lock(&nf->lock);
	nf->quit = true;
	pthread_cond_broadcast(&nf->cond);
	pthread_mutex_unlock(&nf->lock);
	pthread_join(nf->thread, NULL);
}

void fs_notifier_done(struct fs_notifier *nf)
{
	for (size_t i = 0; i < nf->n; i++)
		inval_free(&nf->queue[i]);
	free(nf->queue);
	dm_hashmap_for_each(&nf->negatives.map, free_negative, NULL);
	dm_hashmap_done(&nf->negatives.map);
	pthread_mutex_destroy(&nf->negatives.lock);
	pthread_rwlock_destroy(&nf->negatives.gate);
	pthread_cond_destroy(&nf->cond);
	pthread_mutex_destroy(&nf->lock);
}
