/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* model-private.h - struct layouts of the model; only src/core includes it. */
#ifndef DM_MODEL_PRIVATE_H
#define DM_MODEL_PRIVATE_H

#include "hashmap.h"
#include "list.h"
#include "idset.h"
#include "metrics.h"
#include "model.h"
#include "strpool.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Devices start on a cache line (see struct dm_device). */
#define DM_CACHE_LINE 64
#define DM_ALIGN_UP(n, a) (((n) + (a)-1) / (a) * (a))

struct dm_model {
	pthread_rwlock_t lock;
	struct dm_list devices; /* global list, depth-first */
	struct dm_list buses;
	struct dm_list classes;
	struct dm_device *root;
	/* Devices indexed by what they hold, one word per entry: */
	struct dm_idset by_id;
	struct dm_idset by_devpath;
	struct dm_idset by_child; /* by (parent id, name) */
	struct dm_idset by_sysname; /* by the name listings give them */
	/* names repeated across devices: value names, kernel drivers */
	struct dm_strpool names;
	uint64_t next_id;
	size_t n_devices;
	/* The global list as an array, rebuilt on demand after it changed: a
	 * walk over an array can fetch ahead, one along the list cannot. */
	pthread_mutex_t order_lock; /* rebuilding it under the read lock */
	struct dm_device **order;
	int *order_parent; /* each device's parent's index in order, or -1 */
	struct dm_driver **order_driver; /* each device's driver, kept current */
	size_t n_order, cap_order;
	bool order_valid; /* cleared under the write lock */
	/* PM orders in use (taken under the read lock): while there are
	 * any, removed devices keep the model's reference, on @deferred
	 * (linked by their global node), so orders need no reference of
	 * their own on each device. */
	atomic_size_t pins;
	struct dm_list deferred;
	uint64_t add_seq; /* counts dm_device_add() */
	struct dm_list links; /* every device link (struct dm_link's m_node) */
	size_t n_links;
	/* The ordering links as pairs of indices into @order (supplier,
	 * consumer), rebuilt with it or after a link changed, under
	 * order_lock: a PM order takes its edges from this array, in
	 * sequence, not from the links' list. */
	struct dm_pm_edge *link_edges;
	size_t n_link_edges, cap_link_edges;
	bool link_edges_valid; /* cleared under the write lock */
	uint64_t link_edges_gen; /* counts the rebuilds of link_edges */
	uint32_t link_mark; /* the generation of dm_link_add()'s cycle search */
	_Atomic uint64_t pin_seq; /* add_seq when the last PM order was taken */
	const struct dm_model_listener *listener;
	void *listener_data;
	dm_bind_request_fn bind_request; /* dm_model_set_bind_request() */
	void *bind_request_data;
	const struct dm_pm_handler *pm_handler;
	void *pm_data;
	/* dm_model_show_log(): the journal's last copy, of log_version; the
	 * mutex also makes concurrent readers of a new version build it once */
	pthread_mutex_t log_lock;
	struct dm_blob *log_copy;
	uint64_t log_copy_version;
	_Atomic uint64_t log_builds;
	/* the metrics file's sources (metrics.h), under metrics_lock: a read
	 * holds it while it runs them, so clearing waits for the reads */
	pthread_mutex_t metrics_lock;
	struct {
		void (*fn)(struct dm_metrics *w, void *data);
		void *data;
	} metrics[DM_METRICS_MAX_SOURCES];
	size_t n_metrics;
	/* the length of the last text built (0: none yet), which a stat
	 * gives; the texts built, for the daemon's stats */
	_Atomic size_t metrics_len;
	_Atomic uint64_t metrics_builds;
	/* the model's generation: moves with every write lock taken, so
	 * that what is built from the model under its read lock can be kept
	 * for one generation (dm_model_generation_locked()) */
	_Atomic uint64_t gen;
	_Atomic uint64_t class_driver_builds;
};

