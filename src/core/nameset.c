/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "nameset.h"

#include "hashmap.h"
#include "model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t home(const struct dm_nameset *s, const char *name)
{
	return dm_hash_string(name) & (s->cap - 1);
}

void dm_nameset_done(struct dm_nameset *s)
{
	free(s->slots);
	*s = (struct dm_nameset){ 0 };
}

static void insert(struct dm_nameset *s, struct dm_device *dev)
{
	size_t i = home(s, dm_device_get_sysname(dev));
	while (s->slots[i])
		i = (i + 1) & (s->cap - 1);
	s->slots[i] = dev;
}

int dm_nameset_add(struct dm_nameset *s, struct dm_device *dev)
{
	if ((s->n + 1) * 2 > s->cap) {
		struct dm_nameset bigger = { .cap = s->cap ? s->cap * 2 : 64, .n = s->n };
		bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
		if (!bigger.slots)
			return -ENOMEM;
		for (size_t i = 0; i < s->cap; i++)
			if (s->slots[i])
				insert(&bigger, s->slots[i]);
		free(s->slots);
		*s = bigger;
	}
	insert(s, dev);
	s->n++;
	return 0;
}

void dm_nameset_remove(struct dm_nameset *s, struct dm_device *dev)
{
	if (!s->cap)
		return;
	size_t mask = s->cap - 1, i = home(s, dm_device_get_sysname(dev));
	while (s->slots[i] && s->slots[i] != dev)
		i = (i + 1) & mask;
	if (!s->slots[i])
		return;
	/* backward shift: move up each later entry of the run that may sit
	 * at the hole, so that no probe stops early at it */
	for (size_t j = (i + 1) & mask; s->slots[j]; j = (j + 1) & mask) {
		size_t h = home(s, dm_device_get_sysname(s->slots[j]));
		/* does h lie cyclically outside (i, j]? then j may move to i */
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			s->slots[i] = s->slots[j];
			i = j;
		}
	}
	s->slots[i] = NULL;
	s->n--;
}

struct dm_device *dm_nameset_find(const struct dm_nameset *s, const char *name,
				  bool (*match)(struct dm_device *, void *), void *data)
{
	if (!s->cap)
		return NULL;
	for (size_t i = home(s, name); s->slots[i]; i = (i + 1) & (s->cap - 1))
		if (strcmp(dm_device_get_sysname(s->slots[i]), name) == 0 &&
		    match(s->slots[i], data))
			return s->slots[i];
	return NULL;
}
