/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * thread.h - the one way the daemon starts a thread.
 *
 * Signals belong to the thread that runs libfuse's loop (SIGTERM, SIGINT
 * and SIGHUP end or reload it) and to the children the runner spawns
 * (which start with the mask of the thread that forks them). Every other
 * thread is started with all signals blocked, from its first instruction:
 * the mask is set around pthread_create(), so the new thread inherits it,
 * with no window in which a signal could land on it.
 */
#ifndef DM_THREAD_H
#define DM_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* Starts @fn(@arg) with every signal blocked. With @ret, the thread is
 * joinable and its id goes there; with @ret NULL it is detached. A
 * @stack_size of 0 keeps the default. Returns 0 or a negative errno. */
int dm_thread_start(pthread_t *ret, size_t stack_size, void *(*fn)(void *), void *arg);

/* Stops a worker thread @thread that waits on @wake, under @lock, until
 * *@stopping: sets that, wakes it and, when *@started, joins it (what it
 * runs ends first). Returns with @lock held and *@started false, for the
 * caller to drop what was queued. Call without @lock. */
void dm_thread_stop_worker(pthread_mutex_t *lock, pthread_cond_t *wake, bool *stopping,
			   bool *started, pthread_t thread);

#endif
