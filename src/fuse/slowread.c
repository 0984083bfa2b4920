/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* slowread.c - sysfs reads kept to a share of the workers per user, and
 * requests in flight watched (see slowread.h). */
#include "slowread.h"

#include "core/thread.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t fs_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* @uid's entry, made when @make (NULL: none, or no memory). Lock held. */
static struct fs_slow_user *user_of(struct fs_slow *s, uid_t uid, bool make)
{
	for (size_t i = 0; i < s->n_users; i++)
		if (s->users[i].uid == uid)
			return &s->users[i];
	if (!make)
		return NULL;
	struct fs_slow_user *u = realloc(s->users, (s->n_users + 1) * sizeof(*u));
	if (!u)
		return NULL;
	s->users = u;
	s->users[s->n_users] = (struct fs_slow_user){ .uid = uid };
	return &s->users[s->n_users++];
}

/* A user with nothing running or waiting holds no entry. Lock held. */
static void user_drop_if_idle(struct fs_slow *s, struct fs_slow_user *u)
{
	if (u->running || u->queued)
		return;
	*u = s->users[--s->n_users];
}

/* The first waiting item whose user is under its share, taken out of the
 * queue; NULL when none may run now. Lock held. */
static struct fs_slow_item *take_next(struct fs_slow *s)
{
	for (struct fs_slow_item **p = &s->head; *p; p = &(*p)->next) {
		struct fs_slow_user *u = user_of(s, (*p)->uid, false);
		if (!u || u->running >= FS_SLOW_PER_UID)
			continue;
		struct fs_slow_item *it = *p;
		*p = it->next;
		if (!*p)
			s->tail = p;
		it->next = NULL;
		u->queued--;
		u->running++;
		return it;
	}
	return NULL;
}

