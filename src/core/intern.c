/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* intern.c - attributes of dynamic groups, one per (path, mode, kind),
 * shared by every device (docs/design.md §6.7, "Memory"). */
#include "model.h"

#include "hashmap.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct interned {
	struct dm_attribute attr; /* its name: the last part of @path */
	const struct dm_attribute *kind;
	struct interned *next; /* the same path with another mode or kind */
	char path[]; /* under the device's directory: "size", "queue/scheduler" */
};

static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dm_hashmap interned; /* path -> struct interned list */
static bool interned_ready;

const struct dm_attribute *dm_attribute_intern(const struct dm_attribute *kind, const char *path,
					       mode_t mode)
{
	pthread_mutex_lock(&intern_lock);
	if (!interned_ready) {
		dm_hashmap_init(&interned, dm_hash_string, dm_cmp_string);
		interned_ready = true;
	}
	struct interned *head = dm_hashmap_get(&interned, path), *a;
	for (a = head; a && (a->attr.mode != mode || a->kind != kind); a = a->next)
		;
	if (!a) {
		size_t len = strlen(path) + 1;
		a = calloc(1, sizeof(*a) + len);
		if (a) {
			memcpy(a->path, path, len);
			const char *slash = strrchr(a->path, '/');
			a->kind = kind;
			a->attr = *kind;
			a->attr.name = slash ? slash + 1 : a->path;
			a->attr.mode = mode;
			if (!(mode & 0222))
				a->attr.store = NULL;
			if (head) {
				a->next = head->next;
				head->next = a;
			} else if (dm_hashmap_put(&interned, a->path, a) < 0) {
				free(a);
				a = NULL;
			}
		}
	}
	pthread_mutex_unlock(&intern_lock);
	return a ? &a->attr : NULL;
}

const char *dm_attribute_path(const struct dm_attribute *attr)
{
	return ((const struct interned *)((const char *)attr - offsetof(struct interned, attr)))->path;
}
