/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "inode.h"

#include "core/hashmap.h"
#include "core/idset.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct slot {
	struct fs_node node;
	uint32_t gen;
};

/* Slots come in pages of SLOTS_PER_PAGE that never move, so the table
 * grows without copying or doubling its memory. */
#define SLOTS_PER_PAGE 4096u

struct fs_table {
	pthread_mutex_t lock;
	struct slot **pages; /* slot i = inode number i; 0 unused, 1 the root */
	uint64_t n_slots, n_pages, cap_pages;
	uint32_t free_head; /* 0: none */
	size_t n_used;
	/* Both indexes hold inode numbers and hash what the slot holds, so an
	 * entry costs one word: by_name has the current node of each
	 * (parent, name), by_dev the first node of each device's list. */
	struct dm_idset by_name;
	struct dm_idset by_dev;
};

static struct slot *slot_at(const struct fs_table *t, uint64_t ino)
{
	return &t->pages[ino / SLOTS_PER_PAGE][ino % SLOTS_PER_PAGE];
}

static uint64_t hash_name(uint64_t parent, const char *name)
{
	uint64_t h = dm_hash_u64(&parent);
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	return h;
}

static uint64_t hash_node_name(uintptr_t ino, void *ctx)
{
	const struct fs_node *n = &slot_at(((struct fs_table *)ctx), ino)->node;
	return hash_name(n->parent, n->name);
}

static uint64_t hash_node_dev(uintptr_t ino, void *ctx)
{
	uint64_t id = dm_device_get_id(slot_at(((struct fs_table *)ctx), ino)->node.t.dev);
	return dm_hash_u64(&id);
}

int fs_table_new(struct fs_table **ret)
{
	struct fs_table *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->cap_pages = 64;
	t->pages = calloc(t->cap_pages, sizeof(*t->pages));
	if (t->pages)
		t->pages[0] = calloc(SLOTS_PER_PAGE, sizeof(**t->pages));
	if (!t->pages || !t->pages[0]) {
		free(t->pages);
		free(t);
		return -ENOMEM;
	}
	t->n_pages = 1;
	pthread_mutex_init(&t->lock, NULL);
	dm_idset_init(&t->by_name, hash_node_name, t);
	dm_idset_init(&t->by_dev, hash_node_dev, t);
	t->n_slots = 2;
	*slot_at(t, 1) = (struct slot){ .gen = 1,
				     .node = { .t = { .kind = FS_TOP }, .nlookup = 1, .used = true } };
	t->n_used = 1;
	*ret = t;
	return 0;
}

void fs_target_ref(const struct fs_target *t)
{
	dm_device_ref(t->dev);
	if (t->kind == FS_DRIVER)
		dm_driver_ref(t->drv);
}

void fs_target_unref(const struct fs_target *t)
{
	dm_device_unref(t->dev);
	if (t->kind == FS_DRIVER)
		dm_driver_unref(t->drv);
}

struct dev_match {
	struct fs_table *t;
	uint64_t id;
};

static bool dev_match(uintptr_t ino, void *data)
{
	const struct dev_match *m = data;
	return dm_device_get_id(slot_at(m->t, ino)->node.t.dev) == m->id;
}

/* The first node of @dev's list, or 0. */
static uint32_t dev_first_locked(struct fs_table *t, const struct dm_device *dev)
{
	struct dev_match m = { .t = t, .id = dm_device_get_id(dev) };
	return (uint32_t)dm_idset_find(&t->by_dev, dm_hash_u64(&m.id), dev_match, &m);
}

/* Links node @ino into its device's list, as its first node. */
static int dev_link_locked(struct fs_table *t, uint32_t ino)
{
	struct fs_node *n = &slot_at(t, ino)->node;
	uint32_t first = dev_first_locked(t, n->t.dev);
	if (first)
		dm_idset_remove(&t->by_dev, first);
	if (dm_idset_add(&t->by_dev, ino) < 0) {
		if (first)
			dm_idset_add(&t->by_dev, first); /* had room a moment ago */
		return -ENOMEM;
	}
	n->dev_prev = 0;
	n->dev_next = first;
	if (first)
		slot_at(t, first)->node.dev_prev = ino;
	return 0;
}

