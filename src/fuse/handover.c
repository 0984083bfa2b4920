/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* handover.c - the state a connection's next daemon takes over (handover.h). */
#include "handover.h"

#include "inode.h"
#include "notify.h"
#include "passthrough.h"
#include "view.h"

#include "core/array.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HEADER_SIZE 4096
_Static_assert(sizeof(struct fs_handover_header) <= HEADER_SIZE, "the header is one page");
/* where any build finds a state's magic and version, before it knows the
 * rest of its layout */
_Static_assert(offsetof(struct fs_handover_header, version) == sizeof(FS_HANDOVER_MAGIC),
	       "the version follows the magic");
/* The mirror's room (a sparse memfd: only what is written takes memory):
 * names for the distinct names of some 10^6 devices, nodes for 2^22
 * numbers (some 2 * 10^5 devices walked whole). */
#define NAMES_CAP (32u << 20)
#define SLOTS_CAP (1u << 22)
/* and backings for 2^16 inodes open at once with passthrough */
#define BACKINGS_CAP (1u << 16)
#define BACKINGS_OFF (HEADER_SIZE + NAMES_CAP + (size_t)SLOTS_CAP * sizeof(struct fs_mirror_slot))
_Static_assert(BACKINGS_OFF % 8 == 0, "the backings are aligned");
#define STATE_SIZE (BACKINGS_OFF + (size_t)BACKINGS_CAP * sizeof(struct fs_backing_slot))