/* A static value: its name is interned (model->names), its bytes, with a
 * NUL after them, are at @off in the device's value_data. */
struct dm_value {
	const char *name;
	uint32_t off, len;
};

enum dm_device_state {
	DM_DEV_INIT,
	DM_DEV_ADDED,
	DM_DEV_DEAD,
};

/* struct dm_device's flags. LINK_OBJECT: it stands for a device link
 * (link.c), walks skip it; written under the write lock, read without.
 * CLAIM_STALE: a user driver bound it under another kernel binding than the
 * kernel's now, so its claim no longer holds (driver.c's claim_holds(),
 * kept here so that a suspend need not read the names); written and read
 * under the device mutex. */
enum {
	DM_DEV_F_LINK_OBJECT = 1u << 0,
	DM_DEV_F_CLAIM_STALE = 1u << 1,
};

/* The device mutex (struct dm_device's mutex): taken before the model's
 * lock, never after (dm_device_lock() asserts that this thread holds no
 * model lock), and asserted by the *_mutex_held functions, in builds
 * with DM_LOCK_CHECKS as the model's lock is (model.h). */
void dm_device_lock(struct dm_device *dev);
void dm_device_unlock(struct dm_device *dev);
#ifdef DM_LOCK_CHECKS
void dm_device_assert_mutex_held(const struct dm_device *dev);
#else
static inline void dm_device_assert_mutex_held(const struct dm_device *dev) { (void)dev; }
#endif

/* *@field replaced by a copy of @s (NULL: none). 0 or -ENOMEM (unchanged). */
static inline int dm_set_string(char **field, const char *s)
{
	char *c = NULL;
	if (s && !(c = strdup(s)))
		return -ENOMEM;
	free(*field);
	*field = c;
	return 0;
}

/* With the device mutex held (driver.c): its driver's bind ended, remove()
 * called; a claim that no longer holds dropped and the device offered to
 * the drivers again. power.c's hook calls use them. */
void dm_device_release_mutex_held(struct dm_device *dev);
void dm_device_drop_claim_mutex_held(struct dm_device *dev);

struct dm_device {
	/* What a PM walk touches for every device fills the first cache line
	 * (devices are allocated on a line boundary): its states, the change
	 * count and model a power change announces itself with, the driver
	 * and the mutex a hook is called under. A walk reads nothing else of
	 * a device (its PM order comes from the model's arrays), and on 10^5
	 * devices its cost is mostly cache misses: one line each, no more. */
	_Atomic uint8_t state; /* enum dm_device_state */
	_Atomic uint8_t power; /* enum dm_power_state */
	atomic_bool has_power_error; /* power_error != NULL */
	_Atomic uint8_t flags; /* DM_DEV_F_*, each written by atomic or/and */
	atomic_uint changes; /* counts changes of its files (dm_device_get_changes()) */
	struct dm_driver *driver; /* holds a reference */
	pthread_mutex_t mutex; /* serialises driver hooks */
	struct dm_model *model;
	/* the second line */
	atomic_uint refcount;
	struct dm_device *parent;
	struct dm_list global;
	size_t order_index; /* in model->order, while it is valid */
	uint64_t add_seq; /* model->add_seq when added */

	const char *name; /* stored after the struct, in the same allocation */
	char *devpath;
	const char *kernel_driver; /* interned (model->names) */
	char *sysname; /* NULL: the same as name */
	uint64_t id;
	char *power_error;

	struct dm_list children; /* sorted by name */
	struct dm_list sibling;

