/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "strpool.h"

#include "hashmap.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_SIZE 16384u

struct dm_strpool_chunk {
	struct dm_strpool_chunk *next;
	size_t size; /* of data */
	char data[];
};

static uint64_t hash_item(uintptr_t item, void *ctx)
{
	(void)ctx;
	return dm_hash_string((const char *)item);
}

void dm_strpool_init(struct dm_strpool *p)
{
	*p = (struct dm_strpool){ 0 };
	pthread_mutex_init(&p->lock, NULL);
	dm_idset_init(&p->set, hash_item, NULL);
}

void dm_strpool_done(struct dm_strpool *p)
{
	while (p->chunks) {
		struct dm_strpool_chunk *next = p->chunks->next;
		free(p->chunks);
		p->chunks = next;
	}
	dm_idset_done(&p->set);
	pthread_mutex_destroy(&p->lock);
}

static bool same(uintptr_t item, void *data)
{
	return strcmp((const char *)item, data) == 0;
}

/* Room for @size bytes: at the end of the newest chunk, or in a new one
 * (a string longer than a chunk gets a chunk of its own). */
static char *pool_alloc(struct dm_strpool *p, size_t size)
{
	if (size > p->left) {
		size_t cap = size > CHUNK_SIZE ? size : CHUNK_SIZE;
		struct dm_strpool_chunk *c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->size = cap;
		c->next = p->chunks;
		p->chunks = c;
		p->left = cap;
	}
	char *s = p->chunks->data + p->chunks->size - p->left;
	p->left -= size;
	return s;
}

const char *dm_strpool_intern(struct dm_strpool *p, const char *s)
{
	pthread_mutex_lock(&p->lock);
	char *found = (char *)dm_idset_find(&p->set, dm_hash_string(s), same, (void *)s);
	if (!found) {
		size_t len = strlen(s) + 1;
		found = pool_alloc(p, len);
		if (found) {
			memcpy(found, s, len);
			if (dm_idset_add(&p->set, (uintptr_t)found) < 0)
				found = NULL; /* its bytes stay unused in the chunk */
		}
	}
	pthread_mutex_unlock(&p->lock);
	return found;
}
