/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sysfs-attrs.c - a device's own sysfs attributes, passed through. */
#include "sysfs-attrs.h"

#include "drivers/runner.h"
#include "util/readall.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How long a write may take before the writer gets ETIMEDOUT (the write
 * itself goes on in the background, as the runner does it). */
#define SYSFS_WRITE_TIMEOUT_MS 5000
/* The most of a value read: sysfs attributes hold a page, binary ones
 * (USB descriptors, PCI VPD) rarely more than a few. */
#define SYSFS_VALUE_MAX ((size_t)1 << 20)

/* ---- what the tree shows ---- */

enum dm_sysfs_attr_policy dm_sysfs_attr_policy(const char *name)
{
	/* Memory-mapped or capability-limited files (PCI ROM, legacy spaces,
	 * VPD; config below): docs/design.md §6.7. */
	static const char *const left_out[] = { "legacy_io", "legacy_mem", "rom", "vpd" };
	/* Files that change the device set or its bindings, or act at once
	 * when written (eject, reset), are shown as the kernel has them but
	 * never written through the tree: a readable one (a console's bind,
	 * 1 or 0) reads as in sysfs, a write-only one has nothing to show.
	 * Binding and authorization are the binding work's, through its
	 * transaction; a write to uevent makes the kernel send an event. */
	static const char *const read_only[] = {
		"authorized", "authorized_default", "bind",	"delete", "driver_override",
		"eject",      "new_id",		    "remove",	"remove_id", "rescan",
		"reset",      "scan",		    "uevent",	"unbind",
	};
	for (size_t i = 0; i < sizeof(left_out) / sizeof(left_out[0]); i++)
		if (strcmp(name, left_out[i]) == 0)
			return DM_SYSFS_LEFT_OUT;
	if (strcmp(name, "config") == 0)
		return DM_SYSFS_PCI_CONFIG;
	/* resource0, resource0_wc, resource2_uc ...: mmap() only */
	if (strncmp(name, "resource", 8) == 0 && name[8] >= '0' && name[8] <= '9')
		return DM_SYSFS_LEFT_OUT;
	for (size_t i = 0; i < sizeof(read_only) / sizeof(read_only[0]); i++)
		if (strcmp(name, read_only[i]) == 0)
			return DM_SYSFS_READ_ONLY;
	return DM_SYSFS_PASS;
}

static int sysfs_show(struct dm_device *dev, const struct dm_attribute *attr, char **ret,
		      size_t *ret_len);
static int sysfs_store(struct dm_device *dev, const struct dm_attribute *attr, const char *buf,
		       size_t len);
static int sysfs_open_source(struct dm_device *dev, const struct dm_attribute *attr);
static ssize_t sysfs_read_range(struct dm_device *dev, const struct dm_attribute *attr, char *buf,
				size_t size, off_t off);

/* What every passed-through attribute is made like (dm_attribute_intern()). */
static const struct dm_attribute sysfs_kind = {
	.flags = DM_ATTR_LIVE | DM_ATTR_SYSFS,
	.show_alloc = sysfs_show,
	.store = sysfs_store,
	.open_source = sysfs_open_source,
};

/* The same for the binary attributes a device gives piece by piece, at
 * the time of its bus (an EEPROM over SMBus, an EDID over DDC), which
 * sysfs reads by offset and size: each read the daemon makes reads what
 * the reader asked for, no more (docs/design.md §6.7). */
static const struct dm_attribute sysfs_binary_kind = {
	.flags = DM_ATTR_LIVE | DM_ATTR_SYSFS,
	.show_alloc = sysfs_show,
	.store = sysfs_store,
	.open_source = sysfs_open_source,
	.read_range = sysfs_read_range,
};

bool dm_sysfs_attr_is_ranged(const char *name)
{
	static const char *const ranged[] = {
		"config", "descriptors", "edid", "eeprom", "nvmem", "report_descriptor",
	};
	for (size_t i = 0; i < sizeof(ranged) / sizeof(ranged[0]); i++)
		if (strcmp(name, ranged[i]) == 0)
			return true;
	return false;
}

