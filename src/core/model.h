/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * model.h - the device model, project-private API.
 *
 * Objects: a dm_model holds buses, classes (with interfaces), drivers and
 * devices. Devices form a tree under the root device and one global list in
 * depth-first order (a parent before its children, each subtree contiguous,
 * siblings in natural name order), which is the order resume walks; suspend
 * walks it backwards.
 *
 * Device lifetime (two phases, as in the kernel's driver core):
 *   dm_device_new()   refcount 1, not visible to anyone;
 *                     set name, devpath, values, bus, class now.
 *   dm_device_add()   publishes it (parent's children, bus list, class and
 *                     interface, global list, lookups) and offers it to the
 *                     drivers of its bus. The model takes its own reference;
 *                     the caller still owns the one it had.
 *   dm_device_del()   removes its subtree, children first: each device is
 *                     marked dead first (lookups and reads fail from then on),
 *                     its driver's remove() runs, then it is unlinked and the
 *                     model drops its reference.
 *   dm_device_unref() the last reference frees it.
 * Rule: never free a device yourself, and never touch it after your last
 * unref; after dm_device_add() the only way out is dm_device_del() + unref.
 *
 * Locking: one rwlock per model. Readers (the filesystem) take it shared;
 * changes (enumeration, hotplug, PM state) take it exclusive inside these
 * functions. A waiting writer goes before readers that come after it (any
 * user can keep readers coming; hotplug and PM must not wait on them), so
 * a thread never takes the read lock it already holds: a writer waiting
 * between the two would deadlock it. No driver hook, attribute show/store or listener that could
 * block is called with the lock held: listeners are called with the write
 * lock held and must only queue work. Functions named *_locked expect the
 * caller to hold the lock (shared is enough unless said otherwise).
 */
#ifndef DM_MODEL_H
#define DM_MODEL_H

#include <driverfs/driverfs.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* What a bus does its own way (the 2002 model's struct bus_type; a struct
 * dm_bus is the bus itself, named once in the model): match() only. A
 * device's files come from its own groups (dm_device_add_group()), which
 * its enumerator adds, so a bus has no dev_groups. */
struct dm_bus_type {
	/* >0 when @drv can drive @dev; NULL uses dm_driver_default_match(). */
	int (*match)(struct dm_device *dev, struct dm_driver *drv);
};

/* Changes announced to the filesystem; called with the write lock held. */
struct dm_model_listener {
	void (*device_added)(struct dm_device *dev, void *data);
	void (*device_removed)(struct dm_device *dev, void *data);
	void (*device_changed)(struct dm_device *dev, void *data);
	/* @drv was registered on its bus, or unregistered (may be NULL) */
	void (*driver_changed)(struct dm_driver *drv, void *data);
	/* @dev's power state or power error changed. Called with or without
	 * the lock (a PM walk holds none), on the thread that changed it. */
	void (*power_changed)(struct dm_device *dev, void *data);
};

/* The power-state transitions the `power` file asks for; set by the PM engine. */
enum dm_pm_request {
	DM_PM_SUSPEND,
	DM_PM_RESUME,
	/* record the order in power_log, call no hook, change nothing */
	DM_PM_SUSPEND_DRY_RUN,
	DM_PM_RESUME_DRY_RUN,
};
struct dm_pm_handler {
	/* a transition asked for through @dev's power file */
	int (*request)(struct dm_device *dev, enum dm_pm_request req, void *data);
	/* the power_log: the journal of the last transition, malloc()ed */
	int (*show_log)(char **ret, size_t *ret_len, void *data);
	/* A number that changes whenever the journal's text may have (each
	 * entry, each clearing), read before show_log(): the model keeps one
	 * shared copy of the journal for it. NULL: every read builds one. */
	uint64_t (*log_version)(void *data);
	/* dm_device_keep_pm_state() and dm_device_get_kept_pm_state(); may
	 * be NULL (nothing kept beyond the daemon's life) */
	int (*keep_state)(struct dm_device *dev, const char *state, void *data);
	int (*kept_state)(struct dm_device *dev, char *buf, size_t size, void *data);
};

/* ---- names ---- */
/* The longest name of one directory entry. */
#define DM_NAME_MAX 255
/* Whether @name can be one directory entry of the mount: 1..255 bytes, no
 * '/', neither "." nor "..". Every name the model holds (devices, drivers,
 * buses, classes, interfaces, value files) passes it: sysfs gives no other,
 * and a saved snapshot file must not make one. */
