/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * open-value.h - a changing value as one open file reads it: taken by a
 * read at offset 0 (or the first read) and kept for the reads that follow,
 * as sysfs does, so that reading it in pieces never mixes two values
 * (docs/design.md §6.6). The journal's copy is the one the model shares
 * (dm_model_show_log()). Private to src/fuse.
 *
 * Copies live in a table the file handle indexes (fh = slot + 1; 0 for a
 * file with none), never cast from the kernel's number; the session may
 * end before the kernel's last releases were served, and the table frees
 * what is left.
 *
 * What open files pin is counted per uid. Any user may open a value, and a
 * copy of a journal of 10^5 devices is megabytes: a user other than root
 * may pin at most uid_budget bytes (-o max_open_bytes_per_uid=N), each open
 * counted FS_OPEN_COST and each value taken its length, in full even when
 * the copy is shared (a user holding copies of many journals' versions
 * pins them all). An open past it fails with EMFILE, a read that would take
 * a copy past it with ENOMEM; root is not counted.
 */
#ifndef DM_FS_OPEN_VALUE_H
#define DM_FS_OPEN_VALUE_H

#include "core/model.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FS_OPEN_COST 512
#define FS_DEFAULT_UID_BUDGET ((size_t)64 << 20)

/* How an open file's value is read, fixed at its open (set before the
 * copy is published: a read on another thread may come as soon as the
 * open is answered). */
struct fs_open_how {
	/* the attribute found at open when it is read whole (show_alloc): no
	 * second look-up at each read (dm_device_show_attr_blob()) */
	const struct dm_attribute *attr;
	/* read from sysfs, which may take as long as the device
	 * (slowread.h) */
	bool sysfs;
	/* read by offset and size each time, nothing kept (read_range()) */
	bool ranged;
};

struct fs_open_value {
	pthread_mutex_t lock; /* reads of one open file may come in parallel */
	/* the table's (until the release) and one per read at work on it: a
	 * read's end and the release of its file are ordered by the kernel,
	 * which this process cannot see (a reply written to one descriptor,
	 * the release read from another); the count orders them here */
	atomic_uint refs;
	struct dm_blob *value; /* NULL until taken */
	uid_t uid; /* the opener's, charged for it */
	size_t charged; /* the bytes charged for the value */
	struct fs_open_how how;
};

struct uid_use {
	uid_t uid;
	size_t bytes;
};

/* The open copies of one mount. */
struct fs_opens {
	pthread_mutex_t lock;
	struct fs_open_value **v; /* indexed by fh - 1; NULL: a free slot */
	size_t n;
	struct uid_use *uses; /* what each uid other than root pins */
	size_t n_uses;
	size_t uid_budget; /* FS_DEFAULT_UID_BUDGET unless set before use */
	/* the handles' high half: the connection's epoch (handover.h), so
	 * that a handle the last daemon gave never names a copy of this one */
	uint64_t epoch;
};

void fs_opens_init(struct fs_opens *o);
/* Before serving: handles carry @epoch (below 2^31) in their high half. */
void fs_opens_set_epoch(struct fs_opens *o, uint64_t epoch);
/* Frees what is left open (the session is over). */
void fs_opens_done(struct fs_opens *o);

/* A new open copy for @uid, still empty, read as @how says, its handle in
 * *ret_fh. -EMFILE when @uid has pinned its budget. */
int fs_open_value_new(struct fs_opens *o, uid_t uid, const struct fs_open_how *how,
		      uint64_t *ret_fh);
/* The copy of the open file @fh, a reference the caller puts, or NULL. */
struct fs_open_value *fs_open_value_get(struct fs_opens *o, uint64_t fh);
void fs_open_value_put(struct fs_open_value *v);
/* Puts @b (a reference, given) in @v for the reads that follow, charged to
 * its opener in place of the copy it had. Call with @v's lock held.
 * -ENOMEM past the opener's budget (the old copy stays). */
int fs_open_value_set(struct fs_opens *o, struct fs_open_value *v, struct dm_blob *b);
/* The file @fh is closed: its handle names nothing from now on, and its
 * copy goes with the last read at work on it. */
void fs_open_value_release(struct fs_opens *o, uint64_t fh);

#endif
