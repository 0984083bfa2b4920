/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * listing.h - kept directory listings. A listing is taken whole when a
 * reading of the directory starts (offset 0) and kept until it was read to
 * its end (or the directory closed, or its node forgotten), so that each of
 * the replies it takes comes from the same listing (docs/design.md §6.6).
 * It is the listing of one node, (ino, gen): a number reused for another
 * directory never finds it. Private to src/fuse.
 */
#ifndef DM_FS_LISTING_H
#define DM_FS_LISTING_H

#include "inode.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct fs_listing_entry {
	char *name;
	mode_t type;
	struct fs_target t; /* holds references (fs_target_ref()) */
	char *group; /* owned copy behind t.group */
};

struct fs_listing {
	struct fs_listing_entry *v;
	size_t n, cap;
	uint64_t ino, gen;
	int err;
	unsigned refs; /* under the set's lock: the set's and each user's */
	/* on the set's list of listings being read */
	struct fs_listing *prev, *next;
};

/* The listings of one mount, one per directory being read. */
struct fs_listings {
	pthread_mutex_t lock;
	struct fs_listing *head;
};

void fs_listings_init(struct fs_listings *ls);
/* Frees every listing kept (the session is over). */
void fs_listings_done(struct fs_listings *ls);

/* The listing of the directory @dir (of the model @m) for a reply at @off:
 * a new one at offset 0 (or when none is kept), else the one kept since
 * offset 0. Release with fs_listing_put(). */
int fs_listing_get(struct fs_listings *ls, struct dm_model *m, const struct fs_ref *dir, off_t off,
		   struct fs_listing **ret);
void fs_listing_put(struct fs_listings *ls, struct fs_listing *s);
/* A reply at @off, past the last entry, ends the listing: the kernel has
 * it all, and it is no longer kept. */
void fs_listing_finished(struct fs_listings *ls, struct fs_listing *s, off_t off);
/* Drops the listings kept of @ino (of generation @gen, or any when
 * @any_gen): its directory was closed, or its node forgotten. Replies in
 * flight keep theirs until they are done. */
void fs_listings_drop(struct fs_listings *ls, uint64_t ino, uint64_t gen, bool any_gen);

#endif