bool dm_name_is_valid(const char *name);
/* dm_name_is_valid(), and no control character either: the stricter rule
 * for names a configuration file gives (drivers.d), which its error
 * messages quote. */
bool dm_name_is_printable(const char *name);
/* Whether the @len bytes at @name (1 or more) are what kernel driver, bus
 * and device names are made of: letters, digits and "_-.:+", and neither
 * "." nor ".." (binding requests, persisted bindings, Protect=,
 * KernelDriver=). */
bool dm_name_is_plain(const char *name, size_t len);

/* ---- attributes of dynamic groups ---- */
/* The attribute of the file @path (under a device's directory: "size",
 * "queue/scheduler") with @mode, made like @kind (its flags, show and
 * store; no store when @mode has no write bit), on first use; the same one
 * for every later call with these three. They live as long as the process
 * and are shared by every device. NULL when out of memory. */
const struct dm_attribute *dm_attribute_intern(const struct dm_attribute *kind, const char *path,
					       mode_t mode);
/* The path an attribute dm_attribute_intern() made stands for. */
const char *dm_attribute_path(const struct dm_attribute *attr);

/* ---- model ---- */
int dm_model_new(struct dm_model **ret);
/* Removes every device (children first) and frees the model. */
void dm_model_free(struct dm_model *m);
void dm_model_set_listener(struct dm_model *m, const struct dm_model_listener *l, void *data);
void dm_model_set_pm_handler(struct dm_model *m, const struct dm_pm_handler *h, void *data);
/* Who runs binding requests (the daemon: src/drivers/binding.h): @fn moves
 * @dev to the kernel driver @driver, or with NULL unbinds it, and returns
 * 0 or -errno. Kernel drivers' bind and unbind files go through it. */
typedef int (*dm_bind_request_fn)(struct dm_device *dev, const char *driver, void *data);
void dm_model_set_bind_request(struct dm_model *m, dm_bind_request_fn fn, void *data);
/* Who runs them, and its data (NULL, NULL: nobody); _locked: the lock
 * held. */
void dm_model_get_bind_request(struct dm_model *m, dm_bind_request_fn *ret_fn, void **ret_data);
void dm_model_get_bind_request_locked(struct dm_model *m, dm_bind_request_fn *ret_fn,
				      void **ret_data);
/* A write naming the device @devname to kernel driver @drv's bind file
 * (@unbind false) or unbind file: -ENODEV when its bus has no such device
 * (or, to unbind, the kernel has not bound it to @drv), -EOPNOTSUPP when
 * nobody runs requests, else what the request returns. Call without the
 * lock. */
int dm_driver_bind_request(struct dm_driver *drv, const char *devname, bool unbind);
/* The live device named @name on the bus named @bus, referenced (unref
 * it), or NULL. Call without the lock. */
struct dm_device *dm_model_find_on_bus(struct dm_model *m, const char *bus, const char *name);
struct dm_device *dm_model_get_root(struct dm_model *m); /* no reference taken */

/*
 * An immutable value shared by reference: the journal (the power_log) is
 * one copy per version for every open file that reads it, not one each.
 * dm_blob_new() takes @data (malloc()ed; freed, also on failure); ref and
 * unref accept NULL. Any thread, no lock.
 */
struct dm_blob {
	atomic_size_t refs;
	size_t len;
	char *data;
};
int dm_blob_new(char *data, size_t len, struct dm_blob **ret);
struct dm_blob *dm_blob_ref(struct dm_blob *b);
void dm_blob_unref(struct dm_blob *b);
/* The journal as one shared copy, built again only when the PM handler's
 * log_version() moved (an empty one without a handler). Call without the
 * model lock. */
int dm_model_show_log(struct dm_model *m, struct dm_blob **ret);
/* How many times the journal's text was built, for the daemon's stats. */
uint64_t dm_model_count_log_builds(struct dm_model *m);

void dm_model_read_lock(struct dm_model *m);
void dm_model_write_lock(struct dm_model *m);
void dm_model_unlock(struct dm_model *m);

/* The lock rules checked (docs/design.md §4.2), as the kernel's
 * lockdep_assert_held(): in builds with DM_LOCK_CHECKS (meson's
 * -Dlock_checks, on in debug and sanitizer builds) the model's lock
 * functions keep per-thread hold counts and a broken rule aborts with its
 * message; elsewhere the checks cost nothing.
 * held: this thread holds @m's lock, shared or exclusive (the top of every
 * *_locked function); write_held: exclusive; not_held: neither (before a
 * driver hook, a program or a sysfs write, and before a device mutex). */
