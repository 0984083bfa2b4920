/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct dm_hashmap_entry {
	struct dm_hashmap_entry *next;
	const void *key;
	void *value;
	uint64_t hash;
};

uint64_t dm_hash_string(const void *key)
{
	/* FNV-1a, 64 bit */
	uint64_t h = 0xcbf29ce484222325ULL;
	for (const unsigned char *p = key; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ULL;
	}
	return h;
}

int dm_cmp_string(const void *a, const void *b)
{
	return strcmp(a, b);
}

uint64_t dm_hash_u64(const void *key)
{
	uint64_t x = *(const uint64_t *)key;
	/* splitmix64 finaliser */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

void dm_hashmap_init(struct dm_hashmap *m, uint64_t (*hash)(const void *),
		     int (*cmp)(const void *, const void *))
{
	*m = (struct dm_hashmap){ .hash = hash, .cmp = cmp };
}

void dm_hashmap_done(struct dm_hashmap *m)
{
	for (size_t i = 0; i < m->n_buckets; i++) {
		struct dm_hashmap_entry *e = m->buckets[i];
		while (e) {
			struct dm_hashmap_entry *next = e->next;
			free(e);
			e = next;
		}
	}
	free(m->buckets);
	m->buckets = NULL;
	m->n_buckets = m->n_entries = 0;
}

static int hashmap_grow(struct dm_hashmap *m)
{
	size_t n = m->n_buckets ? m->n_buckets * 2 : 64;
	struct dm_hashmap_entry **b = calloc(n, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_buckets; i++) {
		struct dm_hashmap_entry *e = m->buckets[i];
		while (e) {
			struct dm_hashmap_entry *next = e->next;
			size_t k = e->hash & (n - 1);
			e->next = b[k];
			b[k] = e;
			e = next;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->n_buckets = n;
	return 0;
}

static struct dm_hashmap_entry **hashmap_slot(const struct dm_hashmap *m, const void *key,
					      uint64_t h)
{
	struct dm_hashmap_entry **p = &m->buckets[h & (m->n_buckets - 1)];
	for (; *p; p = &(*p)->next)
		if ((*p)->hash == h && m->cmp((*p)->key, key) == 0)
			break;
	return p;
}

int dm_hashmap_put(struct dm_hashmap *m, const void *key, void *value)
{
	if (m->n_entries >= m->n_buckets * 3 / 4) {
		int r = hashmap_grow(m);
		if (r < 0)
			return r;
	}
	uint64_t h = m->hash(key);
	struct dm_hashmap_entry **p = hashmap_slot(m, key, h);
	if (*p)
		return -EEXIST;
	struct dm_hashmap_entry *e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = (struct dm_hashmap_entry){ .key = key, .value = value, .hash = h };
	*p = e;
	m->n_entries++;
	return 0;
}

void *dm_hashmap_get(const struct dm_hashmap *m, const void *key)
{
	if (!m->n_buckets)
		return NULL;
	struct dm_hashmap_entry **p = hashmap_slot(m, key, m->hash(key));
	return *p ? (*p)->value : NULL;
}

void *dm_hashmap_remove(struct dm_hashmap *m, const void *key)
{
	if (!m->n_buckets)
		return NULL;
	struct dm_hashmap_entry **p = hashmap_slot(m, key, m->hash(key));
	struct dm_hashmap_entry *e = *p;
	if (!e)
		return NULL;
	void *v = e->value;
	*p = e->next;
	free(e);
	m->n_entries--;
	return v;
}

size_t dm_hashmap_size(const struct dm_hashmap *m)
{
	return m->n_entries;
}

int dm_hashmap_for_each(const struct dm_hashmap *m, int (*fn)(void *value, void *data),
			void *data)
{
	for (size_t b = 0; b < m->n_buckets; b++)
		for (struct dm_hashmap_entry *e = m->buckets[b]; e; e = e->next) {
			int r = fn(e->value, data);
			if (r)
				return r;
		}
	return 0;
}
