/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fs-private.h - what the FUSE session's files share: the filesystem
 * object, the count of requests per operation and the handlers of the
 * operations table (fs.c) that live in fs-nodes.c (names, attributes,
 * links, listings) and fs-files.c (opening, reading and writing values).
 * Private to src/fuse.
 */
#ifndef DM_FS_PRIVATE_H
#define DM_FS_PRIVATE_H

#define FUSE_USE_VERSION 312
#include "fs.h"

#include "listing.h"
#include "notify.h"
#include "open-value.h"
#include "passthrough.h"
#include "slowread.h"

#include <fuse_lowlevel.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

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
	/* a connection taken over on io_uring: its entries' payload size,
	 * registered once serving (dm_fs_loop()) */
	size_t uring_adopted;
	struct fs_listings listings; /* listings being read, one per directory */
	struct fs_opens opens; /* copies of open files' changing values */
	struct fs_passthrough passthrough; /* files the kernel reads itself */
	struct fs_notifier notifier;
	struct fs_slow slow; /* sysfs reads of users other than root */
	struct fs_inflight inflight; /* reads and writes being served */
	/* handover (handover.h): the state shared with the next daemon, when
	 * wanted; the mount point of a connection taken over (libfuse did not
	 * mount it, so driverfsd unmounts it); whether the daemon leaves the
	 * connection to its successor */
	bool handover_wanted;
	struct fs_handover *handover;
	char *adopted_point;
	/* a connection taken over: answered before the model (early.h) from
	 * the mirror; the backings the last daemon left */
	struct fs_early *early;
	struct fs_mirror early_mirror;
	int adopted_backings;
	atomic_bool leaving; /* set by SIGUSR2's handler, on any thread */

	/* requests served, counted without a lock: a relaxed atomic add
	 * per request costs nothing beside the request itself */
	atomic_uint_fast64_t requests[FS_OP_N];
};

/* The filesystem of @req, counting one request of @op. */
static inline struct dm_fs *req_fs(fuse_req_t req, enum fs_op op)
{
	struct dm_fs *fs = fuse_req_userdata(req);
	atomic_fetch_add_explicit(&fs->requests[op], 1, memory_order_relaxed);
	return fs;
}

/* fs-nodes.c */
void fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fs_op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		   struct fuse_file_info *fi);
void fs_op_readlink(fuse_req_t req, fuse_ino_t ino);
void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi);
void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi);

/* fs-files.c */
void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fs_serve_slow(void *data, struct fs_slow_item *it, int refuse);
void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
		 struct fuse_file_info *fi);

#endif