#ifdef DM_LOCK_CHECKS
/* prints @rule and aborts: a lock rule broken */
_Noreturn void dm_lock_rule_broken(const char *rule);
void dm_model_assert_held(const struct dm_model *m);
void dm_model_assert_write_held(const struct dm_model *m);
void dm_model_assert_not_held(const struct dm_model *m);
#else
static inline void dm_model_assert_held(const struct dm_model *m) { (void)m; }
static inline void dm_model_assert_write_held(const struct dm_model *m) { (void)m; }
static inline void dm_model_assert_not_held(const struct dm_model *m) { (void)m; }
#endif

/* Find-and-ref: returns a new reference or NULL. Dead devices are not found. */
struct dm_device *dm_model_find_devpath(struct dm_model *m, const char *devpath);
struct dm_device *dm_model_find_id(struct dm_model *m, uint64_t id);
size_t dm_model_count_devices(struct dm_model *m);
/* A hint: room in the model's indexes for @n more devices, so that adding
 * that many does not grow them step by step. 0 or -ENOMEM. */
int dm_model_reserve_devices(struct dm_model *m, size_t n);

/* Global list walk under the lock: for_each calls @fn on every live device
 * in depth-first order until it returns non-zero, which it returns. */
int dm_model_for_each_device_locked(struct dm_model *m, int (*fn)(struct dm_device *, void *),
				    void *data);
/* The devices of the global list (or of @top's subtree when not NULL), in
 * depth-first order, each referenced, in a new array: for walks that call
 * hooks without the lock. Free with dm_device_array_free(). */
int dm_model_ref_devices(struct dm_model *m, struct dm_device *top, struct dm_device ***ret,
			 size_t *ret_n);
void dm_device_array_free(struct dm_device **devs, size_t n);
/* The PM order: @top's subtree (NULL: the whole tree) for the PM engine,
 * in depth-first order, taken under one read lock: each device, the driver
 * bound to it then (NULL when none) and its parent as an index into the
 * order (-1 for @top, or for root when @top is NULL). Until it is released
 * the model keeps every device in it allocated, removed ones included
 * (dm_device_is_dead() tells them), and parents do not change (the order
 * "pins" the model). The buffer is reused by the next order taken into the
 * same struct; start from a zeroed one, release it, and free it with
 * dm_pm_order_done(). */
struct dm_pm_order_node {
	struct dm_device *dev; /* kept by the order */
	struct dm_driver *driver; /* kept by the order (one reference per run), or NULL */
	int parent;
};
/* A device link between two devices of an order (indices into nodes). */
struct dm_pm_edge {
	int supplier, consumer;
};
/* A device link from a device of the order (@inside) to one outside it. */
struct dm_pm_outside {
	struct dm_device *dev; /* kept alive by the order's pin */
	int inside;
	bool is_consumer; /* @dev consumes @inside (else supplies it) */
};
struct dm_pm_order {
	struct dm_pm_order_node *nodes;
	size_t n, cap;
	/* the links that order the walk (dm_link_orders()) */
	struct dm_pm_edge *edges;
	size_t n_edges, cap_edges;
	struct dm_pm_outside *outside;
	size_t n_outside, cap_outside;
	/* a whole-tree order's edges are the model's as of this generation:
	 * the same generation, the same edges (0: a subtree's) */
	uint64_t edges_gen;
	struct dm_model *pinned; /* the model, while the order is taken */
};
int dm_model_take_pm_order(struct dm_model *m, struct dm_device *top, struct dm_pm_order *s);
void dm_pm_order_release(struct dm_pm_order *s);
void dm_pm_order_done(struct dm_pm_order *s);

/* ---- device links ---- */
/* A device link (the kernel's /sys/class/devlink/): the consumer depends on
 * the supplier beyond the tree. Suspend takes every consumer before its
 * suppliers, resume every supplier before its consumers, except for links
 * that order nothing: sync_state_only ones and dormant ones. */
struct dm_link;
enum {
	DM_LINK_SYNC_STATE_ONLY = 1u << 0, /* for sync_state() only: orders nothing */
	DM_LINK_STATELESS = 1u << 1, /* not managed by the driver core: no binding veto */
	DM_LINK_PM_RUNTIME = 1u << 2, /* runtime PM follows it (shown only) */
};
/* Links @consumer to @supplier (write lock taken). -EEXIST when they are
 * linked already, -ELOOP when the link would make a cycle (the supplier
 * depends on the consumer: it is below it, or one of its consumers' ...,
 * as the kernel's device_is_dependent() refuses), -EINVAL for a device
 * with itself, of another model or removed; -ENOMEM. */