static int map(int fd, struct fs_handover **ret)
{
	void *p = mmap(NULL, STATE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	struct fs_handover *ho = calloc(1, sizeof(*ho));
	if (!ho) {
		munmap(p, STATE_SIZE);
		return -ENOMEM;
	}
	ho->fd = fd;
	ho->h = p;
	*ret = ho;
	return 0;
}

static void set_files_time(struct fs_handover_header *h, const struct timespec *start)
{
	atomic_store(&h->files_sec, (int64_t)start->tv_sec);
	atomic_store(&h->files_nsec, (int64_t)start->tv_nsec);
}

void fs_handover_files_time(const struct fs_handover *ho, struct timespec *ret)
{
	int64_t nsec = atomic_load(&ho->h->files_nsec);
	ret->tv_sec = (time_t)atomic_load(&ho->h->files_sec);
	ret->tv_nsec = nsec >= 0 && nsec < 1000000000 ? (long)nsec : 0;
}

int fs_handover_new(const struct timespec *start, struct fs_handover **ret)
{
	int fd = memfd_create("driverfsd-state", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	int r = ftruncate(fd, (off_t)STATE_SIZE) < 0 ? -errno : map(fd, ret);
	if (r < 0) {
		close(fd);
		return r;
	}
	struct fs_handover_header *h = (*ret)->h;
	memcpy(h->magic, FS_HANDOVER_MAGIC, sizeof(FS_HANDOVER_MAGIC));
	h->version = FS_HANDOVER_VERSION;
	h->names_cap = NAMES_CAP;
	h->slots_cap = SLOTS_CAP;
	h->backings_cap = BACKINGS_CAP;
	atomic_store(&h->names_used, 1);
	atomic_store(&h->ok, 1);
	atomic_store(&h->epoch, 1);
	atomic_store(&h->state, FS_HANDOVER_SERVING);
	set_files_time(h, start);
	return 0;
}

/* Whether @fd is a memfd of a state's size, and @h a state of this
 * version: what announcing and adopting both check first. */
static bool state_fd_sized(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == (off_t)STATE_SIZE;
}

static bool state_this_version(const struct fs_handover_header *h)
{
	return memcmp(h->magic, FS_HANDOVER_MAGIC, sizeof(FS_HANDOVER_MAGIC)) == 0 &&
	       h->version == FS_HANDOVER_VERSION;
}

int fs_handover_announce(int fd, bool coming)
{
	if (!state_fd_sized(fd))
		return -EINVAL;
	struct fs_handover_header *h =
		mmap(NULL, HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED)
		return -errno;
	int r = state_this_version(h) ? 0 : -EINVAL;
	int32_t self = (int32_t)getpid(), none = 0;
	if (r == 0 && coming)
		atomic_store(&h->coming, self);
	else if (r == 0) /* withdrawn: only this daemon's own announcement */
		atomic_compare_exchange_strong(&h->coming, &self, none);
	munmap(h, HEADER_SIZE);
	return r;
}

int fs_handover_adopt(int fd, struct fs_handover **ret)
{
	if (!state_fd_sized(fd))
		return -EINVAL;
	struct fs_handover *ho;
	int r = map(fd, &ho);
	if (r < 0)
		return r;
	struct fs_handover_header *h = ho->h;
	if (!state_this_version(h) || h->init_len > FS_HANDOVER_INIT_MAX ||
	    h->names_cap != NAMES_CAP || h->slots_cap != SLOTS_CAP ||
	    h->backings_cap != BACKINGS_CAP)
		r = -EINVAL;
	else if (!atomic_load(&h->ok))
		r = -ESTALE;
	if (r < 0) {
		munmap(ho->h, STATE_SIZE);
		free(ho);
		return r;
	}
	ho->adopted = true;
	ho->was_left = atomic_load(&h->state) == FS_HANDOVER_LEFT;
	*ret = ho;
	return 0;
}

void fs_handover_free(struct fs_handover *ho)
{
	if (!ho)
		return;
	munmap(ho->h, STATE_SIZE);
	close(ho->fd);
	free(ho);
}

/* ---- the nodes ---- */

void fs_handover_mirror(struct fs_handover *ho, struct fs_mirror *ret)
{
	struct fs_handover_header *h = ho->h;
	char *base = (char *)h;
	*ret = (struct fs_mirror){
		.names = base + HEADER_SIZE, .names_cap = NAMES_CAP,
		.slots = (struct fs_mirror_slot *)(base + HEADER_SIZE + NAMES_CAP),
		.slots_cap = SLOTS_CAP, .names_used = &h->names_used, .high = &h->high, .ok = &h->ok,
	};
}

void fs_handover_backings(struct fs_handover *ho, struct fs_backing_mirror *ret)
{
	struct fs_handover_header *h = ho->h;
	*ret = (struct fs_backing_mirror){
		.slots = (struct fs_backing_slot *)((char *)h + BACKINGS_OFF),
		.cap = BACKINGS_CAP,
		.negotiated = &h->passthrough,
	};
}

void fs_handover_leave(struct fs_handover *ho)
{
	atomic_store(&ho->h->state, FS_HANDOVER_LEFT);
}

struct stale_list {
	struct fs_stale *v;
	size_t n, cap;
};

static int add_stale(uint64_t ino, uint64_t parent, enum fs_kind kind, void *data)
{
	struct stale_list *l = data;
	if (!dm_array_grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v), 1024))
		return -ENOMEM;
	l->v[l->n++] = (struct fs_stale){ .ino = ino, .parent = parent,
					  .dir = fs_kind_is_dir(kind) };
	return 0;
}

int fs_handover_restore(struct fs_handover *ho, struct fs_table *t, struct dm_model *m,
			struct fs_stale **ret_stale, size_t *ret_n)
{
	(void)ho; /* its mirror is the table's (fs_table_set_mirror()) */
	struct stale_list l = { 0 };
	/* plain memory: each node is made when first used, found then in
	 * the model as it is */
	int r = fs_table_adopt(t, m, fs_view_find_locked, add_stale, &l);
	if (r < 0) {
		free(l.v);
		return r;
	}
	*ret_stale = l.v;
	*ret_n = l.n;
	return 0;
}

void fs_handover_serve(struct fs_handover *ho, const struct timespec *start)
{
	set_files_time(ho->h, start);
	atomic_store(&ho->h->coming, 0);
	atomic_fetch_add(&ho->h->epoch, 1);
	atomic_store(&ho->h->state, FS_HANDOVER_SERVING);
}
