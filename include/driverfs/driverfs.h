/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * driverfs.h - what a driver author needs: attribute tables, driver ops and
 * the device accessors they are called with.
 *
 * Conventions: functions return 0 (or a length) on success and -errno on
 * failure; out-parameters named ret_* are written only on success; *_ref()
 * and *_unref() accept NULL and return their argument (unref returns NULL).
 */
#ifndef DRIVERFS_DRIVERFS_H
#define DRIVERFS_DRIVERFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest value an attribute shows or accepts, as in sysfs. */
#define DM_ATTR_MAX 4096

struct dm_model;
struct dm_device;
struct dm_driver;
struct dm_bus;
struct dm_class;
struct dm_interface;

/* ---- attributes --------------------------------------------------------- */

enum dm_attr_flags {
	/* The value changes without the model being told (a sysfs value
	 * passed through): never cache it. */
	DM_ATTR_LIVE = 1u << 0,
	/* The value may exceed DM_ATTR_MAX (show_alloc): its size is measured
	 * rather than assumed. */
	DM_ATTR_UNBOUNDED = 1u << 1,
	/* The value changes, and the model announces each change (the
	 * listener's power_changed or device_changed): it may be cached until
	 * then. */
	DM_ATTR_ANNOUNCED = 1u << 2,
	/* One of the device's own sysfs attributes, passed through: a value
	 * of the device as the kernel has it, saved with its static values. */
	DM_ATTR_SYSFS = 1u << 3,
};

struct dm_attribute;

/*
 * show() writes at most @size bytes (DM_ATTR_MAX) of the value, normally
 * ending in a newline, and returns the length or -errno. store() receives
 * the whole written value, NUL-terminated, at most DM_ATTR_MAX bytes; it
 * parses all of it first and returns -EINVAL (or another -errno) with the
 * state unchanged when the value is bad, 0 when the value was applied.
 *
 * Both are called without the model lock and with a reference on @dev; the
 * device may be removed meanwhile (dm_device_is_dead()).
 */
typedef int (*dm_show_fn)(struct dm_device *dev, const struct dm_attribute *attr,
			  char *buf, size_t size);
typedef int (*dm_store_fn)(struct dm_device *dev, const struct dm_attribute *attr,
			   const char *buf, size_t len);

/*
 * show_alloc() is for the rare value that may exceed DM_ATTR_MAX, such as a
 * journal: it returns the whole value in a malloc()ed buffer (*ret, freed by
 * the caller) of *ret_len bytes, or -errno. An attribute has show() or
 * show_alloc(), not both.
 */
typedef int (*dm_show_alloc_fn)(struct dm_device *dev, const struct dm_attribute *attr,
				char **ret, size_t *ret_len);

/*
 * open_source() is for a value that is a file of its own, read unchanged
 * (a sysfs attribute passed through): it returns a descriptor of that file,
 * opened read-only, whose reads give what show_alloc() would, so that the
 * kernel may serve a reader from it directly (FUSE passthrough,
 * docs/design.md §6.4); -errno (-EOPNOTSUPP: a value that is not such a
 * file, or one show_alloc() alters) and the value is read through
 * show_alloc(). Optional.
 */
typedef int (*dm_open_source_fn)(struct dm_device *dev, const struct dm_attribute *attr);

/*
 * size() is for a show_alloc() value that is costly to build and read with
 * direct_io (DM_ATTR_LIVE | DM_ATTR_UNBOUNDED): the size a stat gives, from
 * what it keeps (the last value built), so that a stat builds nothing. A
 * read is not bound by it. 0 or -errno. Optional.
 */
typedef int (*dm_size_fn)(struct dm_device *dev, const struct dm_attribute *attr,
			  size_t *ret_size);

/*
 * read_range() is for a binary value a device gives piece by piece, as
 * sysfs reads a binary attribute (an EEPROM, an EDID, PCI config): the
 * @size bytes at @off into @buf, read from the device now, nothing kept;
 * the count read (0 past the end) or -errno. A reader asking for a few
 * bytes then costs a few bytes of the device's time, not the whole value.
 * Optional; where it is, a read of the open file uses it rather than
 * show_alloc() (docs/design.md §6.7).
 */
typedef ssize_t (*dm_read_range_fn)(struct dm_device *dev, const struct dm_attribute *attr,
				    char *buf, size_t size, off_t off);

struct dm_attribute {
	const char *name;
	mode_t mode; /* 0444, 0644, 0200 ... */
	unsigned flags; /* enum dm_attr_flags */
	dm_show_fn show;
	dm_store_fn store;
	dm_show_alloc_fn show_alloc;
	dm_open_source_fn open_source;
	dm_size_fn size;
	dm_read_range_fn read_range;
};

/*
 * A table of attributes. A group with a name is a subdirectory of the
 * device's directory (such as "pm"). is_visible() hides attributes a given
 * device does not have; a group whose attributes are all hidden is absent.
 *
 * A group whose files are not known in advance (the device's own sysfs
 * attributes, passed through) has no table and no name but a tree of
 * directories: @dir is NULL for the device's own directory, else a path
 * under it ("queue", "queue/iosched"). for_each() calls @fn on every
 * attribute of @dir the device has now (stopping at, and returning, a
 * non-zero return); find() returns the one named @name or NULL;
 * for_each_dir() calls @fn on each subdirectory of @dir (by name);
 * has_dir() tells whether @dir is one; has() (optional) tells whether the
 * device's own directory has a file or a directory @name, in one look
 * where find() and has_dir() would take two. All are called under the model's
 * read lock and may block on nothing but sysfs; the attributes they give
 * must live as long as the model. Such a group's names are the kernel's:
 * in the device's own directory, an entry of driverfsd's (a table
 * attribute or group) whose name the kernel uses there is served as
 * DM_OWN_PREFIX "<name>" (docs/design.md §6.2), the prefix repeated past
 * every name of that form the kernel uses, up to DM_OWN_PREFIX_MAX times.
 */