int dm_link_add(struct dm_device *supplier, struct dm_device *consumer, unsigned flags,
		struct dm_link **ret);
/* Removes and frees the link from @supplier to @consumer (write lock
 * taken): 0 or -ENOENT. */
int dm_link_remove(struct dm_device *supplier, struct dm_device *consumer);
/* The link from @supplier to @consumer, or NULL; lock held. */
struct dm_link *dm_link_find_locked(struct dm_device *supplier, struct dm_device *consumer);
/* Marks the link from @supplier to @consumer dormant (the kernel's status:
 * its supplier's driver not bound yet) or not (write lock taken): 0 or
 * -ENOENT. */
int dm_link_set_dormant(struct dm_device *supplier, struct dm_device *consumer, bool dormant);
/* Names @object (the kernel's devlink class device) as the device the link
 * from @supplier to @consumer is shown as (write lock taken): walks skip
 * it, the view gives it supplier and consumer links. 0 or -ENOENT. */
int dm_link_set_object(struct dm_device *supplier, struct dm_device *consumer,
		       struct dm_device *object);
/* The link @dev stands for (dm_link_set_object()), or NULL; lock held. */
struct dm_link *dm_device_get_link_locked(const struct dm_device *dev);
/* Whether a PM walk has nothing to do for @dev: it was removed, is in
 * @target already, or stands for a link (a link is not suspended). One
 * call reading the device's first line, no lock needed. */
bool dm_device_pm_skips(const struct dm_device *dev, enum dm_power_state target);
/* @dev as an end of a device link is named, as the kernel names its
 * supplier:/consumer: links and devlink devices: "<bus>:<sysname>" (its
 * class's name for a device of no bus). Lock held; 0 or -ENAMETOOLONG. */
int dm_device_link_name_locked(const struct dm_device *dev, char *buf, size_t size);
struct dm_device *dm_link_get_supplier(const struct dm_link *l);
struct dm_device *dm_link_get_consumer(const struct dm_link *l);
unsigned dm_link_get_flags(const struct dm_link *l);
bool dm_link_is_dormant(const struct dm_link *l);
/* Whether the link orders PM walks: neither sync_state_only nor dormant. */
bool dm_link_orders(const struct dm_link *l);
/* Calls @fn on each link @dev supplies (@consumers) or consumes; stops at
 * the first non-zero return, which it returns. Lock held. */
int dm_device_for_each_link_locked(struct dm_device *dev, bool consumers,
				   int (*fn)(struct dm_link *l, void *data), void *data);
/* Calls @fn on each link of the model, in the order they were added. */
int dm_model_for_each_link_locked(struct dm_model *m, int (*fn)(struct dm_link *l, void *data),
				  void *data);
size_t dm_model_count_links(struct dm_model *m);
size_t dm_model_count_links_locked(struct dm_model *m);

/* ---- buses ---- */
/* Finds or creates the bus @name with @type (NULL: a generic bus). */
int dm_bus_get(struct dm_model *m, const char *name, const struct dm_bus_type *type,
	       struct dm_bus **ret);
const char *dm_bus_get_name(const struct dm_bus *bus);

/* ---- classes ---- */
int dm_class_get(struct dm_model *m, const char *name, struct dm_class **ret);
int dm_class_get_interface(struct dm_class *c, const char *name, struct dm_interface **ret);
const char *dm_class_get_name(const struct dm_class *c);
const char *dm_interface_get_name(const struct dm_interface *i);

/* ---- drivers ---- */
/* Registers @drv on @bus (taking a reference) and offers it every unbound
 * device of the bus. -EEXIST when the bus has a driver of that name. */
int dm_driver_register(struct dm_bus *bus, struct dm_driver *drv);
/* A class driver (docs/design.md §7.6): registers @drv on @c and offers it
 * every unbound device of the class that is on no bus (the class devices:
 * sda, eth0), as a bus driver is offered its bus's. A class device is
 * offered to its class's drivers as a bus device to its bus's. */
int dm_driver_register_class(struct dm_class *c, struct dm_driver *drv);
/* Before registration: how @drv decides which devices it drives, in place
 * of its bus type's match and its rules. */
void dm_driver_set_match(struct dm_driver *drv,
			 int (*match)(struct dm_device *dev, struct dm_driver *drv));
/* dm_driver_new() and dm_driver_register() in one, on the bus named @bus of
 * @m (created when missing); on failure @data is freed with @free_data. */
