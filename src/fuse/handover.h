/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * handover.h - one FUSE connection served by a succession of daemons
 * (docs/design.md §10.1).
 *
 * The kernel keeps a connection while one descriptor of its /dev/fuse
 * stays open: the daemon hands that descriptor to its supervisor (systemd's
 * file descriptor store, FDSTORE=1) together with a memfd of state, and
 * the next daemon, given both back (LISTEN_FDS), serves the same mount.
 * The state is a header the daemons share while they live (the INIT
 * request the kernel sent once per connection, which the next daemon's
 * libfuse session is given as if it had come; which daemon serves, and
 * whether the last one left on purpose) and, after a planned exit, the
 * nodes the kernel holds (inode.h), made again under the same numbers.
 *
 * Over /dev/fuse only: a connection whose io_uring rings are ready never
 * goes back to /dev/fuse, and requests a dead process held in its ring
 * entries are not re-sent; passthrough's backing files belong to the
 * process that registered them. A handover session uses neither.
 */
#ifndef DM_FS_HANDOVER_H
#define DM_FS_HANDOVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FS_HANDOVER_MAGIC "driverfsd-state"
#define FS_HANDOVER_VERSION 1
/* The INIT request as the kernel sent it, header included (its
 * fuse_init_in is 64 bytes today). */
#define FS_HANDOVER_INIT_MAX 256

enum fs_handover_state {
	FS_HANDOVER_SERVING = 1, /* a daemon serves (or died serving) */
	FS_HANDOVER_LEFT = 2, /* the daemon left on purpose, nodes saved */
};

/* The memfd's first page, mapped shared by every daemon of the connection
 * and by its unmount watcher. */
struct fs_handover_header {
	char magic[16];
	uint32_t version;
	_Atomic uint32_t state; /* enum fs_handover_state */
	_Atomic uint64_t epoch; /* counts the daemons that served the connection */
	uint32_t init_len; /* 0: no INIT seen yet */
	unsigned char init[FS_HANDOVER_INIT_MAX];
	uint64_t nodes_off, nodes_len, n_nodes; /* the saved nodes, after a planned exit */
};

struct fs_handover {
	int fd; /* the memfd */
	struct fs_handover_header *h; /* mapped */
	bool adopted; /* given by the last daemon, not made here */
};

/* A new state for a connection just mounted: epoch 1, serving. */
int fs_handover_new(struct fs_handover **ret);
/* The state the last daemon left in @fd (taken over: closed by free):
 * -EINVAL when it is not one, -ESTALE when the last daemon did not leave
 * on purpose (or never saw INIT): then nothing can be taken over. */
int fs_handover_adopt(int fd, struct fs_handover **ret);
void fs_handover_free(struct fs_handover *ho);
/* io.c, on the INIT request read from the kernel: kept, the first one. */
static inline void fs_handover_saw_init(struct fs_handover *ho, const void *req, size_t len)
{
	if (!ho || len > FS_HANDOVER_INIT_MAX || ho->h->init_len)
		return;
	memcpy(ho->h->init, req, len);
	ho->h->init_len = (uint32_t)len;
}

struct dm_model;
struct fs_table;
/* A planned exit, once the loop has ended: the nodes of @t written after
 * the header, then the state "left". 0 or -errno. */
int fs_handover_leave(struct fs_handover *ho, struct fs_table *t);
/* The next daemon, before it serves: the saved nodes made again in @t,
 * each found by its parent's node and its name in @m as it is now; those
 * no longer there are left out (the kernel's requests for them get
 * ESTALE). How many were made and left out in *ret_made, *ret_gone. 0,
 * -EINVAL (a saved list that does not hold together), -ENOMEM, -EIO. */
int fs_handover_restore(struct fs_handover *ho, struct fs_table *t, struct dm_model *m,
			size_t *ret_made, size_t *ret_gone);
/* Serving: the epoch moved on (the last daemon's watcher, waiting for a
 * successor, sees it), the state "serving". */
void fs_handover_serve(struct fs_handover *ho);

#endif
