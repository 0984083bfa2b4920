/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "inode.h"

#include "core/hashmap.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct slot {
	struct fs_node node;
	uint32_t gen;
	bool used;
	uint64_t next_free;
};

/* The first node of a device's list, keyed by the device's id. */
struct dev_head {
	uint64_t id;
	uint64_t first;
};

struct fs_table {
	pthread_mutex_t lock;
	struct dm_hashmap by_dev; /* device id -> struct dev_head */
	struct slot *slots; /* index = inode number; 0 unused, 1 the root */
	uint64_t n_slots, cap;
	uint64_t free_head; /* 0: none */
	size_t n_used;
	struct dm_hashmap by_key; /* "<parent>/<name>" -> inode (as pointer-sized int) */
};

int fs_table_new(struct fs_table **ret)
{
	struct fs_table *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->cap = 1024;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return -ENOMEM;
	}
	pthread_mutex_init(&t->lock, NULL);
	dm_hashmap_init(&t->by_key, dm_hash_string, dm_cmp_string);
	dm_hashmap_init(&t->by_dev, dm_hash_u64, dm_cmp_u64);
	t->n_slots = 2;
	t->slots[1] = (struct slot){ .used = true, .gen = 1,
				     .node = { .t = { .kind = FS_TOP }, .nlookup = 1 } };
	t->n_used = 1;
	*ret = t;
	return 0;
}

static void target_ref(const struct fs_target *t)
{
	dm_device_ref(t->dev);
	dm_driver_ref(t->drv);
}

static void target_unref(const struct fs_target *t)
{
	dm_device_unref(t->dev);
	dm_driver_unref(t->drv);
}

/* Links node @ino into its device's list. */
static int dev_link_locked(struct fs_table *t, uint64_t ino)
{
	struct fs_node *n = &t->slots[ino].node;
	uint64_t id = dm_device_get_id(n->t.dev);
	struct dev_head *h = dm_hashmap_get(&t->by_dev, &id);
	if (!h) {
		h = malloc(sizeof(*h));
		if (!h)
			return -ENOMEM;
		*h = (struct dev_head){ .id = id };
		if (dm_hashmap_put(&t->by_dev, &h->id, h) < 0) {
			free(h);
			return -ENOMEM;
		}
	}
	n->dev_prev = 0;
	n->dev_next = h->first;
	if (h->first)
		t->slots[h->first].node.dev_prev = ino;
	h->first = ino;
	return 0;
}

static void dev_unlink_locked(struct fs_table *t, uint64_t ino)
{
	struct fs_node *n = &t->slots[ino].node;
	if (!n->t.dev)
		return;
	if (n->dev_next)
		t->slots[n->dev_next].node.dev_prev = n->dev_prev;
	if (n->dev_prev) {
		t->slots[n->dev_prev].node.dev_next = n->dev_next;
		return;
	}
	uint64_t id = dm_device_get_id(n->t.dev);
	struct dev_head *h = dm_hashmap_get(&t->by_dev, &id);
	if (!h)
		return;
	h->first = n->dev_next;
	if (!h->first) {
		dm_hashmap_remove(&t->by_dev, &id);
		free(h);
	}
}

size_t fs_table_device_places(struct fs_table *t, const struct dm_device *dev,
			      struct fs_place *out, size_t max)
{
	size_t n = 0;
	uint64_t id = dm_device_get_id(dev);
	pthread_mutex_lock(&t->lock);
	struct dev_head *h = dm_hashmap_get(&t->by_dev, &id);
	for (uint64_t i = h ? h->first : 0; i && n < max; i = t->slots[i].node.dev_next) {
		const struct fs_node *node = &t->slots[i].node;
		out[n].ino = i;
		out[n].parent = node->parent;
		out[n].dir = node->t.kind != FS_ATTR && node->t.kind != FS_DEV_LINK &&
			     node->t.kind != FS_LINK;
		snprintf(out[n].name, sizeof(out[n].name), "%s", node->name ? node->name : "");
		n++;
	}
	pthread_mutex_unlock(&t->lock);
	return n;
}

static void node_clear(struct fs_table *t, uint64_t ino)
{
	struct fs_node *n = &t->slots[ino].node;
	dev_unlink_locked(t, ino);
	if (n->key) {
		dm_hashmap_remove(&t->by_key, n->key);
		free(n->key);
	}
	target_unref(&n->t);
	free(n->group);
	free(n->name);
	memset(n, 0, sizeof(*n));
}

void fs_table_free(struct fs_table *t)
{
	if (!t)
		return;
	for (uint64_t i = 2; i < t->n_slots; i++)
		if (t->slots[i].used)
			node_clear(t, i);
	dm_hashmap_done(&t->by_key);
	dm_hashmap_done(&t->by_dev);
	pthread_mutex_destroy(&t->lock);
	free(t->slots);
	free(t);
}

static bool same_target(const struct fs_target *a, const struct fs_target *b)
{
	if (a->kind != b->kind || a->dev != b->dev || a->drv != b->drv || a->bus != b->bus ||
	    a->class != b->class || a->iface != b->iface)
		return false;
	if (!a->group || !b->group)
		return a->group == b->group;
	return strcmp(a->group, b->group) == 0;
}