int dm_model_add_driver(struct dm_model *m, const char *bus, const char *name,
			enum dm_driver_kind kind, int priority, const struct dm_driver_ops *ops,
			void *data, void (*free_data)(void *), struct dm_driver **ret);
/* Unbinds every device (remove() each) and drops the bus's reference. */
void dm_driver_unregister(struct dm_driver *drv);
/* Finds-and-refs a registered driver by name. */
struct dm_driver *dm_bus_find_driver(struct dm_bus *bus, const char *name);
struct dm_driver *dm_class_find_driver(struct dm_class *c, const char *name);
int dm_driver_default_match(struct dm_device *dev, struct dm_driver *drv);
enum dm_driver_kind dm_driver_get_kind(const struct dm_driver *drv);

/* ---- devices ---- */
int dm_device_new(struct dm_model *m, const char *name, struct dm_device **ret);
/* Setters for a device not yet added (the kernel driver may also change
 * later, on hotplug's bind and unbind). */
int dm_device_set_devpath(struct dm_device *dev, const char *devpath);
/* Which kernel device @dev stands for, beyond its name: the inode number
 * of its sysfs directory (a directory made again, a device unplugged and
 * another plugged at its path, gets another: kernfs numbers its nodes
 * with a generation), read once and kept. 0 when it has none (no devpath,
 * or the directory cannot be read). Any thread; no lock held. */
uint64_t dm_device_identity(struct dm_device *dev);
int dm_device_set_kernel_driver(struct dm_device *dev, const char *driver);
/* The kernel's name when the tree's differs (a clash-renamed class device,
 * "bsg:0:0:0:0" for "0:0:0:0"): bus and class listings use it. */
int dm_device_set_sysname(struct dm_device *dev, const char *sysname);
const char *dm_device_get_sysname(const struct dm_device *dev);
void dm_device_set_bus(struct dm_device *dev, struct dm_bus *bus);
/* @iface may be NULL (class membership only). */
void dm_device_set_class(struct dm_device *dev, struct dm_class *c, struct dm_interface *iface);
/* Extra attribute tables of this device (at most DM_DEVICE_MAX_GROUPS). */
int dm_device_add_group(struct dm_device *dev, const struct dm_attribute_group *g);
/* The same for the root device, which is in the model from its start
 * (takes the write lock). 0 or -E2BIG. */
int dm_model_add_root_group(struct dm_model *m, const struct dm_attribute_group *g);
/* Private data of the enumerator that made the device. */
void dm_device_set_bus_data(struct dm_device *dev, void *data, void (*free_data)(void *));
void *dm_device_get_bus_data(const struct dm_device *dev);

/* A static value file: set before add, or later (takes the write lock and
 * announces device_changed). Values are shown with a trailing newline. */
int dm_device_set_value(struct dm_device *dev, const char *name, const char *value);
/* Announces that something of the device the model does not hold changed
 * (its sysfs attributes: a change uevent), so that what the mount cached
 * of it is dropped. Takes the write lock. */
void dm_device_announce_change(struct dm_device *dev);
/* Before add: room for @n more values of @bytes bytes in all (each value's
 * length plus one), so that setting them allocates nothing more. 0,
 * -ENOMEM, or -EBUSY once added. */
int dm_device_reserve_values(struct dm_device *dev, size_t n, size_t bytes);

int dm_device_add(struct dm_device *dev, struct dm_device *parent);
void dm_device_del(struct dm_device *dev);

struct dm_model *dm_device_get_model(const struct dm_device *dev);

/* Calls @fn on each static value of @dev in name order; lock held. */
int dm_device_for_each_value_locked(struct dm_device *dev,
				    int (*fn)(const char *name, const char *value, void *), void *data);
int dm_driver_get_priority(const struct dm_driver *drv);

/* Tree accessors; call with the lock held. No references are taken. */
struct dm_device *dm_device_get_parent_locked(const struct dm_device *dev);
struct dm_device *dm_device_find_child_locked(const struct dm_device *dev, const char *name);
/* The live device a bus, class, interface or driver listing names @sysname
 * (dm_device_get_sysname()) for which @match is true, in O(1): @match tells
 * whether it is in the listing. No reference taken. */
struct dm_device *dm_model_find_listed_locked(struct dm_model *m, const char *sysname,
					      bool (*match)(struct dm_device *, void *), void *data);
struct dm_bus *dm_device_get_bus_locked(const struct dm_device *dev);
struct dm_class *dm_device_get_class_locked(const struct dm_device *dev);
struct dm_interface *dm_device_get_interface_locked(const struct dm_device *dev);
struct dm_driver *dm_device_get_driver_locked(const struct dm_device *dev);
/* "pci0000:00/0000:00:02.0": the path under root/ ("" for root). Returns the
 * length or -ENAMETOOLONG. */
