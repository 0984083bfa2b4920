/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * view.c - the model as the mount shows it: what each directory node lists
 * (one walker serves lookup and readdir), what a name in it finds, where a
 * link points and what stat says of a node. No FUSE request here: the
 * handlers (fs-nodes.c, fs-files.c) call it, and so do the unit tests,
 * without a mount.
 */
#include "view.h"

#include "core/array.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct walk {
	const struct fs_ref *dir;
	struct dm_device *dev; /* whose files are listed: the directory's, the root device's at the top */
	fs_emit_fn emit;
	void *ctx;
};

static int emit_child(struct dm_device *dev, void *data)
{
	struct walk *w = data;
	struct fs_target t = { .kind = FS_DEV, .dev = dev };
	return w->emit(w->ctx, dm_device_get_name(dev), &t, S_IFDIR);
}

static int emit_group(const char *group, void *data)
{
	struct walk *w = data;
	struct fs_target t = { .kind = FS_GROUP, .dev = w->dev, .group = group };
	return w->emit(w->ctx, group, &t, S_IFDIR);
}

/* A subdirectory @name of the group directory being walked: its group is
 * the path to it ("queue/iosched"), valid during the emit only. */
static int emit_subgroup(const char *name, void *data)
{
	struct walk *w = data;
	char path[FS_GROUP_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", w->dir->t.group, name) >= sizeof(path))
		return 0; /* too deep to name: left out */
	struct fs_target t = { .kind = FS_GROUP, .dev = w->dev, .group = path };
	return w->emit(w->ctx, name, &t, S_IFDIR);
}

static int emit_file(const struct dm_file_info *fi, void *data)
{
	struct walk *w = data;
	struct fs_target t = { .kind = FS_ATTR, .dev = w->dev, .group = w->dir->t.group };
	return w->emit(w->ctx, fi->name, &t, S_IFREG);
}

static int emit_link(struct dm_device *dev, void *data)
{
	struct walk *w = data;
	struct fs_target t = { .kind = FS_LINK_TO_DEV, .dev = dev };
	/* bus and class listings name a device as the kernel does */
	return w->emit(w->ctx, dm_device_get_sysname(dev), &t, S_IFLNK);
}

static int emit_bus(struct dm_bus *bus, void *data)
{
	struct walk *w = data;
	struct fs_target t = { .kind = FS_BUS, .bus = bus };
	return w->emit(w->ctx, dm_bus_get_name(bus), &t, S_IFDIR);
}

int fs_view_driver_listing(const struct dm_driver *drv, char *buf, size_t size)
{
	struct dm_bus *bus = dm_driver_get_bus(drv);
	struct dm_class *c = dm_driver_get_class(drv);
	int len = bus ? snprintf(buf, size, "bus/%s/drivers", dm_bus_get_name(bus))
		  : c ? snprintf(buf, size, "class/%s/drivers", dm_class_get_name(c))
		      : -1;
	return len < 0 || (size_t)len >= size ? -ENAMETOOLONG : len;
}

int fs_view_driver_path(const struct dm_driver *drv, char *buf, size_t size)
{
	int len = fs_view_driver_listing(drv, buf, size);
	if (len < 0)
		return len;
	int more = snprintf(buf + len, size - (size_t)len, "/%s", dm_driver_get_name(drv));
	return more < 0 || (size_t)more >= size - (size_t)len ? -ENAMETOOLONG : len + more;
}

static int emit_driver(struct dm_driver *drv, void *data)
{
	struct walk *w = data;
	struct fs_target t = { .kind = FS_DRIVER, .drv = drv };
	return w->emit(w->ctx, dm_driver_get_name(drv), &t, S_IFDIR);
}

/* A driver's own files, beside the links to its devices: what the probe
 * order rests on, so that a client can save the model as driverfsd does;
 * and a kernel driver's bind and unbind, as sysfs has them (write-only),
 * which go through the binding transaction (dm_driver_bind_request()). */
static const char *const driver_files[] = { "kind", "priority", "bind", "unbind" };

bool fs_view_driver_file_writable(const char *name)
{
	return strcmp(name, "bind") == 0 || strcmp(name, "unbind") == 0;
}

/* bind and unbind: on a kernel driver's directory, and on a user
 * driver's that stands for the kernel driver of its name (driverfsd's
 * vfio-pci: docs/design.md §3.4), when the kernel has it. */
static bool driver_has_file(struct dm_driver *drv, const char *name)
{
	if (!fs_view_driver_file_writable(name) || dm_driver_get_kind(drv) == DM_DRIVER_KERNEL)
		return true;
	char path[PATH_MAX];
	struct stat st;
	struct dm_bus *bus = dm_driver_get_bus(drv);
	return bus &&
	       (size_t)snprintf(path, sizeof(path), "/sys/bus/%s/drivers/%s", dm_bus_get_name(bus),
				dm_driver_get_name(drv)) < sizeof(path) &&
	       stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int fs_view_driver_file_show(struct dm_driver *drv, const char *name, char *buf, size_t size)
{
	if (fs_view_driver_file_writable(name))
		return driver_has_file(drv, name) ? dm_emit(buf, size, "%s", "") : -ENOENT;
	if (strcmp(name, "kind") == 0)
		return dm_emit(buf, size, "%s\n",
			       dm_driver_get_kind(drv) == DM_DRIVER_KERNEL ? "kernel" : "user");
	if (strcmp(name, "priority") == 0)
		return dm_emit(buf, size, "%d\n", dm_driver_get_priority(drv));
	return -ENOENT;
}

static int walk_driver_dir(struct walk *w)
{
	struct dm_driver *drv = w->dir->t.drv;
	if (!dm_driver_is_registered_locked(drv))
		return -ENOENT;
	for (size_t i = 0; i < sizeof(driver_files) / sizeof(driver_files[0]); i++) {
		struct fs_target t = { .kind = FS_DRV_ATTR, .drv = drv };
		if (!driver_has_file(drv, driver_files[i]))
			continue;
		int r = w->emit(w->ctx, driver_files[i], &t, S_IFREG);
		if (r)
			return r;
	}
	return dm_driver_for_each_device_locked(drv, emit_link, w);
}

static int emit_class(struct dm_class *c, void *data)
{
	struct walk *w = data;
	struct fs_target t = { .kind = FS_CLASS, .class = c };
	return w->emit(w->ctx, dm_class_get_name(c), &t, S_IFDIR);
}

/* class/<class>/drivers/: a link <bus>:<driver> per bus driver */
static int emit_bus_driver(struct dm_driver *drv, void *data)
{
	struct walk *w = data;
	char name[2 * DM_NAME_MAX + 2];
	snprintf(name, sizeof(name), "%s:%s", dm_bus_get_name(dm_driver_get_bus(drv)),
		 dm_driver_get_name(drv));
	struct fs_target t = { .kind = FS_LINK_TO_DRV, .drv = drv };
	return w->emit(w->ctx, name, &t, S_IFLNK);
}

static int walk_class_drivers(struct walk *w)
{
	/* the class's own drivers (docs/design.md §7.6), then a link for each
	 * driver of the devices' bus parents (a class driver's name has no
	 * ':', so the two never clash) */
	int r = dm_class_for_each_driver_locked(w->dir->t.class, emit_driver, w);
	if (r)
		return r;
	/* kept per model generation (each lookup here walked the class) */
	return dm_class_for_each_bus_driver_locked(w->dir->t.class, emit_bus_driver, w);
}

static int emit_iface(struct dm_interface *i, void *data)
{
	struct walk *w = data;
	struct fs_target t = { .kind = FS_IFACE, .iface = i };
	return w->emit(w->ctx, dm_interface_get_name(i), &t, S_IFDIR);
}

/* driverfsd's own entry @own of the device directory being walked, under
 * the name it is served under (docs/design.md §6.2). */
static int emit_own(struct walk *w, const char *own, const struct fs_target *t, mode_t type)
{
	char name[DM_NAME_MAX + 1];
	if (dm_device_own_name_locked(w->dev, own, name, sizeof(name)) < 0)
		return 0;
	return w->emit(w->ctx, name, t, type);
}

static int emit_link_end(struct dm_link *l, void *data)
{
	struct walk *w = data;
	bool consumers = w->dir->t.kind == FS_DEV_CONSUMERS;
	struct dm_device *end = consumers ? dm_link_get_consumer(l) : dm_link_get_supplier(l);
	char name[256];
	if (dm_device_is_dead(end) || dm_device_link_name_locked(end, name, sizeof(name)) < 0)
		return 0;
	struct fs_target t = { .kind = FS_LINK_TO_DEV, .dev = end };
	return w->emit(w->ctx, name, &t, S_IFLNK);
}

static int first_link(struct dm_link *l, void *data)
{
	(void)l, (void)data;
	return 1;
}

/* suppliers/ and consumers/, each where the device has such links */
static int emit_link_dirs(struct walk *w, struct dm_device *dev)
{
	int r = 0;
	if (dm_device_for_each_link_locked(dev, false, first_link, NULL)) {
		struct fs_target t = { .kind = FS_DEV_SUPPLIERS, .dev = dev };
		r = emit_own(w, "suppliers", &t, S_IFDIR);
	}
	if (!r && dm_device_for_each_link_locked(dev, true, first_link, NULL)) {
		struct fs_target t = { .kind = FS_DEV_CONSUMERS, .dev = dev };
		r = emit_own(w, "consumers", &t, S_IFDIR);
	}
	return r;
}

static int walk_device_dir(struct walk *w)
{
	struct dm_device *dev = w->dev;
	int r = dm_device_for_each_child_locked(dev, emit_child, w);
	/* root/ holds the devices only: the root device's own files are at
	 * the top of the mount, where no device is (walk_top()) */
	if (r || !dm_device_get_parent_locked(dev))
		return r;
	r = dm_device_for_each_group_locked(dev, emit_group, w);
	if (!r)
		r = dm_device_for_each_file_locked(dev, NULL, emit_file, w);
	if (!r && (dm_device_get_bus_locked(dev) || dm_device_get_class_locked(dev))) {
		struct fs_target t = { .kind = FS_LINK_FROM_DEV, .dev = dev };
		r = emit_own(w, "subsystem", &t, S_IFLNK);
	}
	if (!r && dm_device_get_driver_locked(dev)) {
		struct fs_target t = { .kind = FS_LINK_FROM_DEV, .dev = dev };
		r = emit_own(w, "driver", &t, S_IFLNK);
	}
	if (!r)
		r = emit_link_dirs(w, dev);
	/* a link's own device: its two ends */
	struct dm_link *l = dm_device_get_link_locked(dev);
	if (!r && l && !dm_device_is_dead(dm_link_get_supplier(l))) {
		struct fs_target t = { .kind = FS_LINK_TO_DEV, .dev = dm_link_get_supplier(l) };
		r = emit_own(w, "supplier", &t, S_IFLNK);
	}
	if (!r && l && !dm_device_is_dead(dm_link_get_consumer(l))) {
		struct fs_target t = { .kind = FS_LINK_TO_DEV, .dev = dm_link_get_consumer(l) };
		r = emit_own(w, "consumer", &t, S_IFLNK);
	}
	return r;
}

/* The names of the three views at the top of the mount. */
static bool fs_view_top_name(const char *name)
{
	return strcmp(name, "root") == 0 || strcmp(name, "bus") == 0 || strcmp(name, "class") == 0;
}

/* The root device's groups and files at the top, less any a snapshot
 * names as the three views are named. */
static int emit_top_group(const char *group, void *data)
{
	return fs_view_top_name(group) ? 0 : emit_group(group, data);
}

static int emit_top_file(const struct dm_file_info *fi, void *data)
{
	return fs_view_top_name(fi->name) ? 0 : emit_file(fi, data);
}

/* The mount's top: root/, bus/, class/, and the whole system's controls,
 * which are the root device's files (its power, journal, metrics ...). */
static int walk_top(struct walk *w)
{
	struct fs_target t = { .kind = FS_DEV, .dev = w->dev };
	int r = w->emit(w->ctx, "root", &t, S_IFDIR);
	t = (struct fs_target){ .kind = FS_BUSES };
	if (!r)
		r = w->emit(w->ctx, "bus", &t, S_IFDIR);
	t = (struct fs_target){ .kind = FS_CLASSES };
	if (!r)
		r = w->emit(w->ctx, "class", &t, S_IFDIR);
	if (!r)
		r = dm_device_for_each_group_locked(w->dev, emit_top_group, w);
	if (!r)
		r = dm_device_for_each_file_locked(w->dev, NULL, emit_top_file, w);
	return r;
}

int fs_view_walk_locked(struct dm_model *m, const struct fs_ref *dir, fs_emit_fn emit, void *ctx)
{
	dm_model_assert_held(m);
	struct walk w = { .dir = dir, .dev = dir->t.kind == FS_TOP ? dm_model_get_root(m) : dir->t.dev,
			  .emit = emit, .ctx = ctx };
	const struct fs_target *d = &dir->t;
	struct fs_target t = { 0 };
	int r;

	if (d->dev && dm_device_is_dead(d->dev))
		return -ENOENT;
	switch (d->kind) {
	case FS_TOP:
		r = walk_top(&w);
		break;
	case FS_DEV:
		r = walk_device_dir(&w);
		break;
	case FS_DEV_SUPPLIERS:
	case FS_DEV_CONSUMERS:
		r = dm_device_for_each_link_locked(d->dev, d->kind == FS_DEV_CONSUMERS,
						   emit_link_end, &w);
		break;
	case FS_GROUP:
		r = dm_device_for_each_dir_locked(d->dev, d->group, emit_subgroup, &w);
		if (!r)
			r = dm_device_for_each_file_locked(d->dev, d->group, emit_file, &w);
		break;
	case FS_BUSES:
		r = dm_model_for_each_bus_locked(m, emit_bus, &w);
		break;
	case FS_BUS:
		t = (struct fs_target){ .kind = FS_BUS_DEVICES, .bus = d->bus };
		r = emit(ctx, "devices", &t, S_IFDIR);
		t = (struct fs_target){ .kind = FS_BUS_DRIVERS, .bus = d->bus };
		if (!r)
			r = emit(ctx, "drivers", &t, S_IFDIR);
		break;
	case FS_BUS_DEVICES:
		r = dm_bus_for_each_device_locked(d->bus, emit_link, &w);
		break;
	case FS_BUS_DRIVERS:
		r = dm_bus_for_each_driver_locked(d->bus, emit_driver, &w);
		break;
	case FS_DRIVER:
		r = walk_driver_dir(&w);
		break;
	case FS_CLASSES:
		r = dm_model_for_each_class_locked(m, emit_class, &w);
		break;
	case FS_CLASS:
		t = (struct fs_target){ .kind = FS_CLASS_DEVICES, .class = d->class };
		r = emit(ctx, "devices", &t, S_IFDIR);
		t = (struct fs_target){ .kind = FS_CLASS_DRIVERS, .class = d->class };
		if (!r)
			r = emit(ctx, "drivers", &t, S_IFDIR);
		if (!r)
			r = dm_class_for_each_interface_locked(d->class, emit_iface, &w);
		break;
	case FS_CLASS_DEVICES:
		r = dm_class_for_each_device_locked(d->class, emit_link, &w);
		break;
	case FS_CLASS_DRIVERS:
		r = walk_class_drivers(&w);
		break;
	case FS_IFACE:
		r = dm_interface_for_each_device_locked(d->iface, emit_link, &w);
		break;
	default:
		return -ENOTDIR;
	}
	return r > 0 ? 0 : r;
}

/* "../" @levels times into @buf: the start of a link's target. Returns
 * the length, or -ENAMETOOLONG when that and a NUL do not fit. */
static int up_path(char *buf, size_t size, unsigned levels)
{
	if ((size_t)levels * 3 >= size)
		return -ENAMETOOLONG;
	for (unsigned i = 0; i < levels; i++)
		memcpy(buf + 3 * (size_t)i, "../", 3);
	buf[3 * (size_t)levels] = '\0';
	return (int)(3 * levels);
}

int fs_view_link_target_locked(const struct fs_ref *n, char *buf, size_t size)
{
	char path[PATH_MAX];
	struct dm_device *dev = n->t.dev;
	if (n->t.kind == FS_LINK_TO_DRV ? !dm_driver_is_registered_locked(n->t.drv)
					: dm_device_is_dead(dev))
		return -ENOENT;
	/* as deep as the tree goes: the target climbs to the mount root */
	int k = up_path(buf, size, n->depth - 1);
	if (k < 0)
		return k;
	buf += k;
	size -= (size_t)k;
	int len;
	if (n->t.kind == FS_LINK_TO_DEV) {
		if (dm_device_path_locked(dev, path, sizeof(path)) < 0)
			return -ENAMETOOLONG;
		len = snprintf(buf, size, "root%s%s", *path ? "/" : "", path);
	} else if (n->t.kind == FS_LINK_TO_DRV || strcmp(dm_own_name_base(n->name), "driver") == 0) {
		struct dm_driver *drv = n->t.kind == FS_LINK_TO_DRV ? n->t.drv
								     : dm_device_get_driver_locked(dev);
		if (!drv)
			return -ENOENT;
		len = fs_view_driver_path(drv, buf, size);
		return len < 0 ? len : k + len;
	} else {
		struct dm_bus *bus = dm_device_get_bus_locked(dev);
		struct dm_class *c = dm_device_get_class_locked(dev);
		if (bus)
			len = snprintf(buf, size, "bus/%s", dm_bus_get_name(bus));
		else if (c)
			len = snprintf(buf, size, "class/%s", dm_class_get_name(c));
		else
			return -ENOENT;
	}
	return len < 0 || (size_t)len >= size ? -ENAMETOOLONG : k + len;
}

int fs_view_stat(struct dm_model *m, const struct timespec *start, const struct fs_ref *n,
		 struct stat *st, double *ret_timeout)
{
	if (ret_timeout)
		*ret_timeout = FS_ATTR_TIMEOUT;
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_atim = st->st_mtim = st->st_ctim = *start;
	st->st_blksize = 4096;

	if (fs_kind_is_dir(n->t.kind)) {
		if (n->t.dev && dm_device_is_dead(n->t.dev))
			return -ENOENT;
		if (n->t.kind == FS_GROUP) {
			struct dm_file_info fi;
			dm_model_read_lock(m);
			int r = dm_device_stat_file_locked(n->t.dev, n->t.group, NULL, &fi);
			dm_model_unlock(m);
			if (r < 0)
				return -ENOENT;
		}
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (n->t.kind == FS_DRV_ATTR) {
		/* fixed for the driver's lifetime: cached like static values */
		char buf[64];
		dm_model_read_lock(m);
		bool registered = dm_driver_is_registered_locked(n->t.drv);
		dm_model_unlock(m);
		int len = fs_view_driver_file_show(n->t.drv, n->name, buf, sizeof(buf));
		if (!registered || len < 0)
			return -ENOENT;
		st->st_mode = S_IFREG | (fs_view_driver_file_writable(n->name) ? 0200 : 0444);
		st->st_nlink = 1;
		st->st_size = len;
		return 0;
	}
	if (n->t.kind == FS_ATTR) {
		struct dm_file_info fi;
		dm_model_read_lock(m);
		int r = dm_device_stat_file_locked(n->t.dev, n->t.group, n->name, &fi);
		dm_model_unlock(m);
		if (r < 0)
			return -ENOENT;
		st->st_mode = S_IFREG | (fi.mode & 0777);
		st->st_nlink = 1;
		st->st_size = 4096;
		/* Cached values: the mtime moves with each change of the
		 * device's files, so that an invalidation of the attributes
		 * alone (which waits for no page lock) drops stale pages too. */
		unsigned changes = dm_device_get_changes(n->t.dev);
		st->st_mtim.tv_sec += changes / 1000000000u;
		st->st_mtim.tv_nsec += changes % 1000000000u;
		if (st->st_mtim.tv_nsec >= 1000000000) {
			st->st_mtim.tv_sec++;
			st->st_mtim.tv_nsec -= 1000000000;
		}
		st->st_ctim = st->st_mtim;
		/* The size of a cached value is its length. A live value is read
		 * with direct_io, which a plain read() takes past the size, so
		 * 4096 (as sysfs says) serves, and its attributes are as
		 * lasting as a cached value's (no page of it is ever cached, so
		 * no mtime needs to move); an unbounded one is measured, since
		 * asynchronous reads (aio, io_uring) stop at the size, and
		 * measured again at each stat. */
		if ((fi.flags & DM_ATTR_LIVE) && (fi.flags & DM_ATTR_UNBOUNDED) && ret_timeout)
			*ret_timeout = 0;
		size_t size;
		if ((fi.flags & DM_ATTR_LIVE) && (fi.flags & DM_ATTR_UNBOUNDED) && fi.attr &&
		    fi.attr->size && (fi.mode & 0444)) {
			/* a value costly to build (metrics): the size it keeps */
			if (fi.attr->size(n->t.dev, fi.attr, &size) == 0)
				st->st_size = (off_t)size;
		} else if ((!(fi.flags & DM_ATTR_LIVE) || (fi.flags & DM_ATTR_UNBOUNDED)) &&
			   (fi.mode & 0444)) {
			/* the journal's shared copy: built again only when it
			 * changed, not at each stat */
			struct dm_blob *b;
			int e = dm_device_show_blob(n->t.dev, n->t.group, n->name, &b);
			if (e == -ENODEV || e == -ENOENT)
				return -ENOENT;
			if (e >= 0) {
				st->st_size = (off_t)b->len;
				dm_blob_unref(b);
			}
		}
		return 0;
	}
	char target[PATH_MAX];
	dm_model_read_lock(m);
	int len = fs_view_link_target_locked(n, target, sizeof(target));
	dm_model_unlock(m);
	if (len < 0)
		return -ENOENT;
	st->st_mode = S_IFLNK | 0777;
	st->st_nlink = 1;
	st->st_size = len;
	return 0;
}

struct find_ctx {
	const char *name;
	struct fs_target found;
	bool ok;
};

static int find_emit(void *ctx, const char *name, const struct fs_target *t, mode_t type)
{
	struct find_ctx *f = ctx;
	(void)type;
	if (strcmp(name, f->name) != 0)
		return 0;
	f->found = *t;
	f->ok = true;
	return 1;
}

/* Whether a device is in the listing @data (a struct fs_target of a bus,
 * class, interface or driver listing). */
static bool in_listing(struct dm_device *dev, void *data)
{
	const struct fs_target *d = data;
	switch (d->kind) {
	case FS_BUS_DEVICES:
		return dm_device_get_bus_locked(dev) == d->bus;
	case FS_CLASS_DEVICES:
		return dm_device_get_class_locked(dev) == d->class;
	case FS_IFACE:
		return dm_device_get_interface_locked(dev) == d->iface;
	case FS_DRIVER:
		return dm_device_get_driver_locked(dev) == d->drv;
	default:
		return false;
	}
}

/* Finds @name in the directory @dir without walking it where an index
 * serves: a device's children, the links of bus, class, interface and
 * driver listings (which may hold 10^5 entries). Lock held. */
static bool find_indexed_locked(struct dm_model *m, const struct fs_ref *dir, const char *name,
				struct fs_target *ret, char *group, size_t size)
{
	dm_model_assert_held(m);
	const struct fs_target *d = &dir->t;
	struct dm_device *dev;
	struct dm_file_info fi;
	switch (d->kind) {
	case FS_DEV:
		if (dm_device_is_dead(d->dev))
			return false;
		/* in the order the directory lists them: a child, a group, a
		 * file (the links are found by the walk) */
		dev = dm_device_find_child_locked(d->dev, name);
		if (dev && !dm_device_is_dead(dev)) {
			*ret = (struct fs_target){ .kind = FS_DEV, .dev = dev };
			return true;
		}
		if (!dm_device_get_parent_locked(d->dev))
			return false; /* root/: nothing but devices */
		if (dm_device_stat_file_locked(d->dev, name, NULL, &fi) == 0) {
			*ret = (struct fs_target){ .kind = FS_GROUP, .dev = d->dev, .group = fi.name };
			return true;
		}
		if (dm_device_stat_file_locked(d->dev, NULL, name, &fi) == 0) {
			*ret = (struct fs_target){ .kind = FS_ATTR, .dev = d->dev };
			return true;
		}
		return false;
	case FS_GROUP:
		/* a subdirectory (its path into @group), then a file */
		if (dm_device_is_dead(d->dev))
			return false;
		if (dm_name_is_valid(name) &&
		    (size_t)snprintf(group, size, "%s/%s", d->group, name) < size &&
		    dm_device_stat_file_locked(d->dev, group, NULL, &fi) == 0) {
			*ret = (struct fs_target){ .kind = FS_GROUP, .dev = d->dev, .group = group };
			return true;
		}
		if (dm_device_stat_file_locked(d->dev, d->group, name, &fi) == 0) {
			*ret = (struct fs_target){ .kind = FS_ATTR, .dev = d->dev, .group = d->group };
			return true;
		}
		return false;
	case FS_DRIVER:
		if (!dm_driver_is_registered_locked(d->drv))
			return false;
		/* its own files, then the devices bound to it */
		for (size_t i = 0; i < sizeof(driver_files) / sizeof(driver_files[0]); i++)
			if (strcmp(name, driver_files[i]) == 0 && driver_has_file(d->drv, name)) {
				*ret = (struct fs_target){ .kind = FS_DRV_ATTR, .drv = d->drv };
				return true;
			}
		/* fall through */
	case FS_BUS_DEVICES:
	case FS_CLASS_DEVICES:
	case FS_IFACE:
		dev = dm_model_find_listed_locked(m, name, in_listing, (void *)d);
		if (!dev)
			return false;
		*ret = (struct fs_target){ .kind = FS_LINK_TO_DEV, .dev = dev };
		return true;
	default:
		return false;
	}
}

/* Whether the directory @dir is a listing find_indexed_locked() answers
 * for every name (a device directory also holds files and links; root/
 * holds devices only). */
static bool fully_indexed(const struct fs_ref *dir)
{
	return dir->t.kind == FS_BUS_DEVICES || dir->t.kind == FS_CLASS_DEVICES ||
	       dir->t.kind == FS_IFACE || dir->t.kind == FS_DRIVER || dir->t.kind == FS_GROUP ||
	       (dir->t.kind == FS_DEV && !dm_device_get_parent_locked(dir->t.dev));
}

int fs_view_find_locked(struct dm_model *m, const struct fs_ref *dir, const char *name,
			struct fs_target *ret, char group[FS_GROUP_MAX])
{
	dm_model_assert_held(m);
	struct find_ctx f = { .name = name };
	f.ok = find_indexed_locked(m, dir, name, &f.found, group, FS_GROUP_MAX);
	int r = f.ok || fully_indexed(dir) ? 0 : fs_view_walk_locked(m, dir, find_emit, &f);
	if (r < 0)
		return r;
	if (!f.ok)
		return -ENOENT;
	*ret = f.found;
	return 0;
}
