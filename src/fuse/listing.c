/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* listing.c - the directory listings kept while a directory is read. */
#include "core/array.h"
#include "listing.h"

#include "view.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int listing_emit(void *ctx, const char *name, const struct fs_target *t, mode_t type)
{
	struct fs_listing *s = ctx;
	if (!dm_array_grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v), 32)) {
		s->err = -ENOMEM;
		return 1;
	}
	struct fs_listing_entry *e = &s->v[s->n];
	*e = (struct fs_listing_entry){ .name = strdup(name), .type = type, .t = *t };
	e->group = t->group ? strdup(t->group) : NULL;
	if (!e->name || (t->group && !e->group)) {
		free(e->name);
		free(e->group);
		s->err = -ENOMEM;
		return 1;
	}
	/* the walk runs under the model lock: references are safe to take */
	e->t.group = e->group;
	fs_target_ref(&e->t);
	s->n++;
	return 0;
}

static void listing_free(struct fs_listing *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].name);
		free(s->v[i].group);
		fs_target_unref(&s->v[i].t);
	}
	free(s->v);
	free(s);
}

static void listing_unlink_locked(struct fs_listings *ls, struct fs_listing *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		ls->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
}

void fs_listing_put(struct fs_listings *ls, struct fs_listing *s)
{
	pthread_mutex_lock(&ls->lock);
	bool last = --s->refs == 0;
	pthread_mutex_unlock(&ls->lock);
	if (last)
		listing_free(s);
}

/* The kept listing of (@ino, @gen), unlinked; any generation of @ino
 * when @any_gen. The caller drops the list's count. */
static struct fs_listing *listing_take_locked(struct fs_listings *ls, uint64_t ino, uint64_t gen,
					       bool any_gen)
{
	struct fs_listing *s = ls->head;
	while (s && !(s->ino == ino && (any_gen || s->gen == gen)))
		s = s->next;
	if (s)
		listing_unlink_locked(ls, s);
	return s;
}

void fs_listings_drop(struct fs_listings *ls, uint64_t ino, uint64_t gen, bool any_gen)
{
	for (;;) {
		pthread_mutex_lock(&ls->lock);
		struct fs_listing *s = listing_take_locked(ls, ino, gen, any_gen);
		bool last = s && --s->refs == 0;
		pthread_mutex_unlock(&ls->lock);
		if (!s)
			return;
		if (last)
			listing_free(s);
	}
}

int fs_listing_get(struct fs_listings *ls, struct dm_model *m, const struct fs_ref *dir, off_t off,
		   struct fs_listing **ret)
{
	struct fs_listing *s = NULL;
	pthread_mutex_lock(&ls->lock);
	if (off > 0)
		for (s = ls->head; s && !(s->ino == dir->ino && s->gen == dir->gen); s = s->next)
			;
	if (s) {
		s->refs++;
		pthread_mutex_unlock(&ls->lock);
		*ret = s;
		return 0;
	}
	pthread_mutex_unlock(&ls->lock);

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ino = dir->ino;
	s->gen = dir->gen;
	s->refs = 2;
	dm_model_read_lock(m);
	int r = fs_view_walk_locked(m, dir, listing_emit, s);
	dm_model_unlock(m);
	if (r == 0)
		r = s->err;
	if (r < 0) {
		listing_free(s);
		return r;
	}
	pthread_mutex_lock(&ls->lock);
	/* one listing kept per directory: the newest */
	struct fs_listing *old = listing_take_locked(ls, dir->ino, dir->gen, false);
	bool free_old = old && --old->refs == 0;
	s->next = ls->head;
	if (ls->head)
		ls->head->prev = s;
	ls->head = s;
	pthread_mutex_unlock(&ls->lock);
	if (free_old)
		listing_free(old);
	*ret = s;
	return 0;
}

void fs_listing_finished(struct fs_listings *ls, struct fs_listing *s, off_t off)
{
	bool drop = false;
	pthread_mutex_lock(&ls->lock);
	if (off >= (off_t)s->n + 2 && (s->prev || s->next || ls->head == s)) {
		listing_unlink_locked(ls, s);
		drop = --s->refs == 0;
	}
	pthread_mutex_unlock(&ls->lock);
	if (drop)
		listing_free(s);
}

void fs_listings_init(struct fs_listings *ls)
{
	pthread_mutex_init(&ls->lock, NULL);
	ls->head = NULL;
}

void fs_listings_done(struct fs_listings *ls)
{
	while (ls->head) {
		struct fs_listing *s = ls->head;
		ls->head = s->next;
		listing_free(s);
	}
	pthread_mutex_destroy(&ls->lock);
}
