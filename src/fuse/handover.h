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
 * whether the last one left on purpose) and the nodes the kernel holds,
 * mirrored as they are made and freed (inode.h, struct fs_mirror), so
 * that they are there after a SIGKILL too, made again by the next daemon
 * under the same numbers.
 *
 * Passthrough's backing files are the connection's: the state mirrors
 * them too (passthrough.h), with whether the INIT reply asked for
 * passthrough, and the next daemon takes them over.
 *
 * Over /dev/fuse, or over io_uring when asked (--handover-io-uring) and
 * the kernel offers it: a connection whose rings are ready never goes back
 * to /dev/fuse (the kernel sends it only FORGETs and INTERRUPTs), so the
 * next daemon registers ring entries of its own on the same connection,
 * as large as uring_payload says, and serves over io_uring; one that
 * cannot does not take the connection over. A planned exit answers what
 * its ring threads hold, but a request the kernel gives an entry as its
 * thread ends fails (ECANCELED), and one a killed process held in its
 * entry is never sent again (its asker waits until the connection is
 * aborted): hence only when asked.
 */
#ifndef DM_FS_HANDOVER_H
#define DM_FS_HANDOVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FS_HANDOVER_MAGIC "driverfsd-state"
#define FS_HANDOVER_VERSION 9
/* The INIT request as the kernel sent it, header included (its
 * fuse_init_in is 64 bytes today). */
#define FS_HANDOVER_INIT_MAX 256

enum fs_handover_state {
	FS_HANDOVER_SERVING = 1, /* a daemon serves (or died serving) */
	FS_HANDOVER_LEFT = 2, /* the daemon left on purpose */
};

/* The memfd's first page, mapped shared by every daemon of the connection
 * and by its unmount watcher. */
struct fs_handover_header {
	char magic[16];
	uint32_t version;
	_Atomic uint32_t state; /* enum fs_handover_state */
	_Atomic uint64_t epoch; /* counts the daemons that served the connection */
	_Atomic uint32_t stored; /* a supervisor keeps the descriptors */
	uint32_t init_len; /* 0: no INIT seen yet */
	unsigned char init[FS_HANDOVER_INIT_MAX];
	/* the node mirror (struct fs_mirror) after the header: the names,
	 * then one record per node number */
	_Atomic uint32_t names_used, high, ok;
	uint32_t names_cap, slots_cap;
	/* passthrough (passthrough.h): negotiated at INIT; the backings'
	 * mirror after the nodes' */
	_Atomic uint32_t passthrough;
	uint32_t backings_cap;
	/* Over io_uring: the payload size of the ring entries, once every one
	 * is registered (what the INIT reply made the kernel require of them:
	 * the next daemon's must be as large); 0 while requests go through
	 * /dev/fuse. */
	_Atomic uint64_t uring_payload;
	/* a next daemon started and enumerating, not yet serving: its pid
	 * (fs_handover_announce()), for the watcher to wait while it lives */
	_Atomic int32_t coming;
	/* the time base of the serving daemon's files (fs_view_stat(): their
	 * times, a value's mtime past it by its device's changes), with which
	 * the mirror's told attributes (struct fs_mirror_slot) are read */
	_Atomic int64_t files_sec, files_nsec;
};

struct fs_handover {
	int fd; /* the memfd */
	struct fs_handover_header *h; /* mapped */
	bool adopted; /* given by the last daemon, not made here */
	bool was_left; /* adopted: the last daemon left on purpose (else it died) */
};

/* A next daemon, as soon as it starts (before it enumerates, which may
 * take longer than a watcher waits on a large machine): its pid into the
 * state in @fd (which stays the caller's), so that the last daemon's
 * watcher waits while it lives; !@coming: it will not take the connection
 * over after all (its announcement withdrawn, the watcher's bound back to
 * HANDOVER_WAIT_MS). -EINVAL when @fd holds no state of this version. */
int fs_handover_announce(int fd, bool coming);
/* A new state for a connection just mounted: epoch 1, serving, its
 * files' time base @start. */
struct timespec;
int fs_handover_new(const struct timespec *start, struct fs_handover **ret);
/* The state the last daemon left in @fd (taken over: closed by free),
 * whether it left on purpose or was killed: -EINVAL when it is not one,
 * -ESTALE when it cannot be taken over (the node mirror overflowed). No
 * INIT kept is no obstacle: the last daemon never read it, and the kernel
 * still has it queued for the next. */
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
struct fs_backing_mirror;
struct fs_mirror;
struct fs_table;
/* The node mirror in @ho's memfd, for fs_table_set_mirror(). */
void fs_handover_mirror(struct fs_handover *ho, struct fs_mirror *ret);
/* The backings' mirror in @ho's memfd, for fs_passthrough_set_mirror()
 * and fs_passthrough_adopt(). */
void fs_handover_backings(struct fs_handover *ho, struct fs_backing_mirror *ret);
/* A planned exit, once the loop has ended: the state "left". */
void fs_handover_leave(struct fs_handover *ho);
/* The next daemon, before it serves: the mirrored nodes taken over by
 * @t (fs_table_adopt(); call fs_table_set_mirror() first), each made when
 * first used, found then by its parent's node and its name in @m; the
 * mirror is left as it is. Every one of them in *ret_stale (malloc()ed,
 * NULL for none), *ret_n of them, for the kernel's caches of them to be
 * dropped (fs_notifier_queue_stale()). 0, -EINVAL (a mirror that does not
 * hold together), -ENOMEM. */
struct fs_stale;
int fs_handover_restore(struct fs_handover *ho, struct fs_table *t, struct dm_model *m,
			struct fs_stale **ret_stale, size_t *ret_n);
/* Serving, its files' time base @start: the epoch moved on (the last
 * daemon's watcher, waiting for a successor, sees it), the state
 * "serving". */
void fs_handover_serve(struct fs_handover *ho, const struct timespec *start);
/* The time base of the files of the daemon that served last. */
void fs_handover_files_time(const struct fs_handover *ho, struct timespec *ret);

#endif