	struct dm_bus *bus;
	struct dm_list bus_node;
	struct dm_class *class;
	struct dm_list class_node;
	struct dm_interface *iface;
	struct dm_list iface_node;
	struct dm_list driver_node;
	void *driver_data;
	/* kernel_driver when a user driver bound it: its claim holds while
	 * the kernel's binding stays this one (dm_device_recheck_claim()) */
	const char *claimed_under;
	/* in a binding transaction (dm_device_set_binding()): offered to no
	 * driver until it ends; under mutex */
	bool binding;
	/* device links (link.c): those it supplies, those it consumes */
	struct dm_list consumer_links; /* struct dm_link's s_node */
	struct dm_list supplier_links; /* struct dm_link's c_node */
	uint32_t link_mark; /* dm_link_add()'s cycle search, under the write lock */
	/* a link's own device (the kernel's devlink class device): the link
	 * it stands for, under the lock; the flag read without it */
	struct dm_link *object_of;
	/* Which of driverfsd's common names the kernel uses in its directory
	 * (attr.c, dm_device_kernel_has_locked()): names_gen moves, under the
	 * write lock, with every change of its files and of its children;
	 * own_names caches the answers for one names_gen, read and written
	 * under the read lock by any thread: (gen << 32) | (known << 16) |
	 * used, a bit per name of attr.c's own_names[]. */
	atomic_uint names_gen;
	_Atomic uint64_t own_names;

	/* Static values, packed: one array of entries sorted by name, one
	 * buffer of their bytes (two allocations whatever their number). */
	struct dm_value *values;
	char *value_data;
	uint32_t n_values, cap_values;
	uint32_t data_len, data_cap;
	const struct dm_attribute_group *groups[DM_DEVICE_MAX_GROUPS];
	size_t n_groups;

	void *bus_data;
	void (*free_bus_data)(void *);
	/* dm_device_identity(): its sysfs directory's inode number, once
	 * asked (identity_known set after the value) */
	_Atomic uint64_t identity;
	atomic_bool identity_known;
};

/* A device link: @consumer depends on @supplier beyond the tree (link.c).
 * It holds no reference: a device's removal drops its links first. */
struct dm_link {
	struct dm_device *supplier, *consumer;
	unsigned flags; /* DM_LINK_* */
	bool dormant; /* the kernel's status "dormant": orders nothing */
	struct dm_device *object; /* its devlink device, or NULL (no reference) */
	struct dm_list s_node; /* on supplier->consumer_links */
	struct dm_list c_node; /* on consumer->supplier_links */
	struct dm_list m_node; /* on model->links */
};

/* Drops every link of @dev (its removal); write lock held. */
void dm_device_drop_links_locked(struct dm_device *dev);

/* Sets DM_DEV_F_CLAIM_STALE as the claim of the driver bound to @dev now
 * stands (driver.c); after each change of its driver or kernel_driver,
 * under the device mutex. */
void dm_device_update_claim(struct dm_device *dev);

struct dm_bus {
	struct dm_model *model;
	char *name;
	const struct dm_bus_type *type;
	struct dm_list devices;
	struct dm_list drivers; /* by priority, highest first */
	struct dm_list node;
};

struct dm_match_rule {
	char *key;
	char *glob;
};

struct dm_driver {
	atomic_uint refcount;
	char *name;
	enum dm_driver_kind kind;
	int priority;
	const struct dm_driver_ops *ops;
	void *data;
	void (*free_data)(void *);
	struct dm_match_rule *rules;
	size_t n_rules;
	atomic_uint pm_usec; /* the PM engine's estimate of a hook's duration */
	atomic_uint pm_last_usec; /* the last hook's duration */
	/* set by registration, never cleared: a bus driver's bus, or a class
	 * driver's class (the other NULL) */
	struct dm_bus *bus;
	struct dm_class *class;
	/* >0 when it can drive a device; NULL: the bus type's, else the
	 * rules (dm_driver_default_match()) */
	int (*match)(struct dm_device *dev, struct dm_driver *drv);
	bool registered; /* on its bus's or class's drivers; written under the lock */
	struct dm_list devices;
	struct dm_list node;
};