int dm_device_path_locked(const struct dm_device *dev, char *buf, size_t size);

/* Binding, normally done by dm_device_add(): offers @dev to its bus's drivers
 * in priority order until one accepts. Returns 1 when bound, 0 when not. */
int dm_device_attach(struct dm_device *dev);
/* Calls remove() and unbinds. */
void dm_device_release_driver(struct dm_device *dev);
/* A user driver keeps a device only while the kernel's binding of it is
 * the one it was bound under (probe decided on it: pci-pm takes functions
 * no kernel driver owns, vfio-pci those vfio-pci owns). After the kernel
 * driver changed (hotplug's bind), this drops a claim that no longer
 * holds: remove() runs, the device is unbound and offered to the bus's
 * drivers again. Suspend (dm_device_call_driver()) and the end of a
 * binding transaction check the same before acting. (Hotplug's unbind
 * leaves a claim stale for the device's next event: src/hotplug/monitor.c.)
 * Returns 1 when a claim was dropped, else 0. Call without the lock. */
int dm_device_recheck_claim(struct dm_device *dev);
/* Whether @dev's user driver holds it under a kernel binding that is no
 * longer the kernel's (a claim the next recheck, suspend or transaction
 * end drops). Any thread, no lock. */
bool dm_device_claim_is_stale(const struct dm_device *dev);
/* A binding transaction (src/drivers/binding.h) begins (true) or ends:
 * meanwhile the device is offered to no driver (a function briefly
 * unbound is not pci-pm's); at the end a claim that no longer holds is
 * dropped and an unbound device offered to the bus's drivers. Call
 * without the lock. */
void dm_device_set_binding(struct dm_device *dev, bool binding);
/* What a user driver's suspend returns when it finds, before writing
 * anything, that the device is no longer its own (the kernel bound a
 * driver the model has not heard of yet): the model then releases the
 * device, and its suspend counts as done. */
#define DM_ECLAIM ESTALE

/* Power state, as set by the PM engine; a change is announced to the
 * listener (power_changed). */
void dm_device_set_power(struct dm_device *dev, enum dm_power_state st);
/* How many times @dev's files changed (values, driver, power state or
 * error): a cache of them is current while this is. Any thread, no lock. */
unsigned dm_device_get_changes(const struct dm_device *dev);
/* The last PM failure ("" when none); set with the write lock taken inside. */
int dm_device_set_power_error(struct dm_device *dev, const char *msg);
int dm_device_get_power_error(struct dm_device *dev, char *buf, size_t size);
/* Calls the bound driver's suspend or resume hook, serialised with the
 * device's other hooks (the device mutex). 0 when there is nothing to call;
 * before a suspend, a claim that no longer holds is dropped, and a user
 * driver's -DM_ECLAIM releases the device (see dm_device_recheck_claim()).
 * @clock (may be NULL) holds the call's start (dm_clock_now()) and gets its
 * end; the bound driver's running estimate of its hooks' duration is then
 * updated. */
int dm_device_call_driver(struct dm_device *dev, int which, uint64_t *clock);
enum { DM_CALL_SUSPEND, DM_CALL_RESUME };
/* What a driver's suspend hook changed, to put back on resume, as it keeps
 * it beyond the daemon's life: one word of printable ASCII without blanks,
 * shorter than DM_PM_STATE_MAX. */
#define DM_PM_STATE_MAX 256 /* pci-pm keeps a 64-byte header in hex */
bool dm_pm_state_is_valid(const char *state);
/*
 * From @dev's suspend hook, before it changes anything: @state is what its
 * resume needs to put @dev back. The PM engine writes it to the transition
 * record (pm/record.h) before this returns, so that when the daemon is
 * killed before the resume, the resume its next start calls finds it with
 * dm_device_get_kept_pm_state(). 0 when kept, or when nothing is kept
 * beyond the daemon (no record, no devpath); -EINVAL for a state that is
 * not one word; another -errno when it could not be written, and the hook
 * must then fail without changing anything. Call without the model lock.
 */
int dm_device_keep_pm_state(struct dm_device *dev, const char *state);
/* From @dev's resume hook, when it holds no state of its own for @dev
 * (the daemon was restarted since the suspend): the state an earlier run
 * kept, into @buf; -ENOENT when there is none. Call without the lock. */
