/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * slowread.h - reads of sysfs values, which the daemon makes for a reader
 * when the kernel does not read them itself (no passthrough, PCI config),
 * kept from taking the workers every other request needs, and requests
 * that stopped moving noticed (docs/design.md §4.3, §6.7, §10). Private to
 * src/fuse.
 *
 * A sysfs read may take as long as its device: an EEPROM over SMBus, a
 * battery over ACPI, a hostile USB device answering in 300 ms. Any user
 * may read sysfs values, so any user looping over slow ones would hold
 * every worker, and every request of every user (root's power and binding
 * writes, a stat) would wait behind them.
 *
 * On /dev/fuse (libfuse's workers), a read of a sysfs value by a user
 * other than root is handed to this pool and the worker goes back to
 * /dev/fuse at once: the request is answered later, from the pool, which
 * runs at most FS_SLOW_THREADS reads, at most FS_SLOW_PER_UID of them one
 * user's; a user's further reads wait, in the order they came, without a
 * thread (a user past FS_SLOW_QUEUED_PER_UID waiting gets EAGAIN). Root's
 * reads run on the worker, as before.
 *
 * Over io_uring, a request holds its ring entry until it is answered, and
 * each CPU's queue has per_cpu entries: there a user other than root may
 * hold at most per_cpu / 2 of one queue's entries with sysfs reads, and
 * such users together per_cpu - 1, so one entry of every queue is always
 * left to root and to everything that is not a sysfs read; a read past
 * that share is answered EAGAIN at once (it could not wait without
 * holding the very entry it is to leave free).
 *
 * In flight: reads and writes are tracked from their start to their end;
 * fs_inflight_check(), run by the watchdog, logs once each that has run
 * longer than FS_STALL_SEC (operation, file, uid) and counts them.
 */
#ifndef DM_FS_SLOWREAD_H
#define DM_FS_SLOWREAD_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define FS_SLOW_THREADS 8
#define FS_SLOW_PER_UID 2
#define FS_SLOW_QUEUED_PER_UID 1024

struct fs_slow_item {
	fuse_req_t req;
	fuse_ino_t ino;
	size_t size;
	off_t off;
	void *v; /* the open file's copy (open-value.h) */
	uid_t uid;
	struct fs_slow_item *next;
};

struct fs_slow_user {
	uid_t uid;
	unsigned running, queued;
};

/* one io_uring queue's entries taken by sysfs reads of users other than
 * root */
struct fs_slow_ring {
	uid_t uid[8];
	unsigned n;
};

struct fs_slow {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct fs_slow_item *head, **tail;
	struct fs_slow_user *users;
	size_t n_users;
	pthread_t threads[FS_SLOW_THREADS];
	unsigned n_threads;
	bool stop;
	/* serves an item (the pool's threads call it), or answers it
	 * @refuse (an errno) without reading, then frees it */
	void (*serve)(void *data, struct fs_slow_item *it, int refuse);
	void *data;
	struct fs_slow_ring *rings;
	unsigned n_rings, ring_share, ring_share_uid;
	/* reads handed to the pool, ring reads refused */
	atomic_uint_fast64_t queued_total, refused_total;
};

void fs_slow_init(struct fs_slow *s, void (*serve)(void *, struct fs_slow_item *, int),
		  void *data);
/* Over io_uring: @n_queues queues of @per_cpu entries each. */
int fs_slow_set_rings(struct fs_slow *s, unsigned n_queues, unsigned per_cpu);
/* Queues a read of @uid (the item, allocated by the caller, is the pool's
 * from here): 0, or -EAGAIN past the uid's bound, -ENOMEM (the caller
 * answers and frees it). */
int fs_slow_submit(struct fs_slow *s, struct fs_slow_item *it);
/* Over io_uring, on the queue @qid: 0 when @uid may read there now (then
 * fs_slow_ring_leave() after), -EAGAIN past its share. */
int fs_slow_ring_enter(struct fs_slow *s, unsigned qid, uid_t uid);
void fs_slow_ring_leave(struct fs_slow *s, unsigned qid, uid_t uid);
/* Ends the pool's threads (after their current read), answering what
 * waits with EINTR. */
void fs_slow_stop(struct fs_slow *s);
void fs_slow_done(struct fs_slow *s);

/* ---- requests in flight ---- */

#define FS_INFLIGHT_SLOTS 256
#define FS_STALL_SEC 10

struct fs_inflight_slot {
	bool used, logged;
	int op;
	uint64_t ino;
	uid_t uid;
	uint64_t start_ns;
};

struct fs_inflight {
	pthread_mutex_t lock;
	struct fs_inflight_slot slot[FS_INFLIGHT_SLOTS];
	unsigned stalled_now; /* at the last check */
	uint64_t stalled_total;
};

void fs_inflight_init(struct fs_inflight *f);
/* A slot for a request starting now, or -1 when all are taken (then it
 * goes untracked). */
int fs_inflight_begin(struct fs_inflight *f, int op, uint64_t ino, uid_t uid);
void fs_inflight_end(struct fs_inflight *f, int slot);
/* Calls @found(data, slot) for each request in flight longer than
 * @stall_ns not yet reported, marking it reported; returns how many are in
 * flight longer than that, reported or not. */
unsigned fs_inflight_check(struct fs_inflight *f, uint64_t stall_ns,
			   void (*found)(void *, const struct fs_inflight_slot *), void *data);
uint64_t fs_now_ns(void);

#endif
