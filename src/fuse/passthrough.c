/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* passthrough.c - FUSE passthrough of sysfs attributes (see passthrough.h). */
#include "passthrough.h"

#include "util/log.h"

#include <errno.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* ---- the passthrough part of the FUSE protocol (7.40), not in the
 * <linux/fuse.h> of Debian 12 nor in libfuse 3.14 ---- */

#define PT_INIT_FLAG (1ULL << 37) /* FUSE_PASSTHROUGH */
#define PT_OPEN_FLAG (1U << 7) /* FOPEN_PASSTHROUGH */

struct pt_backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};

#define PT_IOC_MAGIC 229
#define PT_IOC_BACKING_OPEN _IOW(PT_IOC_MAGIC, 1, struct pt_backing_map)
#define PT_IOC_BACKING_CLOSE _IOW(PT_IOC_MAGIC, 2, uint32_t)

/* fuse_init_out: max_stack_depth follows flags2 (libfuse 3.14 calls it
 * unused[0]); fuse_open_out: backing_id follows open_flags (padding). */
#define PT_INIT_STACK_DEPTH_OFF (offsetof(struct fuse_init_out, flags2) + sizeof(uint32_t))
#define PT_OPEN_BACKING_OFF (offsetof(struct fuse_open_out, open_flags) + sizeof(uint32_t))
_Static_assert(sizeof(struct fuse_open_out) == 16, "fuse_open_out's size");

#define NO_SLOT UINT32_MAX