int dm_device_get_kept_pm_state(struct dm_device *dev, char *buf, size_t size);
/* A cheap monotonic clock for timing hooks (clock.c): ticks, and the
 * microseconds a number of them lasts. */
uint64_t dm_clock_now(void);
long dm_clock_usec(uint64_t ticks);
uint64_t dm_clock_ticks(long usec);
/* -1 when @drv (may be NULL) has no such hook (nothing to call), else the
 * running estimate of how long its hooks take in microseconds (a hint:
 * the PM engine runs quick hooks inline and the others on its pool). */
int dm_driver_pm_cost(const struct dm_driver *drv, int which);
/* The same for the driver bound to @dev now. */
int dm_device_pm_cost(struct dm_device *dev, int which);
void dm_driver_record_pm_usec(struct dm_driver *drv, unsigned usec);

/* ---- attributes ---- */
/*
 * Names in a device's own directory (docs/design.md §6.2): the kernel's
 * first. dm_device_kernel_has_locked() tells whether the kernel uses
 * @name there (a live child device, a static value of sysfs's, a sysfs
 * attribute or attribute directory; never for the root device, whose
 * files are at the top of the mount). dm_device_own_name_locked() puts
 * into @buf the name driverfsd's own entry @own ("power", "pm", "driver"
 * ...) is served under: @own itself, or DM_OWN_PREFIX "<own>" (repeated)
 * where the kernel uses @own; the root device's files, at the top of the
 * mount, are never renamed. 0 or -ENAMETOOLONG.
 * dm_device_is_own_name_locked() tells whether @served is the name @own
 * is served under (dm_own_name_base(): driverfs.h);
 * dm_own_name_prefixed() puts @k prefixes and @own into @buf (false when
 * that is no valid name).
 * The names given to and returned by every function below are the names
 * served. Lock held.
 */
bool dm_device_kernel_has_locked(struct dm_device *dev, const char *name);
int dm_device_own_name_locked(struct dm_device *dev, const char *own, char *buf, size_t size);
bool dm_device_is_own_name_locked(struct dm_device *dev, const char *served, const char *own);
bool dm_own_name_prefixed(const char *own, int k, char *buf, size_t size);
/* Iterates the files of @dev (group NULL: the device directory itself;
 * "pm": that subdirectory) and, with @groups_only, the named groups that
 * have at least one visible file. Call with the lock held; @fn must not
 * block. */
struct dm_file_info {
	const char *name;
	mode_t mode;
	unsigned flags;
	/* dm_device_stat_file_locked(): the file's attribute, NULL for a
	 * static value or a directory; for dm_device_show_attr_blob() */
	const struct dm_attribute *attr;
};
int dm_device_for_each_file_locked(struct dm_device *dev, const char *group,
				   int (*fn)(const struct dm_file_info *, void *), void *data);
int dm_device_for_each_group_locked(struct dm_device *dev, int (*fn)(const char *, void *),
				    void *data);
/* The subdirectories of @parent, a group path ("queue", "queue/iosched"),
 * or with @parent NULL the device's groups (as above): their names. */
int dm_device_for_each_dir_locked(struct dm_device *dev, const char *parent,
				  int (*fn)(const char *, void *), void *data);
/* 0 and *ret filled when the file (or, with name NULL, the group) exists. */
int dm_device_stat_file_locked(struct dm_device *dev, const char *group, const char *name,
			       struct dm_file_info *ret);
/* Reads a file's value into @buf of @size bytes (DM_ATTR_MAX + 1 holds any
 * bounded value), NUL-terminated: returns its length, at most @size - 1 (a
 * longer value, a journal, is cut), -ENOENT when there is no such file,
 * -ENODEV when the device was removed. Call without the lock. */
int dm_device_show(struct dm_device *dev, const char *group, const char *name, char *buf,
		   size_t size);
/* The same for a value of any size (a journal): *ret is malloc()ed, of
 * *ret_len bytes; free it. */
int dm_device_show_alloc(struct dm_device *dev, const char *group, const char *name, char **ret,
			 size_t *ret_len);
/* The same as a shared copy: the power_log's is the model's (see
 * dm_model_show_log()), any other a copy of its own. */
int dm_device_show_blob(struct dm_device *dev, const char *group, const char *name,
			struct dm_blob **ret);
/*
 * The user a show() on this thread runs for: the uid that opened the file
 * read (the FUSE layer sets it around each read of an open file's value,
 * dm_attr_set_reader()), or DM_READER_UNKNOWN (the daemon's own reads, and
 * a value the kernel caches for every reader). An attribute that gives some
 * of its text to root alone asks it: the opener's, as the kernel checks a
 * file's credentials at open, so that a descriptor handed to a privileged
 * reader (a setuid program's stdin) never reads root's text for its opener.
 */