#define DM_OWN_PREFIX "driverfs:"
#define DM_OWN_PREFIX_MAX 4

/* @served without its DM_OWN_PREFIXes: the name of driverfsd's own entry a
 * name of a device's directory would be. */
static inline const char *dm_own_name_base(const char *served)
{
	const size_t n = sizeof(DM_OWN_PREFIX) - 1;
	while (__builtin_strncmp(served, DM_OWN_PREFIX, n) == 0 && served[n])
		served += n;
	return served;
}
struct dm_attribute_group {
	const char *name;
	const struct dm_attribute *const *attrs; /* NULL-terminated */
	bool (*is_visible)(struct dm_device *dev, const struct dm_attribute *attr);
	int (*for_each)(struct dm_device *dev, const char *dir,
			int (*fn)(const struct dm_attribute *, void *), void *data);
	const struct dm_attribute *(*find)(struct dm_device *dev, const char *dir, const char *name);
	int (*for_each_dir)(struct dm_device *dev, const char *dir,
			    int (*fn)(const char *name, void *), void *data);
	bool (*has_dir)(struct dm_device *dev, const char *dir);
	bool (*has)(struct dm_device *dev, const char *name);
};

#define DM_ATTR(_name, _mode, _show, _store) \
	{ .name = #_name, .mode = (_mode), .show = (_show), .store = (_store) }
#define DM_ATTR_RO(_name, _show) DM_ATTR(_name, 0444, _show, NULL)
#define DM_ATTR_RW(_name, _show, _store) DM_ATTR(_name, 0644, _show, _store)

/* True when @buf (of @len bytes) equals @word, ignoring one trailing newline. */
bool dm_streq(const char *buf, size_t len, const char *word);

/* snprintf into an attribute buffer; returns the length written (truncated
 * to @size - 1), never more. */
int dm_emit(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- devices ------------------------------------------------------------ */

enum dm_power_state {
	DM_POWER_ON = 0,
	DM_POWER_SUSPENDED,
};

struct dm_device *dm_device_ref(struct dm_device *dev);
struct dm_device *dm_device_unref(struct dm_device *dev);

/* Accessors: the strings live as long as the device reference. */
const char *dm_device_get_name(const struct dm_device *dev);
const char *dm_device_get_devpath(const struct dm_device *dev); /* may be NULL */
const char *dm_device_get_kernel_driver(const struct dm_device *dev); /* may be NULL */
uint64_t dm_device_get_id(const struct dm_device *dev);
bool dm_device_is_dead(const struct dm_device *dev);
enum dm_power_state dm_device_get_power(const struct dm_device *dev);

/* Copies the static value @name into @buf (without newline); returns its
 * length, -ENOENT when the device has no such value, -ENOBUFS when it does
 * not fit. Takes the model's read lock. */
int dm_device_get_value(struct dm_device *dev, const char *name, char *buf, size_t size);

/* Per-driver private data, set by probe(). */
void dm_device_set_driver_data(struct dm_device *dev, void *data);
void *dm_device_get_driver_data(const struct dm_device *dev);

/* ---- drivers ------------------------------------------------------------ */

enum dm_driver_kind {
	DM_DRIVER_KERNEL = 0, /* proxy for a kernel driver seen in sysfs */
	DM_DRIVER_USER, /* a driver implemented in user space */
};

/*
 * Driver hooks, each optional (NULL: nothing to do, success). They are called
 * without the model lock, serialised per device.
 *   probe:   0 accepts the device; -ENODEV or -ENXIO declines it quietly;
 *            another -errno declines it and is reported.
 *   remove:  the device is going away or the driver is unregistered.
 *   suspend: 0 or -errno; a failure stops the suspend walk and rolls back.
 *   resume:  0 or -errno; a failure is reported and the walk goes on.
 */
struct dm_driver_ops {
	int (*probe)(struct dm_device *dev, void *data);
	void (*remove)(struct dm_device *dev, void *data);
	int (*suspend)(struct dm_device *dev, void *data);
	int (*resume)(struct dm_device *dev, void *data);
};

/*
 * Creates an unregistered driver with one reference. @ops must outlive it;
 * @data is passed to every hook and freed with @free_data (may be NULL) on
 * the last unref. Higher @priority is offered devices first; user drivers
 * normally use a priority above 0, kernel proxies 0.
 */
int dm_driver_new(const char *name, enum dm_driver_kind kind, int priority,
		  const struct dm_driver_ops *ops, void *data, void (*free_data)(void *),
		  struct dm_driver **ret);
struct dm_driver *dm_driver_ref(struct dm_driver *drv);
struct dm_driver *dm_driver_unref(struct dm_driver *drv);
const char *dm_driver_get_name(const struct dm_driver *drv);

/* Adds a match rule: the device's attribute @key must match the shell glob
 * @glob. All rules must match; a driver without rules matches every device
 * of its bus (user drivers) or the devices the kernel bound to a driver of
 * the same name (kernel proxies). */
int dm_driver_add_match(struct dm_driver *drv, const char *key, const char *glob);

#ifdef __cplusplus
}
#endif

#endif
