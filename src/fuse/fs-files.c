/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fs-files.c - the FUSE handlers of value files: open, read, write and
 * release (docs/design.md §6.4, §6.6). */
#include "fs-private.h"

#include "uring.h"
#include "view.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

struct attr_source {
	struct dm_device *dev;
	const struct dm_attribute *attr;
};

static int open_attr_source(void *data)
{
	const struct attr_source *s = data;
	return dm_device_open_attr_source(s->dev, s->attr);
}

/*
 * A passed-through sysfs attribute, where the kernel offers passthrough,
 * is read by the kernel itself from the sysfs file, opened anew for each
 * open file (so read when opened, whole, as sysfs reads it): no READ comes
 * here. A file open for writing shares its inode's backing (the kernel
 * wants one per inode) but with direct_io, which takes its writes (and
 * reads) here as before.
 */
static int32_t open_backing(struct dm_fs *fs, fuse_ino_t ino, struct dm_device *dev,
			    const struct dm_attribute *attr)
{
	if (!attr || !attr->open_source || !fs_passthrough_any(&fs->passthrough))
		return -1;
	struct attr_source src = { .dev = dev, .attr = attr };
	int32_t id;
	return fs_passthrough_get(&fs->passthrough, ino, open_attr_source, &src, &id) < 0 ? -1
											 : id;
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
void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
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
		r = (fi->flags & O_ACCMODE) != O_RDONLY && !fs_view_driver_file_writable(n.name)
			    ? -EACCES
			    : 0;
	} else if (n.t.kind != FS_ATTR) {
		r = -EISDIR;
	} else {
		dm_model_read_lock(fs->model);
		r = dm_device_stat_file_locked(n.t.dev, n.t.group, n.name, &info);
		dm_model_unlock(fs->model);
		if (r == -ENODEV)
			r = -ENOENT;
	}
	int32_t backing = r == 0 && n.t.kind == FS_ATTR ? open_backing(fs, ino, n.t.dev, info.attr)
							: -1;
	bool reading = (fi->flags & O_ACCMODE) == O_RDONLY;
	bool changing = info.flags & (DM_ATTR_LIVE | DM_ATTR_ANNOUNCED);
	/* where it comes from, for a next daemon to open it before it has a
	 * model (early.h): a sysfs file read through a backing, or a value
	 * the kernel keeps the pages of */
	if (fs->handover && r == 0 && n.t.kind == FS_ATTR && reading && (backing >= 0 || !changing))
		fs_table_mirror_source(fs->table, ino, dm_device_get_devpath(n.t.dev),
				       backing >= 0 ? dm_attribute_path(info.attr) : NULL, info.mode);
	fs_ref_release(&n);
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	if (changing && (fi->flags & O_ACCMODE) != O_WRONLY && !(backing >= 0 && reading)) {
		const struct dm_attribute *a = info.attr;
		struct fs_open_how how = {
			.attr = a && a->show_alloc && !(a->flags & DM_ATTR_UNBOUNDED) ? a : NULL,
			.sysfs = a && (a->flags & DM_ATTR_SYSFS),
			.ranged = a && a->read_range,
		};
		r = fs_open_value_new(&fs->opens, fuse_req_ctx(req)->uid, &how, &fi->fh);
		if (r < 0) {
			if (backing >= 0)
				fs_passthrough_put(&fs->passthrough, ino);
			fuse_reply_err(req, -r);
			return;
		}
	}
	/* writes go to the store whole, one value per write */
	if (changing || !reading)
		fi->direct_io = !(backing >= 0 && reading);
	else
		fi->keep_cache = 1;
	if (backing >= 0)
		fi->fh |= FS_FH_BACKED;
	r = backing >= 0 ? fs_passthrough_reply_open(req, fi, backing) : fuse_reply_open(req, fi);
	if (r == -ENOENT) {
		/* interrupted: no release will come */
		fs_open_value_release(&fs->opens, fi->fh & ~FS_FH_BACKED);
		if (backing >= 0)
			fs_passthrough_put(&fs->passthrough, ino);
	}
}

void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dm_fs *fs = req_fs(req, FS_OP_RELEASE);
	fs_open_value_release(&fs->opens, fi->fh & ~FS_FH_BACKED);
	if (fi->fh & FS_FH_BACKED)
		fs_passthrough_put(&fs->passthrough, ino);
	fuse_reply_err(req, 0);
}

