/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* order.c - the global list and the orders made of it: the devices in
 * depth-first order (the 2002 model's devices_subsys list, which the
 * kernel's drivers/base/core.c keeps as devices_kset), the array a PM walk
 * takes with the device links' edges (docs/design.md §3.2, §3.5, §8.2). */
#include "array.h"
#include "model-private.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

int dm_model_for_each_device_locked(struct dm_model *m, int (*fn)(struct dm_device *, void *),
				    void *data)
{
	dm_model_assert_held(m);
	return dm_walk_devices(&m->devices, offsetof(struct dm_device, global), fn, data);
}

int dm_model_ref_devices(struct dm_model *m, struct dm_device *top, struct dm_device ***ret,
		      size_t *ret_n)
{
	dm_model_read_lock(m);
	if (top && dm_device_is_dead(top)) {
		dm_model_unlock(m);
		return -ENODEV;
	}
	size_t cap = 64, n = 0;
	struct dm_device **v = malloc(cap * sizeof(*v));
	if (!v) {
		dm_model_unlock(m);
		return -ENOMEM;
	}
	/* A subtree is contiguous in the global list: it ends after the last
	 * device of its last child's subtree. */
	struct dm_list *start = top ? &top->global : m->devices.next;
	struct dm_list *end = top ? dm_device_subtree_last_locked(top)->global.next : &m->devices;
	for (struct dm_list *p = start; p != end; p = p->next) {
		struct dm_device *dev = dm_list_entry(p, struct dm_device, global);
		if (dm_device_is_dead(dev))
			continue;
		if (n == cap) {
			struct dm_device **nv = realloc(v, cap * 2 * sizeof(*v));
			if (!nv) {
				dm_model_unlock(m);
				dm_device_array_free(v, n);
				return -ENOMEM;
			}
			v = nv;
			cap *= 2;
		}
		v[n++] = dm_device_ref(dev);
	}
	dm_model_unlock(m);
	*ret = v;
	*ret_n = n;
	return 0;
}

static int order_rebuild(struct dm_model *m)
{
	if (m->cap_order < m->n_devices) {
		size_t cap = m->n_devices;
		struct dm_device **o = realloc(m->order, cap * sizeof(*o));
		if (o)
			m->order = o;
		int *op = o ? realloc(m->order_parent, cap * sizeof(*op)) : NULL;
		if (op)
			m->order_parent = op;
		struct dm_driver **od = op ? realloc(m->order_driver, cap * sizeof(*od)) : NULL;
		if (!od)
			return -ENOMEM;
		m->order_driver = od;
		m->cap_order = cap;
	}
	size_t n = 0;
	struct dm_list *p;
	dm_list_for_each(p, &m->devices) {
		if (n == m->cap_order)
			return -EIO; /* n_devices disagrees with the list */
		struct dm_device *dev = dm_list_entry(p, struct dm_device, global);
		dev->order_index = n;
		/* pre-order: the parent has its index already */
		m->order_parent[n] = dev->parent ? (int)dev->parent->order_index : -1;
		m->order_driver[n] = dev->driver;
		m->order[n++] = dev;
	}
	m->n_order = n;
	m->order_valid = true;
	return 0;
}

void dm_model_order_bound_locked(struct dm_device *dev)
{
	dm_model_assert_write_held(dev->model);
	struct dm_model *m = dev->model;
	if (m->order_valid)
		m->order_driver[dev->order_index] = dev->driver;
}

/* The ordering links as index pairs into the order (model->link_edges);
 * order_lock held, the order valid. */
static int link_edges_rebuild(struct dm_model *m)
{
	m->n_link_edges = 0;
	if (m->n_links > m->cap_link_edges) {
		struct dm_pm_edge *v = realloc(m->link_edges, m->n_links * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->link_edges = v;
		m->cap_link_edges = m->n_links;
	}
	struct dm_list *p;
	dm_list_for_each(p, &m->links) {
		struct dm_link *l = dm_list_entry(p, struct dm_link, m_node);
		/* a device being removed is not in the order */
		if (dm_link_orders(l) && !dm_device_is_dead(l->supplier) &&
		    !dm_device_is_dead(l->consumer))
			m->link_edges[m->n_link_edges++] = (struct dm_pm_edge){
				(int)l->supplier->order_index, (int)l->consumer->order_index
			};
	}
	m->link_edges_valid = true;
	m->link_edges_gen++;
	return 0;
}

int dm_model_order_locked(struct dm_model *m)
{
	dm_model_assert_held(m);
	pthread_mutex_lock(&m->order_lock);
	bool rebuilt = !m->order_valid;
	int r = rebuilt ? order_rebuild(m) : 0;
	if (r == 0 && (rebuilt || !m->link_edges_valid))
		r = link_edges_rebuild(m);
	pthread_mutex_unlock(&m->order_lock);
	return r;
}

/* The order's link edges: both ends in [start, start + n) of the global
 * array, or one outside; read lock held, the array and its edges valid. */
static int order_links_locked(struct dm_model *m, size_t start, size_t n, struct dm_pm_order *s)
{
	dm_model_assert_held(m);
	s->n_edges = s->n_outside = 0;
	s->edges_gen = 0;
	const struct dm_pm_edge *e = m->link_edges;
	size_t count = m->n_link_edges;
	if (start == 0 && n == m->n_order) {
		/* the whole tree: every edge, as is */
		if (count > s->cap_edges) {
			struct dm_pm_edge *v = realloc(s->edges, count * sizeof(*v));
			if (!v)
				return -ENOMEM;
			s->edges = v;
			s->cap_edges = count;
		}
		if (count)
			memcpy(s->edges, e, count * sizeof(*e));
		s->n_edges = count;
		s->edges_gen = m->link_edges_gen;
		return 0;
	}
	for (size_t k = 0; k < count; k++) {
		size_t si = (size_t)e[k].supplier, ci = (size_t)e[k].consumer;
		bool s_in = si >= start && si - start < n, c_in = ci >= start && ci - start < n;
		if (s_in && c_in) {
			if (!dm_array_grow((void **)&s->edges, &s->cap_edges, s->n_edges,
					   sizeof(*s->edges), 64))
				return -ENOMEM;
			s->edges[s->n_edges++] = (struct dm_pm_edge){ (int)(si - start), (int)(ci - start) };
		} else if (s_in || c_in) {
			if (!dm_array_grow((void **)&s->outside, &s->cap_outside, s->n_outside,
					   sizeof(*s->outside), 16))
				return -ENOMEM;
			s->outside[s->n_outside++] = (struct dm_pm_outside){
				.dev = m->order[s_in ? ci : si],
				.inside = (int)((s_in ? si : ci) - start),
				.is_consumer = s_in,
			};
		}
	}
	return 0;
}

int dm_model_take_pm_order(struct dm_model *m, struct dm_device *top, struct dm_pm_order *s)
{
	dm_pm_order_release(s);
	dm_model_read_lock(m);
	if (top && dm_device_is_dead(top)) {
		dm_model_unlock(m);
		return -ENODEV;
	}
	int r = dm_model_order_locked(m);
	if (r < 0) {
		dm_model_unlock(m);
		return r;
	}
	/* the subtree is contiguous in the global list (see dm_model_ref_devices);
	 * devices being removed are kept, the walk skips them */
	size_t start = top ? top->order_index : 0;
	size_t n = (top ? dm_device_subtree_last_locked(top)->order_index + 1 : m->n_order) - start;
	if (n > s->cap) {
		struct dm_pm_order_node *v = realloc(s->nodes, n * sizeof(*v));
		if (!v) {
			dm_model_unlock(m);
			return -ENOMEM;
		}
		s->nodes = v;
		s->cap = n;
	}
	/* from the arrays only: no device is touched; a run of nodes with
	 * the same driver holds one reference to it (see release) */
	for (size_t k = 0; k < n; k++) {
		int p = m->order_parent[start + k];
		struct dm_driver *drv = m->order_driver[start + k];
		if (k == 0 || drv != s->nodes[k - 1].driver)
			dm_driver_ref(drv);
		s->nodes[k] = (struct dm_pm_order_node){ m->order[start + k], drv,
							 k == 0 ? -1 : p - (int)start };
	}
	s->n = n;
	r = order_links_locked(m, start, n, s);
	if (r < 0) {
		for (size_t k = 0; k < n; k++)
			if (k == 0 || s->nodes[k].driver != s->nodes[k - 1].driver)
				dm_driver_unref(s->nodes[k].driver);
		s->n = 0;
		dm_model_unlock(m);
		return r;
	}
	s->pinned = m;
	atomic_fetch_add(&m->pins, 1);
	atomic_store(&m->pin_seq, m->add_seq);
	dm_model_unlock(m);
	return 0;
}

void dm_pm_order_release(struct dm_pm_order *s)
{
	struct dm_model *m = s->pinned;
	if (!m)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (i == 0 || s->nodes[i].driver != s->nodes[i - 1].driver)
			dm_driver_unref(s->nodes[i].driver);
	s->n = 0;
	s->pinned = NULL;
	/* the last order out releases what was removed meanwhile; under
	 * the write lock, so that no new order's device is among them */
	struct dm_list gone;
	dm_list_init(&gone);
	dm_model_write_lock(m);
	if (atomic_fetch_sub(&m->pins, 1) == 1 && !dm_list_empty(&m->deferred)) {
		gone = m->deferred;
		gone.next->prev = &gone;
		gone.prev->next = &gone;
		dm_list_init(&m->deferred);
	}
	dm_model_unlock(m);
	while (!dm_list_empty(&gone)) {
		struct dm_device *dev = dm_list_entry(gone.next, struct dm_device, global);
		dm_list_remove(&dev->global);
		dm_device_unref(dev);
	}
}

void dm_pm_order_done(struct dm_pm_order *s)
{
	dm_pm_order_release(s);
	free(s->nodes);
	free(s->edges);
	free(s->outside);
	*s = (struct dm_pm_order){ 0 };
}

void dm_device_array_free(struct dm_device **devs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dm_device_unref(devs[i]);
	free(devs);
}