/* ---- sysfs ---- */

/* The longest directory path and the deepest nesting passed through. */
#define DIR_PATH_MAX 200
#define DIR_DEPTH_MAX 8

/* "/sys<devpath>[/<rel>]" into @buf. */
static int sysfs_path(struct dm_device *dev, const char *rel, char *buf, size_t size)
{
	const char *devpath = dm_device_get_devpath(dev);
	if (!devpath)
		return -ENOENT;
	int n = rel ? snprintf(buf, size, "/sys%s/%s", devpath, rel)
		    : snprintf(buf, size, "/sys%s", devpath);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* "@dir/@name", or @name when @dir is NULL, into @buf. */
static int join(const char *dir, const char *name, char *buf, size_t size)
{
	int n = dir ? snprintf(buf, size, "%s/%s", dir, name) : snprintf(buf, size, "%s", name);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Whether the directory @path holds a device (a subdirectory with a uevent
 * file): class glue such as block/ or net/, which the tree shows as devices. */
static bool holds_devices(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return false;
	bool found = false;
	char sub[PATH_MAX];
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.' || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
			continue;
		found = (size_t)snprintf(sub, sizeof(sub), "%s/%s/uevent", path, e->d_name) <
				sizeof(sub) &&
			access(sub, F_OK) == 0;
	}
	closedir(d);
	return found;
}

/* Whether @name, a subdirectory of the device's directory (@top) or of one
 * of its attribute directories, at @path, is an attribute directory: a real
 * directory that is neither a device, nor glue holding devices, nor the
 * device's power/ (which the tree shows as pm/). */
/* A name sysfs shows: a valid one that is not a dot file. Listings leave
 * dot files out (the kernel makes none; a testbed or a tool may), so a
 * look-up finds none either: what is not listed is not there. */
static bool shown_name(const char *name)
{
	return dm_name_is_valid(name) && name[0] != '.';
}

static bool is_attr_dir(const char *path, const char *name, bool top)
{
	struct stat st;
	char uevent[PATH_MAX];
	if ((top && strcmp(name, "power") == 0) || !shown_name(name) ||
	    lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return false;
	if ((size_t)snprintf(uevent, sizeof(uevent), "%s/uevent", path) >= sizeof(uevent) ||
	    access(uevent, F_OK) == 0)
		return false;
	return !holds_devices(path);
}

static bool sysfs_has_dir(struct dm_device *dev, const char *dir)
{
	char rel[DIR_PATH_MAX + 1], path[PATH_MAX];
	if (!dir || strlen(dir) > DIR_PATH_MAX)
		return false;
	snprintf(rel, sizeof(rel), "%s", dir);
	/* every part on the way must be an attribute directory */
	int depth = 0;
	for (char *p = rel;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		const char *name = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
		if (++depth > DIR_DEPTH_MAX || sysfs_path(dev, rel, path, sizeof(path)) < 0 ||
		    !is_attr_dir(path, name, depth == 1))
			return false;
		*p = c;
		if (!c)
			return true;
	}
}

static int sysfs_for_each_dir(struct dm_device *dev, const char *dir,
			      int (*fn)(const char *, void *), void *data)
{
	char path[PATH_MAX], sub[PATH_MAX];
	if (dir && !sysfs_has_dir(dev, dir))
		return 0;
	if (sysfs_path(dev, dir, path, sizeof(path)) < 0)
		return 0;
	int depth = 1;
	for (const char *c = dir; c && *c; c++)
		depth += *c == '/';
	if (dir && depth >= DIR_DEPTH_MAX)
		return 0;
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int r = 0;
	struct dirent *e;
	while (!r && (e = readdir(d))) {
		if (e->d_name[0] == '.' || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) >= sizeof(sub) ||
		    (dir && strlen(dir) + 1 + strlen(e->d_name) > DIR_PATH_MAX))
			continue;
		if (is_attr_dir(sub, e->d_name, !dir))
			r = fn(e->d_name, data);
	}
	closedir(d);
	return r;
}

/* Whether the attribute file @path is a PCI function's: its directory's
 * subsystem link ends in bus/pci. */
static bool on_pci(const char *path)
{
	char link[PATH_MAX], target[PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (!slash || (size_t)snprintf(link, sizeof(link), "%.*s/subsystem", (int)(slash - path),
				       path) >= sizeof(link))
		return false;
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	const char *base = strrchr(target, '/');
	return base && strcmp(base, "/pci") == 0 && base - target >= 4 &&
	       strncmp(base - 4, "/bus", 4) == 0;
}

/* The attribute of the regular file @path (whose lstat() is @st), @rel
 * under the device's directory, named @name, or NULL. */
static const struct dm_attribute *attr_of_stat(const char *path, const struct stat *st,
					       const char *rel, const char *name)
{
	enum dm_sysfs_attr_policy p = dm_sysfs_attr_policy(name);
	if (p == DM_SYSFS_LEFT_OUT || !S_ISREG(st->st_mode) ||
	    (p == DM_SYSFS_PCI_CONFIG && (strchr(rel, '/') || !on_pci(path))))
		return NULL;
	mode_t mode = st->st_mode & 0777;
	if (p != DM_SYSFS_PASS)
		mode &= ~(mode_t)0222;
	if (!mode) /* a file neither root nor anyone may read or write is of no use */
		return NULL;
	return dm_attribute_intern(dm_sysfs_attr_is_ranged(name) ? &sysfs_binary_kind : &sysfs_kind,
				   rel, mode);
}

/* The same, looked at first. */
static const struct dm_attribute *attr_of(const char *path, const char *rel, const char *name)
{
	struct stat st;
	return lstat(path, &st) < 0 ? NULL : attr_of_stat(path, &st, rel, name);
}

static int sysfs_for_each(struct dm_device *dev, const char *dir,
			  int (*fn)(const struct dm_attribute *, void *), void *data)
{
	char path[PATH_MAX], file[PATH_MAX], rel[PATH_MAX];
	if ((dir && !sysfs_has_dir(dev, dir)) || sysfs_path(dev, dir, path, sizeof(path)) < 0)
		return 0;
	DIR *d = opendir(path);
	if (!d)
		return 0; /* gone meanwhile: nothing to show */
	int r = 0;
	struct dirent *e;
	while (!r && (e = readdir(d))) {
		if (e->d_name[0] == '.' || (e->d_type != DT_REG && e->d_type != DT_UNKNOWN))
			continue;
		if ((size_t)snprintf(file, sizeof(file), "%s/%s", path, e->d_name) >= sizeof(file) ||
		    join(dir, e->d_name, rel, sizeof(rel)) < 0)
			continue;
		const struct dm_attribute *a = attr_of(file, rel, e->d_name);
		if (a)
			r = fn(a, data);
	}
	closedir(d);
	return r;
}

static const struct dm_attribute *sysfs_find(struct dm_device *dev, const char *dir,
					     const char *name)
{
	char rel[PATH_MAX], path[PATH_MAX];
	if (!shown_name(name) || (dir && !sysfs_has_dir(dev, dir)) ||
	    join(dir, name, rel, sizeof(rel)) < 0 || sysfs_path(dev, rel, path, sizeof(path)) < 0)
		return NULL;
	return attr_of(path, rel, name);
}

/* Whether the device's own directory shows @name: an attribute, or an
 * attribute directory; one lstat() where nothing has the name (most asks:
 * docs/design.md §6.2 asks it of each of driverfsd's own names). */
static bool sysfs_has(struct dm_device *dev, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	if (!shown_name(name) || sysfs_path(dev, name, path, sizeof(path)) < 0 ||
	    lstat(path, &st) < 0)
		return false;
	if (S_ISDIR(st.st_mode))
		return is_attr_dir(path, name, true);
	return attr_of_stat(path, &st, name, name) != NULL;
}

/* The attribute's sysfs file, opened for reading. O_NONBLOCK: never
 * blocks on what is not an attribute (the look-up took it for a regular
 * file; a testbed's may have changed since). */
static int open_attr(struct dm_device *dev, const struct dm_attribute *attr)
{
	char path[PATH_MAX];
	int r = sysfs_path(dev, dm_attribute_path(attr), path, sizeof(path));
	if (r < 0)
		return r;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

/* The whole value, as sysfs gives it (its newline included). */
static int sysfs_show(struct dm_device *dev, const struct dm_attribute *attr, char **ret,
		      size_t *ret_len)
{
	int fd = open_attr(dev, attr);
	if (fd < 0)
		return fd;
	int r = dm_read_value(fd, SYSFS_VALUE_MAX, ret, ret_len);
	close(fd);
	/* config: what a reader without CAP_SYS_ADMIN gets, the header (its
	 * type at 0x0e; 2, a CardBus bridge's, is twice as long) */
	if (r == 0 && dm_sysfs_attr_policy(attr->name) == DM_SYSFS_PCI_CONFIG) {
		size_t keep = *ret_len > 0x0e && ((*ret)[0x0e] & 0x7f) == 2 ? 128 : 64;
		if (*ret_len > keep)
			*ret_len = keep;
	}
	return r;
}

/* The part of a binary value a reader asked for, read from the sysfs
 * file at its offset (sysfs reads a binary attribute so, and calls the
 * device for that part only). PCI config is cut where sysfs_show() cuts
 * it, its header type read (one byte) only when the part goes past 64. */
static ssize_t sysfs_read_range(struct dm_device *dev, const struct dm_attribute *attr, char *buf,
				size_t size, off_t off)
{
	int fd = open_attr(dev, attr);
	if (fd < 0)
		return fd;
	if (dm_sysfs_attr_policy(attr->name) == DM_SYSFS_PCI_CONFIG) {
		size_t keep = 64;
		unsigned char type = 0;
		if ((size_t)off + size > 64 && pread(fd, &type, 1, 0x0e) == 1 && (type & 0x7f) == 2)
			keep = 128;
		size = (size_t)off >= keep ? 0 : size < keep - (size_t)off ? size : keep - (size_t)off;
	}
	ssize_t r = dm_pread_all(fd, buf, size, off);
	close(fd);
	return r;
}

/* The attribute's sysfs file, for a reader the kernel serves from it: a
 * regular file read unchanged. PCI config is not (what a reader without
 * CAP_SYS_ADMIN gets is cut above, and a read through the descriptor
 * would be made with the daemon's capabilities). */
static int sysfs_open_source(struct dm_device *dev, const struct dm_attribute *attr)
{
	if (dm_sysfs_attr_policy(attr->name) == DM_SYSFS_PCI_CONFIG)
		return -EOPNOTSUPP;
	char path[PATH_MAX];
	int r = sysfs_path(dev, dm_attribute_path(attr), path, sizeof(path));
	return r < 0 ? r : dm_open_value_file(path);
}

/* One value per write, to the kernel, which checks it: its answer is the
 * writer's (EINVAL, EBUSY, EPERM ...). */
static int sysfs_store(struct dm_device *dev, const struct dm_attribute *attr, const char *buf,
		       size_t len)
{
	char path[PATH_MAX], label[300];
	(void)len;
	if (dm_sysfs_attr_policy(attr->name) != DM_SYSFS_PASS)
		return -EACCES;
	int r = sysfs_path(dev, dm_attribute_path(attr), path, sizeof(path));
	if (r < 0)
		return r;
	snprintf(label, sizeof(label), "%s %s", dm_attribute_path(attr), dm_device_get_name(dev));
	return dm_run_write(label, path, buf, SYSFS_WRITE_TIMEOUT_MS);
}

const struct dm_attribute_group dm_sysfs_attrs_group = {
	.for_each = sysfs_for_each,
	.find = sysfs_find,
	.for_each_dir = sysfs_for_each_dir,
	.has_dir = sysfs_has_dir,
	.has = sysfs_has,
};
