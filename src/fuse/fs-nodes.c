/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fs-nodes.c - the FUSE handlers of names, attributes, links and
 * directory listings: the nodes of the mount (docs/design.md §6). */
#include "fs-private.h"

#include "view.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

/* The attributes @st of @n's file, as the kernel is about to be told them,
 * mirrored for a next daemon (fs_table_mirror_told()). */
static void mirror_told(struct dm_fs *fs, const struct fs_ref *n, const struct stat *st)
{
	if (!fs->handover || n->t.kind != FS_ATTR)
		return;
	int64_t ns = ((int64_t)st->st_mtim.tv_sec - (int64_t)fs->start.tv_sec) * 1000000000 +
		     (st->st_mtim.tv_nsec - fs->start.tv_nsec);
	fs_table_mirror_told(fs->table, n->ino, (uint64_t)st->st_size,
			     ns < 0 ? UINT64_MAX : (uint64_t)ns);
}

void fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dm_fs *fs = req_fs(req, FS_OP_LOOKUP);
	struct fs_ref dir;
	int r = fs_table_get(fs->table, parent, &dir);
	if (r < 0) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	struct fs_target found;
	char group[FS_GROUP_MAX];
	uint64_t ino = 0, gen = 0;
	bool negative = false;
	dm_model_read_lock(fs->model);
	r = fs_view_find_locked(fs->model, &dir, name, &found, group);
	/* references are taken before the lock is dropped */
	if (r == 0)
		r = fs_table_lookup(fs->table, parent, dir.depth + 1, name, &found, &ino, &gen);
	/* a miss is kept by the kernel, a while or until the next change
	 * (notify.h): misses of one name walk the directory once */
	else if (r == -ENOENT)
		negative = fs_notifier_negative(&fs->notifier, parent, name);
	dm_model_unlock(fs->model);
	fs_ref_release(&dir);
	if (negative) {
		struct fuse_entry_param e = { .ino = 0, .entry_timeout = FS_NEGATIVE_TIMEOUT };
		fuse_reply_entry(req, &e);
		fs_notifier_negative_sent(&fs->notifier);
		return;
	}
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}

	struct fuse_entry_param e = { .ino = ino, .generation = gen,
				      .entry_timeout = fs_entry_timeout(found.kind) };
	struct fs_ref n;
	r = fs_table_get(fs->table, ino, &n);
	if (r == 0) {
		r = fs_view_stat(fs->model, &fs->start, &n, &e.attr, &e.attr_timeout);
		if (r == 0)
			mirror_told(fs, &n, &e.attr);
		fs_ref_release(&n);
	}
	if (r < 0) {
		fs_table_forget(fs->table, ino, 1);
		fuse_reply_err(req, -r);
		return;
	}
	fuse_reply_entry(req, &e);
}

/* Drops @n lookups of @ino; a node freed takes its kept listing along (its
 * number will name another node). */
static void forget_node(struct dm_fs *fs, uint64_t ino, uint64_t n)
{
	if (fs_table_forget(fs->table, ino, n))
		fs_listings_drop(&fs->listings, ino, 0, true);
}

void fs_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_node(req_fs(req, FS_OP_FORGET), ino, nlookup);
	fuse_reply_none(req);
}

void fs_op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct dm_fs *fs = req_fs(req, FS_OP_FORGET_MULTI);
	for (size_t i = 0; i < count; i++)
		forget_node(fs, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

void fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
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
	r = fs_view_stat(fs->model, &fs->start, &n, &st, &timeout);
	/* an inode of a removed device reached by its number (an open file,
	 * a cached dentry): the device is gone, as sysfs says of such files */
	if (r == -ENOENT && n.t.dev && dm_device_is_dead(n.t.dev))
		r = -ENODEV;
	if (r == 0)
		mirror_told(fs, &n, &st);
	fs_ref_release(&n);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, timeout);
}

void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
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
	r = fs_view_stat(fs->model, &fs->start, &n, &st, NULL);
	/* Only the truncation that O_TRUNC implies on a writable attribute is
	 * accepted, and it changes nothing: values are replaced by a write, as
	 * in sysfs. Modes, owners and times are fixed. */
	if (r == 0 && (to_set != FUSE_SET_ATTR_SIZE || n.t.kind != FS_ATTR || !(st.st_mode & 0222)))
		r = -EPERM;
	if (r == 0)
		mirror_told(fs, &n, &st);
	fs_ref_release(&n);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, 0);
}

void fs_op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct dm_fs *fs = req_fs(req, FS_OP_READLINK);
	struct fs_ref n;
	char target[PATH_MAX];
	int r = fs_table_get(fs->table, ino, &n);
	if (r < 0) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (!fs_kind_is_link(n.t.kind)) {
		r = -EINVAL;
	} else {
		dm_model_read_lock(fs->model);
		r = fs_view_link_target_locked(&n, target, sizeof(target));
		dm_model_unlock(fs->model);
	}
	fs_ref_release(&n);
	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_readlink(req, target);
}

void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
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
	struct fs_listing *s = NULL;
	struct fs_ref dir;
	char *buf = malloc(size);
	int r = buf ? fs_table_get(fs->table, ino, &dir) : -ENOMEM;
	if (r == 0) {
		r = fs_listing_get(&fs->listings, fs->model, &dir, off, &s);
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
			const struct fs_listing_entry *d = &s->v[i - 2];
			name = d->name;
			e.attr.st_mode = d->type;
			/* the node's number when the kernel knows it; otherwise a
			 * number outside the table's range, never 0 */
			e.attr.st_ino = fs_table_peek(fs->table, ino, name);
			if (!e.attr.st_ino)
				e.attr.st_ino = (1ULL << 63) | (uint64_t)i << 32 | (ino & 0xffffffff);
		} else {
			const struct fs_listing_entry *d = &s->v[i - 2];
			name = d->name;
			uint64_t gen;
			r = fs_table_lookup(fs->table, ino, dir.depth + 1, name, &d->t, &child, &gen);
			if (r < 0)
				break;
			struct fs_ref n;
			r = fs_table_get(fs->table, child, &n);
			if (r == 0) {
				r = fs_view_stat(fs->model, &fs->start, &n, &e.attr, &e.attr_timeout);
				if (r == 0)
					mirror_told(fs, &n, &e.attr);
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
			e.entry_timeout = fs_entry_timeout(d->t.kind);
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
			fs_listing_finished(&fs->listings, s, off);
	}
	fs_listing_put(&fs->listings, s);
	free(buf);
}

/* A closed directory's kept listing goes: a listing left unfinished would
 * otherwise stay until the node is forgotten. */
void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dm_fs *fs = req_fs(req, FS_OP_RELEASEDIR);
	struct fs_ref dir;
	(void)fi;
	if (fs_table_get(fs->table, ino, &dir) == 0) {
		fs_listings_drop(&fs->listings, ino, dir.gen, false);
		fs_ref_release(&dir);
	}
	fuse_reply_err(req, 0);
}

void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	(void)fi;
	reply_listing(req, req_fs(req, FS_OP_READDIR), ino, size, off, false);
}

void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	reply_listing(req, req_fs(req, FS_OP_READDIRPLUS), ino, size, off, true);
}