/* The whole value of the file @ino, as a copy of its own or the one
 * shared (the journal's); @attr: its attribute, found at open, or NULL. */
static int show_file(struct dm_fs *fs, fuse_ino_t ino, const struct dm_attribute *attr,
		     struct dm_blob **ret)
{
	struct fs_ref n;
	int r = fs_table_get(fs->table, ino, &n);
	if (r < 0)
		return -ESTALE;
	if (n.t.kind == FS_DRV_ATTR) {
		char value[64], *copy;
		r = fs_view_driver_file_show(n.t.drv, n.name, value, sizeof(value));
		if (r >= 0)
			r = (copy = strdup(value)) ? dm_blob_new(copy, (size_t)r, ret) : -ENOMEM;
	} else {
		r = n.t.kind != FS_ATTR ? -EISDIR
		    : attr	       ? dm_device_show_attr_blob(n.t.dev, attr, ret)
				       : dm_device_show_blob(n.t.dev, n.t.group, n.name, ret);
	}
	if (r == -ENOENT && n.t.kind == FS_ATTR) {
		/* the file went away while open; else ENOENT is the value's
		 * own answer (a sysfs attribute the kernel reads so), kept */
		struct dm_file_info fi;
		dm_model_read_lock(fs->model);
		if (dm_device_stat_file_locked(n.t.dev, n.t.group, n.name, &fi) < 0)
			r = -ENODEV;
		dm_model_unlock(fs->model);
	} else if (r == -ENOENT) {
		r = -ENODEV;
	}
	fs_ref_release(&n);
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

/* The most one read asks (FUSE's max_read is below). */
#define READ_RANGE_MAX ((size_t)1 << 20)

/* A binary value read by offset and size (read_range()): the part asked,
 * from the device now, as sysfs reads it; nothing kept. */
static void read_range(struct dm_fs *fs, fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       const struct dm_attribute *attr)
{
	struct fs_ref n;
	if (fs_table_get(fs->table, ino, &n) < 0) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (size > READ_RANGE_MAX)
		size = READ_RANGE_MAX;
	char *buf = malloc(size ? size : 1);
	ssize_t r = buf ? dm_device_read_attr_range(n.t.dev, attr, buf, size, off) : -ENOMEM;
	fs_ref_release(&n);
	if (r == -ENOENT)
		r = -ENODEV; /* the attribute went away while open */
	if (r < 0)
		fuse_reply_err(req, (int)-r);
	else
		fuse_reply_buf(req, buf, (size_t)r);
	free(buf);
}

/* A read of the open copy @v: taken anew at offset 0 (or the first
 * read), then the part asked; or the part read alone (ranged). */
static void read_open_value(struct dm_fs *fs, fuse_req_t req, fuse_ino_t ino, size_t size,
			    off_t off, struct fs_open_value *v)
{
	struct dm_blob *b = NULL;
	int r = 0;
	int slot = fs_inflight_begin(&fs->inflight, FS_OP_READ, ino, fuse_req_ctx(req)->uid);
	if (v->how.ranged && v->how.attr) {
		read_range(fs, req, ino, size, off, v->how.attr);
		fs_inflight_end(&fs->inflight, slot);
		return;
	}
	pthread_mutex_lock(&v->lock);
	if (off == 0 || !v->value) {
		/* for the one who opened it (model.h, dm_attr_reader()) */
		dm_attr_set_reader(v->uid);
		r = show_file(fs, ino, v->how.attr, &b);
		dm_attr_set_reader(DM_READER_UNKNOWN);
		if (r == 0)
			r = fs_open_value_set(&fs->opens, v, b);
	}
	/* The reply goes out after the unlock, from a reference of its own:
	 * once it is sent, the file may be closed and released, and the
	 * copy replaced by nothing else. */
	b = r == 0 ? dm_blob_ref(v->value) : NULL;
	pthread_mutex_unlock(&v->lock);
	fs_inflight_end(&fs->inflight, slot);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		reply_part(req, b, size, off);
	dm_blob_unref(b);
}

/* A read the pool took (slowread.h), or refuses: @it and its reference
 * to the open copy are dropped here. */
void fs_serve_slow(void *data, struct fs_slow_item *it, int refuse)
{
	if (refuse)
		fuse_reply_err(it->req, refuse);
	else
		read_open_value(data, it->req, it->ino, it->size, it->off, it->v);
	fs_open_value_put(it->v);
	free(it);
}

/* A read of a sysfs value by a user other than root, which may take as
 * long as the device: kept to the user's share of the workers
 * (slowread.h). True when the pool took it, and the caller's reference
 * to @v with it. */
static bool read_sysfs_value(struct dm_fs *fs, fuse_req_t req, fuse_ino_t ino, size_t size,
			     off_t off, struct fs_open_value *v, uid_t uid)
{
	/* a later piece of a copy already taken costs nothing */
	pthread_mutex_lock(&v->lock);
	bool cheap = off != 0 && v->value && !v->how.ranged;
	pthread_mutex_unlock(&v->lock);
	int qid = cheap ? -1 : dm_uring_current_queue();
	if (cheap) {
		read_open_value(fs, req, ino, size, off, v);
	} else if (qid >= 0) {
		/* over io_uring: the entry is held until the answer */
		int r = fs_slow_ring_enter(&fs->slow, (unsigned)qid, uid);
		if (r < 0) {
			fuse_reply_err(req, -r);
			return false;
		}
		read_open_value(fs, req, ino, size, off, v);
		fs_slow_ring_leave(&fs->slow, (unsigned)qid, uid);
	} else {
		/* on /dev/fuse: the worker goes back, the pool answers */
		struct fs_slow_item *it = malloc(sizeof(*it));
		int r = it ? 0 : -ENOMEM;
		if (it) {
			*it = (struct fs_slow_item){
				.req = req, .ino = ino, .size = size, .off = off, .v = v, .uid = uid,
			};
			r = fs_slow_submit(&fs->slow, it);
		}
		if (r < 0) {
			free(it);
			fuse_reply_err(req, -r);
			return false;
		}
		return true;
	}
	return false;
}

void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	struct dm_fs *fs = req_fs(req, FS_OP_READ);
	struct fs_open_value *v = fs_open_value_get(&fs->opens, fi->fh & ~FS_FH_BACKED);
	if (!v) {
		/* a static value: the kernel caches its pages */
		struct dm_blob *b = NULL;
		int r = show_file(fs, ino, NULL, &b);
		if (r < 0)
			fuse_reply_err(req, -r);
		else
			reply_part(req, b, size, off);
		dm_blob_unref(b);
		return;
	}
	uid_t uid = fuse_req_ctx(req)->uid;
	if (v->how.sysfs && uid != 0) {
		if (read_sysfs_value(fs, req, ino, size, off, v, uid))
			return;
	} else {
		read_open_value(fs, req, ino, size, off, v);
	}
	fs_open_value_put(v);
}

