/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * notify.h - the invalidation notifier (docs/design.md §5.3). Whatever
 * changes the model after the mount is queued by the model's listener,
 * which is called under the model's write lock and so only queues; a
 * thread of its own, holding no lock a FUSE handler needs, tells the
 * kernel which names, listings, attributes and pages it cached are stale.
 * Private to src/fuse.
 */
#ifndef DM_FS_NOTIFY_H
#define DM_FS_NOTIFY_H

#include "inode.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct fuse_session;

/* A node the kernel may hold from before a takeover (handover.h), whose
 * cached names, attributes, pages and listing the new daemon cannot vouch
 * for: its number, and for one gone meanwhile its place (name NULL: one
 * made again). */
struct fs_stale {
	uint64_t ino, parent;
	char *name;
	bool dir; /* a directory: its cached listing goes too */
};

/* What the kernel may have cached that a model change made stale. */
struct fs_inval {
	struct dm_device *dev; /* referenced; NULL for a driver's */
	char *entry; /* a driver's: its name in listings[0] */
	bool added; /* a new device: the listings that now hold it */
	bool removed; /* a device gone: its parent's own entries may take its name */
	bool power; /* only its power files changed */
	char *listings[5]; /* "bus/pci/devices", "class/block/disk" ... */
	uint64_t parent_id; /* added, removed: the parent device, whose directory lists it */
	struct fs_stale *stale; /* a takeover's nodes (no dev) */
	size_t n_stale;
};

struct fs_notifier {
	struct dm_model *model;
	struct fs_table *table;
	struct fuse_session *se;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct fs_inval *queue;
	size_t n, cap;
	bool quit;
	bool running;
	pthread_t thread;
	uint64_t sent; /* batches done, for fs_notifier_sync() */
	uint64_t queued;
};

void fs_notifier_init(struct fs_notifier *nf, struct dm_model *m, struct fs_table *t);
/* Starts the thread (after the mount: it sends to @se) and becomes the
 * model's listener. */
int fs_notifier_start(struct fs_notifier *nf, struct fuse_session *se);
/* Queues the invalidation of @n nodes a takeover found (taking @v and
 * the names in it; freed when out of memory). */
void fs_notifier_queue_stale(struct fs_notifier *nf, struct fs_stale *v, size_t n);
/* Waits until every invalidation queued so far was sent (at once when the
 * notifier is not running). A FUSE handler may call it only where the
 * invalidations it waits for take no lock the handler holds: the notifier
 * invalidates a file by its attributes only, never waiting for a page lock,
 * so a write handler may (fs-files.c, fs_op_write()). */
void fs_notifier_sync(struct fs_notifier *nf);
/* Stops being the listener and ends the thread. */
void fs_notifier_stop(struct fs_notifier *nf);
/* Frees what is still queued (after fs_notifier_stop()). */
void fs_notifier_done(struct fs_notifier *nf);

#endif
