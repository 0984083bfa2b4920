/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "idset.h"

#include <errno.h>
#include <stdlib.h>

static size_t home(const struct dm_idset *s, uintptr_t item)
{
	return s->hash(item, s->ctx) & (s->cap - 1);
}

void dm_idset_init(struct dm_idset *s, uint64_t (*hash)(uintptr_t, void *), void *ctx)
{
	*s = (struct dm_idset){ .hash = hash, .ctx = ctx };
}

void dm_idset_done(struct dm_idset *s)
{
	free(s->slots);
	s->slots = NULL;
	s->cap = s->n = 0;
}

static void insert(struct dm_idset *s, uintptr_t item)
{
	size_t i = home(s, item);
	while (s->slots[i])
		i = (i + 1) & (s->cap - 1);
	s->slots[i] = item;
}

int dm_idset_reserve(struct dm_idset *s, size_t n)
{
	if ((s->n + n) * 2 <= s->cap)
		return 0;
	struct dm_idset bigger = *s;
	bigger.cap = s->cap ? s->cap * 2 : 64;
	while (bigger.cap < (s->n + n) * 2)
		bigger.cap *= 2;
	bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i])
			insert(&bigger, s->slots[i]);
	free(s->slots);
	*s = bigger;
	return 0;
}

int dm_idset_add(struct dm_idset *s, uintptr_t item)
{
	int r = dm_idset_reserve(s, 1);
	if (r < 0)
		return r;
	insert(s, item);
	s->n++;
	return 0;
}

void dm_idset_remove(struct dm_idset *s, uintptr_t item)
{
	if (!s->cap)
		return;
	size_t mask = s->cap - 1, i = home(s, item);
	while (s->slots[i] && s->slots[i] != item)
		i = (i + 1) & mask;
	if (!s->slots[i])
		return;
	/* backward shift: move up each later entry of the run that may sit
	 * at the hole, so that no probe stops early at it */
	for (size_t j = (i + 1) & mask; s->slots[j]; j = (j + 1) & mask) {
		size_t h = home(s, s->slots[j]);
		/* does h lie cyclically outside (i, j]? then j may move to i */
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			s->slots[i] = s->slots[j];
			i = j;
		}
	}
	s->slots[i] = 0;
	s->n--;
}

uintptr_t dm_idset_find(const struct dm_idset *s, uint64_t hash,
			bool (*match)(uintptr_t item, void *data), void *data)
{
	if (!s->cap)
		return 0;
	for (size_t i = hash & (s->cap - 1); s->slots[i]; i = (i + 1) & (s->cap - 1))
		if (match(s->slots[i], data))
			return s->slots[i];
	return 0;
}
