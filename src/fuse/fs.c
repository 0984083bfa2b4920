/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fs.c - the low-level FUSE operations over the model's views. */
#define FUSE_USE_VERSION 312
#include "fs.h"

#include "inode.h"
#include "uring.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Names, static values and the power files' attributes change only with
 * the model, and whatever changes the model after the mount invalidates
 * what the kernel cached (see DESIGN.md section 11); so the kernel may keep
 * them long, and a warm walk costs no lookup, getattr or read. Live values
 * (pm/, passed through from sysfs, which changes them unseen) have their
 * attributes revalidated at every access instead: attribute timeout 0 and
 * an mtime that moves. The contents of changing values are never cached:
 * they are read with direct_io (op_open). */
#define ENTRY_TIMEOUT 3600.0
#define ATTR_TIMEOUT 3600.0

/* The requests counted, per operation (dm_fs_format_stats()). */
enum fs_op {
	FS_OP_INIT,
	FS_OP_LOOKUP,
	FS_OP_FORGET,
	FS_OP_FORGET_MULTI,
	FS_OP_GETATTR,
	FS_OP_SETATTR,
	FS_OP_READLINK,
	FS_OP_OPENDIR,
	FS_OP_READDIR,
	FS_OP_READDIRPLUS,
	FS_OP_RELEASEDIR,
	FS_OP_OPEN,
	FS_OP_RELEASE,
	FS_OP_READ,
	FS_OP_WRITE,
	FS_OP_STATFS,
	FS_OP_MKNOD,
	FS_OP_CREATE,
	FS_OP_MKDIR,
	FS_OP_UNLINK,
	FS_OP_SYMLINK,
	FS_OP_RENAME,
	FS_OP_LINK,
	FS_OP_N,
};

static const char *const fs_op_names[FS_OP_N] = {
	[FS_OP_INIT] = "init",
	[FS_OP_LOOKUP] = "lookup",
	[FS_OP_FORGET] = "forget",
	[FS_OP_FORGET_MULTI] = "forget_multi",
	[FS_OP_GETATTR] = "getattr",
	[FS_OP_SETATTR] = "setattr",
	[FS_OP_READLINK] = "readlink",
	[FS_OP_OPENDIR] = "opendir",
	[FS_OP_READDIR] = "readdir",
	[FS_OP_READDIRPLUS] = "readdirplus",
	[FS_OP_RELEASEDIR] = "releasedir",
	[FS_OP_OPEN] = "open",
	[FS_OP_RELEASE] = "release",
	[FS_OP_READ] = "read",
	[FS_OP_WRITE] = "write",
	[FS_OP_STATFS] = "statfs",
	[FS_OP_MKNOD] = "mknod",
	[FS_OP_CREATE] = "create",
	[FS_OP_MKDIR] = "mkdir",
	[FS_OP_UNLINK] = "unlink",
	[FS_OP_SYMLINK] = "symlink",
	[FS_OP_RENAME] = "rename",
	[FS_OP_LINK] = "link",
};

/* What the kernel may have cached that a model change made stale. */
struct inval {
	struct dm_device *dev; /* referenced; NULL for a driver's */
	char *entry; /* a driver's: its name in listings[0] */
	bool added; /* a new device: the listings that now hold it */
	bool power; /* only its power files changed */
	char *listings[5]; /* "bus/pci/devices", "class/block/disk" ... */
	uint64_t parent_id; /* added: the parent device, whose directory lists it */
};

struct dm_fs {
	struct dm_model *model;
	struct fs_table *table;
	struct fuse_session *se;
	struct timespec start;
	bool mounted;
	bool unmount_watched; /* dm_fs_set_unmount_watched() */
	bool no_opendir; /* the kernel skips opendir/releasedir (set at init) */
	bool no_io_uring; /* dm_fs_set_io_uring() */
	struct dm_uring *uring; /* FUSE over io_uring, if the kernel offers it */
	pthread_mutex_t dirs_lock;
	struct dir_snapshot *dirs; /* listings being read, one per directory */
	pthread_mutex_t opens_lock;
	struct open_value **opens; /* copies of open files' changing values */
	size_t n_opens;
	struct uid_use *uses; /* what each uid other than root pins, under opens_lock */
	size_t n_uses;
	size_t uid_budget;

	/* The notifier: invalidations are queued by the model's listener
	 * (under the model lock, so it only queues) and sent by a thread of
	 * their own that holds no lock a handler needs. */
	pthread_mutex_t inval_lock;
	pthread_cond_t inval_cond;
	struct inval *inval;
	size_t n_inval, cap_inval;
	bool inval_quit;
	bool inval_running;
	pthread_t inval_thread;
	uint64_t inval_sent; /* batches done, for dm_fs_sync_invalidations() */
	uint64_t inval_queued;

	/* requests served, counted without a lock: a relaxed atomic add
	 * per request costs nothing beside the request itself */
	atomic_uint_fast64_t requests[FS_OP_N];
};

/* ---- directory views: one walker serves lookup and readdir ---- */

/* @emit gets each entry; a non-zero return stops the walk. */
typedef int (*emit_fn)(void *ctx, const char *name, const struct fs_target *t, mode_t type);

struct walk {
	struct dm_fs *fs;
	const struct fs_ref *dir;
	emit_fn emit;
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
	struct fs_target t = { .kind = FS_GROUP, .dev = w->dir->t.dev, .group = group };
	return w->emit(w->ctx, group, &t, S_IFDIR);
}

static int emit_file(const struct dm_file_info *fi, void *data)
{
	struct walk *w = data;
	struct fs_target t = { .kind = FS_ATTR, .dev = w->dir->t.dev, .group = w->dir->t.group };
	return w->emit(w->ctx, fi->name, &t, S_IFREG);
}

static int emit_link(struct dm_device *dev, void *data)
{
	struct walk *w = data;
	struct fs_target t = { .kind = FS_LINK, .dev = dev };
	/* bus and class listings name a device as the kernel does */
	return w->emit(w->ctx, dm_device_get_sysname(dev), &t, S_IFLNK);
}

static int emit_bus(struct dm_bus *bus, void *data)
{
	struct walk *w = data;
	struct fs_target t = { .kind = FS_BUS, .bus = bus };
	return w->emit(w->ctx, dm_bus_get_name(bus), &t, S_IFDIR);
}

static int emit_driver(struct dm_driver *drv, void *data)
{
	struct walk *w = data;
	struct fs_target t = { .kind = FS_DRIVER, .drv = drv };
	return w->emit(w->ctx, dm_driver_get_name(drv), &t, S_IFDIR);
}

/* A driver's own files, beside the links to its devices: what the probe
 * order rests on, so that a client can save the model as driverfsd does. */
static const char *const driver_files[] = { "kind", "priority" };

/* The value of the driver file @name, with its newline; -ENOENT when there
 * is no such file. */