static uint64_t slot_alloc_locked(struct fs_table *t)
{
	if (t->free_head) {
		uint64_t i = t->free_head;
		t->free_head = t->slots[i].next_free;
		return i;
	}
	if (t->n_slots == t->cap) {
		struct slot *s = realloc(t->slots, t->cap * 2 * sizeof(*s));
		if (!s)
			return 0;
		memset(s + t->cap, 0, t->cap * sizeof(*s));
		t->slots = s;
		t->cap *= 2;
	}
	return t->n_slots++;
}

/* Gives back the slot of a node that could not be completed. */
static void slot_abandon_locked(struct fs_table *t, uint64_t ino)
{
	struct slot *s = &t->slots[ino];
	free(s->node.name);
	free(s->node.group);
	memset(&s->node, 0, sizeof(s->node));
	s->next_free = t->free_head;
	t->free_head = ino;
}

/* A new current node for @key (which it takes over); 0 when out of memory. */
static uint64_t node_new_locked(struct fs_table *t, char *key, uint64_t parent, unsigned depth,
				const char *name, const struct fs_target *target)
{
	uint64_t ino = slot_alloc_locked(t);
	if (!ino)
		return 0;
	struct slot *s = &t->slots[ino];
	struct fs_node *n = &s->node;
	*n = (struct fs_node){ .t = *target, .parent = parent, .depth = depth, .nlookup = 1 };
	n->name = strdup(name);
	n->group = target->group ? strdup(target->group) : NULL;
	if (!n->name || (target->group && !n->group) ||
	    dm_hashmap_put(&t->by_key, key, (void *)(uintptr_t)ino) < 0) {
		slot_abandon_locked(t, ino);
		return 0;
	}
	n->t.group = n->group;
	if (n->t.dev && dev_link_locked(t, ino) < 0) {
		dm_hashmap_remove(&t->by_key, key);
		slot_abandon_locked(t, ino);
		return 0;
	}
	n->key = key;
	target_ref(&n->t);
	s->used = true;
	s->gen++;
	t->n_used++;
	return ino;
}

int fs_table_lookup(struct fs_table *t, uint64_t parent, unsigned depth, const char *name,
		    const struct fs_target *target, uint64_t *ret_ino, uint64_t *ret_gen)
{
	char *key;
	if (asprintf(&key, "%" PRIu64 "/%s", parent, name) < 0)
		return -ENOMEM;
	pthread_mutex_lock(&t->lock);
	uint64_t ino = (uint64_t)(uintptr_t)dm_hashmap_get(&t->by_key, key);
	if (ino) {
		struct fs_node *n = &t->slots[ino].node;
		if (same_target(&n->t, target)) {
			n->nlookup++;
			free(key);
			key = NULL;
		} else {
			/* the name now means another object: the old node lives
			 * on, unnamed, until the kernel forgets it */
			dm_hashmap_remove(&t->by_key, n->key);
			free(n->key);
			n->key = NULL;
			ino = 0;
		}
	}
	if (!ino) {
		ino = node_new_locked(t, key, parent, depth, name, target);
		if (!ino) {
			pthread_mutex_unlock(&t->lock);
			free(key);
			return -ENOMEM;
		}
	}
	*ret_ino = ino;
	*ret_gen = t->slots[ino].gen;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

uint64_t fs_table_peek(struct fs_table *t, uint64_t parent, const char *name)
{
	char key[512];
	if (snprintf(key, sizeof(key), "%" PRIu64 "/%s", parent, name) >= (int)sizeof(key))
		return 0;
	pthread_mutex_lock(&t->lock);
	uint64_t ino = (uint64_t)(uintptr_t)dm_hashmap_get(&t->by_key, key);
	pthread_mutex_unlock(&t->lock);
	return ino;
}

void fs_table_forget(struct fs_table *t, uint64_t ino, uint64_t n)
{
	pthread_mutex_lock(&t->lock);
	if (ino >= 2 && ino < t->n_slots && t->slots[ino].used) {
		struct slot *s = &t->slots[ino];
		s->node.nlookup = s->node.nlookup > n ? s->node.nlookup - n : 0;
		if (s->node.nlookup == 0) {
			node_clear(t, ino);
			s->used = false;
			s->next_free = t->free_head;
			t->free_head = ino;
			t->n_used--;
		}
	}
	pthread_mutex_unlock(&t->lock);
}

int fs_table_get(struct fs_table *t, uint64_t ino, struct fs_ref *ret)
{
	pthread_mutex_lock(&t->lock);
	if (ino == 0 || ino >= t->n_slots || !t->slots[ino].used) {
		pthread_mutex_unlock(&t->lock);
		return -ESTALE;
	}
	const struct fs_node *n = &t->slots[ino].node;
	*ret = (struct fs_ref){ .t = n->t, .ino = ino, .parent = n->parent, .depth = n->depth };
	snprintf(ret->name, sizeof(ret->name), "%s", n->name ? n->name : "");
	if (n->group) {
		snprintf(ret->group, sizeof(ret->group), "%s", n->group);
		ret->t.group = ret->group;
	}
	target_ref(&ret->t);
	pthread_mutex_unlock(&t->lock);
	return 0;
}

void fs_ref_release(struct fs_ref *r)
{
	target_unref(&r->t);
	r->t.dev = NULL;
	r->t.drv = NULL;
}

size_t fs_table_count(struct fs_table *t)
{
	pthread_mutex_lock(&t->lock);
	size_t n = t->n_used;
	pthread_mutex_unlock(&t->lock);
	return n;
}