static void dev_unlink_locked(struct fs_table *t, uint32_t ino)
{
	struct fs_node *n = &slot_at(t, ino)->node;
	if (!n->t.dev)
		return;
	if (n->dev_next)
		slot_at(t, n->dev_next)->node.dev_prev = n->dev_prev;
	if (n->dev_prev) {
		slot_at(t, n->dev_prev)->node.dev_next = n->dev_next;
		return;
	}
	/* the first: its successor takes its place in the index (removing
	 * an entry never allocates, and the add reuses the freed room) */
	dm_idset_remove(&t->by_dev, ino);
	if (n->dev_next)
		dm_idset_add(&t->by_dev, n->dev_next);
}

size_t fs_table_device_places(struct fs_table *t, const struct dm_device *dev,
			      struct fs_place *out, size_t max)
{
	size_t n = 0;
	pthread_mutex_lock(&t->lock);
	for (uint32_t i = dev_first_locked(t, dev); i && n < max; i = slot_at(t, i)->node.dev_next) {
		const struct fs_node *node = &slot_at(t, i)->node;
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

static void node_clear(struct fs_table *t, uint32_t ino)
{
	struct fs_node *n = &slot_at(t, ino)->node;
	dev_unlink_locked(t, ino);
	if (n->keyed)
		dm_idset_remove(&t->by_name, ino);
	fs_target_unref(&n->t);
	free(n->group);
	free(n->name);
	memset(n, 0, sizeof(*n));
}

void fs_table_free(struct fs_table *t)
{
	if (!t)
		return;
	for (uint64_t i = 2; i < t->n_slots; i++)
		if (slot_at(t, i)->node.used)
			node_clear(t, (uint32_t)i);
	dm_idset_done(&t->by_name);
	dm_idset_done(&t->by_dev);
	pthread_mutex_destroy(&t->lock);
	for (uint64_t i = 0; i < t->n_pages; i++)
		free(t->pages[i]);
	free(t->pages);
	free(t);
}

static bool same_target(const struct fs_target *a, const struct fs_target *b)
{
	if (a->kind != b->kind || a->dev != b->dev || a->drv != b->drv)
		return false;
	if (!a->group || !b->group)
		return a->group == b->group;
	return strcmp(a->group, b->group) == 0;
}

static uint32_t slot_alloc_locked(struct fs_table *t)
{
	if (t->free_head) {
		uint32_t i = t->free_head;
		t->free_head = slot_at(t, i)->node.parent;
		slot_at(t, i)->node.parent = 0;
		return i;
	}
	if (t->n_slots == UINT32_MAX)
		return 0;
	if (t->n_slots == t->n_pages * SLOTS_PER_PAGE) {
		if (t->n_pages == t->cap_pages) {
			struct slot **p = realloc(t->pages, t->cap_pages * 2 * sizeof(*p));
			if (!p)
				return 0;
			t->pages = p;
			t->cap_pages *= 2;
		}
		t->pages[t->n_pages] = calloc(SLOTS_PER_PAGE, sizeof(**t->pages));
		if (!t->pages[t->n_pages])
			return 0;
		t->n_pages++;
	}
	return (uint32_t)t->n_slots++;
}

/* Puts a cleared slot on the free list. */
static void slot_free_locked(struct fs_table *t, uint32_t ino)
{
	slot_at(t, ino)->node.parent = t->free_head;
	t->free_head = ino;
}

/* Gives back the slot of a node that could not be completed. */
static void slot_abandon_locked(struct fs_table *t, uint32_t ino)
{
	struct fs_node *n = &slot_at(t, ino)->node;
	free(n->name);
	free(n->group);
	memset(n, 0, sizeof(*n));
	slot_free_locked(t, ino);
}

/* A new current node for (@parent, @name); 0 when out of memory. */
static uint32_t node_new_locked(struct fs_table *t, uint32_t parent, unsigned depth,
				const char *name, const struct fs_target *target)
{
	uint32_t ino = slot_alloc_locked(t);
	if (!ino)
		return 0;
	struct slot *s = slot_at(t, ino);
	struct fs_node *n = &s->node;
	*n = (struct fs_node){ .t = *target, .parent = parent, .depth = (uint16_t)depth,
			       .nlookup = 1 };
	n->name = strdup(name);
	n->group = target->group ? strdup(target->group) : NULL;
	if (!n->name || (target->group && !n->group) || dm_idset_add(&t->by_name, ino) < 0) {
		slot_abandon_locked(t, ino);
		return 0;
	}
	n->t.group = n->group;
	if (n->t.dev && dev_link_locked(t, ino) < 0) {
		dm_idset_remove(&t->by_name, ino);
		slot_abandon_locked(t, ino);
		return 0;
	}
	n->keyed = true;
	n->used = true;
	fs_target_ref(&n->t);
	s->gen++;
	t->n_used++;
	return ino;
}

struct name_match {
	struct fs_table *t;
	uint64_t parent;
	const char *name;
};

static bool name_match(uintptr_t ino, void *data)
{
	const struct name_match *m = data;
	const struct fs_node *n = &slot_at(m->t, ino)->node;
	return n->parent == m->parent && strcmp(n->name, m->name) == 0;
}

/* The current node of (@parent, @name), or 0. */
static uint32_t find_locked(struct fs_table *t, uint64_t parent, const char *name)
{
	struct name_match m = { .t = t, .parent = parent, .name = name };
	return (uint32_t)dm_idset_find(&t->by_name, hash_name(parent, name), name_match, &m);
}

int fs_table_lookup(struct fs_table *t, uint64_t parent, unsigned depth, const char *name,
		    const struct fs_target *target, uint64_t *ret_ino, uint64_t *ret_gen)
{
	if (parent >= UINT32_MAX || depth > UINT16_MAX)
		return -EOVERFLOW;
	pthread_mutex_lock(&t->lock);
	uint32_t ino = find_locked(t, parent, name);
	if (ino) {
		struct fs_node *n = &slot_at(t, ino)->node;
		if (same_target(&n->t, target)) {
			n->nlookup++;
		} else {
			/* the name now means another object: the old node lives
			 * on, unnamed, until the kernel forgets it */
			dm_idset_remove(&t->by_name, ino);
			n->keyed = false;
			ino = 0;
		}
	}
	if (!ino)
		ino = node_new_locked(t, (uint32_t)parent, depth, name, target);
	if (!ino) {
		pthread_mutex_unlock(&t->lock);
		return -ENOMEM;
	}
	*ret_ino = ino;
	*ret_gen = slot_at(t, ino)->gen;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

uint64_t fs_table_peek(struct fs_table *t, uint64_t parent, const char *name)
{
	pthread_mutex_lock(&t->lock);
	uint64_t ino = find_locked(t, parent, name);
	pthread_mutex_unlock(&t->lock);
	return ino;
}

void fs_table_forget(struct fs_table *t, uint64_t ino, uint64_t n)
{
	pthread_mutex_lock(&t->lock);
	if (ino >= 2 && ino < t->n_slots && slot_at(t, ino)->node.used) {
		struct fs_node *node = &slot_at(t, ino)->node;
		node->nlookup = node->nlookup > n ? node->nlookup - n : 0;
		if (node->nlookup == 0) {
			node_clear(t, (uint32_t)ino);
			slot_free_locked(t, (uint32_t)ino);
			t->n_used--;
		}
	}
	pthread_mutex_unlock(&t->lock);
}

int fs_table_get(struct fs_table *t, uint64_t ino, struct fs_ref *ret)
{
	pthread_mutex_lock(&t->lock);
	if (ino == 0 || ino >= t->n_slots || !slot_at(t, ino)->node.used) {
		pthread_mutex_unlock(&t->lock);
		return -ESTALE;
	}
	const struct fs_node *n = &slot_at(t, ino)->node;
	*ret = (struct fs_ref){ .t = n->t, .ino = ino, .parent = n->parent, .depth = n->depth };
	snprintf(ret->name, sizeof(ret->name), "%s", n->name ? n->name : "");
	if (n->group) {
		snprintf(ret->group, sizeof(ret->group), "%s", n->group);
		ret->t.group = ret->group;
	}
	fs_target_ref(&ret->t);
	pthread_mutex_unlock(&t->lock);
	return 0;
}

void fs_ref_release(struct fs_ref *r)
{
	fs_target_unref(&r->t);
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
