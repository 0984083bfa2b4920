/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "core/array.h"
#include "inode.h"

#include "core/hashmap.h"
#include "core/idset.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* A name or group shared by every node that has it, counted. */
struct name {
	uint32_t refs;
	uint32_t mirror_off; /* where the mirror has it (0: not yet) */
	char s[];
};

/* One node: 48 bytes, generation included (the table's memory after a
 * walk is mostly these). */
struct slot {
	struct dm_device *dev; /* FS_DEV, FS_GROUP, FS_ATTR, FS_LINK_FROM_DEV, FS_LINK_TO_DEV */
	union {
		struct dm_driver *drv;
		struct dm_bus *bus;
		struct dm_class *class;
		struct dm_interface *iface;
		const char *group; /* FS_GROUP, FS_ATTR: a shared name or NULL */
	};
	const char *name; /* shared (name_get_locked()); NULL for the root */
	uint32_t nlookup; /* saturates: a node counted UINT32_MAX times stays */
	uint32_t parent; /* inode of the directory holding it; next free slot when free */
	uint32_t name_next; /* the next keyed node of its name bucket (0: none) */
	uint32_t dev_next; /* the next node of dev (0: none) */
	uint32_t gen;
	uint16_t depth; /* directories between the mount root and it */
	uint8_t kind; /* enum fs_kind; 0 when the slot is free or pending */
	bool keyed; /* the current node for (parent, name), in the name index */
};
/* A slot of kind 0 with a name is a node taken over and not made yet
 * (fs_table_adopt()): its name is the mirror's copy, its parent, depth,
 * generation and keyed the mirror's, its count the mirror's own; a parent
 * of 0 marks one no longer there, kept until the kernel forgets it. */
_Static_assert(sizeof(struct slot) == 48, "a node stays 48 bytes");

/* Slots come in pages of SLOTS_PER_PAGE that never move, so the table
 * grows without copying or doubling its memory. */
#define SLOTS_PER_PAGE 4096u

struct fs_table {
	pthread_mutex_t lock;
	struct slot **pages; /* slot i = inode number i; 0 unused, 1 the root */
	uint64_t n_slots, n_pages, cap_pages;
	uint32_t free_head; /* 0: none */
	size_t n_used;
	/* The current node of each (parent, name): chained through the
	 * nodes' name_next from buckets (a power of two, at most one node per
	 * bucket on average), 4 to 8 bytes a node beside the node's own 4. */
	uint32_t *buckets;
	size_t n_buckets, n_keyed;
	/* The first node of each device's list, by the device's id (one
	 * word, hashed from what the slot holds). */
	struct dm_idset by_dev;
	struct dm_idset names; /* the shared names (struct name *), by content */
	struct fs_mirror mirror; /* handover: the nodes as a successor reads them */
	bool mirrored;
	/* handover: the nodes taken over, made on demand */
	struct dm_model *model;
	fs_find_fn find;
	size_t n_pending;
};

static bool is_pending(const struct slot *n)
{
	return !n->kind && n->name;
}

static struct slot *slot_at(const struct fs_table *t, uint64_t ino)
{
	return &t->pages[ino / SLOTS_PER_PAGE][ino % SLOTS_PER_PAGE];
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	return h;
}

static uint64_t hash_name(uint64_t parent, const char *name)
{
	return hash_str(dm_hash_u64(&parent), name);
}

static size_t bucket_of(const struct fs_table *t, uint64_t parent, const char *name)
{
	return hash_name(parent, name) & (t->n_buckets - 1);
}

static uint64_t hash_node_dev(uintptr_t ino, void *ctx)
{
	uint64_t id = dm_device_get_id(slot_at(ctx, ino)->dev);
	return dm_hash_u64(&id);
}

static uint64_t hash_shared(uintptr_t item, void *ctx)
{
	(void)ctx;
	return hash_str(0xcbf29ce484222325ULL, ((const struct name *)item)->s);
}

static bool shared_match(uintptr_t item, void *data)
{
	return strcmp(((const struct name *)item)->s, data) == 0;
}

/* The shared copy of @s, counted once more; NULL when out of memory. */
static const char *name_get_locked(struct fs_table *t, const char *s)
{
	struct name *n = (struct name *)dm_idset_find(&t->names, hash_str(0xcbf29ce484222325ULL, s),
						      shared_match, (void *)s);
	if (n) {
		n->refs++;
		return n->s;
	}
	size_t len = strlen(s);
	n = malloc(sizeof(*n) + len + 1);
	if (!n)
		return NULL;
	n->refs = 1;
	n->mirror_off = 0;
	memcpy(n->s, s, len + 1);
	if (dm_idset_add(&t->names, (uintptr_t)n) < 0) {
		free(n);
		return NULL;
	}
	return n->s;
}

/* Drops a count of the shared name @s (NULL: none). */
static void name_put_locked(struct fs_table *t, const char *s)
{
	if (!s)
		return;
	struct name *n = (struct name *)(s - offsetof(struct name, s));
	if (--n->refs)
		return;
	dm_idset_remove(&t->names, (uintptr_t)n);
	free(n);
}

static bool has_group(uint8_t kind)
{
	return kind == FS_GROUP || kind == FS_ATTR;
}

/* The target a node refers to (its group is the node's shared copy). */
static struct fs_target slot_target(const struct slot *n)
{
	struct fs_target t = { .kind = n->kind, .dev = n->dev };
	if (has_group(n->kind))
		t.group = n->group;
	else
		t.drv = n->drv; /* whichever object pointer the kind uses */
	return t;
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
	dm_idset_init(&t->by_dev, hash_node_dev, t);
	dm_idset_init(&t->names, hash_shared, NULL);
	t->n_slots = 2;
	*slot_at(t, 1) = (struct slot){ .gen = 1, .kind = FS_TOP, .nlookup = 1 };
	t->n_used = 1;
	*ret = t;
	return 0;
}

