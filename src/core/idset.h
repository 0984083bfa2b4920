/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * idset.h - a compact hashed index of items named by something they hold:
 * the model's devices by kernel name (for bus, class, interface and driver
 * listings), the filesystem's nodes by (parent, name). An item is one
 * pointer-sized word (a pointer or a number, never 0); its key is not
 * stored but computed from it by @hash, so an entry costs one word, at most
 * half the slots being used.
 *
 * A multiset: several items may share a key, and find() asks @match which
 * is wanted. Open addressing, probed linearly, compacted by backward shift
 * on removal. Not thread-safe: the owner's lock protects it. An item's key
 * must not change while it is in the set.
 */
#ifndef DM_IDSET_H
#define DM_IDSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dm_idset {
	uintptr_t *slots; /* 0: empty */
	size_t cap; /* a power of two, or 0 */
	size_t n;
	uint64_t (*hash)(uintptr_t item, void *ctx); /* the hash of an item's key */
	void *ctx;
};

void dm_idset_init(struct dm_idset *s, uint64_t (*hash)(uintptr_t, void *), void *ctx);
void dm_idset_done(struct dm_idset *s);
/* 0 or -ENOMEM. */
int dm_idset_add(struct dm_idset *s, uintptr_t item);
/* Room for @n more items without growing: each growth hashes every item
 * again, which on a large set is mostly cache misses. 0 or -ENOMEM. */
int dm_idset_reserve(struct dm_idset *s, size_t n);
void dm_idset_remove(struct dm_idset *s, uintptr_t item);
/* The first item whose key hashes to @hash for which @match returns true,
 * or 0. */
uintptr_t dm_idset_find(const struct dm_idset *s, uint64_t hash,
			bool (*match)(uintptr_t item, void *data), void *data);

#endif
