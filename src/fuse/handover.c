/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* handover.c - the state a connection's next daemon takes over (handover.h). */
#include "handover.h"

#include "inode.h"
#include "view.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_SIZE 4096
_Static_assert(sizeof(struct fs_handover_header) <= HEADER_SIZE, "the header is one page");

static int map(int fd, struct fs_handover **ret)
{
	void *p = mmap(NULL, HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	struct fs_handover *ho = calloc(1, sizeof(*ho));
	if (!ho) {
		munmap(p, HEADER_SIZE);
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
	int r = ftruncate(fd, HEADER_SIZE) < 0 ? -errno : map(fd, ret);
	if (r < 0) {
		close(fd);
		return r;
	}
	struct fs_handover_header *h = (*ret)->h;
	memcpy(h->magic, FS_HANDOVER_MAGIC, sizeof(FS_HANDOVER_MAGIC));
	h->version = FS_HANDOVER_VERSION;
	atomic_store(&h->epoch, 1);
	atomic_store(&h->state, FS_HANDOVER_SERVING);
	return 0;
}

int fs_handover_adopt(int fd, struct fs_handover **ret)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < HEADER_SIZE)
		return -EINVAL;
	struct fs_handover *ho;
	int r = map(fd, &ho);
	if (r < 0)
		return r;
	struct fs_handover_header *h = ho->h;
	if (memcmp(h->magic, FS_HANDOVER_MAGIC, sizeof(FS_HANDOVER_MAGIC)) != 0 ||
	    h->version != FS_HANDOVER_VERSION || h->init_len > FS_HANDOVER_INIT_MAX ||
	    h->nodes_off + h->nodes_len < h->nodes_off ||
	    h->nodes_off + h->nodes_len > (uint64_t)st.st_size)
		r = -EINVAL;
	else if (atomic_load(&h->state) != FS_HANDOVER_LEFT || !h->init_len)
		r = -ESTALE;
	if (r < 0) {
		munmap(ho->h, HEADER_SIZE);
		free(ho);
		return r;
	}
	ho->adopted = true;
	*ret = ho;
	return 0;
}

void fs_handover_free(struct fs_handover *ho)
{
	if (!ho)
		return;
	munmap(ho->h, HEADER_SIZE);
	close(ho->fd);
	free(ho);
}

/* ---- the nodes ---- */

struct saving {
	int fd;
	off_t off;
	uint64_t n;
	int err;
};

static int save_node(const struct fs_saved_node *n, const char *name, void *data)
{
	struct saving *s = data;
	if (pwrite(s->fd, n, sizeof(*n), s->off) != (ssize_t)sizeof(*n) ||
	    pwrite(s->fd, name, n->name_len, s->off + (off_t)sizeof(*n)) != (ssize_t)n->name_len) {
		s->err = errno ? -errno : -EIO;
		return 1;
	}
	s->off += (off_t)(sizeof(*n) + n->name_len);
	s->n++;
	return 0;
}

int fs_handover_leave(struct fs_handover *ho, struct fs_table *t)
{
	struct fs_handover_header *h = ho->h;
	struct saving s = { .fd = ho->fd, .off = HEADER_SIZE };
	if (ftruncate(ho->fd, HEADER_SIZE) < 0)
		return -errno;
	fs_table_each_node(t, save_node, &s);
	if (s.err)
		return s.err;
	h->nodes_off = HEADER_SIZE;
	h->nodes_len = (uint64_t)(s.off - HEADER_SIZE);
	h->n_nodes = s.n;
	/* last: the next daemon and the watcher go by it */
	atomic_store(&h->state, FS_HANDOVER_LEFT);
	return 0;
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

int fs_handover_restore(struct fs_handover *ho, struct fs_table *t, struct dm_model *m,
			size_t *ret_made, size_t *ret_gone)
{
	const struct fs_handover_header *h = ho->h;
	size_t cap = h->n_nodes, n = 0, made = 0, gone = 0;
	if (cap > h->nodes_len / sizeof(struct fs_saved_node))
		return -EINVAL;
	struct loaded *v = calloc(cap ? cap : 1, sizeof(*v));
	char *buf = malloc(h->nodes_len ? h->nodes_len : 1);
	int r = v && buf ? 0 : -ENOMEM;
	if (r == 0 && pread(ho->fd, buf, h->nodes_len, (off_t)h->nodes_off) != (ssize_t)h->nodes_len)
		r = -EIO;
	/* the saved nodes, checked: whatever the file holds, nothing is read
	 * past it and no name is longer than a name */
	for (uint64_t off = 0; r == 0 && off < h->nodes_len && n < cap;) {
		struct fs_saved_node sn;
		if (h->nodes_len - off < sizeof(sn)) {
			r = -EINVAL;
			break;
		}
		memcpy(&sn, buf + off, sizeof(sn));
		off += sizeof(sn);
		if (sn.name_len == 0 || sn.name_len > DM_NAME_MAX || h->nodes_len - off < sn.name_len) {
			r = -EINVAL;
			break;
		}
		v[n].n = sn;
		v[n].name = strndup(buf + off, sn.name_len);
		off += sn.name_len;
		if (!v[n++].name)
			r = -ENOMEM;
	}
	free(buf);
	if (r == 0)
		qsort(v, n, sizeof(*v), by_depth);
	/* parents first: each found again by its parent's node and its name,
	 * in the model as it is now */
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct fs_ref dir;
		struct fs_target found;
		char group[FS_GROUP_MAX];
		if (fs_table_get(t, v[i].n.parent, &dir) < 0) {
			gone++;
			continue;
		}
		dm_model_read_lock(m);
		int f = fs_view_find_locked(m, &dir, v[i].name, &found, group);
		if (f == 0 && found.kind == v[i].n.kind) {
			int e = fs_table_restore(t, &v[i].n, v[i].name, &found);
			if (e == -ENOMEM)
				r = e;
			made += e == 0;
			gone += e != 0;
		} else {
			gone++;
		}
		dm_model_unlock(m);
		fs_ref_release(&dir);
	}
	fs_table_restore_done(t);
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	if (r == 0) {
		*ret_made = made;
		*ret_gone = gone;
	}
	return r;
}

void fs_handover_serve(struct fs_handover *ho)
{
	atomic_fetch_add(&ho->h->epoch, 1);
	atomic_store(&ho->h->state, FS_HANDOVER_SERVING);
}
