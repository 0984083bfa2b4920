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
 *
 * Backings are the connection's, not the process's: they outlive the
 * daemon that registered them, and every open of an inode whose files are
 * still open must name the same one (any other open fails with EIO). So
 * under --handover the backings are mirrored in the handover state as they
 * change (struct fs_backing_mirror), and the next daemon takes them over:
 * the releases of the files opened before come to it and put them back,
 * and new opens of those inodes share them.
 * Private to src/fuse.
 */
#ifndef DM_FS_PASSTHROUGH_H
#define DM_FS_PASSTHROUGH_H

#define FUSE_USE_VERSION 312
#include "core/hashmap.h"

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* One backing in the handover state: ino 0 is a free slot; ino is written
 * last and cleared first, so a slot read after a SIGKILL is whole. */
struct fs_backing_slot {
	_Atomic uint64_t ino;
	int32_t id;
	uint32_t opens;
};
/* shared with every daemon of a connection, whatever its build */
_Static_assert(sizeof(struct fs_backing_slot) == 16, "a mirrored backing is 16 bytes");

struct fs_backing_mirror {
	struct fs_backing_slot *slots;
	uint32_t cap;
	/* the kernel took passthrough at the connection's INIT */
	_Atomic uint32_t *negotiated;
};

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
	atomic_size_t held; /* backings held (inherited ones included) */
	/* --handover: every backing mirrored, one slot each; a backing that
	 * finds no slot is not made (the file is read through the daemon) */
	struct fs_backing_mirror mirror;
	uint32_t *free_slots, n_free, high; /* slots below high, free again */
	bool leaving; /* the backings stay for the next daemon */
};

void fs_passthrough_init(struct fs_passthrough *pt, bool wanted);
/* Closes the backings left (the session has ended). */
void fs_passthrough_done(struct fs_passthrough *pt);
/* The session's /dev/fuse, once mounted (or taken over). */
void fs_passthrough_set_fd(struct fs_passthrough *pt, int fd);
/* --handover, before serving a connection just mounted: backings are
 * mirrored in @m (empty) from now on. */
void fs_passthrough_set_mirror(struct fs_passthrough *pt, const struct fs_backing_mirror *m);
/* --handover, the next daemon, before serving: the backings mirrored in
 * @m taken over (each still open), and passthrough on if the connection
 * negotiated it and this daemon wants it. Inherited backings are shared by
 * new opens of their inodes even when passthrough is not wanted (the
 * kernel refuses those opens any other way). The number taken over, or
 * -ENOMEM. */
int fs_passthrough_adopt(struct fs_passthrough *pt, const struct fs_backing_mirror *m);
/* A planned handover, the loop ended: the backings are left registered,
 * for the next daemon (fs_passthrough_done() closes none). */
void fs_passthrough_leave(struct fs_passthrough *pt);
bool fs_passthrough_on(struct fs_passthrough *pt);
/* Whether an open may get a backing: passthrough is on, or backings taken
 * over from the last daemon are still held. */
bool fs_passthrough_any(struct fs_passthrough *pt);
uint64_t fs_passthrough_opens(struct fs_passthrough *pt);

/* From the session's I/O: the kernel's INIT (its flags, flags2 above bit
 * 31), and a reply about to go out (the INIT's asks for passthrough; an
 * open's made by fs_passthrough_reply_open() is marked). */
void fs_passthrough_saw_init(struct fs_passthrough *pt, uint64_t flags, uint64_t unique);
void fs_passthrough_patch_reply(struct fs_passthrough *pt, struct iovec *iov, int count);

/* The backing of inode @ino, registered at its first open from the
 * descriptor @open_source(@data) returns (closed here): *ret_id for
 * fs_passthrough_reply_open(). An inode's backing held already is shared,
 * whether passthrough is on or not. -EOPNOTSUPP when passthrough is off,
 * -ENOSPC when the handover mirror is full, or what open_source() or the
 * kernel answered; then the file is opened without. Each success is put
 * back once, at release. */
int fs_passthrough_get(struct fs_passthrough *pt, uint64_t ino, int (*open_source)(void *),
		       void *data, int32_t *ret_id);
void fs_passthrough_put(struct fs_passthrough *pt, uint64_t ino);

/* A file handle (an open copy's slot, open-value.h) with this bit: the
 * file has a backing the kernel reads, to be put back at its release. */
#define FS_FH_BACKED ((uint64_t)1 << 63)
/* An open reply's body marked: the kernel reads the file from backing @id. */
struct fuse_open_out;
void fs_passthrough_mark_open(struct fuse_open_out *o, int32_t id);
/* fuse_reply_open() of a file the kernel reads from backing @id. */
int fs_passthrough_reply_open(fuse_req_t req, const struct fuse_file_info *fi, int32_t id);

#endif
