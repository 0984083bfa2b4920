/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * passthrough.h - FUSE passthrough: the kernel reads a passed-through sysfs
 * attribute itself, from the sysfs file, without a READ to the daemon
 * (docs/design.md §6.4).
 *
 * Linux 6.9 and later (CONFIG_FUSE_PASSTHROUGH) let a FUSE server answer an
 * open with a "backing file": reads of that open file then go to the
 * backing file in the kernel, as the server (its credentials) would read
 * it. libfuse 3.14 knows nothing of it; the session's I/O (io.h) shows this
 * module the kernel's INIT, whose reply asks for passthrough where the
 * kernel offers it, and every open reply, which it marks. The daemon still
 * answers every open (the value's mode and existence are checked there,
 * and a sysfs attribute is opened anew for each open file, so every value
 * is read when it is opened, as sysfs reads it); only the reads are the
 * kernel's.
 *
 * The kernel wants one backing file per inode for all the files open on
 * it at once: a backing is registered at an inode's first open, shared by
 * the opens that follow, and closed at the last one's release.
 * Private to src/fuse.
 */
#ifndef DM_FS_PASSTHROUGH_H
#define DM_FS_PASSTHROUGH_H

#define FUSE_USE_VERSION 312
#include "core/hashmap.h"

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct fs_passthrough {
	pthread_mutex_t lock;
	int fd; /* the session's /dev/fuse: backings are registered there */
	bool wanted; /* not --no-passthrough */
	atomic_bool on; /* the kernel took it at INIT */
	/* the kernel's INIT was read, not yet answered: read without the lock
	 * by every reply, which looks for the INIT's only while it is set */
	atomic_bool init_pending;
	uint64_t init_unique;
	bool offered; /* the kernel's INIT offers passthrough */
	struct dm_hashmap backings; /* inode number -> struct fs_backing */
	atomic_uint_fast64_t opens; /* files opened with a backing */
};

void fs_passthrough_init(struct fs_passthrough *pt, bool wanted);
/* Closes the backings left (the session has ended). */
void fs_passthrough_done(struct fs_passthrough *pt);
/* The session's /dev/fuse, once mounted. */
void fs_passthrough_set_fd(struct fs_passthrough *pt, int fd);
bool fs_passthrough_on(struct fs_passthrough *pt);
uint64_t fs_passthrough_opens(struct fs_passthrough *pt);

/* From the session's I/O: the kernel's INIT (its flags, flags2 above bit
 * 31), and a reply about to go out (the INIT's asks for passthrough; an
 * open's made by fs_passthrough_reply_open() is marked). */
void fs_passthrough_saw_init(struct fs_passthrough *pt, uint64_t flags, uint64_t unique);
void fs_passthrough_patch_reply(struct fs_passthrough *pt, struct iovec *iov, int count);

/* The backing of inode @ino, registered at its first open from the
 * descriptor @open_source(@data) returns (closed here): *ret_id for
 * fs_passthrough_reply_open(). -EOPNOTSUPP when passthrough is off, or
 * what open_source() or the kernel answered; then the file is opened
 * without. Each success is put back once, at release. */
int fs_passthrough_get(struct fs_passthrough *pt, uint64_t ino, int (*open_source)(void *),
		       void *data, int32_t *ret_id);
void fs_passthrough_put(struct fs_passthrough *pt, uint64_t ino);

/* fuse_reply_open() of a file the kernel reads from backing @id. */
int fs_passthrough_reply_open(fuse_req_t req, const struct fuse_file_info *fi, int32_t id);

#endif