void fs_target_ref(const struct fs_target *t)
{
	dm_device_ref(t->dev);
	if (t->kind == FS_DRIVER || t->kind == FS_DRV_ATTR || t->kind == FS_LINK_TO_DRV)
		dm_driver_ref(t->drv);
}

void fs_target_unref(const struct fs_target *t)
{
	dm_device_unref(t->dev);
	if (t->kind == FS_DRIVER || t->kind == FS_DRV_ATTR || t->kind == FS_LINK_TO_DRV)
		dm_driver_unref(t->drv);
}

struct dev_match {
	struct fs_table *t;
	uint64_t id;
};

static bool dev_match(uintptr_t ino, void *data)
{
	const struct dev_match *m = data;
	return dm_device_get_id(slot_at(m->t, ino)->dev) == m->id;
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
	struct slot *n = slot_at(t, ino);
	uint32_t first = dev_first_locked(t, n->dev);
	if (first)
		dm_idset_remove(&t->by_dev, first);
	if (dm_idset_add(&t->by_dev, ino) < 0) {
		if (first)
			dm_idset_add(&t->by_dev, first); /* had room a moment ago */
		return -ENOMEM;
	}
	n->dev_next = first;
	return 0;
}

static void dev_unlink_locked(struct fs_table *t, uint32_t ino)
{
	struct slot *n = slot_at(t, ino);
	if (!n->dev)
		return;
	uint32_t first = dev_first_locked(t, n->dev);
	if (first != ino) {
		/* a device has a few nodes (its directory, files, links) */
		uint32_t prev = first;
		while (prev && slot_at(t, prev)->dev_next != ino)
			prev = slot_at(t, prev)->dev_next;
		if (prev)
			slot_at(t, prev)->dev_next = n->dev_next;
		return;
	}
	/* the first: its successor takes its place in the index (removing
	 * an entry never allocates, and the add reuses the freed room) */
	dm_idset_remove(&t->by_dev, ino);
	if (n->dev_next)
		dm_idset_add(&t->by_dev, n->dev_next);
}

int fs_table_device_places(struct fs_table *t, const struct dm_device *dev,
			   struct fs_place **ret, size_t *ret_n)
{
	struct fs_place *out = NULL;
	size_t n = 0, max = 0;
	pthread_mutex_lock(&t->lock);
	for (uint32_t i = dev_first_locked(t, dev); i; i = slot_at(t, i)->dev_next) {
		const struct slot *node = slot_at(t, i);
		/* a device has a few nodes, or as many as the links to it */
		if (!dm_array_grow((void **)&out, &max, n, sizeof(*out), 16)) {
			pthread_mutex_unlock(&t->lock);
			free(out);
			return -ENOMEM;
		}
		out[n].ino = i;
		out[n].parent = node->parent;
		out[n].dir = fs_kind_is_dir(node->kind);
		snprintf(out[n].name, sizeof(out[n].name), "%s", node->name ? node->name : "");
		n++;
	}
	pthread_mutex_unlock(&t->lock);
	*ret = out;
	*ret_n = n;
	return 0;
}

