/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * udev.c - the udev source: the sysfs hierarchy. It records every device
 * udev knows and every ancestor that is a device (libudev's parent: the
 * nearest directory with a uevent file, so sysfs glue directories are
 * skipped), with subsystem, kernel driver, uevent, modalias, device node and
 * a name. The kernel's containers /devices/system and /devices/virtual, which
 * are not devices, become the devices "system" and "virtual".
 */
#include "udev.h"

#include "scan/scan.h"
#include "sysfs-value.h"
#include "uevent.h"

#include "drivers/hookenv.h"
#include "util/log.h"

#include <errno.h>
#include <dirent.h>
#include <libudev.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A device's kernel subsystem is its bus when /sys/bus/<subsystem> exists,
 * otherwise its class; devices with neither are on the virtual bus "sys". */
static int classify(struct udev_device *d, struct dm_record *rec)
{
	const char *subsystem = udev_device_get_subsystem(d);
	if (!subsystem)
		return dm_record_set_string(&rec->bus, "sys");
	char path[512];
	snprintf(path, sizeof(path), "/sys/bus/%s", subsystem);
	if (access(path, F_OK) == 0)
		return dm_record_set_string(&rec->bus, subsystem);
	return dm_record_set_string(&rec->class_name, subsystem);
}

/* The human-readable name: the hwdb's model, the kernel's own name, or the
 * kernel name of the device. The pci source overrides it with pci.ids. */
static void pick_name(struct udev_device *d, bool trusted, char *buf, size_t size)
{
	const char *keys[] = { "ID_MODEL_FROM_DATABASE", "ID_MODEL", NULL };
	for (const char **k = keys; trusted && *k; k++) {
		const char *v = udev_device_get_property_value(d, *k);
		if (v && *v) {
			dm_uevent_trim(buf, size, v);
			return;
		}
	}
	/* the device's own string (an input device's name): one line of it,
	 * trimmed as any value */
	const char *v = udev_device_get_sysattr_value(d, "name");
	char line[DM_ATTR_MAX];
	dm_uevent_device_string(line, sizeof(line), v && *v ? v : udev_device_get_sysname(d));
	dm_uevent_trim(buf, size, line);
}

static int set_trimmed(struct dm_record *rec, const char *name, const char *value)
{
	char buf[DM_ATTR_MAX];
	dm_uevent_trim(buf, sizeof(buf), value);
	return dm_record_set(rec, name, buf);
}

/* The interface of a class device with a node (uevent.h). */
static int set_interface(struct dm_record *rec, struct udev_device *d, const char *devnode)
{
	char name[256];
	if (dm_uevent_interface(udev_device_get_devtype(d), devnode, name, sizeof(name)) > 0)
		return dm_record_set_string(&rec->iface, rec->class_name);
	return dm_record_set_string(&rec->iface, name);
}

/* The parent of a device that has no device above it: the container record
 * for /devices/system/... and /devices/virtual/..., or root (NULL). */
static int container_parent(struct dm_scan *s, struct dm_record *rec)
{
	static const char *const containers[] = { "/devices/system", "/devices/virtual", NULL };
	for (const char *const *c = containers; *c; c++) {
		size_t len = strlen(*c);
		if (strncmp(rec->devpath, *c, len) != 0 || rec->devpath[len] != '/')
			continue;
		struct dm_record *cont;
		int r = dm_scan_get(s, *c, &cont);
		if (r < 0)
			return r;
		if (!cont->bus) {
			r = dm_record_set_string(&cont->bus, "sys");
			r |= dm_record_set(cont, "name", cont->name);
			if (r)
				return -ENOMEM;
		}
		return dm_record_set_string(&rec->parent, *c);
	}
	return 0;
}

/* Whether another device below @parent (directly, or through one glue
 * directory such as scsi_device/) has the name @name: sysfs itself says, so
 * a device added by hotplug is named as the same device found by a full
 * scan would be. @self is the device's own path relative to @parent. Paths
 * below @parent are looked up from its directory, not from the root. */
