/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Intrusive circular doubly linked lists, as in the kernel's list.h. */
#ifndef DM_LIST_H
#define DM_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct dm_list {
	struct dm_list *prev, *next;
};

#define dm_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

static inline void dm_list_init(struct dm_list *l)
{
	l->prev = l->next = l;
}

static inline bool dm_list_empty(const struct dm_list *l)
{
	return l->next == l;
}

static inline void dm_list_insert_after(struct dm_list *pos, struct dm_list *n)
{
	n->prev = pos;
	n->next = pos->next;
	pos->next->prev = n;
	pos->next = n;
}

static inline void dm_list_insert_before(struct dm_list *pos, struct dm_list *n)
{
	dm_list_insert_after(pos->prev, n);
}

static inline void dm_list_append(struct dm_list *head, struct dm_list *n)
{
	dm_list_insert_before(head, n);
}

static inline void dm_list_remove(struct dm_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	dm_list_init(n);
}

#define dm_list_entry(ptr, type, member) dm_container_of(ptr, type, member)

#define dm_list_for_each(pos, head) \
	for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

#define dm_list_for_each_safe(pos, tmp, head) \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

#endif
