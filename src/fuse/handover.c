/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* handover.c - the state a connection's next daemon takes over (handover.h). */
#include "handover.h"

#include "inode.h"
#include "notify.h"
#include "passthrough.h"
#include "view.h"

#include "core/array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_SIZE 4096
_Static_assert(sizeof(struct fs_handover_header) <= HEADER_SIZE, "the header is one page");
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

int fs_handover_new(struct fs_handover **ret)
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
	return 0;
}

int fs_handover_adopt(int fd, struct fs_handover **ret)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != (off_t)STATE_SIZE)
		return -EINVAL;
	struct fs_handover *ho;
	int r = map(fd, &ho);
	if (r < 0)
		return r;
	struct fs_handover_header *h = ho->h;
	if (memcmp(h->magic, FS_HANDOVER_MAGIC, sizeof(FS_HANDOVER_MAGIC)) != 0 ||
	    h->version != FS_HANDOVER_VERSION || h->init_len > FS_HANDOVER_INIT_MAX ||
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

struct loaded {
	struct fs_saved_node n;
	char *name;
};

static int by_depth(const void *a, const void *b)
{
	const struct loaded *x = a, *y = b;
	return x->n.depth != y->n.depth ? (x->n.depth < y->n.depth ? -1 : 1)
	       : x->n.ino < y->n.ino   ? -1
				       : x->n.ino > y->n.ino;
}

struct loading {
	struct loaded *v;
	size_t n, cap;
};

static int load_node(const struct fs_saved_node *n, const char *name, void *data)
{
	struct loading *l = data;
	if (!dm_array_grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v), 256))
		return -ENOMEM;
	l->v[l->n].n = *n;
	if (!(l->v[l->n].name = strndup(name, n->name_len)))
		return -ENOMEM;
	l->n++;
	return 0;
}

int fs_handover_restore(struct fs_handover *ho, struct fs_table *t, struct dm_model *m,
			struct fs_stale **ret_stale, size_t *ret_made, size_t *ret_gone)
{
	struct fs_mirror mirror;
	fs_handover_mirror(ho, &mirror);
	struct loading l = { 0 };
	size_t made = 0, gone = 0;
	int r = fs_mirror_each(&mirror, load_node, &l);
	struct loaded *v = l.v;
	size_t n = l.n;
	/* read whole: emptied, for this daemon's table to fill again */
	uint32_t high = atomic_load(mirror.high);
	if (high > mirror.slots_cap)
		high = (uint32_t)mirror.slots_cap;
	memset(mirror.slots, 0, high * sizeof(*mirror.slots));
	atomic_store(mirror.high, 0);
	atomic_store(mirror.names_used, 1);
	if (r == 0 && n) /* qsort() takes no NULL, even for nothing */
		qsort(v, n, sizeof(*v), by_depth);
	struct fs_stale *stale = NULL;
	if (r == 0 && n && !(stale = calloc(n, sizeof(*stale))))
		r = -ENOMEM;
	/* parents first: each found again by its parent's node and its name,
	 * in the model as it is now */
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct fs_ref dir;
		struct fs_target found;
		char group[FS_GROUP_MAX];
		bool again = false;
		if (fs_table_get(t, v[i].n.parent, &dir) == 0) {
			dm_model_read_lock(m);
			int f = fs_view_find_locked(m, &dir, v[i].name, &found, group);
			/* the same kind of object under that name, and for a
			 * device's node the same device, not one plugged at its
			 * path meanwhile: a handle opened on the old one must not
			 * act on it */
			if (f == 0 && found.kind == v[i].n.kind &&
			    (!v[i].n.ident || !found.dev ||
			     dm_device_identity(found.dev) == v[i].n.ident)) {
				int e = fs_table_restore(t, &v[i].n, v[i].name, &found);
				if (e == -ENOMEM)
					r = e;
				again = e == 0;
			}
			dm_model_unlock(m);
			fs_ref_release(&dir);
		}
		made += again;
		gone += !again;
		stale[i] = (struct fs_stale){ .ino = v[i].n.ino, .parent = v[i].n.parent,
					      .dir = fs_kind_is_dir((enum fs_kind)v[i].n.kind) };
		if (!again) { /* its name, for the kernel to drop */
			stale[i].name = v[i].name;
			v[i].name = NULL;
		}
	}
	fs_table_restore_done(t);
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	if (r == 0) {
		*ret_stale = stale;
		*ret_made = made;
		*ret_gone = gone;
	} else if (stale) {
		for (size_t i = 0; i < n; i++)
			free(stale[i].name);
		free(stale);
	}
	return r;
}

void fs_handover_serve(struct fs_handover *ho)
{
	atomic_fetch_add(&ho->h->epoch, 1);
	atomic_store(&ho->h->state, FS_HANDOVER_SERVING);
}
