/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* link.c - device links: dependencies beyond the tree (see model.h). */
#include "array.h"
#include "model-private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Whether a link adds an edge the cycle check follows: all but
 * sync_state_only ones, as the kernel's device_is_dependent() */
static bool link_depends(const struct dm_link *l)
{
	return !(l->flags & DM_LINK_SYNC_STATE_ONLY);
}

/* The cycle search's stack. */
struct search {
	struct dm_device **v;
	size_t n, cap;
	uint32_t mark;
};

/* Pushes @dev unless the search saw it: 0 or -ENOMEM. */
static int push(struct search *s, struct dm_device *dev)
{
	if (dev->link_mark == s->mark)
		return 0;
	if (!dm_array_grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v), 64))
		return -ENOMEM;
	dev->link_mark = s->mark;
	s->v[s->n++] = dev;
	return 0;
}

/* Whether @target depends on @dev: it is @dev, below it, or a consumer of
 * @dev or of anything below it, transitively. An iterative search (trees
 * and chains of links may be deep), marking what it saw with a new
 * generation. Write lock held. -ENOMEM, 0 or 1. */
static int depends_locked(struct dm_model *m, struct dm_device *dev, struct dm_device *target)
{
	dm_model_assert_held(m);
	struct search s = { .mark = ++m->link_mark };
	if (s.mark == 0) {
		/* the generations wrapped: no device may keep an old one */
		struct dm_list *n;
		dm_list_for_each(n, &m->devices)
			dm_list_entry(n, struct dm_device, global)->link_mark = 0;
		s.mark = m->link_mark = 1;
	}
	int r = push(&s, dev);
	while (r == 0 && s.n > 0) {
		struct dm_device *x = s.v[--s.n];
		if (x == target) {
			r = 1;
			break;
		}
		struct dm_list *n;
		dm_list_for_each(n, &x->children) {
			if ((r = push(&s, dm_list_entry(n, struct dm_device, sibling))) < 0)
				break;
		}
		dm_list_for_each(n, &x->consumer_links) {
			struct dm_link *l = dm_list_entry(n, struct dm_link, s_node);
			if (r == 0 && link_depends(l))
				r = push(&s, l->consumer);
		}
	}
	free(s.v);
	return r;
}

struct dm_link *dm_link_find_locked(struct dm_device *supplier, struct dm_device *consumer)
{
	dm_model_assert_held(supplier->model);
	struct dm_list *n;
	dm_list_for_each(n, &supplier->consumer_links) {
		struct dm_link *l = dm_list_entry(n, struct dm_link, s_node);
		if (l->consumer == consumer)
			return l;
	}
	return NULL;
}

int dm_link_add(struct dm_device *supplier, struct dm_device *consumer, unsigned flags,
		struct dm_link **ret)
{
	if (!supplier || !consumer || supplier == consumer || supplier->model != consumer->model)
		return -EINVAL;
	struct dm_model *m = supplier->model;
	struct dm_link *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	dm_model_write_lock(m);
	int r = 0;
	if (dm_device_is_dead(supplier) || dm_device_is_dead(consumer) ||
	    atomic_load(&supplier->state) != DM_DEV_ADDED ||
	    atomic_load(&consumer->state) != DM_DEV_ADDED)
		r = -EINVAL;
	else if (dm_link_find_locked(supplier, consumer))
		r = -EEXIST;
	else if (!(flags & DM_LINK_SYNC_STATE_ONLY)) {
		/* the supplier must not depend on its consumer */
		int d = depends_locked(m, consumer, supplier);
		r = d > 0 ? -ELOOP : d;
	}
	if (r < 0) {
		dm_model_unlock(m);
		free(l);
		return r;
	}
	l->supplier = supplier;
	l->consumer = consumer;
	l->flags = flags;
	dm_list_append(&supplier->consumer_links, &l->s_node);
	dm_list_append(&consumer->supplier_links, &l->c_node);
	dm_list_append(&m->links, &l->m_node);
	m->n_links++;
	m->link_edges_valid = false;
	dm_model_notify_changed_locked(m, supplier);
	dm_model_notify_changed_locked(m, consumer);
	dm_model_unlock(m);
	if (ret)
		*ret = l;
	return 0;
}

/* Unlinks and frees @l; write lock held. */
static void link_free_locked(struct dm_model *m, struct dm_link *l)
{
	dm_model_assert_write_held(m);
	if (l->object) {
		l->object->object_of = NULL;
		atomic_fetch_and(&l->object->flags, (uint8_t)~DM_DEV_F_LINK_OBJECT);
		dm_model_notify_changed_locked(m, l->object);
	}
	dm_list_remove(&l->s_node);
	dm_list_remove(&l->c_node);
	dm_list_remove(&l->m_node);
	m->n_links--;
	m->link_edges_valid = false;
	if (!dm_device_is_dead(l->supplier))
		dm_model_notify_changed_locked(m, l->supplier);
	if (!dm_device_is_dead(l->consumer))
		dm_model_notify_changed_locked(m, l->consumer);
	free(l);
}