/* A write to a kernel driver's bind or unbind file: the device's name,
 * one trailing newline allowed. */
static int driver_request(struct dm_driver *drv, const char *file, const char *data, size_t size)
{
	char name[DM_NAME_MAX + 1];
	if (size && data[size - 1] == '\n')
		size--;
	if (size == 0 || size > DM_NAME_MAX || memchr(data, '\0', size))
		return -EINVAL;
	memcpy(name, data, size);
	name[size] = '\0';
	if (!dm_name_is_printable(name))
		return -EINVAL;
	return dm_driver_bind_request(drv, name, strcmp(file, "unbind") == 0);
}

void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
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
		r = !fs_view_driver_file_writable(n.name) ? -EACCES
		    : off != 0			      ? -EINVAL
						      : driver_request(n.t.drv, n.name, data, size);
	else if (n.t.kind != FS_ATTR)
		r = -EISDIR;
	else if (off != 0)
		r = -EINVAL;
	else {
		int slot = fs_inflight_begin(&fs->inflight, FS_OP_WRITE, ino,
					     fuse_req_ctx(req)->uid);
		r = dm_device_store(n.t.dev, n.t.group, n.name, data, size);
		fs_inflight_end(&fs->inflight, slot);
	}
	fs_ref_release(&n);
	/* What the write changed elsewhere (a suspended subtree's power files)
	 * is invalidated before the writer returns, so that its next read sees
	 * it. Waiting here is safe (notify.h, fs_notifier_sync()): the
	 * notifier invalidates files by their attributes only,
	 * never waiting for a page lock this write may hold. */
	if (r >= 0)
		fs_notifier_sync(&fs->notifier);
	/* a file gone under its writer is ENODEV (§6.5); dm_device_store()
	 * says so itself, and leaves the kernel's own ENOENT to the writer */
	if (r == -ENOENT && n.t.kind != FS_ATTR)
		r = -ENODEV;
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_write(req, size);
}