#define DM_READER_UNKNOWN ((uid_t)-1)
uid_t dm_attr_reader(void);
void dm_attr_set_reader(uid_t uid);
/* The same for the attribute @attr of @dev a dm_device_stat_file_locked()
 * gave, without looking it up again (a file opened once and read): for an
 * attribute read whole (show_alloc), a copy of its own; -ENODEV when the
 * device was removed, -EINVAL for any other. */
int dm_device_show_attr_blob(struct dm_device *dev, const struct dm_attribute *attr,
			     struct dm_blob **ret);
/* Reads @size bytes at @off of @attr's value into @buf through its
 * read_range(): the count, -EOPNOTSUPP when it has none, -ENODEV when the
 * device was removed. Call without the lock. */
ssize_t dm_device_read_attr_range(struct dm_device *dev, const struct dm_attribute *attr,
				  char *buf, size_t size, off_t off);
/* A descriptor whose reads give the value of @attr (its open_source()),
 * for a reader the kernel serves directly; -EOPNOTSUPP when it has none,
 * -ENODEV when the device was removed. Call without the lock. */
int dm_device_open_attr_source(struct dm_device *dev, const struct dm_attribute *attr);
/* Writes a whole value: -EACCES when read-only, -EFBIG when longer than
 * DM_ATTR_MAX, -EINVAL for an empty value, -ENODEV when the device or the
 * file is gone (before the store, or an -ENOENT of the store's with the file
 * gone after it), else what store() returns (-ENOENT included: the kernel's
 * answer to a sysfs write). Call without the lock. */
int dm_device_store(struct dm_device *dev, const char *group, const char *name, const char *buf,
		    size_t len);

/* ---- iteration, for views of the model; call with the lock held. Each
 * calls @fn until it returns non-zero, which it then returns; @fn must not
 * block or take the lock. Dead devices are skipped. ---- */
typedef int (*dm_device_fn)(struct dm_device *dev, void *data);
int dm_device_for_each_child_locked(struct dm_device *dev, dm_device_fn fn, void *data);
int dm_model_for_each_bus_locked(struct dm_model *m, int (*fn)(struct dm_bus *, void *), void *data);
int dm_bus_for_each_device_locked(struct dm_bus *bus, dm_device_fn fn, void *data);
int dm_bus_for_each_driver_locked(struct dm_bus *bus, int (*fn)(struct dm_driver *, void *),
				  void *data);
int dm_driver_for_each_device_locked(struct dm_driver *drv, dm_device_fn fn, void *data);
bool dm_driver_is_registered_locked(const struct dm_driver *drv);
/* A bus driver's bus (NULL for a class driver), a class driver's class
 * (NULL for a bus driver). */
struct dm_bus *dm_driver_get_bus(const struct dm_driver *drv);
struct dm_class *dm_driver_get_class(const struct dm_driver *drv);
int dm_class_for_each_driver_locked(struct dm_class *c, int (*fn)(struct dm_driver *, void *),
				    void *data);
int dm_model_for_each_class_locked(struct dm_model *m, int (*fn)(struct dm_class *, void *),
				   void *data);
int dm_class_for_each_device_locked(struct dm_class *c, dm_device_fn fn, void *data);
/* Each driver of the bus devices nearest above the class's devices (the
 * one driving each, as the 2002 model's class drivers/ listed; a device's
 * own when it is on a bus and in a class), once, in the order the devices
 * come: found once per model generation and kept (each lookup of
 * class/<class>/drivers/ asked it). Read lock held. -ENOMEM, or @fn's
 * first non-zero return. */
int dm_class_for_each_bus_driver_locked(struct dm_class *c,
					int (*fn)(struct dm_driver *, void *), void *data);
/* The model's generation, which moves with every change (each write lock
 * taken): what is built under the read lock from one generation holds for
 * as long as it lasts, and one taken without the lock tells whether
 * anything changed since. */
uint64_t dm_model_generation(struct dm_model *m);
/* How many times class drivers' lists were built, for the daemon's stats. */
uint64_t dm_model_count_class_driver_builds(struct dm_model *m);
int dm_class_for_each_interface_locked(struct dm_class *c,
				       int (*fn)(struct dm_interface *, void *), void *data);
int dm_interface_for_each_device_locked(struct dm_interface *i, dm_device_fn fn, void *data);

#define DM_DEVICE_MAX_GROUPS 8

#endif