static int driver_file_show(struct dm_driver *drv, const char *name, char *buf, size_t size)
{
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

static int emit_iface(struct dm_interface *i, void *data)
{
	struct walk *w = data;
	struct fs_target t = { .kind = FS_IFACE, .iface = i };
	return w->emit(w->ctx, dm_interface_get_name(i), &t, S_IFDIR);
}

static int walk_device_dir(struct walk *w)
{
	struct dm_device *dev = w->dir->t.dev;
	int r = dm_device_for_each_child_locked(dev, emit_child, w);
	if (!r)
		r = dm_device_for_each_group_locked(dev, emit_group, w);
	if (!r)
		r = dm_device_for_each_file_locked(dev, NULL, emit_file, w);
	if (!r && (dm_device_get_bus_locked(dev) || dm_device_get_class_locked(dev))) {
		struct fs_target t = { .kind = FS_DEV_LINK, .dev = dev };
		r = w->emit(w->ctx, "subsystem", &t, S_IFLNK);
	}
	if (!r && dm_device_get_driver_locked(dev)) {
		struct fs_target t = { .kind = FS_DEV_LINK, .dev = dev };
		r = w->emit(w->ctx, "driver", &t, S_IFLNK);
	}
	return r;
}

/* Walks the directory @dir; call with the model's read lock held.
 * -ENOENT when the directory itself is gone. */
static int walk_dir(struct dm_fs *fs, const struct fs_ref *dir, emit_fn emit, void *ctx)
{
	struct walk w = { .fs = fs, .dir = dir, .emit = emit, .ctx = ctx };
	const struct fs_target *d = &dir->t;
	struct fs_target t = { 0 };
	int r;

	if (d->dev && dm_device_is_dead(d->dev))
		return -ENOENT;
	switch (d->kind) {
	case FS_TOP:
		t = (struct fs_target){ .kind = FS_DEV, .dev = dm_model_get_root(fs->model) };
		r = emit(ctx, "root", &t, S_IFDIR);
		t = (struct fs_target){ .kind = FS_BUSES };
		if (!r)
			r = emit(ctx, "bus", &t, S_IFDIR);
		t = (struct fs_target){ .kind = FS_CLASSES };
		if (!r)
			r = emit(ctx, "class", &t, S_IFDIR);
		return r > 0 ? 0 : r;
	case FS_DEV:
		r = walk_device_dir(&w);
		break;
	case FS_GROUP:
		r = dm_device_for_each_file_locked(d->dev, d->group, emit_file, &w);
		break;
	case FS_BUSES:
		r = dm_model_for_each_bus_locked(fs->model, emit_bus, &w);
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
		r = dm_model_for_each_class_locked(fs->model, emit_class, &w);
		break;
	case FS_CLASS:
		t = (struct fs_target){ .kind = FS_CLASS_DEVICES, .class = d->class };
		r = emit(ctx, "devices", &t, S_IFDIR);
		if (!r)
			r = dm_class_for_each_interface_locked(d->class, emit_iface, &w);
		break;
	case FS_CLASS_DEVICES:
		r = dm_class_for_each_device_locked(d->class, emit_link, &w);
		break;
	case FS_IFACE:
		r = dm_interface_for_each_device_locked(d->iface, emit_link, &w);
		break;
	default:
		return -ENOTDIR;
	}
	return r > 0 ? 0 : r;
}

/* ---- attributes of nodes ---- */

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

/* The target of a link node; call with the read lock held. */
static int link_target_locked(struct dm_fs *fs, const struct fs_ref *n, char *buf, size_t size)
{
	char path[PATH_MAX];
	struct dm_device *dev = n->t.dev;
	(void)fs;
	if (dm_device_is_dead(dev))
		return -ENOENT;
	/* as deep as the tree goes: the target climbs to the mount root */
	int k = up_path(buf, size, n->depth - 1);
	if (k < 0)
		return k;
	buf += k;
	size -= (size_t)k;
	int len;
	if (n->t.kind == FS_LINK) {
		if (dm_device_path_locked(dev, path, sizeof(path)) < 0)
			return -ENAMETOOLONG;
		len = snprintf(buf, size, "root%s%s", *path ? "/" : "", path);
	} else if (strcmp(n->name, "driver") == 0) {
		struct dm_driver *drv = dm_device_get_driver_locked(dev);
		if (!drv)
			return -ENOENT;
		len = snprintf(buf, size, "bus/%s/drivers/%s",
			       dm_bus_get_name(dm_driver_get_bus(drv)), dm_driver_get_name(drv));
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

static bool is_dir_kind(enum fs_kind k)
{
	return k != FS_ATTR && k != FS_DRV_ATTR && k != FS_DEV_LINK && k != FS_LINK;
}

/* Fills @st for the node @n; -ENOENT when it no longer exists. *ret_timeout
 * (may be NULL) gets how long the kernel may keep it. Call without the
 * model lock (an attribute's size comes from show()). */
static int node_stat(struct dm_fs *fs, const struct fs_ref *n, struct stat *st,
		     double *ret_timeout)
{
	if (ret_timeout)
		*ret_timeout = ATTR_TIMEOUT;
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_atim = st->st_mtim = st->st_ctim = fs->start;
	st->st_blksize = 4096;

	if (is_dir_kind(n->t.kind)) {
		if (n->t.dev && dm_device_is_dead(n->t.dev))
			return -ENOENT;
		if (n->t.kind == FS_GROUP) {
			struct dm_file_info fi;
			dm_model_read_lock(fs->model);
			int r = dm_device_stat_file_locked(n->t.dev, n->t.group, NULL, &fi);
			dm_model_unlock(fs->model);
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
		dm_model_read_lock(fs->model);
		bool registered = dm_driver_is_registered_locked(n->t.drv);
		dm_model_unlock(fs->model);
		int len = driver_file_show(n->t.drv, n->name, buf, sizeof(buf));
		if (!registered || len < 0)
			return -ENOENT;
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = len;
		return 0;
	}
	if (n->t.kind == FS_ATTR) {
		struct dm_file_info fi;
		dm_model_read_lock(fs->model);
		int r = dm_device_stat_file_locked(n->t.dev, n->t.group, n->name, &fi);
		dm_model_unlock(fs->model);
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
		if ((!(fi.flags & DM_ATTR_LIVE) || (fi.flags & DM_ATTR_UNBOUNDED)) &&
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
	dm_model_read_lock(fs->model);
	int len = link_target_locked(fs, n, target, sizeof(target));
	dm_model_unlock(fs->model);
	if (len < 0)
		return -ENOENT;
	st->st_mode = S_IFLNK | 0777;
	st->st_nlink = 1;
	st->st_size = len;
	return 0;
}

/* ---- operations ---- */

/* The filesystem of @req, counting one request of @op. */
static struct dm_fs *req_fs(fuse_req_t req, enum fs_op op)
{
	struct dm_fs *fs = fuse_req_userdata(req);
	atomic_fetch_add_explicit(&fs->requests[op], 1, memory_order_relaxed);
	return fs;
}

int dm_fs_format_stats(struct dm_fs *fs, char *buf, size_t size)
{
	uint64_t total = 0, n[FS_OP_N];
	for (int i = 0; i < FS_OP_N; i++) {
		n[i] = atomic_load_explicit(&fs->requests[i], memory_order_relaxed);
		total += n[i];
	}
	int len = snprintf(buf, size, "fuse requests: %" PRIu64, total);
	for (int i = 0; i < FS_OP_N && len >= 0 && (size_t)len < size; i++)
		if (n[i])
			len += snprintf(buf + len, size - (size_t)len, " %s=%" PRIu64,
					fs_op_names[i], n[i]);
	if (fs->uring && len >= 0 && (size_t)len < size)
		len += snprintf(buf + len, size - (size_t)len, "; over io_uring: %" PRIu64,
				dm_uring_served(fs->uring));
	if (len >= 0 && (size_t)len < size)
		len += snprintf(buf + len, size - (size_t)len, "; power_log built %" PRIu64 " times",
				dm_model_count_log_builds(fs->model));
	return len < 0 || (size_t)len >= size ? -ENOBUFS : len;
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
static bool find_indexed_locked(struct dm_fs *fs, const struct fs_ref *dir, const char *name,
				struct fs_target *ret)
{
	const struct fs_target *d = &dir->t;
	struct dm_device *dev;
	switch (d->kind) {
	case FS_DEV:
		if (dm_device_is_dead(d->dev))
			return false;
		dev = dm_device_find_child_locked(d->dev, name);
		if (!dev || dm_device_is_dead(dev))
			return false;
		*ret = (struct fs_target){ .kind = FS_DEV, .dev = dev };
		return true;
	case FS_DRIVER:
		if (!dm_driver_is_registered_locked(d->drv))
			return false;
		/* its own files, then the devices bound to it */
		for (size_t i = 0; i < sizeof(driver_files) / sizeof(driver_files[0]); i++)
			if (strcmp(name, driver_files[i]) == 0) {
				*ret = (struct fs_target){ .kind = FS_DRV_ATTR, .drv = d->drv };
				return true;
			}
		/* fall through */
	case FS_BUS_DEVICES:
	case FS_CLASS_DEVICES:
	case FS_IFACE:
		dev = dm_model_find_listed_locked(fs->model, name, in_listing, (void *)d);
		if (!dev)
			return false;
		*ret = (struct fs_target){ .kind = FS_LINK, .dev = dev };
		return true;
	default:
		return false;
	}
}

/* Whether the directory @dir is a listing find_indexed_locked() answers
 * for every name (a device directory also holds files). */
static bool fully_indexed(const struct fs_ref *dir)
{
	return dir->t.kind == FS_BUS_DEVICES || dir->t.kind == FS_CLASS_DEVICES ||
	       dir->t.kind == FS_IFACE || dir->t.kind == FS_DRIVER;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dm_fs *fs = req_fs(req, FS_OP_LOOKUP);
	struct fs_ref dir;
	int r = fs_table_get(fs->table, parent, &dir);
	if (r < 0) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	struct find_ctx f = { .name = name };
	uint64_t ino = 0, gen = 0;
	dm_model_read_lock(fs->model);
	f.ok = find_indexed_locked(fs, &dir, name, &f.found);
	r = f.ok || fully_indexed(&dir) ? 0 : walk_dir(fs, &dir, find_emit, &f);
	if (r == 0 && !f.ok)
		r = -ENOENT;
	/* references are taken before the lock is dropped */
	if (r == 0)
		r = fs_table_lookup(fs->table, parent, dir.depth + 1, name, &f.found, &ino, &gen);
	dm_model_unlock(fs->model);
	fs_ref_release(&dir);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}

	struct fuse_entry_param e = { .ino = ino, .generation = gen,
				      .entry_timeout = ENTRY_TIMEOUT };
	struct fs_ref n;
	r = fs_table_get(fs->table, ino, &n);
	if (r == 0) {
		r = node_stat(fs, &n, &e.attr, &e.attr_timeout);
		fs_ref_release(&n);
	}
	if (r < 0) {
		fs_table_forget(fs->table, ino, 1);
		fuse_reply_err(req, -r);
		return;
	}
	fuse_reply_entry(req, &e);
}

static void snapshot_drop(struct dm_fs *fs, uint64_t ino, uint64_t gen, bool any_gen);

/* Drops @n lookups of @ino; a node freed takes its kept listing along (its
 * number will name another node). */
static void forget_node(struct dm_fs *fs, uint64_t ino, uint64_t n)
{
	if (fs_table_forget(fs->table, ino, n))
		snapshot_drop(fs, ino, 0, true);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_node(req_fs(req, FS_OP_FORGET), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct dm_fs *fs = req_fs(req, FS_OP_FORGET_MULTI);
	for (size_t i = 0; i < count; i++)
		forget_node(fs, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dm_fs *fs = req_fs(req, FS_OP_GETATTR);
	struct fs_ref n;
	struct stat st;
	(void)fi;
	int r = fs_table_get(fs->table, ino, &n);
	if (r < 0) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	double timeout;
	r = node_stat(fs, &n, &st, &timeout);
	/* an inode of a removed device reached by its number (an open file,
	 * a cached dentry): the device is gone, as sysfs says of such files */
	if (r == -ENOENT && n.t.dev && dm_device_is_dead(n.t.dev))
		r = -ENODEV;
	fs_ref_release(&n);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, timeout);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct dm_fs *fs = req_fs(req, FS_OP_SETATTR);
	struct fs_ref n;
	struct stat st;
	(void)attr;
	(void)fi;
	int r = fs_table_get(fs->table, ino, &n);
	if (r < 0) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	r = node_stat(fs, &n, &st, NULL);
	/* Only the truncation that O_TRUNC implies on a writable attribute is
	 * accepted, and it changes nothing: values are replaced by a write, as
	 * in sysfs. Modes, owners and times are fixed. */
	if (r == 0 && (to_set != FUSE_SET_ATTR_SIZE || n.t.kind != FS_ATTR || !(st.st_mode & 0222)))
		r = -EPERM;
	fs_ref_release(&n);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, 0);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct dm_fs *fs = req_fs(req, FS_OP_READLINK);
	struct fs_ref n;
	char target[PATH_MAX];
	int r = fs_table_get(fs->table, ino, &n);
	if (r < 0) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (n.t.kind != FS_LINK && n.t.kind != FS_DEV_LINK) {
		r = -EINVAL;
	} else {
		dm_model_read_lock(fs->model);
		r = link_target_locked(fs, &n, target, sizeof(target));
		dm_model_unlock(fs->model);
	}
	fs_ref_release(&n);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_readlink(req, target);
}

/* A directory listing, taken whole when a listing starts (offset 0) and
 * kept until it was read to its end (or the directory closed, or its node
 * forgotten), so that each of the replies it takes comes from the same
 * listing. It is the listing of one node, (ino, gen): a number reused for
 * another directory never finds it. */
struct dir_entry {
	char *name;
	mode_t type;
	struct fs_target t; /* holds references (fs_target_ref()) */
	char *group; /* owned copy behind t.group */
};

struct dir_snapshot {
	struct dir_entry *v;
	size_t n, cap;
	uint64_t ino, gen;
	int err;
	unsigned refs; /* under dirs_lock: the list's and each user's */
	/* on dm_fs's list of listings being read */
	struct dir_snapshot *prev, *next;
};

static int snapshot_emit(void *ctx, const char *name, const struct fs_target *t, mode_t type)
{
	struct dir_snapshot *s = ctx;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;
		struct dir_entry *v = realloc(s->v, cap * sizeof(*v));
		if (!v) {
			s->err = -ENOMEM;
			return 1;
		}
		s->v = v;
		s->cap = cap;
	}
	struct dir_entry *e = &s->v[s->n];
	*e = (struct dir_entry){ .name = strdup(name), .type = type, .t = *t };
	e->group = t->group ? strdup(t->group) : NULL;
	if (!e->name || (t->group && !e->group)) {
		free(e->name);
		free(e->group);
		s->err = -ENOMEM;
		return 1;
	}
	/* the walk runs under the model lock: references are safe to take */
	e->t.group = e->group;
	fs_target_ref(&e->t);
	s->n++;
	return 0;
}

static void snapshot_free(struct dir_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].name);
		free(s->v[i].group);
		fs_target_unref(&s->v[i].t);
	}
	free(s->v);
	free(s);
}

static void snapshot_unlink_locked(struct dm_fs *fs, struct dir_snapshot *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		fs->dirs = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
}

static void snapshot_put(struct dm_fs *fs, struct dir_snapshot *s)
{
	pthread_mutex_lock(&fs->dirs_lock);
	bool last = --s->refs == 0;
	pthread_mutex_unlock(&fs->dirs_lock);
	if (last)
		snapshot_free(s);
}

/* The kept listing of (@ino, @gen), unlinked; any generation of @ino
 * when @any_gen. The caller drops the list's count. */
static struct dir_snapshot *snapshot_take_locked(struct dm_fs *fs, uint64_t ino, uint64_t gen,
						 bool any_gen)
{
	struct dir_snapshot *s = fs->dirs;
	while (s && !(s->ino == ino && (any_gen || s->gen == gen)))
		s = s->next;
	if (s)
		snapshot_unlink_locked(fs, s);
	return s;
}

/* Drops the listings kept of @ino (of generation @gen, or any when
 * @any_gen): its directory was closed, or its node forgotten. Replies in
 * flight keep theirs until they are done. */
static void snapshot_drop(struct dm_fs *fs, uint64_t ino, uint64_t gen, bool any_gen)
{
	for (;;) {
		pthread_mutex_lock(&fs->dirs_lock);
		struct dir_snapshot *s = snapshot_take_locked(fs, ino, gen, any_gen);
		bool last = s && --s->refs == 0;
		pthread_mutex_unlock(&fs->dirs_lock);
		if (!s)
			return;
		if (last)
			snapshot_free(s);
	}
}

/* The listing of the directory @dir for a reply at @off: a new one at
 * offset 0 (or when none is kept), else the one kept since offset 0.
 * Release with snapshot_put(). */
static int snapshot_get(struct dm_fs *fs, const struct fs_ref *dir, off_t off,
			struct dir_snapshot **ret)
{
	struct dir_snapshot *s = NULL;
	pthread_mutex_lock(&fs->dirs_lock);
	if (off > 0)
		for (s = fs->dirs; s && !(s->ino == dir->ino && s->gen == dir->gen); s = s->next)
			;
	if (s) {
		s->refs++;
		pthread_mutex_unlock(&fs->dirs_lock);
		*ret = s;
		return 0;
	}
	pthread_mutex_unlock(&fs->dirs_lock);

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ino = dir->ino;
	s->gen = dir->gen;
	s->refs = 2;
	dm_model_read_lock(fs->model);
	int r = walk_dir(fs, dir, snapshot_emit, s);
	dm_model_unlock(fs->model);
	if (r == 0)
		r = s->err;
	if (r < 0) {
		snapshot_free(s);
		return r;
	}
	pthread_mutex_lock(&fs->dirs_lock);
	/* one listing kept per directory: the newest */
	struct dir_snapshot *old = snapshot_take_locked(fs, dir->ino, dir->gen, false);
	bool free_old = old && --old->refs == 0;
	s->next = fs->dirs;
	if (fs->dirs)
		fs->dirs->prev = s;
	fs->dirs = s;
	pthread_mutex_unlock(&fs->dirs_lock);
	if (free_old)
		snapshot_free(old);
	*ret = s;
	return 0;
}

/* A reply past the last entry ends the listing: the kernel has it all. */
static void snapshot_done(struct dm_fs *fs, struct dir_snapshot *s, off_t off)
{
	bool drop = false;
	pthread_mutex_lock(&fs->dirs_lock);
	if (off >= (off_t)s->n + 2 && (s->prev || s->next || fs->dirs == s)) {
		snapshot_unlink_locked(fs, s);
		drop = --s->refs == 0;
	}
	pthread_mutex_unlock(&fs->dirs_lock);
	if (drop)
		snapshot_free(s);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dm_fs *fs = req_fs(req, FS_OP_OPENDIR);
	if (fs->no_opendir) {
		/* once: the kernel then lists directories without opening
		 * them, keeping each listing until it is invalidated */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	/* the kernel may keep the listing: what changes the tree invalidates it */
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* One reply of the listing of @ino from offset @off (0 ".", 1 "..", 2 + i
 * the i-th entry); with @plus each entry carries its attributes, so that
 * `ls -l` and `find` need no lookup per entry, and counts as one lookup. */
static void reply_listing(fuse_req_t req, struct dm_fs *fs, fuse_ino_t ino, size_t size,
			  off_t off, bool plus)
{
	struct dir_snapshot *s = NULL;
	struct fs_ref dir;
	char *buf = malloc(size);
	int r = buf ? fs_table_get(fs->table, ino, &dir) : -ENOMEM;
	if (r == 0) {
		r = snapshot_get(fs, &dir, off, &s);
		if (r < 0)
			fs_ref_release(&dir);
	}
	if (r < 0) {
		free(buf);
		fuse_reply_err(req, -r);
		return;
	}
	size_t len = 0;
	for (off_t i = off; i < (off_t)s->n + 2; i++) {
		struct fuse_entry_param e = { 0 };
		const char *name;
		uint64_t child = 0;
		if (i < 2) {
			/* the dots are not looked up: only their type and number */
			name = i == 0 ? "." : "..";
			e.attr.st_ino = ino;
			e.attr.st_mode = S_IFDIR;
		} else if (!plus) {
			const struct dir_entry *d = &s->v[i - 2];
			name = d->name;
			e.attr.st_mode = d->type;
			/* the node's number when the kernel knows it; otherwise a
			 * number outside the table's range, never 0 */
			e.attr.st_ino = fs_table_peek(fs->table, ino, name);
			if (!e.attr.st_ino)
				e.attr.st_ino = (1ULL << 63) | (uint64_t)i << 32 | (ino & 0xffffffff);
		} else {
			const struct dir_entry *d = &s->v[i - 2];
			name = d->name;
			uint64_t gen;
			r = fs_table_lookup(fs->table, ino, dir.depth + 1, name, &d->t, &child, &gen);
			if (r < 0)
				break;
			struct fs_ref n;
			r = fs_table_get(fs->table, child, &n);
			if (r == 0) {
				r = node_stat(fs, &n, &e.attr, &e.attr_timeout);
				fs_ref_release(&n);
			}
			if (r < 0) {
				fs_table_forget(fs->table, child, 1);
				/* gone since the listing was taken: leave it out */
				if (r == -ENOENT) {
					r = 0;
					continue;
				}
				break;
			}
			e.ino = child;
			e.generation = gen;
			e.entry_timeout = ENTRY_TIMEOUT;
		}
		size_t need = plus ? fuse_add_direntry_plus(req, buf + len, size - len, name, &e, i + 1)
				   : fuse_add_direntry(req, buf + len, size - len, name, &e.attr, i + 1);
		if (need > size - len) {
			if (child)
				fs_table_forget(fs->table, child, 1); /* not sent */
			break;
		}
		len += need;
	}
	fs_ref_release(&dir);
	/* Any other failure is the reply's, never an empty one, which would
	 * end the listing there: the entries before it go out, and the next
	 * reply, from the failing entry, fails. */
	if (r < 0 && len == 0) {
		fuse_reply_err(req, -r);
	} else {
		fuse_reply_buf(req, buf, len);
		if (len == 0)
			snapshot_done(fs, s, off);
	}
	snapshot_put(fs, s);
	free(buf);
}

/* A closed directory's kept listing goes: a listing left unfinished would
 * otherwise stay until the node is forgotten. */
static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dm_fs *fs = req_fs(req, FS_OP_RELEASEDIR);
	struct fs_ref dir;
	(void)fi;
	if (fs_table_get(fs->table, ino, &dir) == 0) {
		snapshot_drop(fs, ino, dir.gen, false);
		fs_ref_release(&dir);
	}
	fuse_reply_err(req, 0);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	reply_listing(req, req_fs(req, FS_OP_READDIR), ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	reply_listing(req, req_fs(req, FS_OP_READDIRPLUS), ino, size, off, true);
}

/* A changing value as one open file reads it: taken by a read at offset 0
 * (or the first read) and kept for the reads that follow, as sysfs does,
 * so that reading it in pieces never mixes two values. The journal's copy
 * is the one the model shares (dm_model_show_log()). */
struct open_value {
	pthread_mutex_t lock; /* reads of one open file may come in parallel */
	struct dm_blob *value; /* NULL until taken */
	uid_t uid; /* the opener's, charged for it (see struct uid_use) */
	size_t charged; /* the bytes charged for the value */
};

/*
 * What open files pin, per uid. Any user may open a value, and a copy of a
 * journal of 10^5 devices is megabytes: a user other than root may pin at
 * most fs->uid_budget bytes (-o max_open_bytes_per_uid=N), each open
 * counted OPEN_COST and each value taken its length, in full even when the
 * copy is shared (a user holding copies of many journals' versions pins
 * them all). An open past it fails with EMFILE, a read that would take a
 * copy past it with ENOMEM; root is not counted.
 */
struct uid_use {
	uid_t uid;
	size_t bytes;
};
#define OPEN_COST 512
#define DEFAULT_UID_BUDGET ((size_t)64 << 20)

/* Charges @bytes to @uid (0: nothing to charge). -ENOSPC past the budget. */
static int uid_charge_locked(struct dm_fs *fs, uid_t uid, size_t bytes)
{
	if (uid == 0 || bytes == 0)
		return 0;
	size_t i = 0;
	while (i < fs->n_uses && fs->uses[i].uid != uid)
		i++;
	size_t used = i < fs->n_uses ? fs->uses[i].bytes : 0;
	if (bytes > fs->uid_budget || used > fs->uid_budget - bytes)
		return -ENOSPC;
	if (i == fs->n_uses) {
		struct uid_use *u = realloc(fs->uses, (fs->n_uses + 1) * sizeof(*u));
		if (!u)
			return -ENOMEM;
		fs->uses = u;
		fs->uses[fs->n_uses++] = (struct uid_use){ .uid = uid };
	}
	fs->uses[i].bytes += bytes;
	return 0;
}

static void uid_uncharge_locked(struct dm_fs *fs, uid_t uid, size_t bytes)
{
	if (uid == 0 || bytes == 0)
		return;
	for (size_t i = 0; i < fs->n_uses; i++) {
		if (fs->uses[i].uid != uid)
			continue;
		fs->uses[i].bytes -= bytes < fs->uses[i].bytes ? bytes : fs->uses[i].bytes;
		if (fs->uses[i].bytes == 0) /* a uid with nothing open holds no entry */
			fs->uses[i] = fs->uses[--fs->n_uses];
		return;
	}
}

/* Open copies live in a table the file handle indexes (fh = slot + 1; 0
 * for a file with none), never cast from the kernel's number; the session
 * may end before the kernel's last releases were served, and the table
 * frees what is left. -EMFILE when @uid has pinned its budget. */
static int open_value_new(struct dm_fs *fs, uid_t uid, uint64_t *ret_fh)
{
	struct open_value *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	pthread_mutex_init(&v->lock, NULL);
	v->uid = uid;
	size_t i = 0;
	pthread_mutex_lock(&fs->opens_lock);
	int r = uid_charge_locked(fs, uid, OPEN_COST);
	if (r < 0)
		goto out_unlock;
	while (i < fs->n_opens && fs->opens[i])
		i++;
	if (i == fs->n_opens) {
		size_t n = fs->n_opens ? fs->n_opens * 2 : 16;
		struct open_value **t = realloc(fs->opens, n * sizeof(*t));
		if (!t) {
			r = -ENOMEM;
			goto out_uncharge;
		}
		memset(t + fs->n_opens, 0, (n - fs->n_opens) * sizeof(*t));
		fs->opens = t;
		fs->n_opens = n;
	}
	fs->opens[i] = v;
	pthread_mutex_unlock(&fs->opens_lock);
	*ret_fh = i + 1;
	return 0;

out_uncharge:
	uid_uncharge_locked(fs, uid, OPEN_COST);
out_unlock:
	pthread_mutex_unlock(&fs->opens_lock);
	pthread_mutex_destroy(&v->lock);
	free(v);
	return r == -ENOSPC ? -EMFILE : r;
}

/* The copy of the open file @fh, or NULL. It stays until its release. */
static struct open_value *open_value_get(struct dm_fs *fs, uint64_t fh)
{
	struct open_value *v = NULL;
	pthread_mutex_lock(&fs->opens_lock);
	if (fh > 0 && fh <= fs->n_opens)
		v = fs->opens[fh - 1];
	pthread_mutex_unlock(&fs->opens_lock);
	return v;
}

static void open_value_free(struct open_value *v)
{
	if (!v)
		return;
	pthread_mutex_destroy(&v->lock);
	dm_blob_unref(v->value);
	free(v);
}

/* Puts @b (a reference, given) in @v for the reads that follow, charged
 * to its opener in place of the copy it had. Call with @v's lock held.
 * -ENOMEM past the opener's budget (the old copy stays). */
static int open_value_set(struct dm_fs *fs, struct open_value *v, struct dm_blob *b)
{
	pthread_mutex_lock(&fs->opens_lock);
	uid_uncharge_locked(fs, v->uid, v->charged);
	int r = uid_charge_locked(fs, v->uid, b->len);
	if (r < 0)
		uid_charge_locked(fs, v->uid, v->charged); /* what it had: fits again */
	pthread_mutex_unlock(&fs->opens_lock);
	if (r < 0) {
		dm_blob_unref(b);
		return -ENOMEM;
	}
	dm_blob_unref(v->value);
	v->value = b;
	v->charged = b->len;
	return 0;
}

static void open_value_release(struct dm_fs *fs, uint64_t fh)
{
	struct open_value *v = NULL;
	pthread_mutex_lock(&fs->opens_lock);
	if (fh > 0 && fh <= fs->n_opens) {
		v = fs->opens[fh - 1];
		fs->opens[fh - 1] = NULL;
	}
	if (v)
		uid_uncharge_locked(fs, v->uid, OPEN_COST + v->charged);
	pthread_mutex_unlock(&fs->opens_lock);
	open_value_free(v);
}

/*
 * Every file is opened through the daemon, since only an open can ask for
 * direct_io: the kernel asks once per connection whether open is answered
 * (FUSE_CAP_NO_OPEN_SUPPORT), not per file. Static values keep their pages
 * (keep_cache) and their opens stay cheap: a table look-up, no value.
 * Changing values (power files, runtime values, the journal) are read with
 * direct_io from a copy of their own per open: with the page cache the
 * kernel takes a value's size (getattr) and its page (read) apart, and a
 * value changing between the two came out torn ("sus", "on\npended\n").
 */
static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dm_fs *fs = req_fs(req, FS_OP_OPEN);
	struct fs_ref n;
	int r = fs_table_get(fs->table, ino, &n);
	if (r < 0) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	struct dm_file_info info = { 0 };
	if (n.t.kind == FS_DRV_ATTR) {
		r = (fi->flags & O_ACCMODE) != O_RDONLY ? -EACCES : 0;
	} else if (n.t.kind != FS_ATTR) {
		r = -EISDIR;
	} else {
		dm_model_read_lock(fs->model);
		r = dm_device_stat_file_locked(n.t.dev, n.t.group, n.name, &info);
		dm_model_unlock(fs->model);
		if (r == -ENODEV)
			r = -ENOENT;
	}
	fs_ref_release(&n);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	bool changing = info.flags & (DM_ATTR_LIVE | DM_ATTR_ANNOUNCED);
	if (changing && (fi->flags & O_ACCMODE) != O_WRONLY) {
		r = open_value_new(fs, fuse_req_ctx(req)->uid, &fi->fh);
		if (r < 0) {
			fuse_reply_err(req, -r);
			return;
		}
	}
	/* writes go to the store whole, one value per write */
	if (changing || (fi->flags & O_ACCMODE) != O_RDONLY)
		fi->direct_io = 1;
	else
		fi->keep_cache = 1;
	if (fuse_reply_open(req, fi) == -ENOENT)
		open_value_release(fs, fi->fh); /* interrupted: no release will come */
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dm_fs *fs = req_fs(req, FS_OP_RELEASE);
	(void)ino;
	open_value_release(fs, fi->fh);
	fuse_reply_err(req, 0);
}

/* The whole value of the file @ino, as a copy of its own or the one
 * shared (the journal's). */
static int show_file(struct dm_fs *fs, fuse_ino_t ino, struct dm_blob **ret)
{
	struct fs_ref n;
	int r = fs_table_get(fs->table, ino, &n);
	if (r < 0)
		return -ESTALE;
	if (n.t.kind == FS_DRV_ATTR) {
		char value[64], *copy;
		r = driver_file_show(n.t.drv, n.name, value, sizeof(value));
		if (r >= 0)
			r = (copy = strdup(value)) ? dm_blob_new(copy, (size_t)r, ret) : -ENOMEM;
	} else {
		r = n.t.kind == FS_ATTR ? dm_device_show_blob(n.t.dev, n.t.group, n.name, ret)
					: -EISDIR;
	}
	fs_ref_release(&n);
	if (r == -ENOENT)
		r = -ENODEV; /* the file went away while open */
	return r < 0 ? r : 0;
}

static void reply_part(fuse_req_t req, const struct dm_blob *b, size_t size, off_t off)
{
	if ((size_t)off >= b->len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, b->data + off,
			       b->len - (size_t)off < size ? b->len - (size_t)off : size);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct dm_fs *fs = req_fs(req, FS_OP_READ);
	struct open_value *v = open_value_get(fs, fi->fh);
	struct dm_blob *b = NULL;
	int r = 0;
	if (!v) {
		/* a static value: the kernel caches its pages */
		r = show_file(fs, ino, &b);
		if (r < 0)
			fuse_reply_err(req, -r);
		else
			reply_part(req, b, size, off);
		dm_blob_unref(b);
		return;
	}
	pthread_mutex_lock(&v->lock);
	if (off == 0 || !v->value) {
		r = show_file(fs, ino, &b);
		if (r == 0)
			r = open_value_set(fs, v, b);
	}
	/* The reply goes out after the unlock, from a reference of its own:
	 * once it is sent, the file may be closed and released (and @v
	 * freed) before this thread runs on. */
	b = r == 0 ? dm_blob_ref(v->value) : NULL;
	pthread_mutex_unlock(&v->lock);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_part(req, b, size, off);
	dm_blob_unref(b);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct dm_fs *fs = req_fs(req, FS_OP_WRITE);
	struct fs_ref n;
	(void)fi;
	int r = fs_table_get(fs->table, ino, &n);
	if (r < 0) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	/* one whole value per write, as sysfs takes it */
	if (n.t.kind == FS_DRV_ATTR)
		r = -EACCES;
	else if (n.t.kind != FS_ATTR)
		r = -EISDIR;
	else if (off != 0)
		r = -EINVAL;
	else
		r = dm_device_store(n.t.dev, n.t.group, n.name, data, size);
	fs_ref_release(&n);
	/* What the write changed elsewhere (a suspended subtree's power files)
	 * is invalidated before the writer returns, so that its next read sees
	 * it. Waiting here is safe where dm_fs_sync_invalidations() is not in
	 * general: the notifier invalidates files by their attributes only,
	 * never waiting for a page lock this write may hold. */
	if (r >= 0)
		dm_fs_sync_invalidations(fs);
	if (r == -ENOENT)
		r = -ENODEV;
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_write(req, size);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	req_fs(req, FS_OP_STATFS);
	(void)ino;
	struct statvfs sv = { .f_bsize = 4096, .f_frsize = 4096, .f_namemax = 255 };
	fuse_reply_statfs(req, &sv);
}

/* ---- invalidation ---- */

static void inval_free(struct inval *v)
{
	dm_device_unref(v->dev);
	free(v->entry);
	for (size_t i = 0; i < sizeof(v->listings) / sizeof(v->listings[0]); i++)
		free(v->listings[i]);
}

static void queue_inval(struct dm_fs *fs, struct inval v);

/* Queues @dev; called by the model with its write lock held. */
static void queue_inval_locked(struct dm_fs *fs, struct dm_device *dev, bool added)
{
	struct inval v = { .dev = dm_device_ref(dev), .added = added };
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
	if (drv && asprintf(&v.listings[n], "bus/%s/drivers/%s",
			    dm_bus_get_name(dm_driver_get_bus(drv)), dm_driver_get_name(drv)) >= 0)
		n++;
	if (cls && asprintf(&v.listings[n], "class/%s/devices", dm_class_get_name(cls)) >= 0)
		n++;
	if (cls && iface && asprintf(&v.listings[n], "class/%s/%s", dm_class_get_name(cls),
				     dm_interface_get_name(iface)) >= 0)
		n++;
	queue_inval(fs, v);
}

static void queue_inval(struct dm_fs *fs, struct inval v)
{
	pthread_mutex_lock(&fs->inval_lock);
	if (fs->n_inval == fs->cap_inval) {
		size_t cap = fs->cap_inval ? fs->cap_inval * 2 : 64;
		struct inval *q = realloc(fs->inval, cap * sizeof(*q));
		if (!q) {
			/* nothing to do but let the timeouts expire it */
			pthread_mutex_unlock(&fs->inval_lock);
			inval_free(&v);
			return;
		}
		fs->inval = q;
		fs->cap_inval = cap;
	}
	fs->inval[fs->n_inval++] = v;
	fs->inval_queued++;
	pthread_cond_signal(&fs->inval_cond);
	pthread_mutex_unlock(&fs->inval_lock);
}

static void on_added(struct dm_device *dev, void *data)
{
	queue_inval_locked(data, dev, true);
}

static void on_removed_or_changed(struct dm_device *dev, void *data)
{
	queue_inval_locked(data, dev, false);
}

/* A driver came or went: its name in bus/<bus>/drivers (whose listing
 * and entry the kernel may cache) changes. */
static void on_driver_changed(struct dm_driver *drv, void *data)
{
	struct inval v = { 0 };
	struct dm_bus *bus = dm_driver_get_bus(drv);
	if (!bus || asprintf(&v.listings[0], "bus/%s/drivers", dm_bus_get_name(bus)) < 0)
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
	queue_inval(data, (struct inval){ .dev = dm_device_ref(dev), .power = true });
}

static const struct dm_model_listener fs_listener = {
	.device_added = on_added,
	.device_removed = on_removed_or_changed,
	.device_changed = on_removed_or_changed,
	.driver_changed = on_driver_changed,
	.power_changed = on_power_changed,
};

/* The inode the kernel knows for "a/b/c" under the mount root, or 0. */
static uint64_t peek_path(struct dm_fs *fs, const char *path)
{
	char copy[512], *save = NULL;
	snprintf(copy, sizeof(copy), "%s", path);
	uint64_t ino = FUSE_ROOT_ID;
	for (char *part = strtok_r(copy, "/", &save); part && ino; part = strtok_r(NULL, "/", &save))
		ino = fs_table_peek(fs->table, ino, part);
	return ino;
}

/* Invalidates the directory listings of every node of @dev. */
static void inval_listings_of(struct dm_fs *fs, struct dm_device *dev)
{
	struct fs_place *places;
	size_t n;
	if (fs_table_device_places(fs->table, dev, &places, &n) < 0)
		return; /* nothing to do but let the timeouts expire them */
	for (size_t i = 0; i < n; i++)
		fuse_lowlevel_notify_inval_inode(fs->se, places[i].ino, 0, 0);
	free(places);
}

static void send_inval(struct dm_fs *fs, const struct inval *v)
{
	struct fs_place *places;
	size_t n;
	/* everything the kernel knows of the device: its directory, files,
	 * links to it; their names and their contents */
	if (v->entry) {
		uint64_t dir = peek_path(fs, v->listings[0]);
		if (dir) {
			fuse_lowlevel_notify_inval_entry(fs->se, dir, v->entry, strlen(v->entry));
			fuse_lowlevel_notify_inval_inode(fs->se, dir, 0, 0);
		}
		return;
	}
	/* every node of it, however many: a device listed in many places,
	 * or with many files, has no node left stale past a fixed count */
	if (fs_table_device_places(fs->table, v->dev, &places, &n) < 0)
		return; /* nothing to do but let the timeouts expire them */
	if (v->power) {
		/* the attributes of its power files: their mtime moved */
		for (size_t i = 0; i < n; i++)
			if (!places[i].dir && (strcmp(places[i].name, "power") == 0 ||
					       strcmp(places[i].name, "power_error") == 0))
				fuse_lowlevel_notify_inval_inode(fs->se, places[i].ino, -1, 0);
		free(places);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (places[i].parent && places[i].name[0])
			fuse_lowlevel_notify_inval_entry(fs->se, places[i].parent, places[i].name,
							 strlen(places[i].name));
		/* a directory's cached listing; a file's attributes, whose
		 * moved mtime drops its pages at the next access */
		fuse_lowlevel_notify_inval_inode(fs->se, places[i].ino, places[i].dir ? 0 : -1, 0);
		/* the directories listing it, whose listings are cached */
		if (places[i].parent)
			fuse_lowlevel_notify_inval_inode(fs->se, places[i].parent, 0, 0);
	}
	free(places);
	for (size_t i = 0; i < sizeof(v->listings) / sizeof(v->listings[0]) && v->listings[i]; i++) {
		uint64_t ino = peek_path(fs, v->listings[i]);
		if (ino)
			fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
	}
	if (v->added) {
		/* the parent's directory lists the newcomer (root is a device too) */
		struct dm_device *parent = dm_model_find_id(fs->model, v->parent_id);
		if (parent) {
			inval_listings_of(fs, parent);
			dm_device_unref(parent);
		}
	}
}

static void *inval_thread(void *data)
{
	struct dm_fs *fs = data;
	pthread_mutex_lock(&fs->inval_lock);
	for (;;) {
		while (!fs->inval_quit && fs->n_inval == 0)
			pthread_cond_wait(&fs->inval_cond, &fs->inval_lock);
		if (fs->inval_quit)
			break;
		struct inval *batch = fs->inval;
		size_t n = fs->n_inval;
		uint64_t upto = fs->inval_queued;
		fs->inval = NULL;
		fs->n_inval = fs->cap_inval = 0;
		pthread_mutex_unlock(&fs->inval_lock);
		for (size_t i = 0; i < n; i++) {
			send_inval(fs, &batch[i]);
			inval_free(&batch[i]);
		}
		free(batch);
		pthread_mutex_lock(&fs->inval_lock);
		fs->inval_sent = upto;
		pthread_cond_broadcast(&fs->inval_cond);
	}
	pthread_mutex_unlock(&fs->inval_lock);
	return NULL;
}

void dm_fs_sync_invalidations(struct dm_fs *fs)
{
	pthread_mutex_lock(&fs->inval_lock);
	uint64_t want = fs->inval_queued;
	while (fs->inval_running && fs->inval_sent < want && !fs->inval_quit)
		pthread_cond_wait(&fs->inval_cond, &fs->inval_lock);
	pthread_mutex_unlock(&fs->inval_lock);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct dm_fs *fs = userdata;
	atomic_fetch_add_explicit(&fs->requests[FS_OP_INIT], 1, memory_order_relaxed);
	/* DESIGN.md section 11: listings with attributes, and page caches
	 * that follow a moving mtime. Not the open/release round trips saved
	 * by answering open ENOSYS (FUSE_CAP_NO_OPEN_SUPPORT): see op_open. */
	/* FUSE_CAP_NO_OPENDIR_SUPPORT saves two requests per directory, but
	 * fusermount3's auto_unmount tells a dead mount by open(mountpoint)
	 * failing with ENOTCONN, and without opendir that open succeeds on a
	 * dead connection: only when the daemon's own unmount watcher
	 * (unmount-watch.h) will detach a dead mount. */
	if (fs->unmount_watched && (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT)) {
		conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
		fs->no_opendir = true;
	}
	if (conn->capable & FUSE_CAP_READDIRPLUS) {
		conn->want |= FUSE_CAP_READDIRPLUS;
		conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	}
	if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	/* link targets change only with the model, which invalidates them */
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
}

/* The tree is the model's: nothing is created, removed or renamed through
 * the filesystem. The errors are the ones sysfs gives. */
static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	req_fs(req, FS_OP_MKNOD);
	fuse_reply_err(req, EACCES);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	req_fs(req, FS_OP_CREATE);
	fuse_reply_err(req, EACCES);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	req_fs(req, FS_OP_MKDIR);
	fuse_reply_err(req, EPERM);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	req_fs(req, FS_OP_UNLINK);
	fuse_reply_err(req, EPERM);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	req_fs(req, FS_OP_SYMLINK);
	fuse_reply_err(req, EPERM);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	req_fs(req, FS_OP_RENAME);
	fuse_reply_err(req, EPERM);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	req_fs(req, FS_OP_LINK);
	fuse_reply_err(req, EPERM);
}

static const struct fuse_lowlevel_ops fs_ops = {
	.init = op_init,
	.readdirplus = op_readdirplus,
	.mknod = op_mknod,
	.create = op_create,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_unlink,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.open = op_open,
	.release = op_release,
	.read = op_read,
	.write = op_write,
	.statfs = op_statfs,
};

int dm_fs_new(struct dm_model *m, struct fuse_args *args, struct dm_fs **ret)
{
	struct dm_fs *fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	fs->model = m;
	clock_gettime(CLOCK_REALTIME, &fs->start);
	pthread_mutex_init(&fs->inval_lock, NULL);
	pthread_cond_init(&fs->inval_cond, NULL);
	pthread_mutex_init(&fs->dirs_lock, NULL);
	pthread_mutex_init(&fs->opens_lock, NULL);
	fs->uid_budget = DEFAULT_UID_BUDGET;
	/* ours, taken out of what FUSE is given (see struct uid_use) */
	static const struct fuse_opt opts[] = {
		{ "max_open_bytes_per_uid=%zu", offsetof(struct dm_fs, uid_budget), 0 },
		FUSE_OPT_END,
	};
	int r = fuse_opt_parse(args, fs, opts, NULL) == 0 ? 0 : -EINVAL;
	if (r < 0)
		goto out_free;
	r = fs_table_new(&fs->table);
	if (r < 0)
		goto out_free;
	/* Every user reads, as with sysfs; the kernel checks modes, so only
	 * root may write. allow_other is root's to give (an unprivileged
	 * mount would need user_allow_other in /etc/fuse.conf). */
	/* auto_unmount: a helper (fusermount3) unmounts when the daemon dies,
	 * even by SIGKILL, so no dead mount is left behind. */
	if (fuse_opt_add_arg(args, "-o") < 0 ||
	    fuse_opt_add_arg(args, geteuid() == 0
				       ? "default_permissions,allow_other,auto_unmount,"
					 "fsname=driverfs,subtype=driverfs"
				       : "default_permissions,auto_unmount,fsname=driverfs,"
					 "subtype=driverfs") < 0) {
		r = -ENOMEM;
		goto out_table;
	}
	fs->se = fuse_session_new(args, &fs_ops, sizeof(fs_ops), fs);
	if (!fs->se) {
		r = -EINVAL;
		goto out_table;
	}
	*ret = fs;
	return 0;

out_table:
	fs_table_free(fs->table);
out_free:
	free(fs);
	return r;
}

int dm_fs_mount(struct dm_fs *fs, const char *mountpoint)
{
	if (fuse_session_mount(fs->se, mountpoint) != 0)
		return -EIO;
	fs->mounted = true;
	if (fs->no_io_uring)
		return 0;
	/* else (no possible CPUs to read) the session reads /dev/fuse alone */
	if (dm_uring_attach(fs->se, DM_URING_THREADS_PER_CPU, &fs->uring) < 0)
		fs->uring = NULL;
	return 0;
}

void dm_fs_set_io_uring(struct dm_fs *fs, bool on)
{
	fs->no_io_uring = !on;
}

void dm_fs_set_unmount_watched(struct dm_fs *fs)
{
	fs->unmount_watched = true;
}

int dm_fs_start_notifier(struct dm_fs *fs)
{
	int r = -pthread_create(&fs->inval_thread, NULL, inval_thread, fs);
	if (r < 0)
		return r;
	fs->inval_running = true;
	dm_model_set_listener(fs->model, &fs_listener, fs);
	return 0;
}

int dm_fs_set_signal_handlers(struct dm_fs *fs)
{
	return fuse_set_signal_handlers(fs->se) == 0 ? 0 : -EIO;
}

int dm_fs_loop(struct dm_fs *fs)
{
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -ENOMEM;
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, 16);
	fuse_loop_cfg_set_idle_threads(cfg, 16);
	int r = fuse_session_loop_mt(fs->se, cfg);
	fuse_loop_cfg_destroy(cfg);
	/* the rings' threads call into the session and the tables */
	dm_uring_stop(fs->uring);
	return r < 0 ? r : 0;
}

void dm_fs_free(struct dm_fs *fs)
{
	if (!fs)
		return;
	if (fs->inval_running) {
		dm_model_set_listener(fs->model, NULL, NULL);
		pthread_mutex_lock(&fs->inval_lock);
		fs->inval_quit = true;
		pthread_cond_broadcast(&fs->inval_cond);
		pthread_mutex_unlock(&fs->inval_lock);
		pthread_join(fs->inval_thread, NULL);
	}
	/* after the notifier, whose invalidations go through its writev */
	dm_uring_free(fs->uring);
	for (size_t i = 0; i < fs->n_inval; i++)
		inval_free(&fs->inval[i]);
	free(fs->inval);
	pthread_cond_destroy(&fs->inval_cond);
	pthread_mutex_destroy(&fs->inval_lock);
	while (fs->dirs) {
		struct dir_snapshot *d = fs->dirs;
		fs->dirs = d->next;
		snapshot_free(d);
	}
	pthread_mutex_destroy(&fs->dirs_lock);
	for (size_t i = 0; i < fs->n_opens; i++)
		open_value_free(fs->opens[i]);
	free(fs->opens);
	free(fs->uses);
	pthread_mutex_destroy(&fs->opens_lock);
	fuse_remove_signal_handlers(fs->se);
	if (fs->mounted)
		fuse_session_unmount(fs->se);
	fuse_session_destroy(fs->se);
	fs_table_free(fs->table);
	free(fs);
}
