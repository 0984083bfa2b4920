/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* needs.c - the kernel driver an exec driver needs (see needs.h). */
#include "needs.h"

#include "binding.h"
#include "core/array.h"
#include "core/thread.h"
#include "util/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum state {
	MOVING, /* a move is queued or runs */
	HELD, /* moved; held by drivers that need it (holders) */
	FAILED, /* the move failed: not tried again */
	DECLINED, /* given back after a declining probe: not moved again */
	LEFT, /* someone else changed the kernel's binding: left so */
};

enum job {
	NO_JOB,
	MOVE,
	GIVE_BACK,
};

/* A device moved (or being moved) for a driver that needs it. */
struct entry {
	struct dm_device *dev; /* referenced */
	char kdriver[64];
	char who[64]; /* the driver that asked first */
	enum state state;
	enum job job;
	bool declined; /* the give-back follows a declining probe */
	unsigned holders;
	struct dm_binding_saved before; /* the binding to give back */
};

struct dm_needs {
	struct dm_binder *binder; /* what moves and gives back */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct entry **entries;
	size_t n_entries, cap_entries;
	pthread_t worker;
	bool running, worker_started, stopping, held;
};

int dm_needs_new(struct dm_binder *b, struct dm_needs **ret)
{
	struct dm_needs *nd = calloc(1, sizeof(*nd));
	if (!nd)
		return -ENOMEM;
	nd->binder = b;
	pthread_mutex_init(&nd->lock, NULL);
	pthread_cond_init(&nd->wake, NULL);
	*ret = nd;
	return 0;
}

static struct entry *find_locked(struct dm_needs *nd, struct dm_device *dev)
{
	for (size_t i = 0; i < nd->n_entries; i++)
		if (nd->entries[i]->dev == dev)
			return nd->entries[i];
	return NULL;
}

/* Drops entry @i (lock held). */
static void drop_locked(struct dm_needs *nd, size_t i)
{
	dm_device_unref(nd->entries[i]->dev);
	free(nd->entries[i]);
	nd->entries[i] = nd->entries[--nd->n_entries];
}

/* Entries of devices gone from the model, with no job, go (lock held). */
static void purge_locked(struct dm_needs *nd)
{
	for (size_t i = nd->n_entries; i > 0; i--)
		if (nd->entries[i - 1]->job == NO_JOB && dm_device_is_dead(nd->entries[i - 1]->dev))
			drop_locked(nd, i - 1);
}

/* The next entry with a job to run, its job taken; NULL when none (lock
 * held). */
static struct entry *next_job_locked(struct dm_needs *nd, enum job *job)
{
	if (nd->held)
		return NULL;
	for (size_t i = 0; i < nd->n_entries; i++)
		if (nd->entries[i]->job != NO_JOB) {
			*job = nd->entries[i]->job;
			nd->entries[i]->job = NO_JOB;
			return nd->entries[i];
		}
	return NULL;
}

static void run_move(struct dm_needs *nd, struct entry *e)
{
	struct dm_binding_saved before;
	dm_binding_save(nd->binder, e->dev, &before);
	struct dm_bind_request req = { .action = DM_BIND_TO, .driver = e->kdriver };
	int r = dm_bind_device(nd->binder, e->dev, &req);
	pthread_mutex_lock(&nd->lock);
	e->before = before;
	/* pending: the kernel's uevent will say; the device is offered then */
	e->state = r == 0 || r == -EINPROGRESS ? HELD : FAILED;
	pthread_mutex_unlock(&nd->lock);
	if (r == 0 || r == -EINPROGRESS)
		log_info("%s needs %s: %s moved to it from %s%s", e->who, e->kdriver,
			 dm_device_get_sysname(e->dev), before.driver[0] ? before.driver : "no driver",
			 r ? " (pending)" : "");
	else
		log_warn("%s needs %s: %s not moved: %s (its binding file has the report)", e->who,
			 e->kdriver, dm_device_get_sysname(e->dev), strerror(-r));
}

static void run_give_back(struct dm_needs *nd, struct entry *e)
{
	pthread_mutex_lock(&nd->lock);
	bool still_held = e->holders > 0 || e->state != HELD;
	bool declined = e->declined;
	pthread_mutex_unlock(&nd->lock);
	if (still_held)
		return; /* a new driver took it meanwhile (a reload) */
	struct dm_binding_saved now;
	dm_binding_save(nd->binder, e->dev, &now);
	int r = 0;
	bool ours = strcmp(now.driver, e->kdriver) == 0;
	if (ours && !dm_device_is_dead(e->dev)) {
		r = dm_binding_restore(nd->binder, e->dev, &e->before, false);
		if (r == 0)
			log_info("needs: %s given back to %s", dm_device_get_sysname(e->dev),
				 e->before.driver[0] ? e->before.driver : "no driver");
	}
	pthread_mutex_lock(&nd->lock);
	e->state = !ours ? LEFT : declined || r < 0 ? DECLINED : e->state;
	bool forget = ours && !declined && r == 0;
	if (forget)
		for (size_t i = 0; i < nd->n_entries; i++)
			if (nd->entries[i] == e) {
				drop_locked(nd, i);
				break;
			}
	pthread_mutex_unlock(&nd->lock);
	/* (e is gone when forgotten: the names were logged before) */
	if (!ours)
		log_info("needs: %s is bound to %s now, not given back", dm_device_get_sysname(e->dev),
			 now.driver[0] ? now.driver : "no driver");
	else if (r < 0)
		log_warn("needs: %s could not be given back to %s: %s (its binding file has the "
			 "report)",
			 dm_device_get_sysname(e->dev), e->before.driver[0] ? e->before.driver : "no driver",
			 strerror(-r));
}