int dm_link_remove(struct dm_device *supplier, struct dm_device *consumer)
{
	struct dm_model *m = supplier->model;
	dm_model_write_lock(m);
	struct dm_link *l = dm_link_find_locked(supplier, consumer);
	if (l)
		link_free_locked(m, l);
	dm_model_unlock(m);
	return l ? 0 : -ENOENT;
}

void dm_device_drop_links_locked(struct dm_device *dev)
{
	dm_model_assert_write_held(dev->model);
	if (dev->object_of) {
		dev->object_of->object = NULL;
		dev->object_of = NULL;
		atomic_fetch_and(&dev->flags, (uint8_t)~DM_DEV_F_LINK_OBJECT);
	}
	while (!dm_list_empty(&dev->consumer_links))
		link_free_locked(dev->model,
				 dm_list_entry(dev->consumer_links.next, struct dm_link, s_node));
	while (!dm_list_empty(&dev->supplier_links))
		link_free_locked(dev->model,
				 dm_list_entry(dev->supplier_links.next, struct dm_link, c_node));
}

int dm_link_set_dormant(struct dm_device *supplier, struct dm_device *consumer, bool dormant)
{
	struct dm_model *m = supplier->model;
	dm_model_write_lock(m);
	struct dm_link *l = dm_link_find_locked(supplier, consumer);
	if (l && l->dormant != dormant) {
		l->dormant = dormant;
		m->link_edges_valid = false;
		dm_model_notify_changed_locked(m, supplier);
		dm_model_notify_changed_locked(m, consumer);
	}
	dm_model_unlock(m);
	return l ? 0 : -ENOENT;
}

int dm_link_set_object(struct dm_device *supplier, struct dm_device *consumer,
		       struct dm_device *object)
{
	struct dm_model *m = supplier->model;
	dm_model_write_lock(m);
	struct dm_link *l = dm_link_find_locked(supplier, consumer);
	int r = l && object->model == m && !dm_device_is_dead(object) ? 0 : -ENOENT;
	if (r == 0 && l->object != object) {
		if (l->object) {
			l->object->object_of = NULL;
			atomic_fetch_and(&l->object->flags, (uint8_t)~DM_DEV_F_LINK_OBJECT);
		}
		if (object->object_of)
			object->object_of->object = NULL;
		l->object = object;
		object->object_of = l;
		atomic_fetch_or(&object->flags, (uint8_t)DM_DEV_F_LINK_OBJECT);
		dm_model_notify_changed_locked(m, object);
	}
	dm_model_unlock(m);
	return r;
}

struct dm_link *dm_device_get_link_locked(const struct dm_device *dev)
{
	dm_model_assert_held(dev->model);
	return dev->object_of;
}

bool dm_device_pm_skips(const struct dm_device *dev, enum dm_power_state target)
{
	return atomic_load(&dev->state) == DM_DEV_DEAD || atomic_load(&dev->power) == target ||
	       (atomic_load_explicit(&dev->flags, memory_order_relaxed) & DM_DEV_F_LINK_OBJECT);
}

struct dm_device *dm_link_get_supplier(const struct dm_link *l)
{
	return l->supplier;
}

struct dm_device *dm_link_get_consumer(const struct dm_link *l)
{
	return l->consumer;
}

unsigned dm_link_get_flags(const struct dm_link *l)
{
	return l->flags;
}

bool dm_link_is_dormant(const struct dm_link *l)
{
	return l->dormant;
}

bool dm_link_orders(const struct dm_link *l)
{
	return !l->dormant && !(l->flags & DM_LINK_SYNC_STATE_ONLY);
}

int dm_device_for_each_link_locked(struct dm_device *dev, bool consumers,
				   int (*fn)(struct dm_link *l, void *data), void *data)
{
	dm_model_assert_held(dev->model);
	struct dm_list *n, *tmp;
	if (consumers) {
		dm_list_for_each_safe(n, tmp, &dev->consumer_links) {
			int r = fn(dm_list_entry(n, struct dm_link, s_node), data);
			if (r)
				return r;
		}
	} else {
		dm_list_for_each_safe(n, tmp, &dev->supplier_links) {
			int r = fn(dm_list_entry(n, struct dm_link, c_node), data);
			if (r)
				return r;
		}
	}
	return 0;
}

int dm_model_for_each_link_locked(struct dm_model *m, int (*fn)(struct dm_link *l, void *data),
				  void *data)
{
	dm_model_assert_held(m);
	struct dm_list *n, *tmp;
	dm_list_for_each_safe(n, tmp, &m->links) {
		int r = fn(dm_list_entry(n, struct dm_link, m_node), data);
		if (r)
			return r;
	}
	return 0;
}

size_t dm_model_count_links_locked(struct dm_model *m)
{
	dm_model_assert_held(m);
	return m->n_links;
}

size_t dm_model_count_links(struct dm_model *m)
{
	dm_model_read_lock(m);
	size_t n = m->n_links;
	dm_model_unlock(m);
	return n;
}

int dm_device_link_name_locked(const struct dm_device *dev, char *buf, size_t size)
{
	dm_model_assert_held(dev->model);
	const char *sub = dev->bus ? dm_bus_get_name(dev->bus)
			  : dev->class ? dm_class_get_name(dev->class) : "none";
	int n = snprintf(buf, size, "%s:%s", sub, dm_device_get_sysname(dev));
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}