/* Doubles the buckets (at least 1024), moving each keyed node. */
static int buckets_grow_locked(struct fs_table *t)
{
	size_t n = t->n_buckets ? t->n_buckets * 2 : 1024;
	uint32_t *b = calloc(n, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_buckets; i++) {
		uint32_t next;
		for (uint32_t ino = t->buckets[i]; ino; ino = next) {
			struct slot *s = slot_at(t, ino);
			size_t h = hash_name(s->parent, s->name) & (n - 1);
			next = s->name_next;
			s->name_next = b[h];
			b[h] = ino;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->n_buckets = n;
	return 0;
}

/* Makes @ino the current node of its (parent, name). 0 or -ENOMEM. */
static int key_add_locked(struct fs_table *t, uint32_t ino)
{
	if (t->n_keyed >= t->n_buckets && buckets_grow_locked(t) < 0)
		return -ENOMEM;
	struct slot *s = slot_at(t, ino);
	size_t h = bucket_of(t, s->parent, s->name);
	s->name_next = t->buckets[h];
	t->buckets[h] = ino;
	s->keyed = true;
	t->n_keyed++;
	return 0;
}

/* Takes @ino out of the name index, leaving the mirror as it is. */
static void key_unlink_locked(struct fs_table *t, uint32_t ino)
{
	struct slot *s = slot_at(t, ino);
	if (!s->keyed)
		return;
	for (uint32_t *p = &t->buckets[bucket_of(t, s->parent, s->name)]; *p;
	     p = &slot_at(t, *p)->name_next) {
		if (*p == ino) {
			*p = s->name_next;
			break;
		}
	}
	s->name_next = 0;
	s->keyed = false;
	t->n_keyed--;
}

static void key_remove_locked(struct fs_table *t, uint32_t ino)
{
	if (!slot_at(t, ino)->keyed)
		return;
	if (t->mirrored && ino < t->mirror.slots_cap)
		t->mirror.slots[ino].keyed = 0;
	key_unlink_locked(t, ino);
}

/* Drops what a used node holds, leaving the slot zeroed but its generation. */
static void node_clear(struct fs_table *t, uint32_t ino)
{
	struct slot *n = slot_at(t, ino);
	if (t->mirrored && ino < t->mirror.slots_cap)
		atomic_store_explicit(&t->mirror.slots[ino].kind, 0, memory_order_release);
	dev_unlink_locked(t, ino);
	key_remove_locked(t, ino);
	struct fs_target target = slot_target(n);
	fs_target_unref(&target);
	name_put_locked(t, n->name);
	if (has_group(n->kind))
		name_put_locked(t, n->group);
	*n = (struct slot){ .gen = n->gen };
}

void fs_table_free(struct fs_table *t)
{
	if (!t)
		return;
	for (uint64_t i = 2; i < t->n_slots; i++)
		if (slot_at(t, i)->kind)
			node_clear(t, (uint32_t)i);
	free(t->buckets);
	dm_idset_done(&t->by_dev);
	dm_idset_done(&t->names);
	pthread_mutex_destroy(&t->lock);
	for (uint64_t i = 0; i < t->n_pages; i++)
		free(t->pages[i]);
	free(t->pages);
	free(t);
}

static bool same_target(const struct slot *n, const struct fs_target *b)
{
	if (n->kind != b->kind || n->dev != b->dev)
		return false;
	if (!has_group(n->kind))
		return n->drv == b->drv;
	if (!n->group || !b->group)
		return n->group == b->group;
	return strcmp(n->group, b->group) == 0;
}

/* One more page of slots (zeroed: free, unused). 0 or -ENOMEM. */
static int page_add_locked(struct fs_table *t)
{
	if (t->n_pages == t->cap_pages) {
		struct slot **p = realloc(t->pages, t->cap_pages * 2 * sizeof(*p));
		if (!p)
			return -ENOMEM;
		t->pages = p;
		t->cap_pages *= 2;
	}
	t->pages[t->n_pages] = calloc(SLOTS_PER_PAGE, sizeof(**t->pages));
	if (!t->pages[t->n_pages])
		return -ENOMEM;
	t->n_pages++;
	return 0;
}

static uint32_t slot_alloc_locked(struct fs_table *t)
{
	if (t->free_head) {
		uint32_t i = t->free_head;
		t->free_head = slot_at(t, i)->parent;
		slot_at(t, i)->parent = 0;
		return i;
	}
	if (t->n_slots == UINT32_MAX)
		return 0;
	if (t->n_slots == t->n_pages * SLOTS_PER_PAGE && page_add_locked(t) < 0)
		return 0;
	return (uint32_t)t->n_slots++;
}

/* Puts a cleared slot on the free list. */
static void slot_free_locked(struct fs_table *t, uint32_t ino)
{
	slot_at(t, ino)->parent = t->free_head;
	t->free_head = ino;
}

/* The mirror's copy of the node @ino (handover.h): its name written once
 * per shared name, its fields, then its kind, which makes it count. What
 * does not fit makes the mirror invalid (no takeover after a crash). */
static void mirror_put_locked(struct fs_table *t, uint32_t ino, bool keyed)
{
	struct fs_mirror *m = &t->mirror;
	if (!t->mirrored || !atomic_load_explicit(m->ok, memory_order_relaxed))
		return;
	if (ino >= m->slots_cap) {
		atomic_store(m->ok, 0);
		return;
	}
	struct slot *n = slot_at(t, ino);
	struct name *nm = (struct name *)(n->name - offsetof(struct name, s));
	struct fs_mirror_slot *ms = &m->slots[ino];
	if (atomic_load_explicit(&ms->kind, memory_order_relaxed) == n->kind &&
	    ms->gen == n->gen && ms->parent == n->parent) {
		/* a node taken over, made now: the mirror has it, and its
		 * name, already (a death meanwhile loses nothing) */
		if (!nm->mirror_off)
			nm->mirror_off = ms->name_off;
		ms->keyed = keyed;
		atomic_store_explicit(&ms->nlookup, n->nlookup, memory_order_relaxed);
		return;
	}
	if (!nm->mirror_off) {
		size_t len = strlen(nm->s) + 1;
		uint32_t used = atomic_load_explicit(m->names_used, memory_order_relaxed);
		if (used + len > m->names_cap) {
			atomic_store(m->ok, 0);
			return;
		}
		memcpy(m->names + used, nm->s, len);
		nm->mirror_off = used;
		atomic_store_explicit(m->names_used, used + (uint32_t)len, memory_order_release);
	}
	atomic_store_explicit(&ms->kind, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&ms->source, 0, memory_order_relaxed);
	atomic_store_explicit(&ms->told, 0, memory_order_relaxed);
	/* read once per device (a stat of its sysfs directory), kept */
	ms->ident = n->dev ? dm_device_identity(n->dev) : 0;
	ms->gen = n->gen;
	ms->parent = n->parent;
	ms->depth = n->depth;
	ms->keyed = keyed;
	ms->name_off = nm->mirror_off;
	atomic_store_explicit(&ms->nlookup, n->nlookup, memory_order_relaxed);
	atomic_store_explicit(&ms->kind, n->kind, memory_order_release);
	if (ino >= atomic_load_explicit(m->high, memory_order_relaxed))
		atomic_store_explicit(m->high, ino + 1, memory_order_release);
}

/* The mirror's count of the node @ino, after its count changed. */
static void mirror_count_locked(struct fs_table *t, uint32_t ino)
{
	if (t->mirrored && ino < t->mirror.slots_cap)
		atomic_store_explicit(&t->mirror.slots[ino].nlookup, slot_at(t, ino)->nlookup,
				      memory_order_relaxed);
}

/* Fills the free slot @ino as a node of @target named @name under @parent
 * (keyed: the current node of that name), with @nlookup and @gen, taking
 * its references. -ENOMEM leaves the slot as it was (free, its generation
 * @gen). */
static int node_fill_locked(struct fs_table *t, uint32_t ino, uint32_t parent, unsigned depth,
			    const char *name, const struct fs_target *target, uint32_t nlookup,
			    uint32_t gen, bool keyed)
{
	struct slot *n = slot_at(t, ino);
	*n = (struct slot){ .dev = target->dev, .kind = (uint8_t)target->kind, .parent = parent,
			    .depth = (uint16_t)depth, .nlookup = nlookup, .gen = gen };
	bool ok = true;
	if (has_group(n->kind)) {
		n->group = target->group ? name_get_locked(t, target->group) : NULL;
		ok = n->group || !target->group;
	} else {
		n->drv = target->drv;
	}
	n->name = name_get_locked(t, name);
	if (!ok || !n->name || (keyed && key_add_locked(t, ino) < 0) ||
	    (n->dev && dev_link_locked(t, ino) < 0)) {
		key_remove_locked(t, ino);
		name_put_locked(t, n->name);
		if (has_group(n->kind))
			name_put_locked(t, n->group);
		*n = (struct slot){ .gen = gen };
		return -ENOMEM;
	}
	struct fs_target taken = slot_target(n);
	fs_target_ref(&taken);
	t->n_used++;
	mirror_put_locked(t, ino, keyed);
	return 0;
}

/* A new current node for (@parent, @name); 0 when out of memory. */
static uint32_t node_new_locked(struct fs_table *t, uint32_t parent, unsigned depth,
				const char *name, const struct fs_target *target)
{
	uint32_t ino = slot_alloc_locked(t);
	if (!ino)
		return 0;
	/* the generation the kernel is told, mirrored with it */
	uint32_t gen = slot_at(t, ino)->gen + 1;
	if (node_fill_locked(t, ino, parent, depth, name, target, 1, gen, true) < 0) {
		slot_at(t, ino)->gen = gen - 1;
		slot_free_locked(t, ino);
		return 0;
	}
	return ino;
}

/* The current node of (@parent, @name), or 0. */
static uint32_t find_locked(struct fs_table *t, uint64_t parent, const char *name)
{
	if (!t->n_buckets)
		return 0;
	for (uint32_t ino = t->buckets[bucket_of(t, parent, name)]; ino;
	     ino = slot_at(t, ino)->name_next) {
		const struct slot *n = slot_at(t, ino);
		if (n->parent == parent && strcmp(n->name, name) == 0)
			return ino;
	}
	return 0;
}

/* ---- nodes taken over (fs_table_adopt()), made on demand ---- */

/* Whether @target is the object the pending node @ino was: of its kind,
 * and for a device's node the same device (not one plugged at its path
 * meanwhile: a handle opened on the old one must not act on it). */
static bool pending_is_locked(struct fs_table *t, uint32_t ino, const struct fs_target *target)
{
	const struct fs_mirror_slot *ms = &t->mirror.slots[ino];
	if (atomic_load_explicit(&ms->kind, memory_order_relaxed) != target->kind)
		return false;
	return !ms->ident || !target->dev || dm_device_identity(target->dev) == ms->ident;
}

/* Makes the pending node @ino, referring to @target, with the mirror's
 * count and @more lookups. 0 or -ENOMEM (then still pending). */
static int pending_make_locked(struct fs_table *t, uint32_t ino, const struct fs_target *target,
			       uint32_t more)
{
	struct slot *s = slot_at(t, ino);
	struct slot was = *s;
	uint32_t count = atomic_load_explicit(&t->mirror.slots[ino].nlookup, memory_order_relaxed);
	/* a count of 0, which no node the kernel holds has, counts as 1 */
	if (!count)
		count = 1;
	count = count > UINT32_MAX - more ? UINT32_MAX : count + more;
	key_unlink_locked(t, ino);
	/* the name is the mirror's copy, which stays */
	if (node_fill_locked(t, ino, was.parent, was.depth, was.name, target, count, was.gen,
			     was.keyed) < 0) {
		*s = was;
		s->keyed = false;
		s->name_next = 0;
		/* room: there was, for one more */
		if (was.keyed)
			key_add_locked(t, ino);
		return -ENOMEM;
	}
	t->n_pending--;
	return 0;
}

/* The pending node @ino is not there any more: it stays, unnamed, its
 * number reserved, until the kernel forgets it (freed then as any). */
static void pending_lost_locked(struct fs_table *t, uint32_t ino)
{
	key_remove_locked(t, ino);
	slot_at(t, ino)->parent = 0;
}

/* The kernel forgot the pending node @ino: its number is free. */
static void pending_free_locked(struct fs_table *t, uint32_t ino)
{
	key_remove_locked(t, ino);
	atomic_store_explicit(&t->mirror.slots[ino].kind, 0, memory_order_release);
	struct slot *s = slot_at(t, ino);
	*s = (struct slot){ .gen = s->gen };
	slot_free_locked(t, ino);
	t->n_pending--;
}

/* The pending node nearest the top on @ino's way up (its parent made), 0
 * when @ino is made, -ESTALE when the way is broken: a number neither made
 * nor pending, one lost, depths that do not go down (so no mirror,
 * whatever it holds, makes a loop). */
static int64_t pending_top_locked(struct fs_table *t, uint32_t ino)
{
	if (ino == 0 || ino >= t->n_slots)
		return -ESTALE;
	const struct slot *s = slot_at(t, ino);
	if (s->kind)
		return 0;
	for (;;) {
		if (!is_pending(s) || !s->parent || s->parent >= t->n_slots)
			return -ESTALE;
		const struct slot *p = slot_at(t, s->parent);
		if (p->kind)
			return ino;
		if (p->depth >= s->depth)
			return -ESTALE;
		ino = s->parent;
		s = p;
	}
}

static void get_locked(struct fs_table *t, uint64_t ino, struct fs_ref *ret);

/* Makes the node @ino if it is pending, its parents first, each found in
 * the model. Takes the model's read lock, then the table's (dropped while
 * the model is searched). 0, -ESTALE (@ino is not there), -ENOMEM. */
static int pending_resolve(struct fs_table *t, uint32_t ino)
{
	int r = 0;
	dm_model_read_lock(t->model);
	for (;;) {
		pthread_mutex_lock(&t->lock);
		int64_t top = pending_top_locked(t, ino);
		if (top <= 0) {
			pthread_mutex_unlock(&t->lock);
			r = (int)top;
			break;
		}
		uint32_t x = (uint32_t)top;
		const struct slot *s = slot_at(t, x);
		struct fs_ref dir;
		char name[DM_NAME_MAX + 1];
		uint32_t gen = s->gen;
		snprintf(name, sizeof(name), "%s", s->name);
		get_locked(t, s->parent, &dir);
		pthread_mutex_unlock(&t->lock);

		struct fs_target found;
		char group[FS_GROUP_MAX];
		int f = t->find(t->model, &dir, name, &found, group);

		pthread_mutex_lock(&t->lock);
		s = slot_at(t, x);
		/* unless forgotten meanwhile, or made by another thread */
		if (is_pending(s) && s->gen == gen && s->parent == dir.ino) {
			if (f == 0 && pending_is_locked(t, x, &found))
				r = pending_make_locked(t, x, &found, 0);
			else
				pending_lost_locked(t, x);
		}
		pthread_mutex_unlock(&t->lock);
		fs_ref_release(&dir);
		if (r < 0)
			break;
	}
	dm_model_unlock(t->model);
	return r;
}

int fs_table_lookup(struct fs_table *t, uint64_t parent, unsigned depth, const char *name,
		    const struct fs_target *target, uint64_t *ret_ino, uint64_t *ret_gen)
{
	if (parent >= UINT32_MAX || depth > UINT16_MAX)
		return -EOVERFLOW;
	pthread_mutex_lock(&t->lock);
	uint32_t ino = find_locked(t, parent, name);
	if (ino && is_pending(slot_at(t, ino))) {
		/* the node the last daemon had for this name: made now, under
		 * its number, when it is the same object; else it stays,
		 * unnamed, until the kernel forgets it */
		if (!pending_is_locked(t, ino, target)) {
			pending_lost_locked(t, ino);
			ino = 0;
		} else if (pending_make_locked(t, ino, target, 1) < 0) {
			pthread_mutex_unlock(&t->lock);
			return -ENOMEM;
		}
	} else if (ino) {
		struct slot *n = slot_at(t, ino);
		if (same_target(n, target)) {
			/* at UINT32_MAX the node stays for good: a leak of one
			 * node, never a number freed while the kernel holds it */
			if (n->nlookup < UINT32_MAX)
				n->nlookup++;
			mirror_count_locked(t, ino);
		} else {
			/* the name now means another object: the old node lives
			 * on, unnamed, until the kernel forgets it */
			key_remove_locked(t, ino);
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

bool fs_table_forget(struct fs_table *t, uint64_t ino, uint64_t n)
{
	bool freed = false;
	pthread_mutex_lock(&t->lock);
	if (ino >= 2 && ino < t->n_slots && slot_at(t, ino)->kind) {
		struct slot *node = slot_at(t, ino);
		if (node->nlookup < UINT32_MAX)
			node->nlookup = node->nlookup > n ? (uint32_t)(node->nlookup - n) : 0;
		mirror_count_locked(t, (uint32_t)ino);
		if (node->nlookup == 0) {
			node_clear(t, (uint32_t)ino);
			slot_free_locked(t, (uint32_t)ino);
			t->n_used--;
			freed = true;
		}
	} else if (ino >= 2 && ino < t->n_slots && is_pending(slot_at(t, ino))) {
		/* not made yet: the mirror has its count */
		_Atomic uint32_t *c = &t->mirror.slots[ino].nlookup;
		uint32_t count = atomic_load_explicit(c, memory_order_relaxed);
		if (count < UINT32_MAX) {
			count = count > n ? (uint32_t)(count - n) : 0;
			atomic_store_explicit(c, count, memory_order_relaxed);
		}
		if (count == 0) {
			pending_free_locked(t, (uint32_t)ino);
			freed = true;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return freed;
}

/* Copies the made node @ino, taking references. */
static void get_locked(struct fs_table *t, uint64_t ino, struct fs_ref *ret)
{
	const struct slot *n = slot_at(t, ino);
	*ret = (struct fs_ref){ .t = slot_target(n), .ino = ino, .gen = n->gen,
				.parent = n->parent, .depth = n->depth };
	snprintf(ret->name, sizeof(ret->name), "%s", n->name ? n->name : "");
	if (has_group(n->kind) && n->group) {
		snprintf(ret->group, sizeof(ret->group), "%s", n->group);
		ret->t.group = ret->group;
	}
	fs_target_ref(&ret->t);
}

int fs_table_get(struct fs_table *t, uint64_t ino, struct fs_ref *ret)
{
	for (int tries = 0;; tries++) {
		pthread_mutex_lock(&t->lock);
		bool made = ino && ino < t->n_slots && slot_at(t, ino)->kind;
		bool pending = !made && ino && ino < t->n_slots && is_pending(slot_at(t, ino));
		if (made)
			get_locked(t, ino, ret);
		pthread_mutex_unlock(&t->lock);
		if (made)
			return 0;
		if (!pending || tries)
			return -ESTALE;
		/* taken over from the last daemon: made now */
		int r = pending_resolve(t, (uint32_t)ino);
		if (r < 0)
			return r;
	}
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

/* ---- handover ---- */

void fs_table_set_mirror(struct fs_table *t, const struct fs_mirror *m)
{
	pthread_mutex_lock(&t->lock);
	t->mirrored = m != NULL;
	if (!m) {
		/* the nodes not made stay in the mirror, for a successor; the
		 * table no longer knows them (their names are the mirror's) */
		for (uint64_t i = 2; t->n_pending && i < t->n_slots; i++) {
			struct slot *s = slot_at(t, i);
			if (is_pending(s)) {
				key_unlink_locked(t, (uint32_t)i);
				*s = (struct slot){ .gen = s->gen };
				t->n_pending--;
			}
		}
		pthread_mutex_unlock(&t->lock);
		return;
	}
	t->mirror = *m;
	/* the nodes already there (the mount root has none) */
	for (uint64_t i = 2; i < t->n_slots; i++)
		if (slot_at(t, i)->kind)
			mirror_put_locked(t, (uint32_t)i, slot_at(t, i)->keyed);
	pthread_mutex_unlock(&t->lock);
}

int fs_mirror_each(const struct fs_mirror *m,
		   int (*fn)(const struct fs_saved_node *n, const char *name, void *data),
		   void *data)
{
	uint32_t high = atomic_load_explicit(m->high, memory_order_acquire);
	uint32_t used = atomic_load_explicit(m->names_used, memory_order_acquire);
	if (high > m->slots_cap || used > m->names_cap)
		return -EINVAL;
	for (uint32_t i = 2; i < high; i++) {
		const struct fs_mirror_slot *ms = &m->slots[i];
		uint8_t kind = atomic_load_explicit(&ms->kind, memory_order_acquire);
		if (!kind)
			continue;
		/* whatever the memfd holds: a name inside what was written,
		 * ending there, no longer than a name */
		if (ms->name_off == 0 || ms->name_off >= used)
			return -EINVAL;
		const char *name = m->names + ms->name_off;
		size_t len = strnlen(name, used - ms->name_off);
		if (len == 0 || len > DM_NAME_MAX || ms->name_off + len >= used)
			return -EINVAL;
		struct fs_saved_node n = { .ident = ms->ident, .ino = i, .gen = ms->gen,
					   .parent = ms->parent, .depth = ms->depth, .kind = kind, .keyed = ms->keyed,
					   .name_len = (uint16_t)len,
					   .nlookup = atomic_load_explicit(&ms->nlookup,
									   memory_order_relaxed) };
		int r = fn(&n, name, data);
		if (r)
			return r;
	}
	return 0;
}

/* Room for slot @ino (the slots before it zeroed: free, unused). */
static int slots_reach_locked(struct fs_table *t, uint64_t ino)
{
	while (t->n_slots <= ino) {
		if (t->n_slots == t->n_pages * SLOTS_PER_PAGE && page_add_locked(t) < 0)
			return -ENOMEM;
		uint64_t room = t->n_pages * SLOTS_PER_PAGE;
		t->n_slots = ino + 1 < room ? ino + 1 : room;
	}
	return 0;
}

int fs_table_adopt(struct fs_table *t, struct dm_model *model, fs_find_fn find,
		   int (*each)(uint64_t ino, uint64_t parent, enum fs_kind kind, void *data),
		   void *data)
{
	pthread_mutex_lock(&t->lock);
	const struct fs_mirror *m = &t->mirror;
	if (!t->mirrored || t->n_slots != 2) {
		pthread_mutex_unlock(&t->lock);
		return -EINVAL;
	}
	uint32_t high = atomic_load_explicit(m->high, memory_order_acquire);
	uint32_t used = atomic_load_explicit(m->names_used, memory_order_acquire);
	int r = 0;
	if (high > m->slots_cap || used > m->names_cap || high == UINT32_MAX)
		r = -EINVAL;
	else if (high > 2)
		r = slots_reach_locked(t, high - 1);
	size_t n = 0;
	for (uint32_t i = 2; r == 0 && i < high; i++) {
		const struct fs_mirror_slot *ms = &m->slots[i];
		struct slot *s = slot_at(t, i);
		/* a number used again comes with another generation */
		s->gen = ms->gen;
		uint8_t kind = atomic_load_explicit(&ms->kind, memory_order_acquire);
		if (!kind)
			continue;
		/* whatever the memfd holds: a name inside what was written,
		 * ending there, no longer than a name; a parent in the mirror */
		if (ms->name_off == 0 || ms->name_off >= used || ms->parent == 0 ||
		    ms->parent >= high || ms->parent == i || ms->depth == 0) {
			r = -EINVAL;
			break;
		}
		const char *name = m->names + ms->name_off;
		size_t len = strnlen(name, used - ms->name_off);
		if (len == 0 || len > DM_NAME_MAX || ms->name_off + len >= used) {
			r = -EINVAL;
			break;
		}
		s->name = name;
		s->parent = ms->parent;
		s->depth = ms->depth;
		t->n_pending++;
		n++;
		if (ms->keyed && key_add_locked(t, i) < 0)
			r = -ENOMEM;
		else
			r = each(i, ms->parent, (enum fs_kind)kind, data);
	}
	if (r < 0) {
		/* nothing taken over: the caller does not serve */
		for (uint64_t i = 2; i < t->n_slots; i++) {
			struct slot *s = slot_at(t, i);
			if (is_pending(s))
				key_unlink_locked(t, (uint32_t)i);
			*s = (struct slot){ 0 };
		}
		t->n_pending = 0;
		pthread_mutex_unlock(&t->lock);
		return r;
	}
	/* the numbers of no node are free, the lowest first */
	for (uint64_t i = t->n_slots; i-- > 2;)
		if (!slot_at(t, i)->kind && !slot_at(t, i)->name)
			slot_free_locked(t, (uint32_t)i);
	t->model = model;
	t->find = find;
	pthread_mutex_unlock(&t->lock);
	return (int)(n > INT32_MAX ? INT32_MAX : n);
}

size_t fs_table_pending(struct fs_table *t)
{
	pthread_mutex_lock(&t->lock);
	size_t n = t->n_pending;
	pthread_mutex_unlock(&t->lock);
	return n;
}

/* ---- where a file's value comes from, for a next daemon (early.h) ---- */

/* The deepest a mirrored file is below its device's node. */
#define SOURCE_DEPTH_MAX 8

/* Whether @rel ends with @name, as its last component or all of it: the
 * length before it (and its '/'), or -1. */
static ssize_t rel_ends_with(const char *rel, size_t end, const char *name)
{
	size_t len = strlen(name);
	if (len > end || memcmp(rel + end - len, name, len) != 0)
		return -1;
	if (len == end)
		return 0;
	return rel[end - len - 1] == '/' ? (ssize_t)(end - len - 1) : -1;
}

static void mirror_source_locked(struct fs_table *t, uint64_t ino, const char *devpath,
				 const char *rel, unsigned mode)
{
	struct fs_mirror *m = &t->mirror;
	if (ino < 2 || ino >= t->n_slots || !atomic_load_explicit(m->ok, memory_order_relaxed) ||
	    atomic_load_explicit(&m->slots[ino].source, memory_order_relaxed))
		return;
	const struct slot *n = slot_at(t, ino);
	if (n->kind != FS_ATTR || !n->dev)
		return;
	/* the file's device's node, through attribute directories; @rel,
	 * read from its end, is the names on the way */
	uint32_t at = (uint32_t)ino;
	ssize_t end = rel ? (ssize_t)strlen(rel) : 0;
	for (int depth = 0; slot_at(t, at)->kind != FS_DEV; depth++) {
		const struct slot *s = slot_at(t, at);
		if (depth == SOURCE_DEPTH_MAX || !s->name || s->dev != n->dev ||
		    (depth > 0 && s->kind != FS_GROUP) || (rel && end <= 0))
			return;
		if (rel)
			end = rel_ends_with(rel, (size_t)end, s->name);
		if (end < 0 || s->parent < 2 || s->parent >= t->n_slots)
			return;
		at = s->parent;
	}
	const struct slot *d = slot_at(t, at);
	if (end != 0 || d->kind != FS_DEV || d->dev != n->dev || at >= m->slots_cap)
		return;
	struct fs_mirror_slot *dm = &m->slots[at];
	if (atomic_load_explicit(&dm->kind, memory_order_relaxed) != FS_DEV || dm->gen != d->gen)
		return;
	if (!atomic_load_explicit(&dm->source, memory_order_relaxed)) {
		/* the devpath, once per device's node: the names are append-only,
		 * one that does not fit is only not mirrored */
		size_t len = strlen(devpath) + 1;
		uint32_t used = atomic_load_explicit(m->names_used, memory_order_relaxed);
		if (devpath[0] != '/' || len > PATH_MAX || used + len > m->names_cap)
			return;
		memcpy(m->names + used, devpath, len);
		atomic_store_explicit(m->names_used, used + (uint32_t)len, memory_order_release);
		atomic_store_explicit(&dm->source, used, memory_order_release);
	}
	atomic_store_explicit(&m->slots[ino].source,
			      (rel ? FS_SOURCE_SYSFS : FS_SOURCE_KEPT) |
				      (mode & 0777) << FS_SOURCE_MODE_SHIFT,
			      memory_order_release);
}

void fs_table_mirror_source(struct fs_table *t, uint64_t ino, const char *devpath,
			    const char *rel, unsigned mode)
{
	/* once per node: the mirror is set before serving and dropped after */
	if (!t->mirrored || ino >= t->mirror.slots_cap || !devpath ||
	    atomic_load_explicit(&t->mirror.slots[ino].source, memory_order_relaxed))
		return;
	pthread_mutex_lock(&t->lock);
	if (t->mirrored)
		mirror_source_locked(t, ino, devpath, rel, mode);
	pthread_mutex_unlock(&t->lock);
}

void fs_table_mirror_told(struct fs_table *t, uint64_t ino, uint64_t size, uint64_t mtime_ns)
{
	if (!t->mirrored || ino < 2 || ino >= t->mirror.slots_cap)
		return;
	uint64_t told = size < UINT32_MAX && mtime_ns <= UINT32_MAX ? (size + 1) << 32 | mtime_ns : 0;
	struct fs_mirror_slot *ms = &t->mirror.slots[ino];
	if (atomic_load_explicit(&ms->told, memory_order_relaxed) != told)
		atomic_store_explicit(&ms->told, told, memory_order_relaxed);
}

int fs_mirror_told(const struct fs_mirror *m, uint64_t ino, uint64_t *ret_size,
		   uint32_t *ret_mtime_ns)
{
	uint32_t high = atomic_load_explicit(m->high, memory_order_acquire);
	if (high > m->slots_cap || ino < 2 || ino >= high)
		return -ENOENT;
	uint64_t told = atomic_load_explicit(&m->slots[ino].told, memory_order_relaxed);
	if (!told)
		return -ENOENT;
	*ret_size = (told >> 32) - 1;
	*ret_mtime_ns = (uint32_t)told;
	return 0;
}

/* The NUL-terminated string at @off of the names, of at most @max bytes,
 * or NULL when it is not inside what was written. */
static const char *mirror_string(const struct fs_mirror *m, uint32_t used, uint32_t off,
				 size_t max, size_t *ret_len)
{
	if (off == 0 || off >= used)
		return NULL;
	size_t len = strnlen(m->names + off, used - off);
	if (len == 0 || len > max || off + len >= used)
		return NULL;
	*ret_len = len;
	return m->names + off;
}

/* A devpath a file may be opened under: "/a/b", no empty, "." or ".."
 * component. */
static bool devpath_is_plain(const char *p, size_t len)
{
	if (p[0] != '/')
		return false;
	for (size_t i = 0; i < len;) {
		size_t j = i + 1;
		while (j < len && p[j] != '/')
			j++;
		size_t c = j - i - 1;
		if (c == 0 || (c == 1 && p[i + 1] == '.') ||
		    (c == 2 && p[i + 1] == '.' && p[i + 2] == '.'))
			return false;
		i = j;
	}
	return true;
}

/* "/sys<devpath>" of the mirrored device node @d into @buf, its length,
 * when it has a devpath mirrored and the identity @ident; -ENOENT,
 * -ENAMETOOLONG. */
static int mirror_sys_dir(const struct fs_mirror *m, uint32_t used,
			  const struct fs_mirror_slot *d, uint64_t ident, char *buf, size_t size)
{
	size_t dlen;
	const char *devpath = mirror_string(
		m, used, atomic_load_explicit(&d->source, memory_order_acquire), PATH_MAX, &dlen);
	if (!devpath || d->ident != ident || !devpath_is_plain(devpath, dlen))
		return -ENOENT;
	int n = snprintf(buf, size, "/sys%.*s", (int)dlen, devpath);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : n;
}

int fs_mirror_dir(const struct fs_mirror *m, uint64_t ino, char *buf, size_t size,
		  size_t *ret_len, uint64_t *ret_ident)
{
	*ret_len = 0;
	*ret_ident = 0;
	if (ino == 1)
		return 0; /* the mount root */
	uint32_t high = atomic_load_explicit(m->high, memory_order_acquire);
	uint32_t used = atomic_load_explicit(m->names_used, memory_order_acquire);
	if (high > m->slots_cap || used > m->names_cap || ino < 2 || ino >= high)
		return -ENOENT;
	const struct fs_mirror_slot *s = &m->slots[ino];
	uint8_t kind = atomic_load_explicit(&s->kind, memory_order_acquire);
	uint64_t ident = s->ident;
	if (!kind || !fs_kind_is_dir((enum fs_kind)kind))
		return -ENOENT;
	if (!ident)
		return 0; /* no device's: bus/, class/ ... and root/ */
	/* a device's: its device's node, through its directories */
	for (int depth = 0; kind != FS_DEV; depth++) {
		uint32_t up = s->parent;
		if (depth == SOURCE_DEPTH_MAX || up < 2 || up >= high)
			return -ENOENT;
		s = &m->slots[up];
		kind = atomic_load_explicit(&s->kind, memory_order_acquire);
		if (s->ident != ident)
			return -ENOENT;
	}
	int n = mirror_sys_dir(m, used, s, ident, buf, size);
	if (n < 0)
		return n;
	*ret_len = (size_t)n;
	*ret_ident = ident;
	return 0;
}

int fs_mirror_source(const struct fs_mirror *m, uint64_t ino, char *buf, size_t size,
		     size_t *ret_dir_len, uint64_t *ret_ident, unsigned *ret_mode)
{
	uint32_t high = atomic_load_explicit(m->high, memory_order_acquire);
	uint32_t used = atomic_load_explicit(m->names_used, memory_order_acquire);
	if (high > m->slots_cap || used > m->names_cap || ino < 2 || ino >= high)
		return -ENOENT;
	const struct fs_mirror_slot *f = &m->slots[ino];
	uint32_t source = atomic_load_explicit(&f->source, memory_order_acquire);
	uint32_t how = source & (FS_SOURCE_SYSFS | FS_SOURCE_KEPT);
	if (atomic_load_explicit(&f->kind, memory_order_acquire) != FS_ATTR ||
	    (how != FS_SOURCE_SYSFS && how != FS_SOURCE_KEPT) || source >> 11 || !f->ident)
		return -ENOENT;
	/* the names from the file up to its device's node */
	const char *names[SOURCE_DEPTH_MAX];
	size_t lens[SOURCE_DEPTH_MAX];
	int k = 0;
	uint32_t at = (uint32_t)ino;
	const struct fs_mirror_slot *s = f;
	uint8_t kind = FS_ATTR;
	while (kind != FS_DEV) {
		if (k == SOURCE_DEPTH_MAX || (k > 0 && kind != FS_GROUP) || s->ident != f->ident)
			return -ENOENT;
		names[k] = mirror_string(m, used, s->name_off, DM_NAME_MAX, &lens[k]);
		if (!names[k] || memchr(names[k], '/', lens[k]) || strcmp(names[k], ".") == 0 ||
		    strcmp(names[k], "..") == 0)
			return -ENOENT;
		k++;
		at = s->parent;
		if (at < 2 || at >= high)
			return -ENOENT;
		s = &m->slots[at];
		kind = atomic_load_explicit(&s->kind, memory_order_acquire);
	}
	int n = mirror_sys_dir(m, used, s, f->ident, buf, size);
	if (n < 0)
		return n;
	*ret_dir_len = (size_t)n;
	size_t len = (size_t)n;
	while (how == FS_SOURCE_SYSFS && k-- > 0) {
		if (len + 1 + lens[k] >= size)
			return -ENAMETOOLONG;
		buf[len++] = '/';
		memcpy(buf + len, names[k], lens[k]);
		len += lens[k];
	}
	buf[len] = '\0';
	*ret_ident = f->ident;
	*ret_mode = (source >> FS_SOURCE_MODE_SHIFT) & 0777;
	return (int)how;
}