static void *work(void *arg)
{
	struct dm_needs *nd = arg;
	pthread_mutex_lock(&nd->lock);
	for (;;) {
		enum job job;
		struct entry *e;
		while (!nd->stopping && !(e = next_job_locked(nd, &job)))
			pthread_cond_wait(&nd->wake, &nd->lock);
		if (nd->stopping)
			break;
		/* the entry stays: only this thread drops one with a job run */
		dm_device_ref(e->dev);
		struct dm_device *dev = e->dev;
		pthread_mutex_unlock(&nd->lock);
		if (job == MOVE)
			run_move(nd, e);
		else
			run_give_back(nd, e);
		dm_device_unref(dev);
		pthread_mutex_lock(&nd->lock);
		purge_locked(nd);
	}
	pthread_mutex_unlock(&nd->lock);
	return NULL;
}

/* The worker, started the first time there is work (lock held). */
static int start_worker_locked(struct dm_needs *nd)
{
	if (nd->worker_started || !nd->running)
		return 0;
	int r = dm_thread_start(&nd->worker, 0, work, nd);
	if (r < 0)
		return r;
	nd->worker_started = true;
	return 0;
}

/* Queues @job on @e and wakes the worker (lock held). */
static int queue_locked(struct dm_needs *nd, struct entry *e, enum job job)
{
	if (nd->stopping)
		return -ESHUTDOWN;
	int r = start_worker_locked(nd);
	if (r < 0)
		return r;
	e->job = job;
	pthread_cond_signal(&nd->wake);
	return 0;
}

int dm_needs_start(struct dm_needs *nd)
{
	pthread_mutex_lock(&nd->lock);
	nd->running = !nd->stopping;
	int r = 0;
	for (size_t i = 0; i < nd->n_entries && r == 0; i++)
		if (nd->entries[i]->job != NO_JOB)
			r = start_worker_locked(nd);
	pthread_cond_signal(&nd->wake);
	pthread_mutex_unlock(&nd->lock);
	return r;
}

int dm_needs_kernel_driver(struct dm_needs *nd, struct dm_device *dev, const char *kdriver,
			   const char *who)
{
	struct dm_model *m = dm_device_get_model(dev);
	dm_model_read_lock(m);
	const char *now = dm_device_get_kernel_driver(dev);
	bool bound = now && strcmp(now, kdriver) == 0;
	dm_model_unlock(m);

	pthread_mutex_lock(&nd->lock);
	struct entry *e = find_locked(nd, dev);
	int r;
	if (bound) {
		/* the kernel's own, or moved by us */
		if (e && (e->state == HELD || e->state == MOVING)) {
			e->state = HELD;
			e->holders++;
		}
		r = 0;
	} else if (!e) {
		r = -ENOMEM;
		e = calloc(1, sizeof(*e));
		if (e && dm_array_grow((void **)&nd->entries, &nd->cap_entries, nd->n_entries,
				       sizeof(*nd->entries), 8)) {
			e->dev = dm_device_ref(dev);
			snprintf(e->kdriver, sizeof(e->kdriver), "%s", kdriver);
			snprintf(e->who, sizeof(e->who), "%s", who);
			e->state = MOVING;
			nd->entries[nd->n_entries++] = e;
			r = queue_locked(nd, e, MOVE);
			r = r < 0 ? r : -EAGAIN;
		} else {
			free(e);
		}
	} else {
		/* moving, or moved and its uevent not here yet: -EAGAIN;
		 * failed, given back or left: not again */
		r = e->state == MOVING || e->state == HELD ? -EAGAIN : -ENODEV;
	}
	pthread_mutex_unlock(&nd->lock);
	return r;
}

void dm_needs_release(struct dm_needs *nd, struct dm_device *dev, bool declined)
{
	pthread_mutex_lock(&nd->lock);
	struct entry *e = find_locked(nd, dev);
	if (e && e->holders > 0 && --e->holders == 0 && e->state == HELD) {
		e->declined = declined;
		if (!dm_device_is_dead(dev))
			(void)queue_locked(nd, e, GIVE_BACK); /* at exit: left as it is */
	}
	pthread_mutex_unlock(&nd->lock);
}

void dm_needs_hold(struct dm_needs *nd, bool hold)
{
	pthread_mutex_lock(&nd->lock);
	nd->held = hold;
	pthread_cond_signal(&nd->wake);
	pthread_mutex_unlock(&nd->lock);
}

void dm_needs_stop(struct dm_needs *nd)
{
	dm_thread_stop_worker(&nd->lock, &nd->wake, &nd->stopping, &nd->worker_started, nd->worker);
	while (nd->n_entries)
		drop_locked(nd, nd->n_entries - 1);
	free(nd->entries);
	nd->entries = NULL;
	nd->cap_entries = 0;
	pthread_mutex_unlock(&nd->lock);
}

void dm_needs_free(struct dm_needs *nd)
{
	if (!nd)
		return;
	dm_needs_stop(nd);
	pthread_cond_destroy(&nd->wake);
	pthread_mutex_destroy(&nd->lock);
	free(nd);
}