static void *pool_main(void *data)
{
	struct fs_slow *s = data;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct fs_slow_item *it = NULL;
		while (!s->stop && !(it = take_next(s)))
			pthread_cond_wait(&s->cond, &s->lock);
		if (!it)
			break;
		uid_t uid = it->uid;
		pthread_mutex_unlock(&s->lock);
		/* a reader that gave up while its read waited is not read for */
		s->serve(s->data, it, fuse_req_interrupted(it->req) ? EINTR : 0);
		pthread_mutex_lock(&s->lock);
		struct fs_slow_user *u = user_of(s, uid, false);
		if (u) {
			u->running--;
			user_drop_if_idle(s, u);
		}
		/* another user's item may run now */
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

void fs_slow_init(struct fs_slow *s, void (*serve)(void *, struct fs_slow_item *, int),
		  void *data)
{
	*s = (struct fs_slow){ .serve = serve, .data = data };
	s->tail = &s->head;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
}

int fs_slow_set_rings(struct fs_slow *s, unsigned n_queues, unsigned per_cpu)
{
	if (n_queues == 0 || per_cpu < 2)
		return 0; /* no share to keep: one entry is all a queue has */
	struct fs_slow_ring *r = calloc(n_queues, sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_lock(&s->lock);
	free(s->rings);
	s->rings = r;
	s->n_rings = n_queues;
	s->ring_share = per_cpu - 1;
	if (s->ring_share > sizeof(r->uid) / sizeof(r->uid[0]))
		s->ring_share = sizeof(r->uid) / sizeof(r->uid[0]);
	s->ring_share_uid = per_cpu / 2;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int fs_slow_submit(struct fs_slow *s, struct fs_slow_item *it)
{
	it->next = NULL;
	pthread_mutex_lock(&s->lock);
	int r = 0;
	struct fs_slow_user *u = s->stop ? NULL : user_of(s, it->uid, true);
	if (!u) {
		r = s->stop ? -EINTR : -ENOMEM;
		goto out;
	}
	if (u->queued >= FS_SLOW_QUEUED_PER_UID) {
		user_drop_if_idle(s, u);
		r = -EAGAIN;
		goto out;
	}
	/* the pool grows to its size as reads come, a thread per read that
	 * finds every thread busy */
	if (s->n_threads < FS_SLOW_THREADS && s->n_threads < s->n_users * FS_SLOW_PER_UID) {
		if (dm_thread_start(&s->threads[s->n_threads], 0, pool_main, s) == 0)
			s->n_threads++;
	}
	if (s->n_threads == 0) {
		user_drop_if_idle(s, u);
		r = -ENOMEM;
		goto out;
	}
	u->queued++;
	*s->tail = it;
	s->tail = &it->next;
	atomic_fetch_add_explicit(&s->queued_total, 1, memory_order_relaxed);
	pthread_cond_broadcast(&s->cond);
out:
	pthread_mutex_unlock(&s->lock);
	return r;
}

int fs_slow_ring_enter(struct fs_slow *s, unsigned qid, uid_t uid)
{
	int r = 0;
	pthread_mutex_lock(&s->lock);
	if (qid < s->n_rings) {
		struct fs_slow_ring *q = &s->rings[qid];
		unsigned mine = 0;
		for (unsigned i = 0; i < q->n; i++)
			mine += q->uid[i] == uid;
		if (q->n >= s->ring_share || mine >= s->ring_share_uid)
			r = -EAGAIN;
		else
			q->uid[q->n++] = uid;
	}
	pthread_mutex_unlock(&s->lock);
	if (r < 0)
		atomic_fetch_add_explicit(&s->refused_total, 1, memory_order_relaxed);
	return r;
}

void fs_slow_ring_leave(struct fs_slow *s, unsigned qid, uid_t uid)
{
	pthread_mutex_lock(&s->lock);
	if (qid < s->n_rings) {
		struct fs_slow_ring *q = &s->rings[qid];
		for (unsigned i = 0; i < q->n; i++) {
			if (q->uid[i] == uid) {
				q->uid[i] = q->uid[--q->n];
				break;
			}
		}
	}
	pthread_mutex_unlock(&s->lock);
}

void fs_slow_stop(struct fs_slow *s)
{
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->cond);
	struct fs_slow_item *left = s->head;
	s->head = NULL;
	s->tail = &s->head;
	unsigned n = s->n_threads;
	s->n_threads = 0;
	pthread_mutex_unlock(&s->lock);
	for (unsigned i = 0; i < n; i++)
		pthread_join(s->threads[i], NULL);
	while (left) {
		struct fs_slow_item *next = left->next;
		s->serve(s->data, left, EINTR);
		left = next;
	}
}

void fs_slow_done(struct fs_slow *s)
{
	fs_slow_stop(s);
	free(s->users);
	free(s->rings);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
}

/* ---- requests in flight ---- */

void fs_inflight_init(struct fs_inflight *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
}

int fs_inflight_begin(struct fs_inflight *f, int op, uint64_t ino, uid_t uid)
{
	uint64_t now = fs_now_ns();
	int slot = -1;
	pthread_mutex_lock(&f->lock);
	for (int i = 0; i < FS_INFLIGHT_SLOTS && slot < 0; i++) {
		if (f->slot[i].used)
			continue;
		f->slot[i] = (struct fs_inflight_slot){
			.used = true, .op = op, .ino = ino, .uid = uid, .start_ns = now,
		};
		slot = i;
	}
	pthread_mutex_unlock(&f->lock);
	return slot;
}

void fs_inflight_end(struct fs_inflight *f, int slot)
{
	if (slot < 0 || slot >= FS_INFLIGHT_SLOTS)
		return;
	pthread_mutex_lock(&f->lock);
	f->slot[slot].used = false;
	pthread_mutex_unlock(&f->lock);
}

unsigned fs_inflight_check(struct fs_inflight *f, uint64_t stall_ns,
			   void (*found)(void *, const struct fs_inflight_slot *), void *data)
{
	/* reported outside the lock (the report looks the file up) */
	struct fs_inflight_slot news[16];
	unsigned n_news = 0, stalled = 0;
	uint64_t now = fs_now_ns();
	pthread_mutex_lock(&f->lock);
	for (int i = 0; i < FS_INFLIGHT_SLOTS; i++) {
		struct fs_inflight_slot *sl = &f->slot[i];
		if (!sl->used || now - sl->start_ns < stall_ns)
			continue;
		stalled++;
		if (!sl->logged && n_news < sizeof(news) / sizeof(news[0])) {
			sl->logged = true;
			f->stalled_total++;
			news[n_news++] = *sl;
		}
	}
	f->stalled_now = stalled;
	pthread_mutex_unlock(&f->lock);
	for (unsigned i = 0; i < n_news && found; i++)
		found(data, &news[i]);
	return stalled;
}
