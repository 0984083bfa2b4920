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

#include "core/hashmap.h"

#include <pthread.h>
#include <stdatomic.h>
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

/* The names a lookup missed and answered with a negative entry, which
 * the kernel keeps for FS_NEGATIVE_TIMEOUT: each is invalidated with the
 * next batch of model changes, whichever name it brings (a device, a
 * file, a bus or class, a driver), so that a name that comes is seen at
 * once; at most FS_NEGATIVE_MAX kept, a miss past them answered with no
 * entry. @gate orders a reply against the invalidation: a lookup
 * records its miss and holds the gate (read) until its reply is sent,
 * and the notifier takes the set under the gate (write), so that the
 * kernel has every negative entry it invalidates before the
 * invalidation (docs/design.md §6.6). */
#define FS_NEGATIVE_TIMEOUT 5.0
#define FS_NEGATIVE_MAX 4096
struct fs_negatives {
	pthread_rwlock_t gate;
	pthread_mutex_t lock; /* the map, under the gate (read) */
	struct dm_hashmap map; /* struct fs_negative, by itself */
	_Atomic uint64_t given, invalidated;
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
	/* set as it stops, read without the lock: a takeover's batch (one
	 * entry per node, 10^6 and more) is left unfinished */
	atomic_bool stopping;
	bool running;
	pthread_t thread;
	uint64_t sent; /* batches done, for fs_notifier_sync() */
	uint64_t queued;
	struct fs_negatives negatives;
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
/* A lookup of @name in @parent missed; call with the model's read lock
 * held (no change comes between the miss and its record). True: the miss
 * is recorded and the gate held, for a reply with a negative entry, after
 * which call fs_notifier_negative_sent(); false (the notifier not
 * running, FS_NEGATIVE_MAX kept, no memory): reply ENOENT, with no entry. */
bool fs_notifier_negative(struct fs_notifier *nf, uint64_t parent, const char *name);
void fs_notifier_negative_sent(struct fs_notifier *nf);
/* The negative entries given, and invalidated, so far. */
void fs_notifier_negative_counts(struct fs_notifier *nf, uint64_t *given, uint64_t *invalidated);
/* Stops being the listener and ends the thread. */
void fs_notifier_stop(struct fs_notifier *nf);
/* Frees what is still queued (after fs_notifier_stop()). */
void fs_notifier_done(struct fs_notifier *nf);

#endif