struct fs_backing {
	uint64_t ino; /* the key */
	int32_t id;
	unsigned opens;
	uint32_t slot; /* in the handover mirror, or NO_SLOT */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void fs_passthrough_init(struct fs_passthrough *pt, bool wanted)
{
	memset(pt, 0, sizeof(*pt));
	pthread_mutex_init(&pt->lock, NULL);
	pt->fd = -1;
	pt->wanted = wanted;
	dm_hashmap_init(&pt->backings, dm_hash_u64, cmp_u64);
}

static int close_backing(void *value, void *data)
{
	struct fs_backing *b = value;
	struct fs_passthrough *pt = data;
	uint32_t id = (uint32_t)b->id;
	/* left for the next daemon: registered still, and mirrored */
	if (pt->fd >= 0 && !pt->leaving)
		(void)ioctl(pt->fd, PT_IOC_BACKING_CLOSE, &id);
	free(b);
	return 0;
}

void fs_passthrough_done(struct fs_passthrough *pt)
{
	dm_hashmap_for_each(&pt->backings, close_backing, pt);
	dm_hashmap_done(&pt->backings);
	free(pt->free_slots);
	pthread_mutex_destroy(&pt->lock);
}

void fs_passthrough_leave(struct fs_passthrough *pt)
{
	pthread_mutex_lock(&pt->lock);
	pt->leaving = pt->mirror.slots != NULL;
	pthread_mutex_unlock(&pt->lock);
}

/* ---- the handover mirror (lock held) ---- */

static int mirror_add(struct fs_passthrough *pt, struct fs_backing *b)
{
	b->slot = NO_SLOT;
	if (!pt->mirror.slots)
		return 0;
	uint32_t i;
	if (pt->n_free)
		i = pt->free_slots[--pt->n_free];
	else if (pt->high < pt->mirror.cap)
		i = pt->high++;
	else
		return -ENOSPC;
	struct fs_backing_slot *s = &pt->mirror.slots[i];
	s->id = b->id;
	s->opens = b->opens;
	atomic_store_explicit(&s->ino, b->ino, memory_order_release);
	b->slot = i;
	return 0;
}

static void mirror_count(struct fs_passthrough *pt, const struct fs_backing *b)
{
	if (b->slot != NO_SLOT)
		pt->mirror.slots[b->slot].opens = b->opens;
}

static void mirror_remove(struct fs_passthrough *pt, const struct fs_backing *b)
{
	if (b->slot == NO_SLOT)
		return;
	atomic_store_explicit(&pt->mirror.slots[b->slot].ino, 0, memory_order_release);
	/* room for every slot: allocated with the mirror */
	pt->free_slots[pt->n_free++] = b->slot;
}

static int mirror_set(struct fs_passthrough *pt, const struct fs_backing_mirror *m)
{
	uint32_t *free_slots = calloc(m->cap ? m->cap : 1, sizeof(*free_slots));
	if (!free_slots)
		return -ENOMEM;
	free(pt->free_slots);
	pt->free_slots = free_slots;
	pt->n_free = pt->high = 0;
	pt->mirror = *m;
	return 0;
}

void fs_passthrough_set_mirror(struct fs_passthrough *pt, const struct fs_backing_mirror *m)
{
	pthread_mutex_lock(&pt->lock);
	/* without room to count free slots, no mirror: and no backing is
	 * made (fs_passthrough_get() fails with -ENOSPC) */
	if (mirror_set(pt, m) < 0) {
		pt->mirror = *m;
		pt->mirror.cap = 0;
	}
	pthread_mutex_unlock(&pt->lock);
}

int fs_passthrough_adopt(struct fs_passthrough *pt, const struct fs_backing_mirror *m)
{
	pthread_mutex_lock(&pt->lock);
	int r = mirror_set(pt, m);
	size_t taken = 0;
	for (uint32_t i = 0; r == 0 && i < m->cap; i++) {
		struct fs_backing_slot *s = &m->slots[i];
		uint64_t ino = atomic_load_explicit(&s->ino, memory_order_acquire);
		if (!ino)
			continue;
		pt->high = i + 1;
		/* none open is none held: closed; a second slot of one inode
		 * (not written so) is dropped */
		bool dup = dm_hashmap_get(&pt->backings, &ino) != NULL;
		if (s->opens == 0 || s->id < 0 || dup) {
			uint32_t id = (uint32_t)s->id;
			if (s->id >= 0 && !dup)
				(void)ioctl(pt->fd, PT_IOC_BACKING_CLOSE, &id);
			atomic_store(&s->ino, 0);
			continue;
		}
		struct fs_backing *b = malloc(sizeof(*b));
		if (!b) {
			r = -ENOMEM;
			break;
		}
		*b = (struct fs_backing){ .ino = ino, .id = s->id, .opens = s->opens, .slot = i };
		if (dm_hashmap_put(&pt->backings, &b->ino, b) < 0) {
			free(b);
			r = -ENOMEM;
			break;
		}
		taken++;
	}
	/* the slots below the highest taken and not taken are free */
	for (uint32_t i = 0; r == 0 && i < pt->high; i++)
		if (!atomic_load(&m->slots[i].ino))
			pt->free_slots[pt->n_free++] = i;
	atomic_store(&pt->held, taken);
	if (pt->wanted && m->negotiated && atomic_load(m->negotiated))
		atomic_store_explicit(&pt->on, true, memory_order_release);
	pthread_mutex_unlock(&pt->lock);
	return r < 0 ? r : (int)taken;
}

void fs_passthrough_set_fd(struct fs_passthrough *pt, int fd)
{
	pt->fd = fd;
}

bool fs_passthrough_on(struct fs_passthrough *pt)
{
	return atomic_load_explicit(&pt->on, memory_order_acquire);
}

bool fs_passthrough_any(struct fs_passthrough *pt)
{
	return fs_passthrough_on(pt) || atomic_load_explicit(&pt->held, memory_order_relaxed);
}

uint64_t fs_passthrough_opens(struct fs_passthrough *pt)
{
	return atomic_load_explicit(&pt->opens, memory_order_relaxed);
}

/* ---- INIT ---- */

void fs_passthrough_saw_init(struct fs_passthrough *pt, uint64_t flags, uint64_t unique)
{
	if (!pt->wanted)
		return;
	pthread_mutex_lock(&pt->lock);
	pt->offered = (flags & PT_INIT_FLAG) != 0;
	pt->init_unique = unique;
	atomic_store_explicit(&pt->init_pending, true, memory_order_release);
	pthread_mutex_unlock(&pt->lock);
}

/* Asks for passthrough in the INIT reply, with backing files one level
 * down (sysfs, or a testbed's tmpfs); not with writeback caching, which
 * the kernel does not combine with it (libfuse asks for it only when told). */
static void init_reply(struct fs_passthrough *pt, struct iovec *iov, int count)
{
	const struct fuse_out_header *out = iov[0].iov_base;
	if (count < 2 || out->error != 0 || iov[1].iov_len < PT_INIT_STACK_DEPTH_OFF + 4)
		return;
	struct fuse_init_out *init = iov[1].iov_base;
	if (init->flags & FUSE_WRITEBACK_CACHE)
		return;
	init->flags |= FUSE_INIT_EXT;
	init->flags2 |= (uint32_t)(PT_INIT_FLAG >> 32);
	uint32_t depth = 1;
	memcpy((char *)init + PT_INIT_STACK_DEPTH_OFF, &depth, sizeof(depth));
	atomic_store_explicit(&pt->on, true, memory_order_release);
	if (pt->mirror.negotiated)
		atomic_store(pt->mirror.negotiated, 1);
	log_info("the kernel reads passed-through attributes itself (FUSE passthrough)");
}

/* ---- opens ---- */

/* The backing of the open being answered by this thread. */
static __thread int32_t reply_backing = -1;

void fs_passthrough_patch_reply(struct fs_passthrough *pt, struct iovec *iov, int count)
{
	const struct fuse_out_header *out = iov[0].iov_base;
	if (reply_backing >= 0) {
		if (count == 2 && out->error == 0 && iov[1].iov_len == sizeof(struct fuse_open_out))
			fs_passthrough_mark_open(iov[1].iov_base, reply_backing);
		return;
	}
	if (!pt->wanted || !atomic_load_explicit(&pt->init_pending, memory_order_acquire))
		return;
	pthread_mutex_lock(&pt->lock);
	bool init = pt->init_pending && out->unique == pt->init_unique;
	if (init)
		atomic_store(&pt->init_pending, false);
	bool offered = pt->offered;
	pthread_mutex_unlock(&pt->lock);
	if (init && offered)
		init_reply(pt, iov, count);
}

void fs_passthrough_mark_open(struct fuse_open_out *o, int32_t id)
{
	o->open_flags |= PT_OPEN_FLAG;
	memcpy((char *)o + PT_OPEN_BACKING_OFF, &id, sizeof(int32_t));
}

int fs_passthrough_reply_open(fuse_req_t req, const struct fuse_file_info *fi, int32_t id)
{
	reply_backing = id;
	int r = fuse_reply_open(req, fi);
	reply_backing = -1;
	return r;
}

static int backing_open(struct fs_passthrough *pt, int fd)
{
	struct pt_backing_map map = { .fd = fd };
	int id = ioctl(pt->fd, PT_IOC_BACKING_OPEN, &map);
	if (id >= 0)
		return id;
	int r = -errno;
	/* not allowed at all (no CAP_SYS_ADMIN): every read goes through
	 * the daemon from now on; else (a file the kernel will not back)
	 * this file only */
	if (r == -EPERM && atomic_exchange(&pt->on, false))
		log_warn("FUSE passthrough refused (%s): values are read through the daemon",
			 strerror(-r));
	return r;
}

static void backing_close(struct fs_passthrough *pt, int32_t id)
{
	uint32_t u = (uint32_t)id;
	if (ioctl(pt->fd, PT_IOC_BACKING_CLOSE, &u) < 0)
		log_warn("cannot close a FUSE backing file: %s", strerror(errno));
}

/* One more open of @ino's backing, if it has one. */
static bool backing_ref(struct fs_passthrough *pt, uint64_t ino, int32_t *ret_id)
{
	struct fs_backing *b = dm_hashmap_get(&pt->backings, &ino);
	if (b) {
		b->opens++;
		mirror_count(pt, b);
		*ret_id = b->id;
	}
	return b != NULL;
}

/* Registers a backing for @ino from @open_source's descriptor. */
static int backing_new(struct fs_passthrough *pt, uint64_t ino, int (*open_source)(void *),
		       void *data, int32_t *ret_id)
{
	/* the sysfs file is opened without the lock: opens of other files
	 * go on meanwhile */
	int fd = open_source(data);
	if (fd < 0)
		return fd;
	int id = backing_open(pt, fd);
	close(fd);
	if (id < 0)
		return id;
	struct fs_backing *b = malloc(sizeof(*b));
	int r = 0;
	pthread_mutex_lock(&pt->lock);
	/* another open of the inode may have registered one meanwhile */
	bool found = backing_ref(pt, ino, ret_id);
	if (!found) {
		if (b)
			*b = (struct fs_backing){ .ino = ino, .id = id, .opens = 1 };
		if (!b)
			r = -ENOMEM;
		else if ((r = mirror_add(pt, b)) == 0 &&
			 dm_hashmap_put(&pt->backings, &b->ino, b) < 0) {
			mirror_remove(pt, b);
			r = -ENOMEM;
		}
		if (r == 0) {
			*ret_id = id;
			atomic_fetch_add_explicit(&pt->held, 1, memory_order_relaxed);
		}
	}
	pthread_mutex_unlock(&pt->lock);
	if (found || r < 0) {
		free(b);
		backing_close(pt, id);
	}
	return r;
}

int fs_passthrough_get(struct fs_passthrough *pt, uint64_t ino, int (*open_source)(void *),
		       void *data, int32_t *ret_id)
{
	if (!fs_passthrough_any(pt) || pt->fd < 0)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&pt->lock);
	bool found = backing_ref(pt, ino, ret_id);
	pthread_mutex_unlock(&pt->lock);
	int r = found			   ? 0
		: !fs_passthrough_on(pt) ? -EOPNOTSUPP
					   : backing_new(pt, ino, open_source, data, ret_id);
	if (r == 0)
		atomic_fetch_add_explicit(&pt->opens, 1, memory_order_relaxed);
	return r;
}

void fs_passthrough_put(struct fs_passthrough *pt, uint64_t ino)
{
	pthread_mutex_lock(&pt->lock);
	struct fs_backing *b = dm_hashmap_get(&pt->backings, &ino);
	if (b && --b->opens == 0) {
		dm_hashmap_remove(&pt->backings, &ino);
		mirror_remove(pt, b);
		atomic_fetch_sub_explicit(&pt->held, 1, memory_order_relaxed);
	} else {
		if (b)
			mirror_count(pt, b);
		b = NULL;
	}
	pthread_mutex_unlock(&pt->lock);
	if (b) {
		backing_close(pt, b->id);
		free(b);
	}
}
