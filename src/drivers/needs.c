/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* needs.c - the kernel driver an exec driver needs (see needs.h). */
#include "needs.h"

#include "binding.h"
#include "core/array.h"
#include "core/thread.h"
#include "log.h"

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

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static struct entry **entries;
static size_t n_entries, cap_entries;
static pthread_t worker;
static bool running, worker_started, stopping, held;

static struct entry *find_locked(struct dm_device *dev)
{
	for (size_t i = 0; i < n_entries; i++)
		if (entries[i]->dev == dev)
			return entries[i];
	return NULL;
}

/* Drops entry @i (lock held). */
static void drop_locked(size_t i)
{
	dm_device_unref(entries[i]->dev);
	free(entries[i]);
	entries[i] = entries[--n_entries];
}

/* Entries of devices gone from the model, with no job, go (lock held). */
static void purge_locked(void)
{
	for (size_t i = n_entries; i > 0; i--)
		if (entries[i - 1]->job == NO_JOB && dm_device_is_dead(entries[i - 1]->dev))
			drop_locked(i - 1);
}

/* The next entry with a job to run, its job taken; NULL when none (lock
 * held). */
static struct entry *next_job_locked(enum job *job)
{
	if (held)
		return NULL;
	for (size_t i = 0; i < n_entries; i++)
		if (entries[i]->job != NO_JOB) {
			*job = entries[i]->job;
			entries[i]->job = NO_JOB;
			return entries[i];
		}
	return NULL;
}

static void run_move(struct entry *e)
{
	struct dm_binding_saved before = { 0 };
	/* the binder that runs the model's requests (the daemon's) */
	struct dm_binder *b = dm_binder_of(e->dev);
	if (b)
		dm_binding_save(b, e->dev, &before);
	struct dm_bind_request req = { .action = DM_BIND_TO, .driver = e->kdriver };
	int r = b ? dm_bind_device(b, e->dev, &req) : -EOPNOTSUPP;
	pthread_mutex_lock(&lock);
	e->before = before;
	/* pending: the kernel's uevent will say; the device is offered then */
	e->state = r == 0 || r == -EINPROGRESS ? HELD : FAILED;
	pthread_mutex_unlock(&lock);
	if (r == 0 || r == -EINPROGRESS)
		log_info("%s needs %s: %s moved to it from %s%s", e->who, e->kdriver,
			 dm_device_get_sysname(e->dev), before.driver[0] ? before.driver : "no driver",
			 r ? " (pending)" : "");
	else
		log_warn("%s needs %s: %s not moved: %s (its binding file has the report)", e->who,
			 e->kdriver, dm_device_get_sysname(e->dev), strerror(-r));
}

static void run_give_back(struct entry *e)
{
	pthread_mutex_lock(&lock);
	bool still_held = e->holders > 0 || e->state != HELD;
	bool declined = e->declined;
	pthread_mutex_unlock(&lock);
	if (still_held)
		return; /* a new driver took it meanwhile (a reload) */
	struct dm_binding_saved now = { 0 };
	struct dm_binder *b = dm_binder_of(e->dev);
	if (b)
		dm_binding_save(b, e->dev, &now);
	int r = 0;
	bool ours = b && strcmp(now.driver, e->kdriver) == 0;
	if (ours && !dm_device_is_dead(e->dev)) {
		r = dm_binding_restore(b, e->dev, &e->before, false);
		if (r == 0)
			log_info("needs: %s given back to %s", dm_device_get_sysname(e->dev),
				 e->before.driver[0] ? e->before.driver : "no driver");
	}
	pthread_mutex_lock(&lock);
	e->state = !ours ? LEFT : declined || r < 0 ? DECLINED : e->state;
	bool forget = ours && !declined && r == 0;
	if (forget)
		for (size_t i = 0; i < n_entries; i++)
			if (entries[i] == e) {
				drop_locked(i);
				break;
			}
	pthread_mutex_unlock(&lock);
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
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		enum job job;
		struct entry *e;
		while (!stopping && !(e = next_job_locked(&job)))
			pthread_cond_wait(&wake, &lock);
		if (stopping)
			break;
		/* the entry stays: only this thread drops one with a job run */
		dm_device_ref(e->dev);
		struct dm_device *dev = e->dev;
		pthread_mutex_unlock(&lock);
		if (job == MOVE)
			run_move(e);
		else
			run_give_back(e);
		dm_device_unref(dev);
		pthread_mutex_lock(&lock);
		purge_locked();
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* The worker, started the first time there is work (lock held). */
static int start_worker_locked(void)
{
	if (worker_started || !running)
		return 0;
	int r = dm_thread_start(&worker, 0, work, NULL);
	if (r < 0)
		return r;
	worker_started = true;
	return 0;
}

/* Queues @job on @e and wakes the worker (lock held). */
static int queue_locked(struct entry *e, enum job job)
{
	if (stopping)
		return -ESHUTDOWN;
	int r = start_worker_locked();
	if (r < 0)
		return r;
	e->job = job;
	pthread_cond_signal(&wake);
	return 0;
}

int dm_needs_start(void)
{
	pthread_mutex_lock(&lock);
	running = !stopping;
	int r = 0;
	for (size_t i = 0; i < n_entries && r == 0; i++)
		if (entries[i]->job != NO_JOB)
			r = start_worker_locked();
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
	return r;
}

int dm_needs_kernel_driver(struct dm_device *dev, const char *kdriver, const char *who)
{
	struct dm_model *m = dm_device_get_model(dev);
	dm_model_read_lock(m);
	const char *now = dm_device_get_kernel_driver(dev);
	bool bound = now && strcmp(now, kdriver) == 0;
	dm_model_unlock(m);

	pthread_mutex_lock(&lock);
	struct entry *e = find_locked(dev);
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
		if (e && dm_array_grow((void **)&entries, &cap_entries, n_entries, sizeof(*entries),
				       8)) {
			e->dev = dm_device_ref(dev);
			snprintf(e->kdriver, sizeof(e->kdriver), "%s", kdriver);
			snprintf(e->who, sizeof(e->who), "%s", who);
			e->state = MOVING;
			entries[n_entries++] = e;
			r = queue_locked(e, MOVE);
			r = r < 0 ? r : -EAGAIN;
		} else {
			free(e);
		}
	} else {
		/* moving, or moved and its uevent not here yet: -EAGAIN;
		 * failed, given back or left: not again */
		r = e->state == MOVING || e->state == HELD ? -EAGAIN : -ENODEV;
	}
	pthread_mutex_unlock(&lock);
	return r;
}

void dm_needs_release(struct dm_device *dev, bool declined)
{
	pthread_mutex_lock(&lock);
	struct entry *e = find_locked(dev);
	if (e && e->holders > 0 && --e->holders == 0 && e->state == HELD) {
		e->declined = declined;
		if (!dm_device_is_dead(dev))
			(void)queue_locked(e, GIVE_BACK); /* at exit: left as it is */
	}
	pthread_mutex_unlock(&lock);
}

void dm_needs_hold(bool hold)
{
	pthread_mutex_lock(&lock);
	held = hold;
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
}

void dm_needs_stop(void)
{
	dm_thread_stop_worker(&lock, &wake, &stopping, &worker_started, worker);
	while (n_entries)
		drop_locked(n_entries - 1);
	free(entries);
	entries = NULL;
	cap_entries = 0;
	pthread_mutex_unlock(&lock);
}