static bool sibling_has_name(const char *parent, const char *name, const char *self)
{
	DIR *dir = opendir(parent);
	if (!dir)
		return false;
	bool clash = false;
	struct dirent *e;
	char path[PATH_MAX];
	while (!clash && (e = readdir(dir))) {
		if (e->d_name[0] == '.' || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
			continue;
		/* a device directly below, or one below a glue directory (a
		 * directory that is no device itself) */
		if (strcmp(e->d_name, name) == 0)
			snprintf(path, sizeof(path), "%s/uevent", name);
		else if (snprintf(path, sizeof(path), "%s/%s/uevent", e->d_name, name) > 0 &&
			 faccessat(dirfd(dir), path, F_OK, 0) == 0 &&
			 snprintf(path, sizeof(path), "%s/uevent", e->d_name) > 0 &&
			 faccessat(dirfd(dir), path, F_OK, 0) != 0)
			snprintf(path, sizeof(path), "%s/%s/uevent", e->d_name, name);
		else
			continue;
		size_t len = strlen(self);
		clash = !(strncmp(path, self, len) == 0 && strcmp(path + len, "/uevent") == 0) &&
			faccessat(dirfd(dir), path, F_OK, 0) == 0;
	}
	closedir(dir);
	return clash;
}

/*
 * One device's scan: the parent of @devpath when it is a device the model
 * has or the scan recorded already (an earlier event of the run), into
 * @buf; false when it is not (then libudev finds it). The parent is the
 * nearest ancestor directory with a uevent file, as for libudev; asking
 * the model first spares libudev's lookup, which resolves every component
 * of the path again (a third of an event's cost). A container the model
 * has (/devices/virtual) counts as the parent, as container_parent() makes
 * it.
 */
static bool known_parent(struct dm_scan *s, const char *devpath, char *buf, size_t size)
{
	if (snprintf(buf, size, "%s", devpath) >= (int)size)
		return false;
	for (;;) {
		char *slash = strrchr(buf, '/');
		if (!slash || slash == buf)
			return false;
		*slash = '\0';
		if (strcmp(buf, "/devices") == 0)
			return false;
		if (dm_scan_find(s, buf))
			return true;
		struct dm_device *dev = dm_model_find_devpath(s->model, buf);
		dm_device_unref(dev);
		if (dev)
			return true;
		char uevent[PATH_MAX + 16];
		snprintf(uevent, sizeof(uevent), "/sys%s/uevent", buf);
		if (access(uevent, F_OK) == 0)
			return false; /* a device the model lacks: it is recorded too */
	}
}

/* Whether a DEVNAME property libudev holds is a path below /dev: anything
 * else makes libudev abort the process when asked for the devnode. */
static bool devname_is_safe(const char *devname)
{
	return devname && strncmp(devname, "/dev/", 5) == 0 &&
	       dm_uevent_check_devname(devname + 5) == 0;
}

/*
 * Whether the MAJOR and MINOR libudev holds for @d are its device number
 * @dev (the sysfs "dev" attribute, NULL when it has none): only then may its
 * DEVNAME be taken. A device without a number has no node whatever a text
 * or event of it says.
 */
static bool devt_is_consistent(struct udev_device *d, const char *dev)
{
	return dm_uevent_devt_is(udev_device_get_property_value(d, "MAJOR"),
				 udev_device_get_property_value(d, "MINOR"), dev);
}

/*
 * The uevent value of a device whose sysfs text failed the checks: the
 * properties of its netlink event (clean: one NUL-terminated string each),
 * those with a valid name and a value free of control characters, DEVNAME
 * relative as the kernel writes it, and MAJOR, MINOR and DEVNAME only when
 * @devt_ok (devt_is_consistent()). Nothing for a device found by a scan
 * (no event): its text says nothing that can be trusted.
 */
static void uevent_from_event(struct udev_device *d, bool devt_ok, char *buf, size_t size)
{
	static const char *const event_only[] = { "ACTION", "DEVPATH", "SUBSYSTEM", "SEQNUM",
						   "DEVPATH_OLD", NULL };
	size_t len = 0;
	struct udev_list_entry *e;
	buf[0] = '\0';
	udev_list_entry_foreach(e, udev_device_get_properties_list_entry(d)) {
		const char *key = udev_list_entry_get_name(e), *value = udev_list_entry_get_value(e);
		bool skip = !key || !value || !dm_uevent_key_is_valid(key, strlen(key));
		for (const char *const *k = event_only; !skip && *k; k++)
			skip = strcmp(key, *k) == 0;
		if (!skip && !devt_ok)
			skip = strcmp(key, "MAJOR") == 0 || strcmp(key, "MINOR") == 0 ||
			       strcmp(key, "DEVNAME") == 0;
		if (!skip && strcmp(key, "DEVNAME") == 0) {
			skip = !devname_is_safe(value);
			value += 5;
		}
		for (const char *c = value; !skip && *c; c++)
			skip = (unsigned char)*c < 0x20 || *c == 0x7f;
		if (!skip && !dm_uevent_append(buf, size, &len, key, value))
			break;
	}
}

/*
 * The uevent value of @d into @buf: its sysfs text @uevent (NULL when it
 * has no such file) trimmed; when that text is @tainted (it failed the
 * checks), what its netlink event said (@netlink) or nothing; without a
 * text, its properties. @dev: its sysfs "dev" (devt_is_consistent()).
 */
static void uevent_value(struct udev_device *d, bool netlink, const char *uevent, bool tainted,
			 const char *dev, char *buf, size_t size)
{
	buf[0] = '\0';
	if (uevent && !tainted) {
		dm_uevent_trim(buf, size, uevent);
	} else if (tainted) {
		if (netlink)
			uevent_from_event(d, devt_is_consistent(d, dev), buf, size);
	} else {
		size_t len = 0;
		struct udev_list_entry *e;
		udev_list_entry_foreach(e, udev_device_get_properties_list_entry(d)) {
			if (!dm_uevent_append(buf, size, &len, udev_list_entry_get_name(e),
					      udev_list_entry_get_value(e)))
				break;
		}
	}
}

/*
 * @netlink: @d came from the hotplug monitor, its properties from the
 * kernel's event (clean); otherwise libudev made it from its syspath and
 * parses its sysfs uevent text for properties, devtype and devnode. That
 * text is checked first (dm_uevent_check(), and against the device number,
 * dm_uevent_check_devt()): a device string with a newline can add lines to
 * it, and an injected DEVNAME makes libudev abort. A device whose text
 * fails is logged, and libudev is asked nothing that parses it.
 */
static int record_device(struct dm_scan *s, struct udev_device *d, bool netlink)
{
	const char *devpath = udev_device_get_devpath(d);
	if (!devpath)
		return -EINVAL;
	if (dm_scan_find(s, devpath))
		return 0; /* seen as someone's ancestor */
	/* read, not parsed; "dev" is the kernel's "%u:%u", no device string */
	const char *uevent = udev_device_get_sysattr_value(d, "uevent");
	const char *dev = udev_device_get_sysattr_value(d, "dev");
	bool tainted = uevent &&
		       (dm_uevent_check(uevent) < 0 || dm_uevent_check_devt(uevent, dev) < 0);
	if (tainted)
		log_warn("udev: %s: its uevent text is not what the kernel writes (a device string "
			 "with a newline?): ignored%s",
			 devpath, netlink ? ", the event's properties kept" : "");
	/* whether libudev may parse what it knows of @d */
	bool trusted = netlink || !tainted;

	struct dm_record *rec;
	int r = dm_scan_get(s, devpath, &rec);
	if (r < 0)
		return r;
	/* one device's scan climbs only up to the first ancestor the model has */
	char known[PATH_MAX];
	bool climb = !(s->model && known_parent(s, devpath, known, sizeof(known)));
	struct udev_device *parent = climb ? udev_device_get_parent(d) : NULL;
	const char *ppath = climb ? (parent ? udev_device_get_devpath(parent) : NULL) : known;
	if (ppath)
		r |= dm_record_set_string(&rec->parent, ppath);
	else if (container_parent(s, rec) < 0)
		return -ENOMEM;
	r |= dm_record_set_string(&rec->subsystem, udev_device_get_subsystem(d));
	/* the driver link, or the uevent's DRIVER where a recording kept only that */
	const char *driver = udev_device_get_driver(d);
	if (!driver && trusted)
		driver = udev_device_get_property_value(d, "DRIVER");
	r |= dm_record_set_string(&rec->driver, driver);
	r |= classify(d, rec);
	char shown[DM_ATTR_MAX];
	pick_name(d, trusted, shown, sizeof(shown));
	r |= dm_record_set(rec, "name", shown);
	/* The clash rule (docs/design.md §6.2): a class device that shares its
	 * name with a sibling is named "<class>:<name>". A full scan applies it
	 * over all its records at commit; one device's scan (hotplug) has not
	 * the siblings among its records, so sysfs says. */
	const char *above = rec->parent; /* a container too, as the full scan groups them */
	size_t alen = above ? strlen(above) : 0;
	char psys[PATH_MAX];
	if (s->partial && rec->class_name && above && strncmp(devpath, above, alen) == 0 &&
	    devpath[alen] == '/' && snprintf(psys, sizeof(psys), "/sys%s", above) < (int)sizeof(psys) &&
	    sibling_has_name(psys, udev_device_get_sysname(d), devpath + alen + 1)) {
		char *name;
		if (asprintf(&name, "%s:%s", rec->class_name, rec->name) < 0)
			return -ENOMEM;
		rec->sysname = rec->name;
		rec->name = name;
	}

	char text[DM_ATTR_MAX];
	uevent_value(d, netlink, uevent, tainted, dev, text, sizeof(text));
	/* an empty text of sysfs's is left to the sysfs file, passed through
	 * (sysfs-attrs.h), which shows it as it is: no line at all */
	if (*text || !uevent || tainted)
		r |= dm_record_set(rec, "uevent", text);
	/* modalias and dev as sysfs has them, byte for byte (sysfs-value.h);
	 * the properties' where sysfs has no such file */
	const char *syspath = udev_device_get_syspath(d);
	int has = dm_sysfs_value_set(rec, syspath, "modalias", 0);
	const char *modalias = has == 0 && trusted ? udev_device_get_property_value(d, "MODALIAS")
						   : NULL;
	if (modalias)
		r |= set_trimmed(rec, "modalias", modalias);
	r |= has < 0;
	bool node_ok = trusted && devt_is_consistent(d, dev) &&
		       devname_is_safe(udev_device_get_property_value(d, "DEVNAME"));
	const char *devnode = node_ok ? udev_device_get_devnode(d) : NULL;
	if (devnode) {
		r |= dm_record_set(rec, "devnode", devnode);
		if (rec->class_name)
			r |= set_interface(rec, d, devnode);
	}
	if (dev) {
		r |= dm_sysfs_value_set(rec, syspath, "dev", 0) < 0;
	} else if (trusted && udev_device_get_property_value(d, "MAJOR") &&
		   udev_device_get_property_value(d, "MINOR")) {
		char mm[64];
		snprintf(mm, sizeof(mm), "%s:%s", udev_device_get_property_value(d, "MAJOR"),
			 udev_device_get_property_value(d, "MINOR"));
		r |= dm_record_set(rec, "dev", mm);
	}
	if (r)
		return -ENOMEM;

	return parent ? record_device(s, parent, false) : 0;
}

int dm_udev_refresh_uevent(struct dm_device *dev, struct udev_device *d)
{
	const char *uevent = udev_device_get_sysattr_value(d, "uevent");
	if (!uevent)
		return 0; /* gone from sysfs meanwhile: its remove event follows */
	const char *devt = udev_device_get_sysattr_value(d, "dev");
	bool tainted = dm_uevent_check(uevent) < 0 || dm_uevent_check_devt(uevent, devt) < 0;
	if (tainted)
		log_warn("udev: %s: its uevent text is not what the kernel writes (a device string "
			 "with a newline?): ignored, the event's properties kept",
			 udev_device_get_devpath(d));
	char text[DM_ATTR_MAX], old[DM_ATTR_MAX];
	uevent_value(d, true, uevent, tainted, devt, text, sizeof(text));
	if (!*text && !tainted)
		return 0; /* an empty text: sysfs's file shows it */
	if (dm_device_get_value(dev, "uevent", old, sizeof(old)) >= 0 && strcmp(old, text) == 0)
		return 0;
	int r = dm_device_set_value(dev, "uevent", text);
	return r < 0 ? r : 1;
}

static int udev_scan(struct dm_scan *s)
{
	struct udev *udev = udev_new();
	if (!udev)
		return -errno ?: -ENOMEM;
	struct udev_enumerate *en = udev_enumerate_new(udev);
	int r = -ENOMEM;
	if (!en)
		goto out_udev;
	/* an error in one directory (a device that went meanwhile) still
	 * leaves the others listed: a rescan that took none would remove
	 * them all */
	r = udev_enumerate_scan_devices(en);
	if (r < 0)
		log_warn("udev: enumeration: %s; recording the devices it listed", strerror(-r));

	struct udev_list_entry *e;
	udev_list_entry_foreach(e, udev_enumerate_get_list_entry(en)) {
		struct udev_device *d = udev_device_new_from_syspath(udev, udev_list_entry_get_name(e));
		if (!d)
			continue; /* gone meanwhile */
		r = record_device(s, d, false);
		udev_device_unref(d);
		if (r < 0) {
			log_warn("udev: %s: %s", udev_list_entry_get_name(e), strerror(-r));
			if (r == -ENOMEM)
				goto out_enum;
		}
	}
	r = 0;
out_enum:
	udev_enumerate_unref(en);
out_udev:
	udev_unref(udev);
	return r;
}

/* Records @d and its ancestors (a scan with @model set: up to the first
 * ancestor the model has); *ret (may be NULL) gets @d's record. -ENODEV
 * when it has left sysfs (its remove event follows); other errors are
 * logged. */
static int udev_record(struct dm_scan *s, struct udev_device *d, struct dm_record **ret)
{
	char uevent[PATH_MAX];
	/* gone meanwhile: its remove event follows */
	snprintf(uevent, sizeof(uevent), "%s/uevent", udev_device_get_syspath(d));
	if (access(uevent, F_OK) < 0)
		return -ENODEV;
	int r = record_device(s, d, true);
	if (r < 0)
		log_warn("udev: %s: %s", udev_device_get_devpath(d), strerror(-r));
	else if (ret)
		*ret = dm_scan_find(s, udev_device_get_devpath(d));
	return r;
}

static int record_nth(struct dm_scan *s, size_t i, void *data, struct dm_record **ret)
{
	struct udev_device *const *ds = data;
	return udev_record(s, ds[i], ret);
}

int dm_udev_scan_devices(struct dm_model *m, struct udev_device *const *ds, size_t n,
			 const struct dm_scan_sources *src, struct dm_source_cache *cache)
{
	return dm_scan_devices(m, n, record_nth, (void *)ds, src, cache);
}

const struct dm_source_ops dm_source_udev = {
	.name = "udev",
	.scan = udev_scan,
};