struct dm_class {
	struct dm_model *model;
	char *name;
	struct dm_list devices;
	struct dm_list interfaces;
	struct dm_list drivers; /* class drivers, by priority as a bus's */
	struct dm_list node;
	/* dm_class_for_each_bus_driver_locked(): the drivers of its devices'
	 * bus parents as of model->gen bus_drivers_gen (0: none), built
	 * under the read lock by the first reader of a generation, under
	 * bus_drivers_lock; read after it, as no other reader of that
	 * generation writes it */
	pthread_mutex_t bus_drivers_lock;
	struct dm_driver **bus_drivers;
	size_t n_bus_drivers, cap_bus_drivers;
	uint64_t bus_drivers_gen;
};

/* Returns from the function: the first non-zero of @fn on each entry of
 * the list @head of @type (linked by @member), or 0. */
#define DM_WALK_LIST(head, type, member, fn, data)                                     \
	do {                                                                   \
		struct dm_list *_p;                                            \
		dm_list_for_each(_p, (head)) {                                 \
			int _r = (fn)(dm_list_entry(_p, type, member), (data)); \
			if (_r)                                                \
				return _r;                                     \
		}                                                              \
		return 0;                                                      \
	} while (0)

/* Buses, classes and interfaces are each a named object on a list of its
 * kind, kept sorted by name so that listings are stable, and found or made
 * on first use by dm_model_get_named() (model.c). What it needs of a kind: */
struct dm_named_kind {
	size_t size;
	size_t node; /* offset of its struct dm_list on the list */
	size_t name; /* offset of its char *name */
};
#define DM_NAMED_KIND(type) { sizeof(type), offsetof(type, node), offsetof(type, name) }
/* The object named @name on @head, or one made there: zeroed, named and
 * inserted in name order. @setup then runs on it with @data, told whether
 * it was just made; all under @m's write lock. */
int dm_model_get_named(struct dm_model *m, struct dm_list *head, const struct dm_named_kind *k,
		       const char *name, void (*setup)(void *obj, bool made, void *data),
		       void *data, void **ret);

/* A registered driver's model (its bus's or class's); NULL before. */
static inline const struct dm_model *dm_driver_model(const struct dm_driver *drv)
{
	return drv->bus ? drv->bus->model : drv->class ? drv->class->model : NULL;
}

struct dm_interface {
	struct dm_class *class;
	char *name;
	struct dm_list devices;
	struct dm_list node;
};

/* core-internal helpers */
/* The last device of @dev's subtree in the global list (@dev when it has no
 * children). */
struct dm_device *dm_device_subtree_last_locked(struct dm_device *dev);
/* The global list as an array (model->order), valid until the write lock
 * is next taken; called with the read lock held. */
int dm_model_order_locked(struct dm_model *m);
/* Tells the array @dev's binding changed; write lock held. */
void dm_model_order_bound_locked(struct dm_device *dev);
/* One walker for every intrusive device list: @off is the offset of the
 * list node inside struct dm_device. Skips dead devices. */
int dm_walk_devices(struct dm_list *head, size_t off, dm_device_fn fn, void *data);
void dm_model_notify_changed_locked(struct dm_model *m, struct dm_device *dev);
void dm_model_notify_driver_locked(struct dm_model *m, struct dm_driver *drv);
const struct dm_attribute_group *dm_core_device_group(void);
/* The hashes of the model's device indexes (what each is keyed by) and
 * their lookups, dead devices included; lock held. */
uint64_t dm_device_hash_id(uintptr_t item, void *ctx);
uint64_t dm_device_hash_devpath(uintptr_t item, void *ctx);
uint64_t dm_device_hash_child(uintptr_t item, void *ctx); /* (parent id, name) */
uint64_t dm_device_hash_sysname(uintptr_t item, void *ctx); /* the kernel name */
struct dm_device *dm_model_find_id_locked(struct dm_model *m, uint64_t id);
struct dm_device *dm_model_find_devpath_locked(struct dm_model *m, const char *devpath);
void dm_device_values_free(struct dm_device *dev);
/* Gives back the room kept for more values; before the device is added. */
void dm_device_values_pack(struct dm_device *dev);

#endif
