/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A chained hash map from keys to pointers. Keys are not copied: the caller
 * keeps each key alive while its entry exists (normally the key is a field of
 * the value). Not thread-safe; the model lock protects the model's maps.
 */
#ifndef DM_HASHMAP_H
#define DM_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

struct dm_hashmap_entry;

struct dm_hashmap {
	struct dm_hashmap_entry **buckets;
	size_t n_buckets;
	size_t n_entries;
	uint64_t (*hash)(const void *key);
	int (*cmp)(const void *a, const void *b);
};

uint64_t dm_hash_string(const void *key);
int dm_cmp_string(const void *a, const void *b);
uint64_t dm_hash_u64(const void *key); /* key points to a uint64_t */

void dm_hashmap_init(struct dm_hashmap *m, uint64_t (*hash)(const void *),
		     int (*cmp)(const void *, const void *));
/* Frees the map's own memory; keys and values are the caller's. */
void dm_hashmap_done(struct dm_hashmap *m);
/* 0, -EEXIST when the key is present, -ENOMEM. */
int dm_hashmap_put(struct dm_hashmap *m, const void *key, void *value);
void *dm_hashmap_get(const struct dm_hashmap *m, const void *key);
/* Removes the entry and returns its value, or NULL when absent. */
void *dm_hashmap_remove(struct dm_hashmap *m, const void *key);
size_t dm_hashmap_size(const struct dm_hashmap *m);
/* Calls @fn on each value, in no order, until it returns non-zero, which it
 * returns; @fn must not change the map. */
int dm_hashmap_for_each(const struct dm_hashmap *m, int (*fn)(void *value, void *data),
			void *data);

#endif
